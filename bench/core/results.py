"""The result record: one typed record per engine run, serialized as JSON, written atomically.

Layout of a run directory (`results/<run-id>/`):
    run.json                                   the run's state: running | complete | interrupted (RunState)
    <scenario>--<engine>--rep<N>.json          one RunResult per engine run (never overwritten)
    work/<scenario>--<engine>--rep<N>/         the engine's job, log and 10 Hz samples
The report and every other consumer read only these files, never live state.  A result carries the
scenario as it was run (its content and hash) and its cost as computed when it ran, so an old result
is always described with its own numbers.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bench.core.expected import Expected
from bench.core.fileio import write_atomic
from bench.core.opens import DeleteOpens
from bench.core.published import PUBLISHED_INSTANCE, PUBLISHED_MACHINE
from bench.core.source_records import OtherCommit, RefPin
from bench.core.spread import Spread

# ok: compaction finished (verified says whether the output is right); failed: the engine or the
# harness failed; oom: the memory budget was exceeded (kernel OOM kill in the engine's cgroup, or the
# RSS watchdog); heap-oom: the engine's own memory limit (e.g. the JVM heap) was hit below the
# budget; timeout: the time limit was exceeded.
Status = Literal["ok", "failed", "oom", "heap-oom", "timeout", "unsupported"]
EngineStatus = Literal["ok", "failed", "oom", "heap-oom", "timeout"]  # how an engine's process ended
# a streaming cycle's maintenance step: how its process ended, or none (the baseline runs no maintenance)
MaintenanceStatus = Literal[EngineStatus, "none"]
STATUSES: tuple[str, ...] = ("ok", "failed", "oom", "heap-oom", "timeout")
SCHEMA_VERSION = 2
RUN_STATE_FILE = "run.json"


class Phase(BaseModel):
    """One step an engine took, timed in its subprocess with the same clock for every engine."""

    name: str
    seconds: float
    detail: str = ""
    started_unix: float | None = None  # wall-clock start (time.time()): places commits in their phase
    op: str = ""  # in a maintenance step: the operation it belongs to (bench.engines.base.MaintenanceOp.op)


# What a memory cap limits: the heap of the engine's own process (a cluster's driver), the heap of each of
# a cluster's executors, direct (off-heap) memory, class metadata, or something else.
CapRole = Literal["heap", "executor-heap", "direct", "metaspace", "other"]


class MemoryCap(BaseModel):
    """A memory limit inside the engine (e.g. the JVM heap), below the harness's budget."""

    name: str  # for humans; readers go by `role`
    role: CapRole = "other"
    bytes: int | None = None  # None: no such limit
    source: str = ""  # how it was determined (e.g. "Runtime.maxMemory() of the JVM")


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


class FileFacts(BaseModel):
    """Parquet facts of one file, from its footer (an ORC or Avro data file: its format and codec)."""

    path: str
    size: int
    format: str = "parquet"  # parquet | orc | avro
    codecs: list[str] = Field(default_factory=list)  # lower case: snappy, zstd, uncompressed, ...
    row_groups: int = 0
    uncompressed_bytes: int = 0  # Parquet's uncompressed page bytes (the logical size)
    field_ids: bool = True  # every column carries a Parquet field id


class TableStats(BaseModel):
    """What a table looks like at one snapshot, measured by the harness (not by an engine)."""

    snapshot_id: int | None = None
    metadata_location: str | None = None
    rows: int = 0
    checksum: str = ""  # order-independent content checksum over all columns
    data_files: int = 0
    delete_files: int = 0
    position_delete_files: int = 0
    equality_delete_files: int = 0
    data_bytes: int = 0
    delete_bytes: int = 0
    uncompressed_bytes: int = 0  # logical size of the live data files (Parquet uncompressed bytes)
    codecs: list[str] = Field(default_factory=list)  # Parquet codecs found in live data files
    row_groups: int = 0
    avg_row_group_bytes: float = 0.0
    file_size_min: int = 0
    file_size_median: int = 0
    file_size_max: int = 0
    # live delete files no live data file can be affected by (Iceberg v2 sequence-number rules);
    # position_delete_files - dangling_position_delete_files still apply (likewise for equality)
    dangling_position_delete_files: int = 0
    dangling_equality_delete_files: int = 0
    content_reader: str = ""  # which reader produced rows/checksum


