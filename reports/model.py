"""Result files -> the report's view model.

Reads only what a run left behind: the result JSON files, the samples Parquet files and `run.json`
beside them.  Never today's scenario files (a result carries the scenario it ran, `scenario_record`),
never recomputing what the runner stored (cost, verification, phases): only `--instance-type`
re-prices, and says so.  Every statistic is over verified runs (bench.core.stats); runs that failed,
ran out of memory, timed out or were rejected by the verifier are listed with their reasons.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bench.core.campaign import SUMMARY_FILES
from bench.core.children import pid_alive
from bench.core.cost import parse_instance, run_cost
from bench.core.errors import UserError
from bench.core.fmt import fmt_bytes as _fmt_b
from bench.core.fmt import fmt_scale
from bench.core.machine import HARNESS_PACKAGES
from bench.core.published import PUBLISHED_RAM_BYTES, PUBLISHED_VCPU
from bench.core.results import (
    RUN_STATE_FILE,
    Cost,
    Environment,
    MemoryCap,
    Published,
    QueryRead,
    RunResult,
    RunState,
    ScenarioRecord,
    TableStats,
    is_result,
    iter_result_files,
    read_run_state,
)
from bench.core.spread import Spread
from bench.core.stats import EngineStats, Speedup, all_speedups, engine_stats, floors, median
from reports.source import SourceHeader, source_header, why_not_verified

RESULT_NAME = re.compile(r"[^/]+--[^/]+--(rep\d+|warmup)[^/]*\.json")  # <scenario>--<engine>--rep<N>.json
FALLBACK_COLORS = ["#0F9D8A", "#8E44AD", "#B7950B", "#C0392B", "#2C3E50", "#16A085"]

STATUS_MEANING = {
    "unsupported": "the engine cannot do what the run asks (e.g. compact a branch): nothing was run",
    "oom": "the harness's memory budget was exceeded (kernel OOM kill in the engine's cgroup, or the RSS watchdog)",
    "heap-oom": "the engine's own memory limit (e.g. the JVM heap) was hit below the harness's budget",
    "timeout": "the time limit was exceeded; the process tree was killed",
    "failed": "the engine or the harness failed",
}


# --- loading ------------------------------------------------------------------------------------------
@dataclass
class LoadedRun:
    result: RunResult
    path: Path
    samples: Any = None  # pandas DataFrame or None
    samples_note: str = ""  # why there are no samples
    cost: Cost | None = None  # the cost shown: stored, or re-priced with --instance-type
    reasons: list[str] = field(default_factory=list)  # why it does not count (failed checks, error)
    advisory: list[str] = field(default_factory=list)  # failed advisory checks (shown, not decisive)

    @property
    def r(self) -> RunResult:
        return self.result

    @property
    def counts(self) -> bool:
        return self.result.counts


@dataclass
class RunDirState:
    """A run directory's run.json, and what it says about the results beside it."""

    path: Path
    state: RunState
    written: int  # result files in the directory
    alive: bool | None  # the harness process still exists (None: no pid recorded)

    @property
    def incomplete(self) -> bool:
        return self.state.state != "complete" or (self.state.expected_results > 0 and
                                                  self.written < self.state.expected_results)

    @property
    def warning(self) -> str:
        s = self.state
        of = f"{self.written} of {s.expected_results or '?'} results written"
        if s.state == "running" and self.alive:
            return (f"incomplete run: {of}; the run is still in progress (harness pid {s.pid} is alive, "
                    f"started {s.started_at or '?'}): this report shows the results written so far")
        if s.state == "running":
            return (f"incomplete run: {of}; run.json still says running but the harness "
                    f"{f'(pid {s.pid}) ' if s.pid else ''}is gone: it was killed before it could record the end "
                    f"of the run (started {s.started_at or '?'})")
        if s.state == "interrupted":
            return (f"incomplete run: {of}; interrupted{f' at {s.ended_at}' if s.ended_at else ''}"
                    f"{f': {s.note}' if s.note else ''}")
        return f"incomplete run: {of}; run.json says complete, but results are missing from {self.path}"


@dataclass
class Loaded:
    runs: list[LoadedRun]
    states: dict[Path, RunDirState]  # run directory -> its run.json




