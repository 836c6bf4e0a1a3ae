"""What the harness measured of an engine run from outside it: the process tree's memory, CPU and I/O, the
catalog server's work, the limits it was held to (memory caps inside the engine, --storage-cap, --cores), and how
often the engine opened the input's delete files while it compacted (`DeleteOpens`; the mechanism: each rewrite task
opens every delete file that may apply to its data files, so opens grow with data files x delete files).  The opens
are counted by the harness (bench.telemetry.opens), the same way for every engine; the engine may add how many read
tasks it ran (Spark: the tasks of its rewrite jobs), from which the mean per task follows."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class TelemetrySummary(BaseModel):
    peak_rss_bytes: int | None = None  # peak of the summed RSS of the engine's process tree
    peak_hwm_bytes: int | None = None  # largest kernel VmHWM of any process in the tree
    mean_cores: float | None = None
    p95_cores: float | None = None
    read_bytes: int | None = None
    write_bytes: int | None = None
    # rchar: every byte the tree read through read syscalls, from the page cache or not (a file read twice counts
    # twice; jars and libraries too): how often an engine re-reads its input, e.g. delete files per task
    read_chars: int | None = None
    samples: int = 0
    interval_s: float | None = None


class CatalogServerUsage(BaseModel):
    """Work the loopback REST catalog server did for the engine during its run: it runs outside the
    engine's process tree (it commits for REST clients), so it is measured and shown separately."""

    pid: int | None = None
    cpu_s: float | None = None
    peak_rss_bytes: int | None = None
    requests: int = 0
    commits: int = 0  # POST .../tables/{t} (a table commit)
    commit_s: float = 0.0  # time the server spent answering commits
    request_s: float = 0.0  # time the server spent answering all requests
    # the server's own failures during the run, e.g. "POST /v1/namespaces/n/tables/t 501": a run that failed after
    # one failed on the harness's side (a conformance cell on it is harness-cannot, not the engine's failure)
    server_errors: list[str] = Field(default_factory=list)


# What a memory cap limits: the heap of the engine's own process (a cluster's driver), the heap of each of
# a cluster's executors, direct (off-heap) memory, class metadata, or something else.
CapRole = Literal["heap", "executor-heap", "direct", "metaspace", "other"]


class MemoryCap(BaseModel):
    """A memory limit inside the engine (e.g. the JVM heap), below the harness's budget."""

    name: str  # for humans; readers go by `role`
    role: CapRole = "other"
    bytes: int | None = None  # None: no such limit
    source: str = ""  # how it was determined (e.g. "Runtime.maxMemory() of the JVM")


class StorageCap(BaseModel):
    """`--storage-cap`: how the engine's process tree was throttled on the warehouse's block device, and what
    reached the device from it.  Every written file was fsynced inside the timed compaction (phase `flush`)."""

    requested: str = ""  # as given, e.g. "125MiB/s" or "none" (no limit: flushed and counted like a capped run)
    mechanism: str = ""  # e.g. "cgroup v1 blkio throttle (read_bps/write_bps)"
    cgroup_version: str | None = None  # v1 | v2 | None (no limit set)
    device: str = ""  # the warehouse's whole disk: "vda 254:0"
    read_bytes_per_s: int | None = None  # None: reads not limited
    write_bytes_per_s: int | None = None
    flush_s: float | None = None  # the flush phase's seconds (inside duration_s)
    flushed_files: int = 0  # files the engine wrote (modified during its compaction) fsynced by the flush
    flushed_bytes: int = 0
    # fsynced while the engine compacted, every `writeback_interval_s`, by a thread of the engine's process
    # (inside its cgroup: a v1 write throttle sees those writes; dirty pages the kernel's flusher threads write
    # back belong to no cgroup)
    writeback_interval_s: float | None = None
    writeback_bytes: int = 0
    device_read_bytes: int | None = None  # what the device served the cgroup (the throttle's own counters)
    device_write_bytes: int | None = None  # written from inside the cgroup; the rest escaped (kernel writeback)


class CoreLimit(BaseModel):
    """`--cores N`: the CPUs the engine's process tree was confined to (the engine was told N)."""

    cores: int
    cpus: str = ""  # the CPU list, e.g. "0" or "0,1"
    mechanism: str = ""  # "cgroup v1 cpuset" | "cgroup v2 cpuset" | "sched_setaffinity ..."
    cgroup_version: str | None = None


OPENS_SOURCE = ("the harness: inotify IN_OPEN events on the table's directories (every open() of a file in them, "
                "by any process), from the moment the engine was told to compact until its process ended")


class DeleteOpens(BaseModel):
    source: str = OPENS_SOURCE
    delete_files: int = 0  # live before the run
    opened: int = 0  # distinct delete files opened at least once
    opens: int | None = None  # every open of a delete file (None: not counted; note says why)
    position_opens: int = 0
    equality_opens: int = 0
    per_file_min: int = 0  # opens per delete file, over every delete file live before the run (0: never opened)
    per_file_median: float = 0.0
    per_file_max: int = 0
    data_files: int = 0
    data_opens: int = 0  # opens of the input's data files
    tasks: int | None = None  # the engine's read tasks as it reported them (None: it reports none)
    opens_per_task: float | None = None  # opens / tasks: a mean (an open is not attributed to a task)
    lower_bound: bool = False  # the kernel merged or dropped events: the true counts are at least these
    watcher_cpu_s: float | None = None  # the harness's CPU time spent counting (beside the engine, same cores)
    # files whose opens were counted when the input was sampled (None: every file): the counts above are then the
    # sample's scaled to every file, the spread per file the sample's own (the note says so)
    watched_files: int | None = None
    note: str = ""

    def describe(self) -> str:
        """In words, as tables show it: opens of how many delete files, the spread per file, the mean per task."""
        if self.opens is None:
            return f"not counted ({self.note})" if self.note else "not counted"
        per_task = (f", {self.opens_per_task:,.1f} per task ({self.tasks:,} tasks)"
                    if self.opens_per_task is not None and self.tasks else "")
        about = "about " if self.watched_files is not None else ""
        return (f"{about}{self.opens:,}{' (at least)' if self.lower_bound else ''} opens of {about}{self.opened:,} of "
                f"{self.delete_files:,} delete files; per delete file min {self.per_file_min:,}, median "
                f"{self.per_file_median:,.0f}, max {self.per_file_max:,}{per_task}"
                + (f" ({self.note})" if self.note else ""))