class ReaderAnswer(BaseModel):
    """One content reader's answer on a snapshot (bench.verify.readers): its rows and checksum, or why it could
    not read (`unavailable`: it does not apply to this table; `error`: it failed on it)."""

    reader: str
    resolves: str = ""  # how it finds columns: field id, name, catalog
    rows: int | None = None
    checksum: str | None = None
    unavailable: str | None = None
    error: str | None = None
    within: str | None = None  # read_selected: the partition filter it read under
    # why its answer is advisory (it resolved columns by name where the schema history makes names ambiguous)
    advisory: str | None = None

    @field_validator("checksum", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return None if v is None else str(v)

    @property
    def answered(self) -> bool:
        return self.rows is not None

    @property
    def why_not(self) -> str:
        return self.unavailable or self.error or ""

    @property
    def content(self) -> tuple[int | None, str | None]:
        return self.rows, self.checksum

    def got(self) -> tuple[int, str]:
        """(rows, checksum) of a reader that answered (ValueError otherwise)."""
        if self.rows is None or self.checksum is None:
            raise ValueError(f"{self.reader} did not answer: {self.why_not}")
        return self.rows, self.checksum


class ReaderFinding(BaseModel):
    """A reader that disagreed with the reference reader (Iceberg's Java library) on a snapshot: a fact about that
    reader (a limitation of a third-party reader), not a reason to refuse the table; the reference decided."""

    reader: str
    resolves: str = ""
    on: str  # "the source snapshot" | "the output"
    rows: int | None = None
    checksum: str | None = None
    error: str | None = None  # the reader failed on a table the reference read
    reference_rows: int
    reference_checksum: str
    # whom it disagreed with: the reference reader, or a conformance case's expected rows (its checksum then "")
    against: str = "the reference reader (Iceberg's Java library)"

    def text(self) -> str:
        got = (f"failed ({self.error})" if self.error is not None else
               f"reads {self.rows} rows" + (f" (checksum {self.checksum})" if self.reference_checksum else ""))
        return (f"{self.reader} ({self.resolves}) {got} on {self.on}; {self.against} "
                + (f"reads {self.reference_rows} rows (checksum {self.reference_checksum})" if self.reference_checksum
                   else f"state {self.reference_rows} rows"))


Whose = Literal["engine", "harness", "reader"]
About = Literal["rows", "metadata"]


class Check(BaseModel):
    """One verification check: required checks decide `verified`; advisory ones are only shown.  A check declares
    whose fault its failure is (`whose`: the engine's output, the harness's own work - its input, clone, catalog,
    setup rule -, or a reader's answer) and what it is about (`about`: the rows, or the rest of the output: snapshot
    summary, stats, types, refs, files), so a conformance verdict names the culprit without guessing from names."""

    name: str
    ok: bool
    message: str = ""  # what was compared; on failure, what differs
    required: bool = True
    whose: Whose = "engine"
    about: About = "metadata"


class CommitEvent(BaseModel):
    """One snapshot committed after the dataset's, in commit (sequence number) order."""

    who: Literal["writer", "engine"]
    snapshot_id: int
    parent_id: int | None = None
    sequence_number: int | None = None
    operation: str = ""
    timestamp_ms: int = 0
    added_files: int | None = None
    deleted_files: int | None = None
    step: str = ""  # the step that committed it, when its summary says (bench.step)


def difference(c: Check) -> str:
    """How a failed check is listed in `Verification.differences`."""
    return f"{c.name}: {c.message}" + ("" if c.required else " (advisory)")


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


class RowDifference(BaseModel):
    """An output's rows against its input's (bench.verify.rows): how many came back (deleted rows resurrected,
    or rows that were never there) and were lost, and a few of each."""

    came_back: int = 0
    lost: int = 0
    came_back_rows: list[dict[str, Any]] = Field(default_factory=list)
    lost_rows: list[dict[str, Any]] = Field(default_factory=list)


class Verification(BaseModel):
    verified: bool = False
    checks: list[Check] = Field(default_factory=list)
    differences: list[str] = Field(default_factory=list)  # "<check>: <message>" of every failed check
    rules: list[str] = Field(default_factory=list)  # the rules applied, in words (e.g. completeness)
    reader: str = ""  # how the content was read back
    readers: dict[str, Any] = Field(default_factory=dict)  # every reader's answer (or why it could not)
    committed: list[CommitEvent] = Field(default_factory=list)  # the snapshots the run committed, in order
    # the content differs from the input's: which rows came back and which were lost (bench.verify.rows)
    rows: RowDifference | None = None
    findings: list[ReaderFinding] = Field(default_factory=list)  # readers the reference reader overruled

    @field_validator("checks", mode="before")
    @classmethod
    def _v1_checks(cls, v: Any, info: Any) -> Any:
        """Results of schema 1 stored checks as {name: ok}."""
        if isinstance(v, dict):
            return [{"name": k, "ok": bool(ok)} for k, ok in v.items()]
        return v

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def add(self, *checks: Check) -> bool:
        """Checks decided after the verifier's own (the setup rule, a live run's): each failed one noted in
        `differences` as the verifier notes them, a failed required one unverifies.  False when one did."""
        self.checks += checks
        self.differences += [difference(c) for c in checks if not c.ok]
        if any(c.required and not c.ok for c in checks):
            self.verified = False
            return False
        return True

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]


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