def _run_dir_state(run_dir: Path) -> RunDirState | None:
    state = read_run_state(run_dir)
    if state is None:
        return None
    written = sum(1 for p in run_dir.glob("*.json") if p.name != RUN_STATE_FILE and not p.name.startswith("."))
    return RunDirState(run_dir, state, written, pid_alive(state.pid, state.started_at))


def load_runs(paths, allow_empty: bool = False) -> Loaded:
    """Every RunResult JSON under `paths` (files or directories), with its samples file if present, and
    the run.json of every run directory involved (a run directory with only run.json is an incomplete
    run: reported, not an error).  Campaign summaries (sweep.json, frontier.json, tune.json) are not
    results: they are skipped here (reports.campaigns reads them); `allow_empty` when the paths hold one."""
    out: list[LoadedRun] = []
    seen: set[Path] = set()
    run_dirs: dict[Path, None] = {}
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise UserError(f"no such results file or directory: {p}")
        if p.is_dir():
            for s in sorted(p.rglob(RUN_STATE_FILE)):
                if "work" not in s.relative_to(p).parts[:-1]:
                    run_dirs[s.parent.resolve()] = None
        elif p.name == RUN_STATE_FILE:
            run_dirs[p.parent.resolve()] = None
            continue
        elif p.name in SUMMARY_FILES.values():
            continue
        for f in iter_result_files(p):
            f = f.resolve()
            if f in seen:
                continue
            seen.add(f)
            try:
                data = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError) as e:
                if p.is_file() or RESULT_NAME.fullmatch(f.name):  # named as a result: never skipped silently
                    raise UserError(f"{f} is not a readable JSON result ({e}): a corrupt result file; move it "
                                    "aside to report the others") from None
                continue  # some other file beside the results
            if not is_result(data):
                if p.is_file():
                    raise UserError(f"{f} is not a bench result (no run_id/engine/status)")
                continue
            try:
                r = RunResult.model_validate(data)
            except ValidationError as e:
                raise UserError(f"{f} is not a valid result: {str(e).splitlines()[0]}") from None
            out.append(LoadedRun(r, f))
            run_dirs[f.parent] = None
    states: dict[Path, RunDirState] = {}
    for d in run_dirs:
        st = _run_dir_state(d)
        if st is not None:
            states.setdefault(d, st)
    if not out and not states and not allow_empty:
        raise UserError(f"no results found in {', '.join(map(str, paths))} (expected "
                        f"<run-id>/<scenario>--<engine>--rep<N>.json files written by `bench run`)")
    for lr in out:
        _attach_samples(lr)
        lr.reasons, lr.advisory = run_reasons(lr.r)
    return Loaded(out, states)


def _attach_samples(lr: LoadedRun) -> None:
    sf = lr.r.samples_file
    if not sf:
        lr.samples_note = "no samples file recorded"
        return
    p = Path(sf)
    candidates = [p] if p.is_absolute() else [lr.path.parent / p, Path.cwd() / p]
    for c in candidates:
        if c.exists():
            try:
                import pyarrow.parquet as pq

                lr.samples = pq.read_table(c).to_pandas()
            except Exception as e:  # noqa: BLE001 - a broken samples file is shown, not fatal
                lr.samples_note = f"samples file unreadable: {type(e).__name__}: {e}"
            return
    lr.samples_note = f"samples file missing: {sf}"


def run_reasons(r: RunResult) -> tuple[list[str], list[str]]:
    """Why a run does not count (its failed required checks with their messages, or its error), and
    its failed advisory checks."""
    v = r.verification
    reasons: list[str] = []
    if r.streaming is not None:
        t = r.streaming.totals
        reasons.append(f"streaming ({r.streaming.mode}): {t.cycles} cycles, {t.unsafe_cycles} unsafe"
                       + (f" from cycle {t.first_unsafe_cycle}" if t.first_unsafe_cycle else "")
                       + " (its maintenance is timed per cycle: see its streaming section)")
    elif r.status == "ok" and not r.verified:
        failed = [c for c in v.checks if not c.ok and c.required]
        for c in failed:
            reasons.append(f"{c.name}: {c.message}" if c.message else c.name)
        shown = {c.name for c in failed}
        for d in v.differences:  # anything the verifier said that is not a check above
            name = d.split(":", 1)[0]
            if name not in shown and not d.endswith("(advisory)"):
                reasons.append(d)
        if not reasons:
            reasons.append("the verifier did not accept the output (no failed check recorded)")
    if r.error:
        reasons.append(r.error)
    if r.live_writer is not None:
        reasons.insert(0, f"live writer ({r.live_writer.case}): {r.live_writer.verdict}: {r.live_writer.reason} "
                          f"(judged, not timed: its time includes the writer's hold)")
    advisory = [f"{c.name}: {c.message}" if c.message else c.name for c in v.checks if not c.ok and not c.required]
    return reasons, advisory


