"""Memory budgets, enforced for real and the same way for every engine.

Preferred: a kernel memory cgroup around the engine's process tree (cgroup v2 `memory.max`, or cgroup v1
`memory.limit_in_bytes`), created as a child of the harness's own cgroup.  Exceeding it makes the kernel's
OOM killer kill inside the tree; the cgroup's own counters are the evidence.  Where no cgroup can be made
(no permission, no memory controller), a watchdog kills the tree when the summed RSS of its processes,
sampled at 10 Hz by the telemetry sampler, exceeds the budget.  The result records which one was used.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

from bench.core.children import die_with_parent, pid_alive
from bench.core.fmt import limit_bytes

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "bench-"


def _owner_alive(name: str) -> bool:
    """Cgroups are named bench-<harness pid>-<id>: is that harness still running?"""
    try:
        pid = int(name[len(CGROUP_PREFIX):].split("-", 1)[0])
    except ValueError:
        return False
    return pid_alive(pid) is not False


def find_stale_cgroups(extra: list[Path] | None = None) -> list[Path]:
    """Memory cgroups (and those under the `extra` parents: storage caps, cpusets) left by a harness that was
    killed (its pid is gone).  Those of a harness still running (another warehouse's run) are not listed."""
    own = _own_cgroup()
    parents = ([own[1]] if own else []) + list(extra or [])
    return [d for parent in parents for d in sorted(parent.glob(f"{CGROUP_PREFIX}*")) if not _owner_alive(d.name)]


def remove_stale_cgroups(extra: list[Path] | None = None) -> list[str]:
    """The stale cgroups (find_stale_cgroups): kill what still runs in them, remove them."""
    removed = []
    for d in find_stale_cgroups(extra):
        procs = d / "cgroup.procs"
        try:
            for pid in procs.read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            d.rmdir()
            removed.append(d.name)
        except OSError:
            continue
    return removed


def cgroup_dir(controller: str, version: str) -> Path | None:
    """This process's cgroup directory for `controller` (v1: in the controller's own hierarchy; v2: in the unified
    one, with the controller enabled for children), when this process may create children in it."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if version == "v1" and controller in controllers.split(","):
            d = CGROUP_ROOT / controller / path.lstrip("/")
            return d if d.is_dir() and os.access(d, os.W_OK) else None
        if version == "v2" and line.startswith("0::"):
            for root in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
                d = root / path.lstrip("/")
                try:
                    if controller in (d / "cgroup.subtree_control").read_text().split() and os.access(d, os.W_OK):
                        return d
                except OSError:
                    continue
    return None


def _own_cgroup() -> tuple[str, Path] | None:
    """(version, directory) of a memory cgroup this process may create children in."""
    d = cgroup_dir("memory", "v1")
    if d is not None and (d / "memory.limit_in_bytes").exists():
        return "v1", d
    d = cgroup_dir("memory", "v2")
    return ("v2", d) if d is not None else None


class Limiter:
    """Puts an engine process tree under a memory budget.  Use: preexec (in the child), attach(pid),
    on_sample (from the sampler), exceeded, evidence(returncode), release()."""

    def __init__(self, budget_bytes: int | None):
        self.budget = budget_bytes
        self.exceeded = False
        self.watchdog_peak = 0
        self.cgroup: Path | None = None
        self.version = None
        self.pgid = 0
        self.description = "none (no budget)"
        if not budget_bytes:
            return
        own = _own_cgroup()
        if own:
            version, parent = own
            d = parent / f"{CGROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
            try:
                d.mkdir()
                if version == "v1":
                    (d / "memory.limit_in_bytes").write_text(str(budget_bytes))
                    try:
                        (d / "memory.memsw.limit_in_bytes").write_text(str(budget_bytes))
                    except OSError:
                        pass  # no swap accounting: no swap to escape to either
                else:
                    (d / "memory.max").write_text(str(budget_bytes))
                    (d / "memory.swap.max").write_text("0")
                self.cgroup, self.version = d, version
                limit = self._read("memory.limit_in_bytes" if version == "v1" else "memory.max")
                self.description = (f"cgroup {version} memory limit {limit_bytes(limit)} on the engine's process "
                                    f"tree (kernel OOM killer)")
            except OSError as e:
                self._remove(d)
                self.description = f"RSS watchdog at 10 Hz (cgroup unavailable: {e.strerror})"
        else:
            self.description = "RSS watchdog at 10 Hz on the summed RSS of the process tree (no writable memory cgroup)"

    def _read(self, name: str) -> str:
        if self.cgroup is None:
            return ""
        try:
            return (self.cgroup / name).read_text().strip()
        except OSError:
            return ""

    def preexec(self) -> None:
        """Runs in the child between fork and exec: die with the harness, and join the cgroup before
        the engine starts."""
        die_with_parent()
        if self.cgroup is not None:
            with open(self.cgroup / "cgroup.procs", "w") as f:
                f.write(str(os.getpid()))

    def attach(self, pid: int) -> None:
        """The engine's process group leader (the child joined the cgroup in preexec; the processes
        it spawns inherit it)."""
        self.pgid = pid

    def on_sample(self, rss_bytes: int) -> None:
        """Watchdog, only where no cgroup could be made: called by the sampler with the tree's summed
        RSS each tick; kills the whole process group when it is over the budget.  Where the cgroup
        exists the kernel alone enforces the budget: summed RSS counts shared and reclaimable file
        pages, so a watchdog would be stricter than the kernel and fire first."""
        self.watchdog_peak = max(self.watchdog_peak, rss_bytes)
        if self.cgroup is None and self.budget and rss_bytes > self.budget and not self.exceeded:
            self.exceeded = True
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except (ProcessLookupError, AttributeError):
                pass

    def kernel_oom_kills(self) -> int:
        if self.version == "v1":
            for line in self._read("memory.oom_control").splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
            return 1 if int(self._read("memory.failcnt") or 0) and self._under_oom() else 0
        if self.version == "v2":
            for line in self._read("memory.events").splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        return 0

    def _under_oom(self) -> bool:
        return "under_oom 1" in self._read("memory.oom_control")

    def peak_bytes(self) -> int | None:
        v = self._read("memory.max_usage_in_bytes" if self.version == "v1" else "memory.peak")
        return int(v) if v.isdigit() else None

    def evidence(self, returncode: int | None) -> str | None:
        """Why the run counts as out of memory, or None."""
        kills = self.kernel_oom_kills()
        if kills:
            return (f"kernel OOM killer killed {kills} process(es) in the engine's memory cgroup "
                    f"(limit {self.budget} bytes, peak usage {self.peak_bytes()} bytes, exit {returncode})")
        if self.exceeded:
            return (f"RSS watchdog: the process tree's RSS reached {self.watchdog_peak} bytes, over the "
                    f"budget of {self.budget} bytes; tree killed")
        return None

    def release(self, wait_s: float = 5.0) -> None:
        """Remove the cgroup (see release_cgroup)."""
        if self.cgroup is not None:
            release_cgroup(self.cgroup, wait_s)

    @staticmethod
    def _remove(d: Path) -> None:
        try:
            d.rmdir()
        except OSError:
            pass


def release_cgroup(d: Path, wait_s: float = 5.0) -> None:
    """Remove a cgroup the harness made.  Processes of the tree that are still being torn down (a JVM killed a
    moment ago) keep it busy: kill what is left and retry for up to `wait_s`."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # left for remove_stale_cgroups() of a later run
            try:
                for pid in (d / "cgroup.procs").read_text().split():
                    os.kill(int(pid), signal.SIGKILL)
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