class LiveWriterRecord(BaseModel):
    """A live-writer run: a writer committed to the table while the engine compacted it.

    verdict: `safe` (the table equals the expected end state, the engine's compaction committed, with
    or without a retry), `refused` (the engine failed on the conflict and committed nothing: the
    table equals the expected end state without its compaction), `unsafe` (rows lost or deleted rows
    back), `inconclusive` (the commits did not interleave as planned, or the engine failed for another
    reason: a timeout, out of memory; or it ended ok without committing)."""

    case: str  # append | position-delete | equality-delete
    description: str = ""
    rows: int = 0  # rows the writer appended or deleted
    target_file: str | None = None
    hold: str = ""  # how the engine was held between its planning and its commit ("" = never)
    held_s: float | None = None  # how long the engine was held (inside its measured duration)
    writer_commit_s: float | None = None
    writer_snapshot_id: int | None = None
    commits: list[CommitEvent] = Field(default_factory=list)
    order: list[str] = Field(default_factory=list)  # who committed, in order (e.g. writer, engine)
    interleaved: bool = False  # the writer's commit landed after the engine planned, before its commit
    expected_rows: int = 0
    expected_checksum: str = ""
    readers: list[ReaderAnswer] = Field(default_factory=list)  # each reader's answer on the end state
    verdict: Literal["safe", "refused", "unsafe", "inconclusive", "unsupported"] = "inconclusive"
    reason: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict)  # which rows, which snapshots
    # copy-on-write through two branches (--cow-branch): the writer and the compactor work on `branch`,
    # the harness then publishes the compactor's snapshot to main; main's readers must see no delete file
    branch: str | None = None
    published_snapshot_id: int | None = None
    publish_s: float | None = None
    main_delete_files: int | None = None  # live delete files of main after the publish (None: nothing published)


class MaintenanceResult(BaseModel):
    """One operation of a maintenance step as the engine ran it: which, as the scenario described it, and
    the engine's own result object of it (opaque to the harness, kept in the result)."""

    op: Literal["expire_snapshots", "compact", "rewrite_manifests"]
    describe: str
    result: dict[str, Any] = Field(default_factory=dict)


class CycleRecord(BaseModel):
    """One cycle of a streaming run: the writer's commits, the maintenance step (none for the baseline), and
    the table measured and verified after it (bench.runner.streaming)."""

    cycle: int  # 1-based
    # the writer
    commits: int = 0  # writer commits that landed in this cycle
    commits_failed: int = 0  # that never landed (after the writer's retries)
    commits_during_maintenance: int = 0  # concurrent/branch modes: landed while the maintenance process ran
    writer_retries: int = 0  # the writer's own retries after a failed commit (Iceberg retries inside a commit too)
    writer_conflicts: list[str] = Field(default_factory=list)  # why a writer commit failed (first few)
    writer_commit_s_mean: float | None = None
    writer_commit_s_max: float | None = None
    rows_ingested: int = 0  # rows in the data files the writer committed (new rows and new versions)
    bytes_ingested: int = 0  # data and delete files the writer committed
    files_ingested: int = 0  # data and delete files the writer committed (in commits that landed)
    writer_conflict_count: int = 0  # commit conflicts the writer met (each retried or, the last, failing its commit)
    manifests_created: int = 0  # new manifest files under metadata/ in the cycle (the writer's and the maintenance's)
    # the maintenance step
    maintenance_status: MaintenanceStatus = "none"
    maintenance_error: str | None = None
    maintenance_s: float | None = None  # the engine's maintenance (the sum of `phases`; setup excluded)
    setup_s: float | None = None  # the engine process's setup (session start), not maintenance time
    setup_parked: str = ""  # how the table was out of the engine's reach while it set up ("" = it was not)
    phases: list[Phase] = Field(default_factory=list)  # "<op>: <step>"
    op_seconds: dict[str, float] = Field(default_factory=dict)  # per operation
    op_results: list[MaintenanceResult] = Field(default_factory=list)  # each operation as the engine ran it
    maintenance_snapshots: int = 0  # snapshots the maintenance committed that are in the table's history
    maintenance_not_landed: int = 0  # maintenance steps that ended without their commit (failed, conflict)
    # commit conflicts the maintenance met: 409 answers of the REST catalog to its commits, and the retries and
    # conflicts its log names (Iceberg Java's "Retrying task after failure", CommitFailedException, ...)
    maintenance_conflicts: int = 0
    conflict_evidence: list[str] = Field(default_factory=list)
    bytes_read: int = 0  # live data and delete files the maintenance removed (it read at least these)
    bytes_written: int = 0  # data and delete files the maintenance wrote (new files under data/, not the writer's)
    metadata_bytes_written: int = 0  # new files under metadata/ during the step (with the writer's in concurrent mode)
    process_read_bytes: int | None = None  # the engine process tree's storage reads (telemetry)
    process_write_bytes: int | None = None
    storage_cap: StorageCap | None = None  # --storage-cap: this cycle's maintenance, throttled and flushed
    peak_rss_bytes: int | None = None
    mean_cores: float | None = None
    cost_usd: float | None = None  # the maintenance time priced like a compaction (bench.core.cost)
    # the table after the cycle (main in branch mode, as readers see it): files and bytes from the manifests, rows
    # and checksum as the first reader that answered read them
    table: TableStats = Field(default_factory=TableStats)
    manifests: int = 0
    snapshots: int = 0
    metadata_bytes: int = 0  # metadata.json + manifest list + manifests of the current snapshot
    # every file under the table's location after the cycle (data/ and metadata/): what the table costs in storage,
    # live or not (an expiry that deletes the files it made unreachable keeps it down; one that does not, not)
    stored_files: int = 0
    stored_bytes: int = 0
    planning_s: float | None = None  # pyiceberg's plan_files over the current snapshot
    reads: dict[str, float] = Field(default_factory=dict)  # query -> seconds (DuckDB iceberg, warm)
    reads_ok: bool = False  # every query answered as the generator says
    reads_message: str = ""
    # the table's integrity across the cycle's maintenance (bench.verify.streaming.cycle_integrity): identity, history
    # (unless the cycle expired snapshots), every maintenance commit a `replace`
    integrity: list[Check] = Field(default_factory=list)
    # verification against the generator
    expected_rows: int = 0
    expected_checksum: str = ""
    readers: list[ReaderAnswer] = Field(default_factory=list)
    content_ok: bool = False
    verdict: Literal["safe", "unsafe", "inconclusive", "unsupported"] = "inconclusive"
    reason: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict)
    # branch mode: the writer on `ingest`, maintenance publishes to main
    ingest_snapshot_id: int | None = None
    published: bool = False
    main_lag_commits: int | None = None  # writer commits on ingest that main does not have
    main_lag_s: float | None = None  # ingest head's commit time minus that of main's newest writer commit