# --- the view model -----------------------------------------------------------------------------------
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
        """The largest speedup between engines that commit; between plain engines (NAME, not NAME:PROFILE)
        when the set has such a pair, so variants of one engine do not make the headline (they have
        their own table)."""
        usable = [s for s in self.speedups if s.ratio.n]
        plain = {lr.r.engine for lr in self.runs if lr.r.engine == lr.r.engine_base}
        usable = [s for s in usable if s.faster in plain and s.slower in plain] or usable
        if not usable:
            return None
        return max(usable, key=lambda s: s.ratio.median or 0.0)  # n > 0: a median

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




def _gb(v: float) -> str:
    return f"{v / 1e9:,.0f} GB" if v >= 10e9 else f"{v / 1e9:,.1f} GB" if v >= 1e9 else f"{v / 1e6:,.1f} MB"


def group(runs: list[LoadedRun]) -> list[tuple[tuple[str, str, float, Path], list[LoadedRun]]]:
    """Result sets: one per (run id, scenario, scale, run directory), in the order first seen (campaigns
    reuse run ids such as a tune's cfg-00 and confirm: their directories tell them apart)."""
    groups: dict[tuple[str, str, float, Path], list[LoadedRun]] = defaultdict(list)
    for lr in runs:
        groups[(lr.r.run_id, lr.r.scenario, lr.r.scale, lr.path.parent)].append(lr)
    for v in groups.values():
        v.sort(key=lambda lr: (lr.r.warmup is False, lr.r.rep, lr.r.order_position, lr.r.engine))
    return list(groups.items())


def assign_colors(runs: list[LoadedRun]) -> dict[str, str]:
    """Each engine's colour as its results declare it; a fallback palette for engines that do not."""
    declared: dict[str, str | None] = {}
    for lr in runs:
        if declared.get(lr.r.engine) is None:
            declared[lr.r.engine] = lr.r.engine_color
    used = {c.lower() for c in declared.values() if c}
    spare = [c for c in FALLBACK_COLORS if c.lower() not in used] or FALLBACK_COLORS
    out, i = {}, 0
    for engine, color in declared.items():
        if color:
            out[engine] = color
        else:
            out[engine] = spare[i % len(spare)]
            i += 1
    return out


def build(loaded: Loaded, instance_type: str | None = None) -> Report:
    colors = assign_colors(loaded.runs)
    reprice = parse_instance(instance_type) if instance_type else None  # an unknown type is a UserError
    sets = []
    for i, ((run_id, scenario, scale, run_dir), members) in enumerate(group(loaded.runs)):
        rs = ResultSet(run_id=run_id, scenario_name=scenario, scale=scale, runs=members, anchor=f"set-{i + 1}")
        rs.run_state = loaded.states.get(run_dir)
        results = [lr.r for lr in members]
        rs.engines = list(dict.fromkeys(r.engine for r in results))
        rs.colors = {e: colors[e] for e in rs.engines}
        rs.stats = engine_stats(results)
        rs.speedups = all_speedups(results)  # between engines that commit: a floor is compared on its own
        rs.floor_labels = floors(results)
        _scenario(rs)
        first = rs.first
        rs.env = first.environment
        rs.env_differs = any(lr.r.environment.cpu != rs.env.cpu or lr.r.environment.packages != rs.env.packages
                             for lr in members)
        rs.machine = rs.env.describe()
        rs.cost = _costs(rs, instance_type if reprice else None)
        rs.budget = next((r.memory_budget_bytes for r in results if r.memory_budget_bytes), None)
        rs.enforcement = sorted({r.memory_enforcement for r in results if r.memory_enforcement})
        rs.versions = dict(first.versions)
        rs.rows = [_engine_row(rs, e) for e in rs.engines]
        rs.method = _method(rs)
        _published(rs)
        _memory_notes(rs)
        rs.reads = reads_view(rs)
        rs.partition_runs = [lr for lr in members if lr.r.partitions is not None]
        sets.append(rs)
    with_results = {lr.path.parent for rs in sets for lr in rs.runs}
    incomplete_only = [st for d, st in loaded.states.items() if d not in with_results]
    return Report(sets, incomplete_only, len(loaded.runs))


