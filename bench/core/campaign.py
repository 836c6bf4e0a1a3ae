"""Records of runs of runs: a sweep over scales, a memory frontier over budgets, and the plan of a full
reproduction.  Each campaign stores ordinary result files (one run directory per scale, or per probe)
plus one small summary written here, which the report reads like it reads results:

    results/<sweep-id>/sweep.json          SweepSummary    (+ scale-<s>/ run directories)
    results/<frontier-id>/frontier.json    FrontierSummary (+ <engine>-s<scale>[-p<partitions>]-<MiB>m/ run directories)
    results/<tune-id>/tune.json            TuneSummary     (+ cfg-NN/ run directories and confirm/)
    results/<sweep-id>/counts.json         CountSweepSummary (+ files-<F>/ run directories)

A count sweep is one scenario at one byte scale over several file scales (`bench sweep SCENARIO --scale S
--file-scales F1,F2,...`): each point is one engine at one file scale (verified runs only); each fit is a line
against the input's files (data + delete files, as the harness measured them before the run): the engine's time,
its peak memory and each phase it reported.  Where a memory line rises, `files_at_budget` is the file count at
which it would reach the runs' memory budget: a linear extrapolation, labelled as one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from bench.core.fileio import write_atomic
from bench.core.fit import CoreScaling, Fit, NodeModel
from bench.core.published import PUBLISHED_INSTANCE
from bench.core.records.scenario import ScenarioRecord
from bench.core.records.telemetry import DeleteOpens
from bench.core.results import Lifecycle, now_iso
from bench.core.spread import Spread
from bench.core.storage import StorageOption

SWEEP_FILE = "sweep.json"
FRONTIER_FILE = "frontier.json"
TUNE_FILE = "tune.json"


class Point(BaseModel):
    """One engine at one scale: verified runs only."""

    engine: str
    scale: float
    gb: float  # input, logical (Parquet uncompressed) GB
    disk_gb: float  # input on disk, GB
    output_disk_gb: float | None = None
    runs: int = 0
    verified: int = 0
    duration_s: Spread = Field(default_factory=Spread)
    peak_rss_bytes: Spread = Field(default_factory=Spread)
    setup_s: float | None = None
    verify_s: float | None = None  # the harness's verification per run (median)
    restore_s: float | None = None  # the harness's restore and cache step before each run (median)
    reads_s: float | None = None  # the reader queries before and after each run, summed (median; None: off)
    mean_cores: float | None = None
    run_dir: str = ""  # relative to the campaign directory


class Speedup(BaseModel):
    scale: float
    gb: float
    faster: str
    slower: str
    median: float
    min: float
    max: float
    pairs: int


class StorageAnswer(BaseModel):
    """One storage option of the published node for one engine at scale 1 (a model): the time the node
    model predicts with it, the least time the storage alone needs for the run's bytes, and whether it can
    produce the published time at all (its storage time within it)."""

    option: str  # bench.core.storage.StorageOption.name
    label: str = ""
    mb_s: float
    duplex: bool = False
    model_s: float | None = None
    bound: str = ""  # cpu | storage
    storage_s: float  # the run's bytes (read, written) through this storage alone
    needed_mb_s: float | None = None  # what the published time needs through it (per direction if duplex)
    can_produce: bool | None = None  # storage_s <= the published time (None: no published time)


class Extrapolation(BaseModel):
    """Where the fits lead at `scale` (1.0: the published size): models, labelled as such."""

    engine: str
    scale: float = 1.0
    gb: float
    this_node_s: float | None = None  # the time fit, on this node
    this_node_interval: tuple[float, float] | None = None
    this_node_peak_rss_bytes: float | None = None  # the memory fit, on this node
    model: NodeModel | None = None  # the published node
    model_s: float | None = None
    model_bound: str = ""  # cpu | storage
    model_cpu_s: float | None = None  # the model's two terms: compute on the target's cores...
    model_storage_s: float | None = None  # ...and the bytes through its storage
    model_fast_s: float | None = None  # the same model with the fastest storage the instance allows
    model_fast_bound: str = ""
    fast_storage_mb_s: float | None = None
    published_s: float | None = None
    published_implied_mb_s: float | None = None  # the disk throughput the published time implies
    published_status: str | None = None
    read_gb: float | None = None  # on disk at scale 1: the input the run reads (data + delete files)...
    write_gb: float | None = None  # ...and the output it writes
    storage: list[StorageAnswer] = Field(default_factory=list)  # the published node's storage options
    note: str = ""


class DatagenPoint(BaseModel):
    scale: float
    bytes: int  # on disk
    logical_bytes: int
    seconds: float  # generation time recorded in the dataset manifest
    reused: bool = False


class CampaignState(BaseModel):
    """What every run of runs records of its own life (the summaries below share it): where it stands, the harness
    process running it (a `running` summary whose pid is gone was killed), when and on what machine."""

    state: Lifecycle = "running"
    pid: int = 0
    started_at: str = ""
    ended_at: str | None = None
    machine: str = ""


class SweepSummary(CampaignState):
    kind: Literal["sweep"] = "sweep"
    sweep_id: str
    scenario: str
    scenario_record: ScenarioRecord = Field(default_factory=ScenarioRecord)
    scales: list[float]
    file_scale: float | None = None  # --file-scale: every run's file counts of this scale (None: each run's scale)
    reps: int
    engines: list[str]
    cores: int = 0
    ram_bytes: int = 0
    points: list[Point] = Field(default_factory=list)
    time_fits: dict[str, Fit] = Field(default_factory=dict)  # engine -> duration_s against GB
    memory_fits: dict[str, Fit] = Field(default_factory=dict)  # engine -> peak RSS against GB
    speedups: list[Speedup] = Field(default_factory=list)
    extrapolations: list[Extrapolation] = Field(default_factory=list)
    datagen: list[DatagenPoint] = Field(default_factory=list)
    datagen_fit: Fit | None = None  # generation seconds against logical GB
    run_dirs: dict[str, str] = Field(default_factory=dict)  # scale -> run directory (relative)
    # measured 1 -> 2 core efficiencies (`--core-runs`) the published-node model scales by (none: linear)
    core_scalings: list[CoreScaling] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class Probe(BaseModel):
    """One run of the bisection: an engine under one budget."""

    budget_bytes: int
    status: str
    verified: bool
    passed: bool  # completed and verified under this budget
    memory_failure: bool  # oom or heap-oom: the budget (or the engine's own limit inside it) was too small
    peak_rss_bytes: int | None = None
    duration_s: float | None = None
    heap_bytes: int | None = None  # the engine's own heap cap at this budget, if it has one
    error: str | None = None
    result_file: str = ""  # relative to the campaign directory


class FrontierPoint(BaseModel):
    engine: str
    scale: float
    gb: float
    partitions: int | None = None  # the table's partition count (a frontier against partitions; None: as recipe)
    lowest_bytes: int  # the lowest budget tried
    ceiling_bytes: int
    precision_bytes: int
    min_budget_bytes: int | None = None  # the smallest budget that passed (None: not even the ceiling)
    max_failed_bytes: int | None = None  # the largest budget that failed for memory (None: the lowest budget passed)
    peak_rss_at_min: int | None = None
    duration_at_min_s: float | None = None
    duration_unconstrained_s: float | None = None  # at the ceiling (the node's RAM)
    heap_at_min_bytes: int | None = None
    # peak RSS of the passing probe with the largest budget (the ceiling, unless it failed): memory the engine
    # takes when it is not held back
    peak_rss_ample: int | None = None
    ample_budget_bytes: int | None = None
    # what bounds the partitions (file groups) it writes at once, as the engine reported it at the ceiling
    # (bench.core.records.engine_run.Deployment.writes_at_once): settings and planned counts, not measurements
    writes_at_once: dict[str, int] = Field(default_factory=dict)
    probes: list[Probe] = Field(default_factory=list)
    note: str = ""


class FrontierPrediction(BaseModel):
    """At `scale`: `predicted` is oom when the predicted smallest budget exceeds the node's RAM, ok when
    it does not, unknown without a prediction; `agrees` compares that with the published outcome
    (oom and heap-oom both count as out of memory)."""

    engine: str
    node: str = PUBLISHED_INSTANCE
    scale: float = 1.0
    gb: float
    min_budget_bytes: float | None  # the fit's prediction
    interval: tuple[float, float] | None = None
    node_ram_bytes: int  # the published node's RAM
    predicted: Literal["ok", "oom", "unknown"] = "unknown"
    published_status: str | None = None
    agrees: bool | None = None
    note: str = ""


class FrontierSummary(CampaignState):
    kind: Literal["frontier"] = "frontier"
    frontier_id: str
    scenario: str
    scenario_record: ScenarioRecord = Field(default_factory=ScenarioRecord)
    scales: list[float]
    file_scale: float | None = None  # --file-scale: every probe's file counts of this scale (None: its scale)
    # the other axis: partition counts at the one scale, each its own dataset ([]: the recipe's, over scales)
    partitions: list[int] = Field(default_factory=list)
    source_table: str = ""  # --source-table: the user's own table (its clone), instead of generated scales
    engines: list[str]
    ram_bytes: int = 0
    points: list[FrontierPoint] = Field(default_factory=list)
    fits: dict[str, Fit] = Field(default_factory=dict)  # engine -> min budget against GB
    predictions: list[FrontierPrediction] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class PlannedEngine(BaseModel):
    engine: str
    seconds: float | None = None  # per run, on the target (model), at most the run's time limit
    modelled_s: float | None = None  # the model's time when the time limit cuts the run (else None)
    bound: str = ""
    setup_s: float | None = None
    verify_s: float | None = None
    restore_s: float | None = None  # per run
    reads_s: float | None = None  # per run (None: the sweep measured no reads)
    min_budget_bytes: float | None = None
    predicted_memory: str = "unknown"  # ok | oom | unknown
    source: str = ""


class PlannedScenario(BaseModel):
    scenario: str
    scale: float
    logical_bytes: float
    dataset_bytes: float
    output_bytes: float
    datagen_s: float | None = None
    engines: list[PlannedEngine] = Field(default_factory=list)
    wall_s: float | None = None
    steps: dict[str, float] = Field(default_factory=dict)  # step -> seconds (datagen, <engine> runs, ...)
    sources: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class PlannedNode(BaseModel):
    """One node of a reproduction spread over several (bench plan --nodes N): its scenarios run one after the
    other on it, each with every engine (both engines of a scenario always share a node and its input)."""

    scenarios: list[str] = Field(default_factory=list)
    wall_s: float = 0.0  # its scenarios' planned walls, plus the node's own boot and setup
    # the bytes alone of its scenarios at the storage (datagen, input, runs, verification)
    bytes_bound_s: float = 0.0
    # the part of bytes_bound_s that is datagen's, the input read's and the verifier's
    harness_bytes_s: float = 0.0
    published_s: float = 0.0  # the published engine times of its runs


class Plan(BaseModel):
    """What a full reproduction is expected to take, from the fitted models (a model throughout)."""

    instance_type: str
    cores: int
    ram_bytes: int
    usd_per_hour: float
    reps: int
    scenarios: list[PlannedScenario] = Field(default_factory=list)
    total_s: float | None = None  # of the scenarios that could be planned
    # the bytes alone at this storage (datagen's writes, the input read once, each run's reads and writes, the
    # verification's two reads of each output): no faster engine, datagen or verifier makes it shorter
    bytes_bound_s: float | None = None
    # the published engine times of the planned scenarios and engines, reps times: a reproduction that reproduces
    # them spends at least this in the engines alone (runs published as out of memory: no time, not counted)
    published_s: float | None = None
    # the part of bytes_bound_s that is datagen's, the input read's and the verifier's
    harness_bytes_s: float | None = None
    complete: bool = False  # every scenario could be planned
    cost_usd: float | None = None
    ebs_gb: int = 0
    # the table's storage's MB/s (an EBS volume's or S3's through the network)
    storage_mb_s: float = 125.0
    storage: StorageOption | None = None  # the table's storage on the target
    storage_usd: float | None = None  # the storage's own price over the planned time (provisioned gp3)
    steps: dict[str, float] = Field(default_factory=dict)  # step -> seconds, over every scenario
    budget_s: float | None = None  # what the plan was asked to fit (bench plan --budget-minutes)
    budget_usd: float | None = None
    deadline_minutes: int = 0
    core_scalings: list[CoreScaling] = Field(default_factory=list)  # measured efficiencies the engine times use
    harness_scalings: list[CoreScaling] = Field(default_factory=list)  # the harness's steps (selfcheck scaling)
    assumptions: list[str] = Field(default_factory=list)
    # several nodes (bench plan --nodes N): the scenarios spread over them, longest first onto the least loaded;
    # total_s is then the longest node's wall (what a budget of minutes is held to) and node_s the sum over the
    # nodes (what is paid for); one node: nodes has one entry and node_s == total_s
    nodes: list[PlannedNode] = Field(default_factory=list)
    node_setup_s: float = 0.0  # each node's boot and setup, counted in its wall when there are several
    node_s: float | None = None


class TuneKnob(BaseModel):
    """One setting the search varies (or says why it cannot)."""

    name: str
    path: str  # where it goes in the engine's options, e.g. rewrite_options.max-concurrent-file-group-rewrites
    values: list[Any] = Field(default_factory=list)  # the values tried, in this node's units
    published: Any = None  # its value in the published configuration
    note: str = ""
    searchable: bool = True  # False: listed with `note` saying why it is not searched


class TuneConfig(BaseModel):
    """One configuration the search ran (every one, verified or not)."""

    index: int
    changed: dict[str, Any] = Field(default_factory=dict)  # knob -> value, against the published configuration
    knob: str | None = None  # the knob this step varied (None: the published configuration)
    value: Any = None
    overrides: dict[str, Any] = Field(default_factory=dict)  # the engine options over the scenario's
    runs: int = 0
    verified: int = 0
    statuses: list[str] = Field(default_factory=list)
    duration_s: Spread = Field(default_factory=Spread)
    peak_rss_bytes: float | None = None
    accepted: bool = False  # became the best so far
    run_dir: str = ""
    error: str | None = None


class TuneConfirmation(BaseModel):
    """The published and the tuned configuration in one run, order rotated, paired repetitions."""

    reps: int = 0
    published: Spread = Field(default_factory=Spread)
    tuned: Spread = Field(default_factory=Spread)
    published_verified: int = 0
    tuned_verified: int = 0
    speedup: Spread = Field(default_factory=Spread)  # published / tuned time, over paired repetitions
    pairs: int = 0
    run_dir: str = ""


class TuneSummary(CampaignState):
    kind: Literal["tune"] = "tune"
    tune_id: str
    engine: str
    scenario: str
    scenario_record: ScenarioRecord = Field(default_factory=ScenarioRecord)
    scale: float
    source_table: str = ""  # --source-table: tuned on the user's own table (its clone; scale 0)
    reps: int  # per configuration in the search
    strategy: str = ""
    min_gain: float = 0.05
    max_configs: int = 0
    budget_s: float = 0.0
    cores: int = 0
    knobs: list[TuneKnob] = Field(default_factory=list)
    configs: list[TuneConfig] = Field(default_factory=list)
    not_tried: list[str] = Field(default_factory=list)  # "knob=value: why" (budget), never silently
    best: dict[str, Any] = Field(default_factory=dict)  # knob -> value of the best verified configuration
    best_overrides: dict[str, Any] = Field(default_factory=dict)
    confirmation: TuneConfirmation | None = None
    profile: str | None = None  # the profile written (ENGINE:PROFILE) and where
    profile_path: str | None = None
    notes: list[str] = Field(default_factory=list)


HARNESS_STEPS = ("datagen", "input read", "verification")  # the harness's own steps a plan scales by cores


class HarnessScalingSummary(CampaignState):
    """`bench selfcheck scaling`: the harness's own steps (datagen, the input read once, verification's readers)
    timed on 1 and on 2 cores of this node, rounds alternating, each step told its cores as an engine is; one
    CoreScaling per step (its `engine` is the step's name, one of HARNESS_STEPS).  `bench plan` scales those steps
    to the target's cores by it (Amdahl, only where `usable`) instead of perfectly."""

    kind: Literal["harness-scaling"] = "harness-scaling"
    scaling_id: str
    cores: int = 0
    table: str = ""  # what was generated and read, e.g. "bin-packing recipe, 87 files, 0.96 GB"
    rounds: int = 0
    cache: str = ""  # how the page cache was held (e.g. warm: the input read once before each read step)
    steps: list[CoreScaling] = Field(default_factory=list)
    samples: dict[str, dict[str, list[float]]] = Field(default_factory=dict)  # step -> "1"|"2" -> seconds per round
    notes: list[str] = Field(default_factory=list)


Summary = SweepSummary | FrontierSummary | TuneSummary | HarnessScalingSummary
HARNESS_SCALING_FILE = "harness-scaling.json"
SUMMARY_FILES = {"sweep": SWEEP_FILE, "frontier": FRONTIER_FILE, "tune": TUNE_FILE,
                 "harness-scaling": HARNESS_SCALING_FILE}


def write_summary(directory: Path, summary: Summary) -> Path:
    return write_atomic(Path(directory) / SUMMARY_FILES[summary.kind], summary.model_dump_json(indent=1))


@contextmanager
def recorded(directory: Path, summary: Any, write: Callable[[Path, Any], Path] | None = None) -> Iterator[Any]:
    """The campaign's work inside: its summary ends `complete`, or `interrupted` (an exception, a Ctrl-C,
    with the exception in its notes), with its end time, written either way (by `write`, default
    write_summary: a summary with a state, notes and an end time)."""
    try:
        yield summary
        summary.state = "complete"
    except BaseException as exc:
        summary.state = "interrupted"
        summary.notes.append(f"{type(exc).__name__}: {exc}"[:500])
        raise
    finally:
        summary.ended_at = now_iso()
        (write or write_summary)(directory, summary)


def read_summary(path: Path) -> Summary | None:
    try:
        data: Any = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("kind") == "sweep":
        return SweepSummary.model_validate(data)
    if data.get("kind") == "frontier":
        return FrontierSummary.model_validate(data)
    if data.get("kind") == "tune":
        return TuneSummary.model_validate(data)
    if data.get("kind") == "harness-scaling":
        return HarnessScalingSummary.model_validate(data)
    return None


def find_summaries(paths: list[Path]) -> list[Summary]:
    """Every sweep.json / frontier.json / tune.json in or under `paths` (files or directories)."""
    out: list[Summary] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        names = SUMMARY_FILES.values()
        files = [p] if p.is_file() else sorted(f for n in names for f in p.rglob(n)) if p.is_dir() else []
        for f in files:
            f = f.resolve()
            if f in seen or f.name not in names:
                continue
            seen.add(f)
            s = read_summary(f)
            if s is not None:
                out.append(s)
    return out


# ---- a count sweep ------------------------------------------------------------------------------------------

COUNTS_FILE = "counts.json"
FILES_X = "input files (data + delete, live before the run)"
PAIRS_X = "data files x equality-delete files (live before the run)"


class CountPoint(BaseModel):
    """One engine at one file scale."""

    engine: str
    file_scale: float
    files: int  # input files: data + delete
    data_files: int = 0
    position_delete_files: int = 0
    equality_delete_files: int = 0
    bytes: int = 0  # input on disk (data + delete files)
    runs: int = 0
    verified: int = 0
    statuses: list[str] = Field(default_factory=list)  # every measured run's status (ok, oom, heap-oom, timeout...)
    duration_s: Spread = Field(default_factory=Spread)
    peak_rss_bytes: Spread = Field(default_factory=Spread)
    read_chars: Spread = Field(default_factory=Spread)  # bytes read through read syscalls, cached or not (rchar)
    phases_s: dict[str, float] = Field(default_factory=dict)  # phase -> median seconds over verified runs
    delete_opens: DeleteOpens | None = None  # the delete files' opens of the verified run with the median count
    run_dir: str = ""


class BudgetMeet(BaseModel):
    """Where an engine's memory line reaches the budget (a linear extrapolation of the fit)."""

    engine: str
    budget_bytes: int
    files: float | None = None  # None: the line does not rise (or there is no line)
    note: str = ""


class CountSweepSummary(CampaignState):
    kind: Literal["counts"] = "counts"
    sweep_id: str
    scenario: str
    scenario_record: ScenarioRecord = Field(default_factory=ScenarioRecord)
    scale: float  # bytes and rows of every point
    file_scales: list[float]
    reps: int
    engines: list[str]
    budget_bytes: int | None = None
    run_dirs: dict[str, str] = Field(default_factory=dict)  # file scale -> run directory
    points: list[CountPoint] = Field(default_factory=list)
    time_fits: dict[str, Fit] = Field(default_factory=dict)  # engine -> seconds against files
    memory_fits: dict[str, Fit] = Field(default_factory=dict)  # engine -> peak RSS bytes against files
    read_fits: dict[str, Fit] = Field(default_factory=dict)  # engine -> bytes read (rchar) against files
    # the same against data files x equality-delete files: a reader that opens every applicable equality-delete file
    # for each data file (Iceberg's DeleteFilter per task, no executor cache in rewrites) reads in proportion to them
    pair_time_fits: dict[str, Fit] = Field(default_factory=dict)
    pair_read_fits: dict[str, Fit] = Field(default_factory=dict)
    phase_fits: dict[str, dict[str, Fit]] = Field(default_factory=dict)  # engine -> phase -> seconds against files
    budget_meets: list[BudgetMeet] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def write_counts(directory: Path, s: CountSweepSummary) -> Path:
    return write_atomic(Path(directory) / COUNTS_FILE, s.model_dump_json(indent=1))


def read_counts(path: Path) -> CountSweepSummary | None:
    try:
        return CountSweepSummary.model_validate_json(Path(path).read_text())
    except (OSError, ValueError):
        return None