class StreamingTotals(BaseModel):
    cycles: int = 0
    commits: int = 0
    commits_failed: int = 0
    writer_retries: int = 0
    writer_conflicts: int = 0  # commit conflicts the writer met
    writer_commit_s_mean: float | None = None
    rows_ingested: int = 0
    bytes_ingested: int = 0
    files_ingested: int = 0  # data and delete files the writer committed
    manifests_created: int = 0  # manifest files written (the writer's and the maintenance's)
    files_per_gb: float | None = None  # files_ingested per GB (1e9 bytes) ingested
    manifests_per_gb: float | None = None  # manifests_created per GB ingested
    maintenance_commits: int = 0  # snapshots the maintenance committed (the compactor's commits)
    maintenance_s: float = 0.0
    cost_usd: float = 0.0
    bytes_read: int = 0
    bytes_written: int = 0
    maintenance_s_per_gb: float | None = None  # maintenance seconds per GB (1e9 bytes) ingested
    cost_usd_per_gb: float | None = None
    write_amplification: float | None = None  # bytes maintenance wrote / bytes ingested
    maintenance_not_landed: int = 0
    maintenance_conflicts: int = 0
    unsafe_cycles: int = 0
    first_unsafe_cycle: int | None = None
    all_cycles_safe: bool = False  # every cycle ran and its verdict is safe
    final_reads: dict[str, float] = Field(default_factory=dict)
    final_planning_s: float | None = None
    final_stored_bytes: int | None = None  # every file under the table's location after the last cycle
    final_reads_vs_baseline: dict[str, float] = Field(default_factory=dict)  # baseline seconds / this run's
    max_main_lag_commits: int | None = None  # branch mode


class SinkRecord(BaseModel):
    """The append sink of a `sink-*` streaming scenario (datagen.sink), as run: its figures and what they are at
    the run's scale (the time-compression rule)."""

    preset: str = ""
    batch_size: int = 0
    flush_interval_s: float = 0.0
    target_file_size_bytes: int = 0
    codec: str = ""
    events_per_s: float = 0.0
    flush_s: float = 0.0  # stream seconds between flushes: min(flush interval, batch size / event rate)
    cycle_s: float = 0.0  # stream seconds per cycle
    rows_per_flush: int = 0  # at the run's scale
    flushes_per_cycle: int = 0
    target_file_bytes_at_scale: int = 0
    cadence_s: float = 0.0  # wall seconds between flushes in concurrent and branch modes
    partitioning: str = ""  # the table's partition spec
    retry_backoff_ms: list[int] = Field(default_factory=list)


class StreamingRecord(BaseModel):
    """A streaming scenario's engine run (or the baseline `none`): one record per cycle, and the totals."""

    mode: Literal["sequential", "concurrent", "branch"] = "sequential"
    baseline: bool = False  # no maintenance: what the table becomes without any
    cycles_planned: int = 0
    commits_per_cycle: int = 0
    rows_per_commit: int = 0
    cadence_s: float = 0.0
    maintenance: list[str] = Field(default_factory=list)  # the operations, in order, as run
    sink: SinkRecord | None = None  # the writer is an append sink (datagen.sink), not the CDC writer
    cycles: list[CycleRecord] = Field(default_factory=list)
    totals: StreamingTotals = Field(default_factory=StreamingTotals)


class _Facts(BaseModel):
    """Machine facts: the fields readers use are typed; any other fact is kept as recorded (for humans)."""

    model_config = ConfigDict(extra="allow")


class CpuFacts(_Facts):
    model: str | None = None
    logical_cores: int | None = None
    usable_cores: int | None = None  # the cores this process may run on (affinity)
    cgroup_cpu_limit: float | None = None


class MemoryFacts(_Facts):
    total_bytes: int | None = None
    swap_bytes: int | None = None
    cgroup_limit_bytes: int | None = None


class DiskFacts(_Facts):
    """The file system holding the warehouse (or, for a remote one, the local state)."""

    device: str | None = None
    fstype: str | None = None
    total_bytes: int | None = None
    free_bytes: int | None = None
    rotational: bool | None = None
    rotational_note: str | None = None


class OsFacts(_Facts):
    distribution: str | None = None
    kernel: str | None = None


class VersionFacts(_Facts):
    version: str | None = None