def _scenario(rs: ResultSet) -> None:
    """The scenario as it was run, from the results themselves."""
    records = [lr.r.scenario_record for lr in rs.runs]
    rs.record = next((rec for rec in records if rec.sha256 or rec.content), ScenarioRecord())
    if not (rs.record.sha256 or rs.record.content):
        rs.scenario_notes.append(
            f"These results carry no scenario record (written by an older harness): the definition of "
            f"scenario {rs.scenario_name!r} as it was run is unknown, so no description or published "
            f"figures are shown.")
        return
    rs.description = rs.record.description
    rs.source = source_header([lr.r for lr in rs.runs])
    try:  # a run on the user's own table (--source-table) has nothing published to compare with
        rs.published = None if any(lr.r.source for lr in rs.runs) else rs.record.published()
    except ValidationError as e:
        rs.scenario_notes.append(f"The published figures in the scenario record are unreadable: "
                                 f"{str(e).splitlines()[0]}")
    hashes = Counter(rec.sha256 or "none" for rec in records)
    if len(hashes) > 1:
        parts = ", ".join(f"{h} ({n} run{'s' if n != 1 else ''})" for h, n in hashes.items())
        rs.scenario_notes.append(
            f"The runs of this set were run with {len(hashes)} different definitions of scenario "
            f"{rs.scenario_name!r} (sha256 {parts}): they may not be comparable. The description and "
            f"published figures shown are those of sha256 {rs.record.sha256}.")


def _costs(rs: ResultSet, instance_type: str | None) -> CostView:
    """The cost shown per run: the one stored when it ran, or re-priced when --instance-type asks."""
    stored = list(dict.fromkeys(lr.r.cost.instance_type for lr in rs.runs if lr.r.cost.instance_type))
    stored_label = ", ".join(stored) or "not recorded"
    if instance_type:
        for lr in rs.runs:
            lr.cost = _reprice(lr.r, instance_type)
        c = next(lr.cost for lr in rs.runs if lr.cost is not None)
        hyp = any(lr.cost.hypothetical for lr in rs.runs if lr.cost is not None)
        caption = (f"Re-priced with --instance-type: the on-demand price of {c.instance_type} "
                   f"(${c.usd_per_hour:g}/h) × the compaction time stored in each result"
                   + (f" — hypothetical: the {c.instance_type} price applied to this machine's time." if hyp else
                      f"; the runs were measured on {c.instance_type}.")
                   + f" The costs stored in the results (computed when the runs ran) are at {stored_label}.")
        return CostView(label=f"{c.instance_type} (re-priced)", usd_per_hour=c.usd_per_hour, repriced=True,
                        hypothetical=hyp, caption=caption, stored_label=stored_label)
    for lr in rs.runs:
        lr.cost = lr.r.cost
    priced = [lr.r.cost for lr in rs.runs if lr.r.cost.instance_type]
    if not priced:
        return CostView(label="not recorded", usd_per_hour=None, repriced=False, hypothetical=True,
                        caption="These results carry no cost (give --instance-type to price them).",
                        stored_label=stored_label)
    hyp = any(c.hypothetical for c in priced)
    rates = sorted({c.usd_per_hour for c in priced})
    label = stored[0] if len(stored) == 1 else "mixed: " + stored_label
    rate = f"${rates[0]:g}/h" if len(rates) == 1 else "/".join(f"${r:g}" for r in rates) + " per hour"
    if hyp:
        caption = (f"Cost = the on-demand price of {stored_label} ({rate}), the published node, applied to "
                   f"the compaction time measured on this machine ({rs.machine}): hypothetical, this is not "
                   f"what the run cost here. Computed when each run ran and stored in its result.")
    else:
        caption = (f"Cost = the on-demand price of {stored_label} ({rate}) × the compaction time, measured "
                   f"on a {stored_label}. Computed when each run ran and stored in its result.")
    return CostView(label=label, usd_per_hour=rates[0] if len(rates) == 1 else None, repriced=False,
                    hypothetical=hyp, caption=caption, stored_label=stored_label)


