"""What the harness measured of an engine run from outside it: the process tree's memory, CPU and I/O, the
catalog server's work, and the limits it was held to (memory caps inside the engine, --storage-cap, --cores)."""

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