class Environment(_Facts):
    """What the measurement depends on, recorded in every result (bench.core.machine.environment); no
    hostname, user name or address."""

    packages: dict[str, str | None] = Field(default_factory=dict)
    python: VersionFacts = Field(default_factory=VersionFacts)
    java: VersionFacts = Field(default_factory=VersionFacts)
    cpu: CpuFacts = Field(default_factory=CpuFacts)
    memory: MemoryFacts = Field(default_factory=MemoryFacts)
    disk: DiskFacts = Field(default_factory=DiskFacts)
    os: OsFacts = Field(default_factory=OsFacts)
    instance_type: str | None = None  # the EC2 instance type measured on (None: not a known one)
    warehouse: dict[str, Any] | None = None  # where the warehouse was (no secrets)

    @property
    def cores(self) -> int | None:
        """The node's cores: usable, else logical."""
        return self.cpu.usable_cores or self.cpu.logical_cores

    def describe(self) -> str:
        """One line for a report headline, e.g. 'Intel Xeon ... , 2 cores, 23.5 GiB RAM, ext4 SSD'."""
        cpu, mem, disk = self.cpu, self.memory, self.disk
        parts = [str(x) for x in (self.instance_type, cpu.model) if x]
        if self.cores:
            parts.append(f"{self.cores} cores")
        if mem.total_bytes:
            parts.append(f"{mem.total_bytes / 2**30:.1f} GiB RAM")
        if disk.fstype:
            rotational = disk.rotational
            kind = "" if disk.rotational_note or rotational is None else ("HDD" if rotational else "SSD")
            parts.append(f"{disk.fstype} {kind}".strip())
        return ", ".join(parts) or "unknown machine"


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


class Published(BaseModel):
    """The published figures of a scenario, shown beside the measured ones in the report."""

    model_config = ConfigDict(extra="forbid")

    source: str = ""
    scale: float = 1.0
    machine: str = PUBLISHED_MACHINE
    instance_type: str = PUBLISHED_INSTANCE
    logical_bytes: int | None = None  # the input's uncompressed size the published time is for
    duration_s: dict[str, float | None] = Field(default_factory=dict)  # engine -> seconds (None = OOM)
    status: dict[str, str] = Field(default_factory=dict)
    notes: str = ""


class TableShape(BaseModel):
    """The parts of a scenario's table that readers use: how many files the full-size table has."""

    files: int | None = None  # small-files tables
    data_files: int | None = None  # tables with deletes: data and delete files
    position_delete_files: int | None = None
    equality_delete_files: int | None = None

    @property
    def total_files(self) -> int | None:
        if self.files is not None:
            return self.files
        parts = [self.data_files, self.position_delete_files, self.equality_delete_files]
        return sum(p or 0 for p in parts) if any(parts) else None


class ScenarioRecord(BaseModel):
    """The scenario exactly as it was run."""

    name: str = ""
    sha256: str = ""  # of the validated content (canonical JSON)
    content: dict[str, Any] = Field(default_factory=dict)

    def published(self) -> Published | None:
        raw = self.content.get("published")
        return Published.model_validate(raw) if raw else None

    @property
    def description(self) -> str:
        return str(self.content.get("description") or "").strip()

    def table(self) -> TableShape:
        return TableShape.model_validate(self.content.get("table") or {})


READ_QUERIES: tuple[str, ...] = ("full-scan", "key-range", "point-lookup", "recent-partition")


class ReadQuery(BaseModel):
    """One reader query over the key column v2 (bench.reads builds its SQL; datagen its ground truth):
    full-scan (no bounds), key-range (v2 BETWEEN lo AND hi), point-lookup (v2 = lo = hi); and on a
    time-partitioned table recent-partition: count and sum over the newest period (`column` >= `literal`,
    `lo` the same bound in Iceberg's representation of the column: days or microseconds)."""

    name: Literal["full-scan", "key-range", "point-lookup", "recent-partition"]
    lo: int | None = None
    hi: int | None = None
    column: str | None = None  # recent-partition: the time column
    literal: str | None = None  # recent-partition: its lower bound as a SQL literal, e.g. DATE '2025-12-31'


class QueryRead(BaseModel):
    """One query timed on the table before compaction and after it, with the same reader and cache
    policy.  Answers: [count, sum(quantity)] for the aggregates; [rows, content checksum] (as
    bench.core.checksum) of the fetched rows for the point lookup; as strings (exact big integers)."""

    name: str
    sql: str
    before_s: float | None = None
    after_s: float | None = None
    ratio: float | None = None  # before_s / after_s: > 1 means the reader gained from the compaction
    before: list[str] | None = None
    after: list[str] | None = None
    truth: list[str] = Field(default_factory=list)  # from the generator, never read from the table
    ok: bool = False  # every answer measured equals the truth (before, and after when measured)
    message: str = ""
    files_opened_before: int | None = None
    files_opened_after: int | None = None
    delete_files_merged_before: int | None = None
    delete_files_merged_after: int | None = None
    counts_source: str = ""  # how files opened / delete files merged were obtained