def _reprice(r: RunResult, instance_type: str) -> Cost:
    duration = r.duration_s if r.status == "ok" else None
    c = run_cost(duration, instance_type, ran_on=r.environment.instance_type)
    if c.total_usd is not None:  # storage and S3 terms do not depend on the price
        c.storage_usd, c.s3_usd, c.extra = r.cost.storage_usd, r.cost.s3_usd, dict(r.cost.extra)
        c.total_usd += (c.storage_usd or 0.0) + (c.s3_usd or 0.0)
    c.note = "re-priced by bench report --instance-type: " + c.note
    return c


def missing_text(st: EngineStats) -> str:
    """What stands where an engine's number would be when it has no verified run."""
    parts = [f"NOT VERIFIED ×{st.unverified}" if st.unverified > 1 else "NOT VERIFIED"] if st.unverified else []
    parts += [f"{s.upper()} ×{n}" if n > 1 else s.upper() for s, n in st.statuses.items() if s != "ok"]
    return f"no verified run ({', '.join(parts) or 'none measured'})"


def _spread_of(runs: list[LoadedRun], get) -> Spread:
    return Spread.of(get(lr.r) for lr in runs)


def _engine_row(rs: ResultSet, engine: str) -> EngineRow:
    st = rs.stats[engine]
    mine = [lr for lr in rs.runs if lr.r.engine == engine]
    runs = [lr for lr in mine if not lr.r.warmup]
    good = [lr for lr in runs if lr.counts]
    ok = [lr for lr in runs if lr.r.status == "ok"]
    costs = [lr.cost.total_usd for lr in good if lr.cost is not None and lr.cost.total_usd is not None]
    parts = [f"{st.verified} verified"] if st.verified else []
    if st.unverified:
        parts.append(f"{st.unverified} NOT verified")
    parts += [f"{n} {s}" for s, n in st.statuses.items() if s != "ok"]
    after_run = (good or ok)[0] if good or ok else None
    row = EngineRow(
        engine=engine, color=rs.colors[engine], stats=st, verified_runs=good,
        missing=None if st.verified else missing_text(st),
        cost_median=median(costs), cost_min=min(costs) if costs else None,
        cost_max=max(costs) if costs else None, cost_values=costs,
        p95_cores_median=median([lr.r.telemetry.p95_cores for lr in good]),
        read_bytes_median=median([lr.r.telemetry.read_bytes for lr in good]),
        write_bytes_median=median([lr.r.telemetry.write_bytes for lr in good]),
        after=after_run.r.after if after_run else None, after_verified=bool(good),
        status_text=", ".join(parts) or "no measured run", why_not=why_not_verified([lr.r for lr in runs]),
    )
    # throughput: the uncompressed (logical) size of the input, the same measure as the published one
    logical = median([lr.r.before.uncompressed_bytes or None for lr in good])
    if logical and st.duration_s.median:
        row.throughput_mb_s = logical / st.duration_s.median / 1e6
    row.phases = _phases(good, st)
    # memory
    row.budget = next((lr.r.memory_budget_bytes for lr in mine if lr.r.memory_budget_bytes), None)
    row.enforcement = next((lr.r.memory_enforcement for lr in mine if lr.r.memory_enforcement), "")
    with_caps = [lr.r.memory_caps for lr in (runs + mine) if lr.r.memory_caps]
    row.caps = with_caps[0] if with_caps else []
    row.caps_differ = any([c.model_dump() for c in caps] != [c.model_dump() for c in row.caps] for caps in with_caps)
    peaks = [(lr.r.telemetry.peak_rss_bytes, lr.r.status) for lr in runs if lr.r.telemetry.peak_rss_bytes]
    if peaks:
        row.peak_any, row.peak_any_status = max(peaks, key=lambda p: p[0])
    # the loopback REST catalog server's work during this engine's runs
    served = [lr for lr in good if lr.r.catalog_server is not None]
    row.catalog_measured = len(served)
    for name in ("cpu_s", "peak_rss_bytes", "requests", "commits", "commit_s", "request_s"):
        row.catalog[name] = Spread.of(getattr(lr.r.catalog_server, name) for lr in served)
    return row


