"""The result record: one typed record per engine run, serialized as JSON, written atomically.

Layout of a run directory (`results/<run-id>/`):
    run.json                                   the run's state: running | complete | interrupted (RunState)
    <scenario>--<engine>--rep<N>.json          one RunResult per engine run (never overwritten)
    work/<scenario>--<engine>--rep<N>/         the engine's job, log and 10 Hz samples
The report and every other consumer read only these files, never live state.  A result carries the
scenario as it was run (its content and hash) and its cost as computed when it ran, so an old result
is always described with its own numbers.

The record's parts live by family in bench/core/records/ (the engine run, telemetry, verification, live and
streaming writers, the environment, the scenario, reads, conformance); this module holds the run's record
(`RunResult`) over them, the run's state and how results are written and read.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bench.core.fileio import write_atomic
from bench.core.records.engine_run import (
    CacheState,
    Cost,
    Deployment,
    InputState,
    Phase,
    PhysicalBound,
    SetupIO,
    Status,
)
from bench.core.records.environment import Environment
from bench.core.records.live import (
    LiveWriterRecord,
    StreamingRecord,
)
from bench.core.records.reads import ReadsRecord
from bench.core.records.scenario import ScenarioRecord, SourceRecord
from bench.core.records.telemetry import (
    CatalogServerUsage,
    CoreLimit,
    DeleteOpens,
    MemoryCap,
    StorageCap,
    TelemetrySummary,
)
from bench.core.records.verification import (
    PartitionOutcome,
    TableStats,
    Verification,
)

SCHEMA_VERSION = 2
RUN_STATE_FILE = "run.json"


class RunResult(BaseModel):
    model_config = ConfigDict(extra="ignore")

    schema_version: int = SCHEMA_VERSION
    run_id: str
    scenario: str
    engine: str  # the engine run's label: NAME or NAME:PROFILE (what statistics and reports group by)
    engine_name: str  # the engine (registry name) behind the label
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
    physical_bound: PhysicalBound | None = None  # a floor's physical bound of the same rewrite

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
    # the runtime its engine declares (its Spark and Iceberg lines), "" for none: what a run that ended before
    # reporting `versions` (a timeout) still says of them
    engine_runtime: str = ""
    live_writer: LiveWriterRecord | None = None  # a live-writer scenario's case, commits and verdict
    streaming: StreamingRecord | None = None  # a streaming scenario's cycles and totals

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
    def counts(self) -> bool:
        """Does this run count in statistics?  Measured (not warm-up), ok and verified, and not a
        live-writer run (judged, not timed: its time includes the writer's hold)."""
        return (not self.warmup and not self.shared_process and self.status == "ok" and self.verified
                and self.live_writer is None
                and self.streaming is None)


# a run's or a campaign's state: running until it ends complete, or interrupted (an exception, a Ctrl-C, a kill: a
# `running` record whose pid is gone was killed)
Lifecycle = Literal["running", "complete", "interrupted"]


class RunState(BaseModel):
    """`run.json`: written when a run starts and when it ends, so a run killed in between is known
    to be incomplete (the report says so instead of failing)."""

    run_id: str
    state: Lifecycle = "running"
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