class ReadsRecord(BaseModel):
    """Read amplification: reader queries timed before the compaction (the dataset snapshot) and after
    it (the snapshot verified).  The timings are a separate measurement; the answers after are a check of the
    output (`reader_queries`, bench.runner.reads.answers_check)."""

    reader: str = ""  # duckdb-iceberg | spark-sql | "" (none could read the table)
    reader_reason: str = ""  # why this reader (or `reader unavailable: <why>`)
    cache: str = ""  # cold | warm | none: as the run's cache policy, applied before each timed query
    cache_note: str = ""
    truth_source: str = ""
    ok: bool = False  # every query's answers equal the truth, and before equals after
    message: str = ""  # what failed, when not ok
    after_measured: bool = False
    after_note: str = ""  # why after is missing, or that the run was unverified
    after_usable: bool = False  # after timings may enter statistics: the run was ok and verified
    queries: list[QueryRead] = Field(default_factory=list)

    def query(self, name: str) -> QueryRead | None:
        return next((q for q in self.queries if q.name == name), None)


class PartitionOutcome(BaseModel):
    """A partitioned table's compaction, partition by partition (bench.verify.untouched): how many partitions the
    table has, how many the partition filter selects (all without one), how many the run rewrote (their live files
    changed) and left untouched, and the data and delete files per partition before and after."""

    spec: str = ""  # the partition spec, e.g. "[1000: event_date: identity(12)]"
    filter: str | None = None  # the resolved partition filter (None: the whole table)
    partitions: int = 0  # partitions with a live file before or after the run
    selected: int = 0
    rewritten: int = 0  # partitions whose live files changed
    untouched: int = 0  # partitions whose live files are the input's (paths)
    rewritten_outside_filter: int = 0  # rewritten partitions the filter does not select (must be 0)
    data_files_before: Spread = Field(default_factory=Spread)  # per partition
    data_files_after: Spread = Field(default_factory=Spread)
    delete_files_before: Spread = Field(default_factory=Spread)
    delete_files_after: Spread = Field(default_factory=Spread)
    most_files_left: str = ""  # the partition with the most live data files after the run (its path)
    most_files_left_count: int = 0
    most_files_left_selected: bool = True  # whether the filter selects it


class TouchedCase(BaseModel):
    """A conformance case the shape of a user's table touches (datagen.conformance.touched)."""

    case: str
    covers: list[str] = Field(default_factory=list)  # the case's shapes, in words
    because: list[str] = Field(default_factory=list)  # the table's facts that touch it: "FACT: detail"


class SourceRecord(BaseModel):
    """A run on a table the harness did not generate (`--source-table`): what was cloned, and the proof
    that the original did not change (its fingerprint before the run and after this engine run)."""

    catalog_file: str = ""
    table: str = ""  # the source's NAMESPACE.TABLE in its own catalog
    snapshot_id: int | None = None  # the snapshot cloned
    metadata_location: str = ""  # the source's metadata file when it was cloned
    clone: str = ""  # the clone's identifier in the harness's catalog (what engines got)
    fingerprint_before: str = ""  # bench.core.source.SourceFingerprint.digest before the run
    fingerprint_after: str = ""  # ... after this engine run
    files: int = 0  # files the fingerprint covers
    unchanged: bool | None = None  # None: not checked (the run ended before)
    differences: list[str] = Field(default_factory=list)
    # its shape (bench.core.table.shape: fact -> detail) and the conformance cases that shape touches
    # (scenarios/conformance/cases.yaml `touches`); empty in results written before they were recorded
    shape: dict[str, str] = Field(default_factory=dict)
    touches: list[TouchedCase] = Field(default_factory=list)
    untested: list[str] = Field(default_factory=list)  # shape facts of the table no conformance case stands for
    shape_error: str = ""  # why the shape could not be read ("" = it was, or it was not asked)
    # pinned, not frozen (bench.core.pin): others' commits since the pin are facts, never a failure
    commits_by_others: list[OtherCommit] = Field(default_factory=list)
    source_refs_moved: list[str] = Field(default_factory=list)  # the source's own refs others moved since the pin
    refs: list[RefPin] = Field(default_factory=list)  # the refs the clone carries (main first), after this run
    gone: list[str] = Field(default_factory=list)  # pinned files gone from the source (the owner's maintenance)
    gone_between: list[str] = Field(default_factory=list)  # [last seen all there, first seen gone] (ISO times)
    pin_s: float | None = None  # seconds taking the pin took (before the run)
    observe_s: float | None = None  # seconds checking the source against it after this engine run


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


class RunResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    schema_version: int = SCHEMA_VERSION
    run_id: str
    scenario: str
    engine: str  # the engine run's label: NAME or NAME:PROFILE (what statistics and reports group by)
    engine_name: str = ""  # the engine (registry name) behind the label ("" in older results: = engine)
    profile: str | None = None  # the profile of NAME:PROFILE (scenarios/profiles/NAME/PROFILE.yaml)
    engine_options: dict[str, Any] = Field(default_factory=dict)  # the options the engine ran with
    commits: Literal["table", "none"] = "table"  # "none": an engine that writes files and commits nothing
    cores: int | None = None  # cores the engine was given
    nodes: int = 1  # machines the run used (a cluster's hosts); the cost counts every one
    rep: int = 0
    warmup: bool = False
    scale: float  # the input's bytes and rows (1.0 = the published size)
    file_scale: float | None = None  # its file counts (--file-scale; None in older results: = scale)
    seed: int
    dataset: str = ""  # table identifier the run compacted
    dataset_recipe_hash: str = ""
    scenario_record: ScenarioRecord = Field(default_factory=ScenarioRecord)
    status: Status
    verified: bool = False
    error: str | None = None
    error_causes: list[str] = Field(default_factory=list)  # the engine's failure chain, outermost first
    log_tail: list[str] = Field(default_factory=list)  # evidence for failed / oom / timeout

    started_at: str = ""
    engine_order: list[str] = Field(default_factory=list)  # the order engines ran in this repetition
    order_position: int = 0  # this engine's place in it (0 = first)
    cache: CacheState = Field(default_factory=CacheState)
    input: InputState = Field(default_factory=InputState)

    duration_s: float | None = None  # the compaction: the sum of `phases` (session start-up excluded)
    phases: list[Phase] = Field(default_factory=list)  # what the engine did, in order
    setup_s: float | None = None  # engine session start-up and catalog warm-up (open())
    setup_phases: list[Phase] = Field(default_factory=list)
    setup_io: SetupIO | None = None  # what setup could reach and read (None: older results)
    process_wall_s: float | None = None  # the whole engine subprocess, start to exit
    # 0: the run had its own process; n: it was the n-th run of a process shared by several (bench conformance:
    # correctness, not time); such a run never enters a statistic (bench.core.stats.measured)
    shared_process: int = 0
    verify_s: float | None = None  # the harness's verification after the run (not the engine's time)

    files_in: int = 0
    files_out: int | None = None
    bytes_in: int = 0
    bytes_out: int | None = None
    rows: int = 0
    before: TableStats = Field(default_factory=TableStats)
    after: TableStats | None = None
    verification: Verification = Field(default_factory=Verification)
    reads: ReadsRecord | None = None  # reader queries before/after (None: `--readers off`)
    partitions: PartitionOutcome | None = None  # a partitioned table's outcome per partition (None: unpartitioned)
    source: SourceRecord | None = None  # a run on the user's own table (None: a generated dataset)

    engine_result: dict[str, Any] = Field(default_factory=dict)  # the engine's own result object: no reader decodes it
    engine_settings: dict[str, Any] = Field(default_factory=dict)  # for humans: no reader decodes its keys
    # a floor's physical bound of the same rewrite (EngineOutcome.physical_bound; results of 2026-11-27 before it
    # was typed kept it as engine_result["bound"]: read from there on load)
    physical_bound: PhysicalBound | None = None

    @model_validator(mode="before")
    @classmethod
    def _bound_of_untyped_results(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("physical_bound") is None:
            bound = (data.get("engine_result") or {}).get("bound")
            if isinstance(bound, dict):
                data = {**data, "physical_bound": bound}
        return data

    deployment: Deployment | None = None  # how the engine ran, as it reported it (None: it reported nothing)
    engine_actions: list[str] = Field(default_factory=list)
    engine_color: str | None = None  # the engine's colour in charts (declared by the engine)
    target_file_size_bytes: int = 0
    small_file_threshold_bytes: int = 0  # files below it count as small (both engines are told it)
    output_codec: str = ""  # the codec the scenario asks new files to have
    memory_budget_bytes: int | None = None
    memory_enforcement: str = ""
    memory_caps: list[MemoryCap] = Field(default_factory=list)  # engine-internal limits
    storage_cap: StorageCap | None = None  # --storage-cap (None: not asked for)
    core_limit: CoreLimit | None = None  # --cores (None: the engine had every core this process may use)
    telemetry: TelemetrySummary = Field(default_factory=TelemetrySummary)
    delete_opens: DeleteOpens | None = None  # the input's delete files opened while it compacted (None: not counted)
    catalog_server: CatalogServerUsage | None = None
    samples_file: str | None = None
    cost: Cost = Field(default_factory=Cost)
    environment: Environment = Field(default_factory=Environment)
    versions: dict[str, str | None] = Field(default_factory=dict)
    live_writer: LiveWriterRecord | None = None  # a live-writer scenario's case, commits and verdict
    streaming: StreamingRecord | None = None  # a streaming scenario's cycles and totals

    @field_validator("cost", "environment", mode="before")
    @classmethod
    def _v1_none(cls, v: Any) -> Any:
        return {} if v is None else v

    @property
    def tag(self) -> str:
        base = "warmup" if self.warmup else f"rep{self.rep}"
        if not self.live_writer:
            return base
        return f"{base}-{self.live_writer.case}" + (f"-{self.live_writer.branch}" if self.live_writer.branch else "")

    @property
    def time_to_result_s(self) -> float | None:
        """Setup plus compaction: what a user waits for from starting the engine to a compacted table."""
        if self.duration_s is None or self.setup_s is None:
            return None
        return self.setup_s + self.duration_s

    @property
    def engine_base(self) -> str:
        """The engine behind the label (older results have no engine_name: their label is the name)."""
        return self.engine_name or self.engine

    @property
    def counts(self) -> bool:
        """Does this run count in statistics?  Measured (not warm-up), ok and verified, and not a
        live-writer run (judged, not timed: its time includes the writer's hold)."""
        return (not self.warmup and not self.shared_process and self.status == "ok" and self.verified
                and self.live_writer is None
                and self.streaming is None)


# records written before 2026-11-29 said "wrong" for both wrong kinds (and "unsupported" for engine failures)
Verdict = Literal["correct", "wrong-rows", "wrong-metadata", "failed", "unsupported", "harness-cannot", "wrong"]
WRONG = ("wrong-rows", "wrong-metadata", "wrong")


class ConformanceCell(BaseModel):
    """One engine on one conformance case (bench.conformance.verdict says how the verdict is reached)."""

    case: str
    covers: list[str] = Field(default_factory=list)  # the table shapes the case touches
    engine: str
    verdict: Verdict
    # wrong-*: the failed checks (rows: examples; metadata: the fields); failed: the engine's error; unsupported: its
    # reason; harness-cannot: what the harness could not do
    evidence: str = ""
    run: str = ""  # the run's directory, relative to the conformance run's
    findings: list[ReaderFinding] = Field(default_factory=list)  # readers overruled by the reference or the case
    # the table was written by this engine's own library (e.g. Spark on a Spark-written case): the case's expected
    # rows, not that library, decide the cell
    self_written: bool = False


class ConformanceCase(BaseModel):
    """A case as the run judged it: what it stands for, what it states it leaves, who wrote its table, and whether
    the table as written holds what it states (checked before any engine runs)."""

    name: str
    covers: list[str] = Field(default_factory=list)
    expected: Expected | None = None
    written_by: str = ""  # library and version that wrote the table
    table_check: Check | None = None  # the table as written against `expected` (a harness check)


class ConformanceRecord(BaseModel):
    """`conformance.json`: a `bench conformance` run, one cell per case and engine."""

    run_id: str
    started_at: str = ""
    ended_at: str = ""
    seconds: float | None = None  # the whole campaign: the cases' tables written (or reused), then the runs
    tables_s: float | None = None  # of it, writing the cases' tables (near 0 when they were reused)
    engines: list[str] = Field(default_factory=list)
    # the versions the verdicts come from: per engine its own, "readers" the harness's readers (pyiceberg, DuckDB,
    # its iceberg extension, Iceberg's Java library through Spark: the reference reader), "writer" the cases' writer
    versions: dict[str, dict[str, str | None]] = Field(default_factory=dict)
    cases: list[ConformanceCase] = Field(default_factory=list)
    cells: list[ConformanceCell] = Field(default_factory=list)

    @field_validator("cases", mode="before")
    @classmethod
    def _named_cases(cls, v: Any) -> Any:
        """Records before 2026-11-29 listed the cases' names only."""
        return [{"name": c} if isinstance(c, str) else c for c in v] if isinstance(v, list) else v

    @property
    def case_names(self) -> list[str]:
        return [c.name for c in self.cases]

    def case(self, name: str) -> ConformanceCase | None:
        return next((c for c in self.cases if c.name == name), None)


class RunState(BaseModel):
    """`run.json`: written when a run starts and when it ends, so a run killed in between is known
    to be incomplete (the report says so instead of failing)."""

    run_id: str
    state: Literal["running", "complete", "interrupted"] = "running"
    pid: int = 0
    started_at: str = ""
    ended_at: str | None = None
    scenario: str = ""
    scale: float | None = None
    file_scale: float | None = None  # the file counts' scale (--file-scale; = scale unless given)
    engines: list[str] = Field(default_factory=list)
    reps: int = 0
    expected_results: int = 0
    command: str = ""
    note: str = ""


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def file_label(label: str) -> str:
    """An engine label as a file-name part: 'spark:tuned' -> 'spark+tuned' (a ':' in a path breaks
    Hadoop's Path, e.g. Spark's local dir)."""
    return label.replace(":", "+")


def result_path(results_dir: Path, r: RunResult) -> Path:
    return Path(results_dir) / r.run_id / f"{r.scenario}--{file_label(r.engine)}--{r.tag}.json"


def save(results_dir: Path, r: RunResult) -> Path:
    path = result_path(results_dir, r)
    if path.exists():
        raise FileExistsError(f"refusing to overwrite an earlier result: {path}")
    write_atomic(path, r.model_dump_json(indent=2))
    return path


def write_run_state(run_dir: Path, state: RunState) -> Path:
    return write_atomic(Path(run_dir) / RUN_STATE_FILE, state.model_dump_json(indent=1))


def read_run_state(run_dir: Path) -> RunState | None:
    p = Path(run_dir) / RUN_STATE_FILE
    try:
        return RunState.model_validate_json(p.read_text())
    except (OSError, ValueError):
        return None


def iter_result_files(path: Path):
    """Result JSON files under `path` (a run directory, a results directory, or one file)."""
    path = Path(path)
    if path.is_file():
        yield path
        return
    for p in sorted(path.rglob("*.json")):
        if not p.name.startswith(".") and p.name != RUN_STATE_FILE and "work" not in p.relative_to(path).parts:
            yield p


def is_result(data: Any) -> bool:
    return isinstance(data, dict) and "run_id" in data and "engine" in data and "status" in data


def read_results(path: Path) -> list[RunResult]:
    out = []
    for p in iter_result_files(path):
        try:
            data = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if is_result(data):
            out.append(RunResult.model_validate(data))
    return out


def load(path) -> Any:
    """Results as a flat pandas DataFrame, one row per engine run (nested fields flattened)."""
    import pandas as pd

    rows = [r.model_dump() for r in read_results(Path(path))]
    return pd.json_normalize(rows, sep=".") if rows else pd.DataFrame()