def _phases(good: list[LoadedRun], st: EngineStats) -> list[PhaseRow]:
    """Median seconds of each phase over verified runs: setup phases first (excluded from the compaction
    time), then the compaction's own, in the order the engine ran them."""
    out: list[PhaseRow] = []
    details: dict[tuple[bool, str], str] = {}
    for lr in good:
        for setup, phases in ((True, lr.r.setup_phases), (False, lr.r.phases)):
            for p in phases:
                if p.detail:
                    details.setdefault((setup, p.name), p.detail)
    setup_names = list(dict.fromkeys(p.name for lr in good for p in lr.r.setup_phases))
    for n in setup_names:
        out.append(PhaseRow(n, True, Spread.of(sum(p.seconds for p in lr.r.setup_phases if p.name == n)
                                               for lr in good), details.get((True, n), "")))
    total = st.duration_s.median
    for n, spread in st.phases.items():
        share = spread.median / total if total and spread.median is not None else None
        out.append(PhaseRow(n, False, spread, details.get((False, n), ""), share))
    return out


def _method(rs: ResultSet) -> Method:
    orders: dict[str, list[str]] = {}
    for lr in rs.runs:
        if lr.r.engine_order:
            orders.setdefault(lr.r.tag, list(lr.r.engine_order))
    distinct = {tuple(o) for o in orders.values()}
    rotates = None if len(rs.engines) < 2 or len(orders) < 2 else len(distinct) > 1
    cache: Counter[str] = Counter()
    for lr in rs.runs:
        c = lr.r.cache
        text = c.mode + (f" ({c.note})" if c.note else "")
        if c.mode == "warm" and c.warmed_bytes:
            text += f", {c.warmed_bytes / 1e6:,.1f} MB read to warm it"
        if c.mode == "cold" and not c.dropped:
            text += " — NOT dropped"
        cache[text] += 1
    n = len(rs.runs)
    cache_lines = [t if len(cache) == 1 else f"{t}: {k} of {n} runs" for t, k in cache.items()]
    inputs = Counter((lr.r.input.fingerprint or "not recorded", lr.r.input.identical_to_dataset) for lr in rs.runs)
    input_lines = []
    for (fp, same), k in inputs.items():
        where = "every run" if k == n else f"{k} of {n} runs"
        input_lines.append(f"fingerprint {fp}: " + ("identical to the dataset" if same else
                                                    "NOT identical to the dataset") + f" ({where})")
    input_lines += _source_lines(rs)
    rules = next((lr.r.verification.rules for lr in rs.runs if lr.r.verification.rules), [])
    return Method(orders=list(orders.items()), rotates=rotates, cache=cache_lines, inputs=input_lines,
                  rules=list(rules))


def _source_lines(rs: ResultSet) -> list[str]:
    """Runs on the user's own table (`--source-table`): which table, and whether it stayed unchanged."""
    out = []
    for (table, snap, clone), runs in groupby_sorted([lr.r for lr in rs.runs if lr.r.source],
                                                     lambda r: (r.source.table, r.source.snapshot_id, r.source.clone)):
        changed = [r for r in runs if r.source.unchanged is False]
        unchecked = [r for r in runs if r.source.unchanged is None]
        state = (f"CHANGED after {len(changed)} of {len(runs)} runs: {changed[0].source.differences[0]}" if changed
                 else f"unchanged after every run (fingerprint {runs[0].source.fingerprint_before} over "
                      f"{runs[0].source.files} pinned files: size and sampled content)"
                      + (f"; {len(unchecked)} not checked" if unchecked else ""))
        out.append(f"your own table {table}, pinned at snapshot {snap}, compacted as its zero-copy clone {clone}: "
                   f"the pinned snapshot {state}")
    return out


def groupby_sorted(items: list, key) -> list[tuple]:
    groups: dict = {}
    for x in items:
        groups.setdefault(key(x), []).append(x)
    return list(groups.items())


