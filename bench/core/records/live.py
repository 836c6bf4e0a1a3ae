"""Runs with a writer beside the engine: a live-writer run's case, commits and verdict, and a streaming run's
cycles, totals and sink."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from bench.core.records.engine_run import MaintenanceStatus, Phase
from bench.core.records.telemetry import StorageCap
from bench.core.records.verification import Check, CommitEvent, ReaderAnswer, TableStats


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


# a maintenance step's operations (bench.engines.base.MaintenanceOp: each an engine method; its feature is its name
# with dashes, bench.engines.base.FEATURES, but compact's is rewrite-data-files)
MaintenanceOpName = Literal["expire_snapshots", "compact", "rewrite_manifests", "remove_orphan_files",
                            "rewrite_position_deletes"]


class MaintenanceResult(BaseModel):
    """One operation of a maintenance step as the engine ran it: which, as the scenario described it, and
    the engine's own result object of it (opaque to the harness, kept in the result)."""

    op: MaintenanceOpName
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
