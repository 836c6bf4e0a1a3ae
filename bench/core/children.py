"""Every process the harness starts dies with it, within a second or two, however the harness ends
(SIGKILL by the OOM killer included): the next run must never race a leftover writer or engine.

Three mechanisms, each covering what the others cannot:

- `die_with_parent()` (prctl(PR_SET_PDEATHSIG, SIGKILL)), run in the child between fork and exec
  (`preexec`, `popen`) or in a pool worker (`pool_initializer`): the kernel kills the child when its
  parent dies.  Beware: the signal follows the parent THREAD that forked, so a child spawned from a
  short-lived thread would be killed when that thread ends; `popen` sets it only when called from the
  main thread, and relies on the reaper otherwise.
- `pool_initializer` also starts a thread in the worker that exits the worker when its parent changes
  (a fork-context ProcessPoolExecutor's workers are forked from whichever thread submitted first).
- the ledger (`record_to`): while a run holds a warehouse, every process (group) the harness guards is also
  written, with its start time, to `<state dir>/processes.jsonl`, and crossed out when it ends; so that
  `bench doctor --warehouse W --repair` ends only what a harness started (`recorded_alive`), never another
  process whose command line merely names the warehouse.
- the reaper: one small process per harness, in its own session, that reads a pipe only the harness
  holds.  The harness registers process groups it owns (`guard(pid, group=True)`: the engine worker's,
  the catalog server's) and single processes (`guard(pid)`: a JVM the harness launched from a thread).
  When the pipe reaches end of file (the harness is gone, however) the reaper SIGKILLs every
  registered group and process (a process only if its start time is unchanged: no pid reuse) and exits.
  Killing the engine's process group also kills what the engine started (the Spark JVM, standalone
  daemons, their executors) even if they escaped the parent-death signal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1
PARENT_POLL_S = 0.2

REAPER = r"""
import os, signal, sys
groups, procs = set(), {}
def start(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
for line in sys.stdin:
    op, kind, pid, *rest = line.split() + [""]
    pid = int(pid)
    if kind == "g":
        (groups.add if op == "+" else groups.discard)(pid)
    elif op == "+":
        procs[pid] = rest[0]
    else:
        procs.pop(pid, None)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
for pid, t in procs.items():
    if t and start(pid) == t:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""


def die_with_parent() -> None:
    """In a child (between fork and exec, or in a forked worker): the kernel sends it SIGKILL when its
    parent (thread) dies."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def preexec(*steps: Callable[[], object] | None) -> Callable[[], None]:
    """A preexec_fn: die with the parent, then each of `steps` (e.g. joining a cgroup)."""
    def run() -> None:
        die_with_parent()
        for step in steps:
            if step is not None:
                step()
    return run


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        threading.Event().wait(PARENT_POLL_S)
    os._exit(1)


def pool_initializer(parent: int | None = None) -> None:
    """A ProcessPoolExecutor's `initializer` (pass `initargs=(os.getpid(),)`): the worker dies with the
    harness, by the kernel's signal and by a thread that watches its parent."""
    die_with_parent()
    parent = parent or os.getppid()
    if os.getppid() != parent:
        os._exit(1)  # the harness died before this worker started
    threading.Thread(target=_watch_parent, args=(parent,), name="watch-parent", daemon=True).start()


def start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def pid_alive(pid: int | None, started_at: str | None = None) -> bool | None:
    """Is `pid` running (one home for the question)?  True also for another user's process (it exists).  With
    `started_at` (UTC, 2026-11-29T01:02:03Z, when the harness recorded the pid), a process that started later is
    a reused pid, not the one recorded: False.  None when nothing can be said (no pid, or the kernel refuses)."""
    if not pid:
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, another user's
    except OSError:
        return None
    if started_at is None:
        return True
    try:  # a pid reused by a younger process is not the one recorded
        import calendar
        import time

        import psutil

        started = calendar.timegm(time.strptime(started_at, "%Y-%m-%dT%H:%M:%SZ"))
        return psutil.Process(int(pid)).create_time() <= started + 5
    except Exception:  # noqa: BLE001 - unknown start time or psutil: trust the pid
        return True


class _Reaper:
    """The harness's reaper process (started on first use, one per harness process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.owner = 0

    def send(self, line: str) -> None:
        with self.lock:
            if self.proc is None or self.owner != os.getpid() or self.proc.poll() is not None:
                self.proc = subprocess.Popen([sys.executable, "-c", REAPER], stdin=subprocess.PIPE,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True, close_fds=True)
                self.owner = os.getpid()
                assert self.proc.stdin is not None
                os.set_inheritable(self.proc.stdin.fileno(), False)
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(f"{line}\n".encode())
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self.proc = None


_reaper = _Reaper()


_ledger: Path | None = None


def record_to(path: Path | None) -> None:
    """From now on also write each guarded process to the ledger `path` (None: stop); see the docstring."""
    global _ledger
    _ledger = path


def _record(op: str, pid: int, group: bool) -> None:
    if _ledger is None:
        return
    line = {"op": op, "pid": pid, "start": start_time(pid), "group": group, "by": os.getpid()}
    try:
        with open(_ledger, "a") as fh:
            fh.write(json.dumps(line) + "\n")
    except OSError:
        pass


def recorded_alive(path: Path) -> list[dict]:
    """The ledger's processes not crossed out that still run with the start time recorded (no reused pid)."""
    live: dict[int, dict] = {}
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    for text in lines:
        try:
            e = json.loads(text)
        except ValueError:
            continue
        if e.get("op") == "+":
            live[int(e["pid"])] = e
        else:
            live.pop(int(e.get("pid", 0)), None)
    return [e for pid, e in live.items() if e.get("start") and start_time(pid) == e["start"]]


def guard(pid: int, group: bool = False) -> None:
    """Kill `pid` (its whole process group with `group`: `pid` must lead it) if the harness dies first."""
    if group:
        _reaper.send(f"+ g {pid}")
    else:
        _reaper.send(f"+ p {pid} {start_time(pid) or ''}")
    _record("+", pid, group)


def unguard(pid: int, group: bool = False) -> None:
    """`pid` ended (or was stopped) normally: forget it."""
    _reaper.send(f"- {'g' if group else 'p'} {pid}")
    _record("-", pid, group)


def reaper_pid() -> int | None:
    """The reaper's pid, once started (tests: it must end with the harness too)."""
    return _reaper.proc.pid if _reaper.proc is not None else None


def popen(cmd: list[str], *, preexec_fn: Callable[[], object] | None = None, **kw: Any) -> subprocess.Popen:
    """subprocess.Popen for a child that must die with the harness: the parent-death signal (from the
    main thread, see the module's docstring) and the reaper (its process group when it leads one)."""
    main = threading.current_thread() is threading.main_thread()
    steps = preexec(preexec_fn) if main else preexec_fn
    proc = subprocess.Popen(cmd, preexec_fn=steps, **kw)
    guard(proc.pid, group=bool(kw.get("start_new_session")))
    return proc


class Forked:
    """A child made by `fork`, with the part of subprocess.Popen's interface the harness uses on its children."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: gone, its status unknown (as subprocess.Popen says 0)
                self.returncode = 0
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def fork(run: Callable[[], int], *, title: str, stderr: Path) -> Forked:
    """`run()` in a child forked from this process, in a session of its own, that dies with the harness as `popen`'s
    children do; its exit status is run()'s, its stdin and stdout /dev/null, its stderr the file `stderr`, its command
    line `title` (what ps and `bench doctor` show).  For a service whose libraries this process has already imported:
    a new interpreter would spend a second or more of CPU importing them again."""
    from setproctitle import setproctitle

    main = threading.current_thread() is threading.main_thread()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # or the child's first write would repeat what this process had buffered
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs this process's exit handlers
        code = 1
        try:
            os.setsid()
            if main:
                die_with_parent()
            null = os.open(os.devnull, os.O_RDWR)
            err = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            for fd, to in ((0, null), (1, null), (2, err)):
                os.dup2(to, fd)
            setproctitle(title)
            code = run()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:  # noqa: BLE001 - the child's last word goes to its stderr file
            import traceback

            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    guard(pid, group=True)
    return Forked(pid)


def release(proc: subprocess.Popen | Forked, group: bool = False) -> None:
    """After `proc` (started with `popen`) was waited for."""
    unguard(proc.pid, group=group)


def run(cmd: list[str], *, timeout: float | None = None, **kw: Any) -> subprocess.CompletedProcess:
    """subprocess.run for a child and everything it starts (its own process group, guarded by the reaper):
    the group is killed on a timeout (subprocess.TimeoutExpired is raised after) and when the child ends."""
    proc = popen(cmd, start_new_session=True, **kw)
    try:
        rc = proc.wait(timeout=timeout)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # what it started dies with it
        except OSError:
            pass
        proc.wait()
        release(proc, group=True)
    return subprocess.CompletedProcess(cmd, rc)


__all__ = ["die_with_parent", "guard", "pool_initializer", "popen", "preexec", "reaper_pid", "record_to",
           "pid_alive", "recorded_alive", "release", "run", "start_time", "unguard"]