def _published(rs: ResultSet) -> None:
    """Published figures beside the measured ones, and why they differ."""
    pub = rs.published
    if pub is None:
        if any(lr.r.source for lr in rs.runs):
            rs.reasons.append("Your own table (--source-table): the published figures are for the scenario's "
                              "generated table, so none are compared.")
        elif rs.record.content:
            rs.reasons.append("This scenario has no published figures to compare with.")
        return
    for row in rs.rows:
        row.published_s = pub.duration_s.get(row.engine)
        row.published_status = pub.status.get(row.engine) or ("ok" if row.published_s else None)
        if row.published_s:
            try:
                row.published_cost = run_cost(row.published_s, pub.instance_type, ran_on=pub.instance_type).total_usd
            except UserError:
                row.published_cost = None
            if pub.logical_bytes:
                row.published_throughput_mb_s = pub.logical_bytes / row.published_s / 1e6
    durations = {e: s for e, s in pub.duration_s.items() if s}
    if len(durations) >= 2:
        rs.published_speedup = max(durations.values()) / min(durations.values())
    # reasons, most important first
    b = rs.before
    files = b.data_files + b.delete_files
    size = (f"{_gb(b.uncompressed_bytes)} uncompressed, {_gb(b.data_bytes + b.delete_bytes)} on disk, in "
            f"{files:,} files" if b.uncompressed_bytes else
            f"{_gb(b.data_bytes + b.delete_bytes)} on disk in {files:,} files" if files else "a smaller table")
    n = rs.record.table().total_files
    pub_files = round(n * pub.scale) if n is not None else None
    pub_size = ", ".join(x for x in (f"~{_gb(pub.logical_bytes)} uncompressed" if pub.logical_bytes else "",
                                     f"{pub_files:,} files" if pub_files else "") if x) or "the full table"
    rs.reasons.append(
        f"Scale: measured at scale {fmt_scale(rs.scale)}"
        + (f" of bytes and rows, {fmt_scale(rs.file_scale)} of file counts (--file-scale)" if rs.file_scale else "")
        + f" ({size}); published at scale {fmt_scale(pub.scale)} "
        f"({pub_size}). Durations do not scale linearly: fixed costs (start-up, planning, commits) dominate "
        f"small tables, so compare throughput and the speedup's direction rather than seconds.")
    cores = rs.env.cores
    ram = rs.env.memory.total_bytes
    rs.reasons.append(
        f"Machine: measured on {rs.machine}; published on {pub.machine}."
        + (f" {cores} cores vs {PUBLISHED_VCPU} vCPU limits the parallelism of every engine."
           if cores and cores < PUBLISHED_VCPU else "")
        + (f" {ram / 1e9:.0f} GB RAM vs {PUBLISHED_RAM_BYTES / 1e9:.0f} GB changes the memory budget."
           if ram and ram < PUBLISHED_RAM_BYTES * 15 / 16 else ""))  # (a 64 GB node reports a little less)
    v = rs.versions
    engine_packages = [f"{k} {v[k]}" for k in sorted(v) if v.get(k) and k not in HARNESS_PACKAGES]
    rs.reasons.append("Versions: measured with " + (", ".join(engine_packages) or "the recorded versions") +
                      "; the published benchmark did not state its engine or Iceberg versions.")
    for row in rs.rows:
        if row.published_status and row.published_status != "ok" and row.stats.verified:
            rs.reasons.append(f"Outcome: {row.engine} was published as {row.published_status.upper()} but "
                              f"succeeded here (a smaller table needs less memory).")
        elif row.published_status == "ok" and row.stats.runs and not row.stats.verified:
            rs.reasons.append(f"Outcome: {row.engine} succeeded in the published run but not here "
                              f"({row.status_text}).")
    if pub.notes:
        rs.reasons.append(f"Published notes: {pub.notes}")


