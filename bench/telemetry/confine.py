"""Confining an engine's process tree: a storage cap (`--storage-cap READ[,WRITE]`) on the warehouse's block
device and a core count (`--cores N`), the same way for every engine.

Storage: a cgroup around the engine's process tree, created for one engine run and removed after it:
cgroup v1 `blkio.throttle.read_bps_device` / `write_bps_device`, cgroup v2 `io.max` (rbps / wbps), on the
device that holds the warehouse directory (found from its st_dev through /sys/dev/block; a partition's
whole disk, where the throttle lives).  What escapes a v1 write throttle: buffered writes are written back
by the kernel's flusher threads, which belong to no engine's cgroup.  The worker therefore fsyncs every
file the engine wrote in the table's directory inside its timed compaction (a phase `flush`, for every
engine alike): the fsync issues the writes from the engine's process, inside the throttle.  Dirty pages the
flusher wrote back on its own before that escape; the cgroup's own counters (bytes the device served the
cgroup) are recorded beside the engine's written bytes, so what escaped is seen.

Cores: a cpuset cgroup (v1 `cpuset.cpus`, v2 `cpuset.cpus`) with the first N of the CPUs this process
may use; where none can be made, sched_setaffinity in the child (inherited by what it starts).  The engine
is told N (job.cores: Spark's local[N], RisingWave's parallelism per core).
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import UserError
from bench.core.records.telemetry import CoreLimit, StorageCap
from bench.core.units import MiB, parse_size
from bench.telemetry.limits import CGROUP_PREFIX, cgroup_dir, release_cgroup
from bench.telemetry.netcap import LoopbackShaper

CAP_HELP = "use e.g. 125MiB/s, 125MiB/s,60MiB/s (read,write) or none"


@dataclass(frozen=True)
class CapSpec:
    """A parsed --storage-cap: bytes per second for reads and writes (None: not limited)."""

    text: str
    read_bps: int | None
    write_bps: int | None

    @property
    def limits(self) -> bool:
        return self.read_bps is not None or self.write_bps is not None


def _rate(text: str) -> int | None:
    t = text.strip()
    if t.lower() in ("none", "-", ""):
        return None
    m = re.fullmatch(r"(.+?)\s*/\s*s", t, re.IGNORECASE)
    if not m:
        raise UserError(f"--storage-cap {text!r} is not a rate; {CAP_HELP}")
    return parse_size(m.group(1), "--storage-cap")


def parse_storage_cap(text: str | None) -> CapSpec | None:
    """'125MiB/s' (reads and writes), '250MiB/s,60MiB/s' (read, write) or 'none' (no limit, but flushed and
    recorded like a capped run, the baseline of a series of caps)."""
    if text is None:
        return None
    parts = text.split(",")
    if len(parts) > 2:
        raise UserError(f"--storage-cap {text!r}: at most READ,WRITE; {CAP_HELP}")
    read = _rate(parts[0])
    write = _rate(parts[1]) if len(parts) == 2 else read
    return CapSpec(text=text.strip(), read_bps=read, write_bps=write)


def block_device(path: Path) -> tuple[str, int, int]:
    """(name, major, minor) of the whole disk holding `path` (UserError where it is on no block device)."""
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:  # a warehouse not made yet: the disk it will be on
        path = path.parent
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    sys_dev = Path(f"/sys/dev/block/{major}:{minor}")
    if major == 0 or not sys_dev.exists():
        raise UserError(f"--storage-cap: the warehouse {path} is on no block device (device {major}:{minor}, "
                        "e.g. tmpfs or a network file system): nothing to throttle")
    real = sys_dev.resolve()
    if (real / "partition").exists():  # a partition: the throttle is set on its disk
        real = real.parent
        major, minor = (int(x) for x in (real / "dev").read_text().split(":"))
    return real.name, major, minor


def _v1_dir(controller: str) -> Path | None:
    return cgroup_dir(controller, "v1")


def _v2_dir(controller: str) -> Path | None:
    return cgroup_dir(controller, "v2")


def check_cores(cores: int) -> list[int]:
    """The CPUs --cores N confines to: the first N this process may use (UserError beyond them)."""
    allowed = sorted(os.sched_getaffinity(0))
    if cores < 1 or cores > len(allowed):
        raise UserError(f"--cores {cores}: give 1 to {len(allowed)} (the cores this process may use)")
    return allowed[:cores]


def check_local_cap(cap: CapSpec, warehouse: Path) -> tuple[str, int, int]:
    """Before anything runs, for a local warehouse: its device, and a cgroup that can throttle it (UserError, one
    line, otherwise).  An S3 warehouse's cap is checked by bench.telemetry.netcap.check_shaper (the port of its
    server on the loopback, which `tc` can shape)."""
    dev = block_device(warehouse)
    if cap.limits and _v1_dir("blkio") is None and _v2_dir("io") is None:
        raise UserError("--storage-cap: no writable blkio (cgroup v1) or io (cgroup v2) controller for this process; "
                        "capping storage needs root and one of them")
    return dev


def stale_parents() -> list[Path]:
    """The cgroup directories a Confiner makes its cgroups in (for remove_stale_cgroups)."""
    return [d for d in (_v1_dir("blkio"), _v1_dir("cpuset"), _v2_dir("io"), _v2_dir("cpuset")) if d is not None]


def fmt_rate(bps: int | None) -> str:
    return "unlimited" if bps is None else f"{bps / MiB:g} MiB/s"


class Confiner:
    """One engine run's storage cap and core limit.  Use: Confiner(...), preexec() in the child (after the
    memory limiter's), counters() after the run, release()."""

    def __init__(self, cap: CapSpec | None, device: tuple[str, int, int] | None, cpus: list[int] | None,
                 v2_shared: Path | None = None, s3_port: int | None = None):
        self.cap, self.device, self.cpus = cap, device, cpus
        self.shaper: LoopbackShaper | None = None
        self.dirs: list[Path] = []  # cgroups this run made (removed by release)
        self.join: list[Path] = []  # cgroups the child joins
        self.affinity: list[int] | None = None
        self.storage: StorageCap | None = None
        self.core_limit: CoreLimit | None = None
        self._blkio: tuple[str, Path] | None = None
        tag = f"{CGROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            if cap is not None and s3_port is not None:
                self._shape(cap, s3_port)
            elif cap is not None:
                self._cap(cap, tag, v2_shared)
            if cpus is not None:
                self._cores(cpus, tag, v2_shared)
        except OSError as e:
            self.release()
            raise UserError(f"confining the engine failed: {e.strerror or e} ({e.filename})") from None

    def _mk(self, parent: Path, tag: str) -> Path:
        d = parent / tag
        if not d.exists():
            d.mkdir()
            self.dirs.append(d)
        if d not in self.join:
            self.join.append(d)
        return d

    def _shape(self, cap: CapSpec, port: int) -> None:
        """An S3 warehouse on the loopback: its server's traffic shaped per direction (bench.telemetry.netcap);
        with `none` too, without a limit, so that the baseline passes the same shaper and is counted alike."""
        self.storage = StorageCap(requested=cap.text, device=f"loopback: the S3 server on port {port}",
                                  read_bytes_per_s=cap.read_bps, write_bytes_per_s=cap.write_bps,
                                  mechanism="tc htb on lo, per direction: the S3 server's sends (the engine's reads) "
                                            "and its receipts (the engine's writes)"
                                            + ("" if cap.limits else "; no limit: counted only"))
        self.shaper = LoopbackShaper(port, cap.read_bps, cap.write_bps)
        self.shaper.start()

    def _cap(self, cap: CapSpec, tag: str, v2_shared: Path | None) -> None:
        assert self.device is not None
        name, major, minor = self.device
        self.storage = StorageCap(requested=cap.text, device=f"{name} {major}:{minor}",
                                  read_bytes_per_s=cap.read_bps, write_bytes_per_s=cap.write_bps,
                                  mechanism="none (no limit: flushed and counted only)")
        v1 = _v1_dir("blkio")
        if v1 is not None:  # also without a limit: the cgroup's counters say what reached the device
            d = self._mk(v1, tag)
            if cap.read_bps is not None:
                (d / "blkio.throttle.read_bps_device").write_text(f"{major}:{minor} {cap.read_bps}")
            if cap.write_bps is not None:
                (d / "blkio.throttle.write_bps_device").write_text(f"{major}:{minor} {cap.write_bps}")
            self._blkio = ("v1", d)
            if cap.limits:
                self.storage.cgroup_version = "v1"
                self.storage.mechanism = "cgroup v1 blkio throttle (read_bps/write_bps)"
            return
        parent = _v2_dir("io")
        if not cap.limits:
            return
        if parent is None:
            raise UserError("--storage-cap: no writable blkio (v1) or io (v2) cgroup controller")
        d = v2_shared if v2_shared is not None else self._mk(parent, tag)
        if d not in self.join:
            self.join.append(d)
        rb = cap.read_bps if cap.read_bps is not None else "max"
        wb = cap.write_bps if cap.write_bps is not None else "max"
        (d / "io.max").write_text(f"{major}:{minor} rbps={rb} wbps={wb}")
        self._blkio = ("v2", d)
        self.storage.cgroup_version, self.storage.mechanism = "v2", "cgroup v2 io.max (rbps/wbps)"

    def _cores(self, cpus: list[int], tag: str, v2_shared: Path | None) -> None:
        text = ",".join(map(str, cpus))
        v1 = _v1_dir("cpuset")
        if v1 is not None:
            d = self._mk(v1, tag)
            (d / "cpuset.mems").write_text((v1 / "cpuset.mems").read_text().strip() or "0")
            (d / "cpuset.cpus").write_text(text)
            self.core_limit = CoreLimit(cores=len(cpus), cpus=text, mechanism="cgroup v1 cpuset", cgroup_version="v1")
            return
        parent = _v2_dir("cpuset")
        if parent is not None:
            d = v2_shared if v2_shared is not None else self._mk(parent, tag)
            if d not in self.join:
                self.join.append(d)
            (d / "cpuset.cpus").write_text(text)
            self.core_limit = CoreLimit(cores=len(cpus), cpus=text, mechanism="cgroup v2 cpuset", cgroup_version="v2")
            return
        self.affinity = cpus
        self.core_limit = CoreLimit(cores=len(cpus), cpus=text, mechanism="sched_setaffinity (inherited by children; "
                                    "no writable cpuset cgroup)")

    def preexec(self) -> None:
        """In the child, between fork and exec: join the cgroups, or set the affinity."""
        for d in self.join:
            with open(d / "cgroup.procs", "w") as f:
                f.write(str(os.getpid()))
        if self.affinity is not None:
            os.sched_setaffinity(0, self.affinity)

    def device_bytes(self) -> tuple[int | None, int | None]:
        """(read, written) bytes the device served the cgroup (its throttle's own counters)."""
        if self._blkio is None or self.device is None:
            return None, None
        version, d = self._blkio
        _, major, minor = self.device
        try:
            if version == "v1":
                rows = (d / "blkio.throttle.io_service_bytes").read_text().splitlines()
                dev = f"{major}:{minor}"
                vals = {p[1]: int(p[2]) for p in (r.split() for r in rows) if len(p) == 3 and p[0] == dev}
                return vals.get("Read", 0), vals.get("Write", 0)  # no row yet: nothing served
            for line in (d / "io.stat").read_text().splitlines():
                parts = line.split()
                if parts and parts[0] == f"{major}:{minor}":
                    kv = dict(p.split("=", 1) for p in parts[1:])
                    return int(kv.get("rbytes", 0)), int(kv.get("wbytes", 0))
            return 0, 0
        except OSError:
            return None, None

    def finish(self) -> None:
        """Record the device counters (the shaper's, on S3) in the storage record (before release)."""
        if self.storage is not None:
            self.storage.device_read_bytes, self.storage.device_write_bytes = \
                self.shaper.counters() if self.shaper is not None else self.device_bytes()

    def release(self) -> None:
        if self.shaper is not None:
            self.shaper.stop()
        for d in reversed(self.dirs):
            release_cgroup(d)
        self.dirs = []

