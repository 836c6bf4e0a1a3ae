"""How an engine run went, as the runner and the engine recorded it: its status, its phases, its deployment,
the page cache and the input before it, what its setup could reach, its cost, and a floor's physical bound."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

# ok: compaction finished (verified says whether the output is right); failed: the engine or the
# harness failed; oom: the memory budget was exceeded (kernel OOM kill in the engine's cgroup, or the
# RSS watchdog); heap-oom: the engine's own memory limit (e.g. the JVM heap) was hit below the
# budget; timeout: the time limit was exceeded.
Status = Literal["ok", "failed", "oom", "heap-oom", "timeout", "unsupported"]
EngineStatus = Literal["ok", "failed", "oom", "heap-oom", "timeout"]  # how an engine's process ended
# a streaming cycle's maintenance step: how its process ended, or none (the baseline runs no maintenance)
MaintenanceStatus = Literal[EngineStatus, "none"]
STATUSES: tuple[str, ...] = ("ok", "failed", "oom", "heap-oom", "timeout")


class Phase(BaseModel):
    """One step an engine took, timed in its subprocess with the same clock for every engine."""

    name: str
    seconds: float
    detail: str = ""
    started_unix: float | None = None  # wall-clock start (time.time()): places commits in their phase
    op: str = ""  # in a maintenance step: the operation it belongs to (bench.engines.base.MaintenanceOp.op)


# local: one process does the work (e.g. Spark's local[N]); standalone: a cluster the harness starts on this
# node; external: a cluster that already runs, the driver on this node; embedded: a library in the engine's
# process (no cluster, no executors)
DeployMode = Literal["local", "standalone", "external", "embedded"]
CLUSTER_MODES: tuple[str, ...] = ("standalone", "external")


class Deployment(BaseModel):
    """How an engine ran, as it reported it after its run (the engine fills it; readers never decode the
    engine's free-form `engine_settings`)."""

    mode: DeployMode
    master: str | None = None  # the cluster's master URL (local: Spark's local[N]; embedded: None)
    workers: int | None = None  # a cluster's workers (None: no cluster)
    executors: int | None = None  # processes that run tasks (None: the engine has no such notion)
    executor_cores: list[int] = Field(default_factory=list)  # per executor
    executor_memory_bytes: list[int] = Field(default_factory=list)  # per executor, as granted (clusters only)
    cores: int | None = None  # task slots in all (the executors' cores, or the cores an embedded engine used)
    nodes: int = 1  # machines the run used (this one, plus a cluster's other hosts): the cost counts each
    hosts: list[str] = Field(default_factory=list)  # the cluster's worker hosts
    # what bounds how many partitions (file groups) it writes at once, as it ran: its settings and the units of
    # work it reported planning (e.g. Spark's max-concurrent-file-group-rewrites and file groups); settings and
    # counts the engine gives, never a measurement (empty: it tells nothing of the kind)
    writes_at_once: dict[str, int] = Field(default_factory=dict)

    @property
    def on_cluster(self) -> bool:
        return self.mode in CLUSTER_MODES


class CacheState(BaseModel):
    """What the harness did to the page cache before the engine started."""

    mode: Literal["cold", "warm", "none"] = "none"
    requested: str = ""  # what was asked (--cache)
    dropped: bool = False  # the page cache was dropped (cold)
    warmed_bytes: int = 0  # bytes read to warm the cache (warm)
    synced: bool = False
    note: str = ""


class SetupIO(BaseModel):
    """What the engine could reach and did while it set up (open()), before its compaction's clock
    started.  By construction the table is parked for the whole setup: unregistered from the catalog
    and, on a local warehouse, its directory moved aside (on S3: its metadata files removed); it is
    restored, and the page cache dropped, only after open() returned.  The evidence: the storage reads
    of the engine's process tree during setup.  Judged where construction cannot reach (S3: the data
    objects stay where they are): a setup that read `max_share` of the input's bytes or more is not
    counted."""

    parked: str = ""  # how the table was out of reach during setup ("" = it was not)
    setup_read_bytes: int | None = None  # storage-layer reads of the process tree during setup
    setup_read_chars: int | None = None  # bytes through read() (incl. page-cache hits, sockets, jars)
    input_bytes: int = 0
    judged_on: str = ""  # which counter is judged ("" = construction alone decides)
    share: float | None = None  # that counter / input bytes
    max_share: float = 0.5
    restore_s: float | None = None  # the harness's restore and cache step between setup and compaction


class InputState(BaseModel):
    """The engine's input, measured after its reset."""

    fingerprint: str = ""  # sha256 over the table's files (path, size) and its metadata file
    identical_to_dataset: bool = False
    # what identical_to_dataset compared: every file's content hash (bench.core.table.hashes) against the
    # dataset's, or (S3, or a dataset recorded without hashes) paths and sizes only; "" in older results
    compared: str = ""
    hashed_now: int = 0  # files read and hashed for this run (the others' hashes held: their ctime unchanged)
    metadata_location: str | None = None
    files: int = 0
    # dataset files an earlier run had deleted (e.g. its snapshot expiry), put back from the dataset's vault
    restored_from_vault: int = 0


class Cost(BaseModel):
    instance_type: str = ""
    usd_per_hour: float = 0.0
    region: str = ""
    price_date: str = ""
    basis: str = ""
    duration_s: float | None = None
    compute_usd: float | None = None
    total_usd: float | None = None
    hypothetical: bool = True  # the price of `instance_type` applied to another machine's time
    nodes: int = 1  # instances paid for the run's duration
    note: str = ""
    storage_usd: float | None = None  # the EBS gp3 term, when asked (in total_usd)
    s3_usd: float | None = None  # the S3 request term, when asked (in total_usd)
    extra: dict[str, Any] = Field(default_factory=dict)  # how the storage and S3 terms were computed


class BoundRates(BaseModel):
    """The rates a physical bound was built from (bench.core.rates.TableRates, measured on the table's files)."""

    read_mb_s: float = 0.0
    decode_mb_s_per_core: float = 0.0
    encode_rows_s_per_core: float = 0.0
    join_rows_s_per_core: float = 0.0
    measured_at: str = ""
    table: str = ""
    libraries: dict[str, str] = Field(default_factory=dict)  # decode, encode_<codec>: the faster library measured


class PhysicalBound(BaseModel):
    """The least time a rewrite's bytes and rows can take on the cores given, from this machine's measured rates
    (bench.core.rates.physical_bound); or, `missing`, why there is none."""

    seconds: float | None = None
    idle_seconds: float | None = None  # with each core to itself (the rates per CPU-second)
    limited_by: str = ""  # device read | CPU
    read_s: float = 0.0
    cpu_s: float = 0.0
    decode_cpu_s: float = 0.0
    encode_cpu_s: float = 0.0
    join_cpu_s: float = 0.0
    cores: float = 0.0
    read_bytes: int = 0
    data_bytes: int = 0
    rows_out: int = 0
    join_rows: int = 0
    codec: str = ""
    rates: BoundRates = Field(default_factory=BoundRates)
    missing: str = ""
    basis: str = ""  # the rates `seconds` is built from: "rates per CPU-second" | "wall-clock rates" ("": older)
    covers: list[str] = Field(default_factory=list)  # the run's phases that do the bound's work ([]: the compaction)
    measured_s: float | None = None  # their time in the run that recorded the bound (bench.core.rates.check_bound)
    beaten: str = ""  # the self-check's line when measured_s is below seconds: the bound is not one
