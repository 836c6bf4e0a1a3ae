"""OS-level telemetry of an engine's whole process tree, sampled from outside at 10 Hz.

The runner measures every engine the same way:

    with Sampler(proc.pid) as s:      # first sample taken before the block body runs
        proc.wait(timeout)
    summary = s.summary                # TelemetrySummary (stops the sampler if still running)
    s.write_samples(run_dir / f"{stem}.samples.parquet")

What one tick records (one row of the samples file):
- the tree: `pid` and every descendant, re-walked each tick (children appear and die during a run:
  a Spark worker starts a JVM which may start Python workers).  A process seen once stays tracked
  while it lives, even if it is re-parented out of the tree (daemonized).
- `rss_bytes`: sum of VmRSS over the tree, except that a child which forked and has not exec'd yet
  adds only its private pages (0 when it shares its parent's address space, as after vfork): a JVM
  forking a helper process must not look like it doubled.  Other shared pages (libraries) are
  counted once per process, like `ps`.
- `hwm_bytes`: the largest kernel VmHWM (peak RSS the kernel recorded) of any process seen so far.
- `cpu_s`, `cores`: CPU seconds used by the tree since the first sample, and cores busy over the last
  interval.  Counters are kept exact across exits: a process reaped by a parent in the tree has its
  time folded into that parent's `children_user/system` (and its I/O into the parent's /proc/<pid>/io)
  by the kernel, so the tree sum carries on; a process that leaves otherwise keeps its last reading.
  What is lost is at most one interval of a process's activity right before it exits unobserved.
- `read_bytes`/`write_bytes`: bytes that went to or came from the storage layer (io_counters, which
  is /proc/<pid>/io; page-cache hits are not disk reads), `read_chars`/`write_chars`: bytes passed
  through read()/write() calls (includes page-cache hits and pipes).
- `sys_mem_used_bytes`/`sys_mem_available_bytes`: the whole machine, for context.

The sampler runs in a thread of the calling process; its own CPU is measured (`self_cpu_s`) so its
cost can be reported (`bench selfcheck telemetry`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.core.fileio import write_atomic
from bench.core.records.telemetry import TelemetrySummary

SAMPLE_COLUMNS = (
    "t_s", "unix_time", "procs", "rss_bytes", "hwm_bytes", "cores", "cpu_s",
    "read_bytes", "write_bytes", "read_chars", "write_chars",
    "sys_mem_used_bytes", "sys_mem_available_bytes",
)
_COUNTERS = ("cpu", "rb", "wb", "rc", "wc")  # cumulative per-process counters, summed over the tree
_CLK_TCK = os.sysconf("SC_CLK_TCK")
_PF_FORKNOEXEC = 0x40  # task flag: forked but did not exec (include/linux/sched.h)
_ABSORB_TOLERANCE = {"cpu": 0.05, "rb": 4096, "wb": 4096, "rc": 4096, "wc": 4096}


@dataclass
class _Reading:
    ppid: int
    rss: int
    hwm: int
    counters: tuple[float, int, int, int, int]  # cpu incl. reaped children, rb, wb, rc, wc
    forked_no_exec: bool = False  # PF_FORKNOEXEC: still running its parent's image
    vmsize: int = 0


def _read(path: str, size: int = 8192) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def _status_memory(pid: int) -> tuple[int, int, int]:
    """(VmRSS, VmHWM, VmSize) in bytes from /proc/<pid>/status; a zombie has none (0, 0, 0)."""
    data = _read(f"/proc/{pid}/status")
    return (_kb_field(data, b"\nVmRSS:"), _kb_field(data, b"\nVmHWM:"),
            _kb_field(data, b"\nVmSize:"))


def _private_bytes(pid: int) -> int | None:
    """Pages mapped by this process only (Private_Clean + Private_Dirty of smaps_rollup)."""
    try:
        data = b"\n" + _read(f"/proc/{pid}/smaps_rollup", 4096)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return _kb_field(data, b"\nPrivate_Clean:") + _kb_field(data, b"\nPrivate_Dirty:")


def _kb_field(data: bytes, key: bytes) -> int:
    i = data.find(key)
    if i < 0:
        return 0
    j = i + len(key)
    return int(data[j:data.index(b"kB", j)]) * 1024


def _system_memory() -> tuple[int, int]:
    """(MemTotal, MemAvailable) in bytes from /proc/meminfo (what psutil.virtual_memory() reads)."""
    data = b"\n" + _read("/proc/meminfo")
    return _kb_field(data, b"\nMemTotal:"), _kb_field(data, b"\nMemAvailable:")


def _proc_io(pid: int) -> tuple[int, int, int, int]:
    """(read_bytes, write_bytes, rchar, wchar) from /proc/<pid>/io."""
    fields = {}
    for line in _read(f"/proc/{pid}/io").split(b"\n"):
        if b":" in line:
            k, v = line.split(b":", 1)
            fields[k.strip()] = int(v)
    return (fields.get(b"read_bytes", 0), fields.get(b"write_bytes", 0),
            fields.get(b"rchar", 0), fields.get(b"wchar", 0))


class Sampler:
    """Samples the process tree rooted at `pid` every `interval_s` seconds in a background thread."""

    def __init__(self, pid: int, interval_s: float = 0.1,
                 on_sample: Callable[[int], None] | None = None):
        """`on_sample(rss_bytes)`, if given, is called from the sampler thread after every tick with
        the tree's summed RSS (the memory watchdog, the progress line), except a tick that found no
        memory (the tree gone, or only zombies left: its last tick read 0 B, which the live progress line
        then kept showing as the engine's RSS).  An exception in it does not stop the sampling:
        it is kept in `callback_error` and the callback is not called again."""
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self.pid = pid
        self.interval_s = interval_s
        self.on_sample = on_sample
        self.callback_error: BaseException | None = None
        self.self_cpu_s = 0.0  # CPU used by the sampler thread itself
        self._prev: dict[int, _Reading] = {}
        self._dead = [0.0, 0, 0, 0, 0]  # counters of processes that left without being reaped by the tree
        self._base: list[float] | None = None
        self._hwm = 0
        self._t0 = 0.0
        self._last_t = 0.0
        self._last_cpu = 0.0
        self._rows: list[tuple] = []
        self._known: set[int] = set()  # every pid of the machine at the previous tick
        self._tree: set[int] = set()  # the pids of the tree
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._summary: TelemetrySummary | None = None
        self._lock = threading.Lock()
        self._tick_lock = threading.Lock()  # one tick at a time: the thread's and mark()'s

    # ---- life cycle ---------------------------------------------------------------------------
    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("sampler already started")
        self._t0 = time.monotonic()
        c0 = time.thread_time()
        self._tick()  # the baseline sample, taken synchronously
        self.self_cpu_s += time.thread_time() - c0
        self._thread = threading.Thread(target=self._loop, name=f"sampler-{self.pid}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> TelemetrySummary:
        """Take a last sample, stop the thread and return the summary.  Idempotent."""
        with self._lock:
            if self._summary is not None:
                return self._summary
            self._stop.set()
            if self._thread is not None:
                self._thread.join()
            self._summary = self._summarize()
            return self._summary

    @property
    def summary(self) -> TelemetrySummary:
        """The summary of the run (stops the sampler first if it is still running)."""
        return self.stop()

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def mark(self) -> dict:
        """Take one sample now (from another thread) and return it: the tree's counters at a moment the
        caller names (e.g. the end of the engine's setup)."""
        with self._tick_lock:
            self._tick()
            return self.last or {}

    @property
    def last(self) -> dict | None:
        """The latest sample (safe to call from `on_sample`)."""
        rows = self._rows
        return dict(zip(SAMPLE_COLUMNS, rows[-1])) if rows else None

    @property
    def samples(self) -> list[dict]:
        return [dict(zip(SAMPLE_COLUMNS, r)) for r in self._rows]

    # ---- sampling -----------------------------------------------------------------------------
    def _loop(self) -> None:
        c0 = time.thread_time()
        try:
            k = 1
            while True:
                due = self._t0 + k * self.interval_s
                if self._stop.wait(max(0.0, due - time.monotonic())):
                    break
                with self._tick_lock:
                    alive = self._tick()
                now = time.monotonic()
                k = max(k + 1, int((now - self._t0) / self.interval_s) + 1)  # skip missed ticks
                if not alive:
                    break  # the whole tree is gone: nothing more to see
            # the final sample at stop time, unless the tree is already known to be empty
            if self._stop.is_set() and (self._prev or not self._rows):
                with self._tick_lock:
                    self._tick()
        finally:
            self.self_cpu_s += time.thread_time() - c0

    def _tree_pids(self) -> set[int]:
        """The root and its descendants, re-walked from the process table each tick.

        psutil.pids() lists /proc; only the processes that appeared since the previous tick have
        their parent read (new pids are few), so a tick costs one directory listing plus the tree's
        own reads, not a read of every process on the machine.  A process of the tree stays in it
        while it lives, even when it is re-parented out of it (daemonized)."""
        listing = set(psutil.pids())
        new = sorted(listing - self._known)
        self._known = listing
        tree = self._tree
        tree &= listing
        if not self._rows and self.pid in listing:
            tree.add(self.pid)
        while new:  # a parent is usually older (a lower pid) than its child, but not always
            left = []
            for pid in new:
                try:
                    stat = _read(f"/proc/{pid}/stat", 4096)
                    ppid = int(stat[stat.rindex(b")") + 2:].split(None, 2)[1])
                except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
                    continue
                if ppid in tree:
                    tree.add(pid)
                else:
                    left.append(pid)
            if len(left) == len(new):
                break
            new = left
        return tree

    @staticmethod
    def _read_one(pid: int) -> _Reading | None:
        """One process's counters: /proc/<pid>/stat, /io and /status (the files psutil reads, read
        directly: this runs ~10 times a second per process and must stay cheap)."""
        try:
            stat = _read(f"/proc/{pid}/stat", 4096)
            try:
                rb, wb, rc, wc = _proc_io(pid)
            except PermissionError:
                io = psutil.Process(pid).io_counters()
                rb, wb, rc, wc = io.read_bytes, io.write_bytes, io.read_chars, io.write_chars
            rss, hwm, vmsize = _status_memory(pid)
        except (FileNotFoundError, ProcessLookupError, PermissionError, psutil.Error):
            return None
        f = stat[stat.rindex(b")") + 2:].split()  # f[0] is field 3 (state) of proc(5)
        cpu = (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / _CLK_TCK  # u+s+cu+cs
        return _Reading(int(f[1]), rss, hwm, (cpu, rb, wb, rc, wc),
                        bool(int(f[6]) & _PF_FORKNOEXEC), vmsize)

    @staticmethod
    def _rss_share(pid: int, r: _Reading, cur: dict[int, _Reading]) -> int:
        """What a process adds to the tree's RSS.  A child that forked but has not exec'd yet runs
        its parent's image: with vfork/CLONE_VM it *is* the parent's memory (same mm: identical
        VmHWM and VmSize), otherwise its copy-on-write pages are still the parent's; summing VmRSS
        would count them twice (a JVM forking a helper would seem to double for a moment)."""
        parent = cur.get(r.ppid)
        if not r.forked_no_exec or parent is None:
            return r.rss
        if r.hwm == parent.hwm and r.vmsize == parent.vmsize:
            return 0
        private = _private_bytes(pid)
        return r.rss if private is None else min(r.rss, private)

    def _tick(self) -> bool:
        """Take one sample; return whether any process of the tree is still alive."""
        now = time.monotonic()
        cur: dict[int, _Reading] = {}
        for pid in self._tree_pids():
            r = self._read_one(pid)
            if r is not None:
                cur[pid] = r
        self._account_gone(cur)
        self._prev = cur

        totals = list(self._dead)
        rss = 0
        for pid, r in cur.items():
            rss += self._rss_share(pid, r, cur)
            self._hwm = max(self._hwm, r.hwm)
            for i, v in enumerate(r.counters):
                totals[i] += v
        if self._base is None:
            self._base = totals
        rel = [t - b for t, b in zip(totals, self._base)]
        cpu_s = max(rel[0], self._last_cpu)  # monotonic despite rounding at exits
        if self._rows:
            dt = now - self._last_t
            cores = max(0.0, (cpu_s - self._last_cpu) / dt) if dt > 0 else 0.0
        else:
            cores = None
        self._last_t, self._last_cpu = now, cpu_s
        mem_total, mem_available = _system_memory()
        self._rows.append((
            now - self._t0, time.time(), len(cur), rss, self._hwm, cores, cpu_s,
            max(0, int(rel[1])), max(0, int(rel[2])), max(0, int(rel[3])), max(0, int(rel[4])),
            mem_total - mem_available, mem_available,
        ))
        if self.on_sample is not None and self.callback_error is None and rss > 0:
            try:
                self.on_sample(rss)
            except Exception as e:  # noqa: BLE001 - the sampler must keep sampling
                self.callback_error = e
        return bool(cur)

    def _account_gone(self, cur: dict[int, _Reading]) -> None:
        """Processes gone since the last tick: if their parent (still here) absorbed their counters
        (the kernel adds a reaped child's CPU and I/O to its parent), drop them; otherwise keep their
        last reading so the tree's totals never go backwards."""
        gone_by_parent: dict[int, list[float]] = {}
        for pid, r in self._prev.items():
            if pid not in cur:
                acc = gone_by_parent.setdefault(r.ppid, [0.0] * len(_COUNTERS))
                for i, v in enumerate(r.counters):
                    acc[i] += v
        for ppid, gone in gone_by_parent.items():
            parent_now, parent_before = cur.get(ppid), self._prev.get(ppid)
            for i, name in enumerate(_COUNTERS):
                absorbed = (parent_now is not None and parent_before is not None and
                            parent_now.counters[i] - parent_before.counters[i]
                            >= gone[i] - _ABSORB_TOLERANCE[name])
                if not absorbed:
                    self._dead[i] += gone[i]

    # ---- results ------------------------------------------------------------------------------
    def _summarize(self) -> TelemetrySummary:
        rows = self._rows
        if not rows:
            return TelemetrySummary(samples=0, interval_s=self.interval_s)
        import numpy as np

        cores = np.array([r[5] for r in rows if r[5] is not None], dtype=float)
        span = rows[-1][0] - rows[0][0]
        last = rows[-1]
        return TelemetrySummary(
            peak_rss_bytes=int(max(r[3] for r in rows)),
            peak_hwm_bytes=int(last[4]),
            mean_cores=round(float(last[6] / span), 4) if span > 0 else None,
            p95_cores=round(float(np.percentile(cores, 95)), 4) if cores.size else None,
            read_bytes=int(last[7]),
            write_bytes=int(last[8]),
            read_chars=int(last[9]),
            samples=len(rows),
            interval_s=self.interval_s,
        )

    def write_samples(self, path) -> Path:
        """Write every sample as a Parquet file (columns: SAMPLE_COLUMNS); returns the path."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        types = {"t_s": pa.float64(), "unix_time": pa.float64(), "procs": pa.int32(),
                 "cores": pa.float64(), "cpu_s": pa.float64()}
        cols: list[Sequence[Any]] = list(zip(*self._rows)) if self._rows else [[] for _ in SAMPLE_COLUMNS]
        schema = pa.schema([(c, types.get(c, pa.int64())) for c in SAMPLE_COLUMNS],
                           metadata={"pid": str(self.pid), "interval_s": str(self.interval_s)})
        table = pa.table([pa.array(list(col), type=schema.field(i).type)
                          for i, col in enumerate(cols)], schema=schema)
        buf = pa.BufferOutputStream()
        pq.write_table(table, buf)
        return write_atomic(path, buf.getvalue().to_pybytes())


def read_samples(path) -> object:
    """A samples file as a pandas DataFrame."""
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pandas()