def _memory_notes(rs: ResultSet) -> None:
    """oom and heap-oom, explained next to the runs (and published outcomes) that have them."""
    for row in rs.rows:
        mine = [lr for lr in rs.measured if lr.r.engine == row.engine]
        n_oom = sum(1 for lr in mine if lr.r.status == "oom")
        n_heap = sum(1 for lr in mine if lr.r.status == "heap-oom")
        caps = "; ".join(f"{c.name} {_fmt_b(c.bytes) if c.bytes else 'no limit'}" for c in row.caps)
        if n_oom:
            rs.memory_notes.append(
                f"{row.engine}: {n_oom} run{'s' if n_oom > 1 else ''} OOM — the harness's memory budget "
                f"({_fmt_b(row.budget)}) was exceeded: the kernel killed the engine in its cgroup, or the RSS "
                f"watchdog stopped it ({row.enforcement or 'enforcement not recorded'}).")
        if n_heap:
            rs.memory_notes.append(
                f"{row.engine}: {n_heap} run{'s' if n_heap > 1 else ''} HEAP-OOM — the engine's own limit "
                f"({caps or 'not recorded'}) was hit while its process tree was below the harness's budget "
                f"({_fmt_b(row.budget)}): a limit of the engine's configuration, not of the machine.")
        if row.published_status in ("oom", "heap-oom"):
            what = ("its own memory limit (heap-oom)" if row.published_status == "heap-oom" else
                    "out of memory (the published figures do not say which limit)")
            pub = rs.published
            rs.memory_notes.append(
                f"{row.engine} was published as {row.published_status.upper()}: {what} on "
                f"{pub.machine if pub else 'the published machine'}"
                + (f" ({pub.notes})" if pub and pub.notes else "") + ".")


def _query_reads(runs: list[LoadedRun], name: str) -> list[tuple[RunResult, QueryRead]]:
    return [(lr.r, q) for lr in runs if lr.r.reads is not None for q in lr.r.reads.queries if q.name == name]


def reads_view(rs: ResultSet) -> ReadsView | None:
    """What readers gained: per query, the before-time (median over the verified runs), the after-time
    per engine (median over its verified runs whose after-reads were measured) and the ratio of the
    medians.  Failed reads checks are listed from every measured run."""
    with_reads = [(lr, lr.r.reads) for lr in rs.measured if lr.r.reads is not None]
    if not with_reads:
        return None
    good = [lr for lr, rec in with_reads if lr.counts and rec.reader]
    names = list(dict.fromkeys(q.name for _, rec in with_reads for q in rec.queries))
    engines = [e for e in rs.engines if any(r.engine == e and r.reads is not None and r.reads.after_usable
                                            for r in (lr.r for lr in good))]
    rows = []
    for name in names:
        qs = _query_reads(good, name)
        row = ReadRow(query=name, sql=next((q.sql for _, q in qs), ""))
        before = [q.before_s for _, q in qs if q.before_s is not None]
        row.before_s, row.before_n = median(before), len(before)
        row.files_before = next((q.files_opened_before for _, q in qs if q.files_opened_before is not None), None)
        row.deletes_before = next((q.delete_files_merged_before for _, q in qs
                                   if q.delete_files_merged_before is not None), None)
        for e in engines:
            mine = [q for r, q in qs if r.engine == e and r.reads is not None and r.reads.after_usable
                    and q.after_s is not None]
            row.after_s[e], row.after_n[e] = median([q.after_s for q in mine]), len(mine)
            after = row.after_s[e]
            row.ratio[e] = row.before_s / after if row.before_s and after else None
            row.files_after[e] = mine[0].files_opened_after if mine else None
            row.deletes_after[e] = mine[0].delete_files_merged_after if mine else None
        rows.append(row)
    readers = sorted({f"{rec.reader or 'none'}: {rec.reader_reason}" for _, rec in with_reads})
    cache = sorted({f"{rec.cache} ({rec.cache_note})" if rec.cache_note else rec.cache for _, rec in with_reads})
    failures = [f"{lr.r.engine} {lr.r.tag}: {rec.message or rec.reader_reason}" for lr, rec in with_reads
                if not rec.ok]
    notes = sorted({f"{lr.r.engine}: {rec.after_note}" for lr, rec in with_reads if rec.after_note})
    source = next((q.counts_source for _, rec in with_reads for q in rec.queries if q.counts_source), "")
    return ReadsView(engines=engines, rows=rows, readers=readers, cache=cache, counts_source=source,
                     failures=failures, notes=notes)
