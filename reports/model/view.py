"""The view model: what the report shows of a result set (its engines table, phases, costs, method, readers)
and of the whole report; the section modules beside this one fill it in (reports.model.sets composes them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.core.records.environment import Environment
from bench.core.records.scenario import Published, ScenarioRecord
from bench.core.records.telemetry import MemoryCap
from bench.core.records.verification import TableStats
from bench.core.results import RunResult
from bench.core.spread import Spread
from bench.core.stats import EngineStats, Speedup
from reports.model.loading import LoadedRun, RunDirState
from reports.source import SourceHeader

STATUS_MEANING = {
    "unsupported": "the engine cannot do what the run asks (e.g. compact a branch): nothing was run",
    "oom": "the harness's memory budget was exceeded (kernel OOM kill in the engine's cgroup, or the RSS watchdog)",
    "heap-oom": "the engine's own memory limit (e.g. the JVM heap) was hit below the harness's budget",
    "timeout": "the time limit was exceeded; the process tree was killed",
    "failed": "the engine or the harness failed",
}


@dataclass
class PhaseRow:
    name: str
    setup: bool  # session start-up / catalog warm-up: excluded from the compaction time
    seconds: Spread  # over verified runs
    detail: str
    share: float | None = None  # of the median compaction time (compaction phases only)


@dataclass
class EngineRow:
    engine: str
    color: str
    stats: EngineStats
    verified_runs: list[LoadedRun]
    missing: str | None  # "no verified run (...)" when there is none
    cost_median: float | None
    cost_min: float | None
    cost_max: float | None
    cost_values: list[float]
    p95_cores_median: float | None
    read_bytes_median: float | None
    write_bytes_median: float | None
    after: TableStats | None  # of the first verified run, else the first ok run
    after_verified: bool
    status_text: str
    phases: list[PhaseRow] = field(default_factory=list)
    budget: int | None = None
    enforcement: str = ""
    caps: list[MemoryCap] = field(default_factory=list)
    caps_differ: bool = False
    why_not: str = ""  # why a measured run is not verified, in one line ("" = every one is)
    peak_any: float | None = None  # highest peak RSS of any measured run, verified or not
    peak_any_status: str = ""
    catalog: dict[str, Spread] = field(default_factory=dict)  # catalog server usage, over verified runs
    catalog_measured: int = 0  # verified runs that carry catalog-server numbers
    published_s: float | None = None
    published_status: str | None = None
    published_cost: float | None = None
    throughput_mb_s: float | None = None  # MB/s of uncompressed input
    published_throughput_mb_s: float | None = None


@dataclass
class CostView:
    label: str  # the instance type the costs shown are at ("m5.4xlarge", "mixed: ...")
    usd_per_hour: float | None
    repriced: bool  # --instance-type asked for another price
    hypothetical: bool  # some cost shown is a price applied to another machine's time
    caption: str
    stored_label: str = ""  # the instance type(s) the stored costs were at


@dataclass
class Method:
    orders: list[tuple[str, list[str]]]  # (rep tag, engine order)
    rotates: bool | None  # None: one engine or one repetition
    cache: list[str]  # cache policies applied, with counts when mixed
    inputs: list[str]  # input fingerprints and whether identical to the dataset
    rules: list[str]


@dataclass
class ReadRow:
    """One reader query: time before (median over verified runs), after each engine (median over its
    verified runs) and the ratio of the medians; files opened and delete files merged."""

    query: str
    sql: str
    before_s: float | None = None
    before_n: int = 0
    after_s: dict[str, float | None] = field(default_factory=dict)  # engine -> median after
    after_n: dict[str, int] = field(default_factory=dict)
    ratio: dict[str, float | None] = field(default_factory=dict)  # engine -> before / after (medians)
    files_before: int | None = None
    files_after: dict[str, int | None] = field(default_factory=dict)
    deletes_before: int | None = None
    deletes_after: dict[str, int | None] = field(default_factory=dict)


@dataclass
class ReadsView:
    engines: list[str]  # engines with after-timings of verified runs
    rows: list[ReadRow]
    readers: list[str]  # which reader ran, with why
    cache: list[str]
    counts_source: str = ""
    failures: list[str] = field(default_factory=list)  # reads checks that failed (any measured run)
    notes: list[str] = field(default_factory=list)


@dataclass
class ResultSet:
    run_id: str
    scenario_name: str
    scale: float
    runs: list[LoadedRun]
    record: ScenarioRecord = field(default_factory=ScenarioRecord)
    published: Published | None = None
    description: str = ""
    source: SourceHeader | None = None  # a set on the user's own table: its header replaces description and scale
    scenario_notes: list[str] = field(default_factory=list)
    engines: list[str] = field(default_factory=list)
    colors: dict[str, str] = field(default_factory=dict)
    stats: dict[str, EngineStats] = field(default_factory=dict)
    speedups: list[Speedup] = field(default_factory=list)
    rows: list[EngineRow] = field(default_factory=list)
    env: Environment = field(default_factory=Environment)
    env_differs: bool = False
    machine: str = ""
    runtimes: str = ""  # the Iceberg release of each engine and of the harness's JVMs, as recorded
    cost: CostView | None = None
    reasons: list[str] = field(default_factory=list)
    published_speedup: float | None = None
    budget: int | None = None
    enforcement: list[str] = field(default_factory=list)
    versions: dict = field(default_factory=dict)
    anchor: str = ""
    run_state: RunDirState | None = None
    method: Method | None = None
    memory_notes: list[str] = field(default_factory=list)  # oom / heap-oom explained
    floor_labels: list[str] = field(default_factory=list)  # engines that commit nothing: never in a speedup
    reads: ReadsView | None = None  # "What readers gained" (None: no run recorded reads)
    # "Partition by partition": runs of a partitioned table with their per-partition outcome (RunResult.partitions)
    partition_runs: list[LoadedRun] = field(default_factory=list)

    def version_gap(self, a: str, b: str) -> str:
        """What differs between the runtimes two engines share (the components both results record a version of),
        e.g. "Iceberg 1.10.0 vs 1.10.2": a comparison of the two is also one of those versions; "" when nothing
        they share differs."""
        runs = {lr.r.engine: lr.r.versions for lr in self.runs}
        va, vb = runs.get(a, {}), runs.get(b, {})
        return ", ".join(f"{k.capitalize()} {va[k]} vs {vb[k]}" for k in sorted(set(va) & set(vb))
                         if va[k] and vb[k] and va[k] != vb[k])

    @property
    def measured(self) -> list[LoadedRun]:
        return [lr for lr in self.runs if not lr.r.warmup]

    @property
    def file_scale(self) -> float | None:
        """The scale of the input's file counts when it is not the scale of its bytes (--file-scale), else None."""
        fs = next((lr.r.file_scale for lr in self.runs if lr.r.file_scale is not None), None)
        return None if fs is None or fs == self.scale else fs

    @property
    def verified(self) -> list[LoadedRun]:
        return [lr for lr in self.runs if lr.counts]

    @property
    def first(self) -> RunResult:
        """The run the set's shared facts (input table, target...) are read from: a verified one if any."""
        return (self.verified or self.measured or self.runs)[0].r

    @property
    def before(self) -> TableStats:
        return self.first.before

    @property
    def incomplete(self) -> bool:
        return bool(self.run_state and self.run_state.incomplete)

    @property
    def headline_speedup(self) -> Speedup | None:
        """The first engine named (the run's baseline: `--engines A,B,...` makes A) against the fastest other engine;
        between plain engines (NAME, not NAME:PROFILE) when the set has such a pair, so variants of one engine do
        not make the headline (they have their own table).  Without a baseline in the set: the largest speedup.
        (The largest alone would put the slowest engine in the headline of a run of four.)"""
        usable = [s for s in self.speedups if s.ratio.n]
        plain = {lr.r.engine for lr in self.runs if lr.r.engine == lr.r.engine_name}
        usable = [s for s in usable if s.faster in plain and s.slower in plain] or usable
        named = self.run_state.state.engines if self.run_state else []
        base = next((e for e in named if any(e in (s.faster, s.slower) for s in usable)), None)
        if base is not None:  # the other engine's speed relative to the baseline's: the largest is the fastest
            return max((s for s in usable if base in (s.faster, s.slower)),
                       key=lambda s: (s.ratio.median or 0.0) ** (1 if s.slower == base else -1))
        if not usable:
            return None
        return max(usable, key=lambda s: s.ratio.median or 0.0)  # n > 0: a median

    @property
    def card_rows(self) -> list[EngineRow]:
        """The engines' rows in the order of the headline's cards: the engine the headline speedup is about first,
        the one it is against next, then the others as everywhere else (the tables keep `rows`' order)."""
        sp = self.headline_speedup
        lead = [sp.faster, sp.slower] if sp else []
        return sorted(self.rows, key=lambda row: lead.index(row.engine) if row.engine in lead else len(lead))

    @property
    def committing(self) -> list[str]:
        """The engines that commit (the ones speedups compare)."""
        return [e for e in self.engines if e not in self.floor_labels]

    @property
    def statuses(self) -> set[str]:
        return {lr.r.status for lr in self.measured}


@dataclass
class Report:
    sets: list[ResultSet]
    incomplete_only: list[RunDirState]  # run directories with run.json and no result at all
    n_runs: int


def group_by(items: list, key) -> list[tuple]:
    """(key, the items with that key), in the order each key is first seen (the items keep theirs)."""
    groups: dict = {}
    for x in items:
        groups.setdefault(key(x), []).append(x)
    return list(groups.items())


def by_scenario_scale(sets: list[ResultSet]) -> list[tuple[tuple[str, float], list[ResultSet]]]:
    """The result sets of one scenario at one scale together, in the order first seen: a section that compares
    across run sets (nodes, storage caps, cores) draws one per group."""
    return group_by(sets, lambda rs: (rs.scenario_name, rs.scale))
