"""Engines compared beyond the headline speedup, from the result sets already built (reports.model):

- the floor: an engine that commits nothing (`commits: none`: the same bytes read, deletes applied and
  written by a bare columnar library, no planning beyond listing the live files, no commit).  Each engine's time
  is shown as a multiple of the floor's, beside its throughput per core.  The floor never enters a
  speedup (bench.core.stats leaves it out of `all_speedups`): it does not do the whole job.
- the sort comparison: run sets of one dataset (scenario, scale, recipe hash) compacted with different
  rewrite strategies (binpack, sort, zorder: the `rewrite.strategy` of the scenario each ran, as recorded),
  side by side on what a reader gains: the point lookup's and the key range's latency and files opened,
  before and after, per engine and strategy (medians over verified runs whose after-reads are usable).
- variants: several labels of one engine in a run set (NAME and NAME:PROFILE, e.g. a local and a
  cluster deploy mode, or the published and a tuned configuration), side by side with the options that
  differ and their ratio to the plain one.

Every number is over verified runs (bench.core.stats) and read from the results: the options a run
used (`engine_options`), the cores it was given (`cores`; older results: the node's), what the engine
reported of its deployment (`deployment`, `memory_caps` by role).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bench.core.fmt import fmt_bytes, fmt_value
from bench.core.results import RunResult
from bench.core.spread import Spread
from bench.core.stats import floor_multiples, median, paired_speedup
from reports.floorcheck import FloorCheck, floor_check
from reports.model.loading import LoadedRun
from reports.model.view import EngineRow, ResultSet, group_by


# --- shared -------------------------------------------------------------------------------------------
def _runs_of(rs: ResultSet, engine: str) -> list[LoadedRun]:
    """An engine's runs, the ones that count first (its facts are read from the first)."""
    mine = [lr for lr in rs.runs if lr.r.engine == engine]
    return [lr for lr in mine if lr.counts] + [lr for lr in mine if not lr.counts]


def _row(rs: ResultSet, engine: str) -> EngineRow:
    return next(row for row in rs.rows if row.engine == engine)


def cores_given(rs: ResultSet, engine: str) -> tuple[float | None, str]:
    """The cores the engine was given (median over its verified runs) and where that comes from: the
    result's `cores`, else (older results) the node's cores from its environment, else unknown."""
    runs = [lr for lr in rs.runs if lr.r.engine == engine and lr.counts] or _runs_of(rs, engine)
    given = median([lr.r.cores for lr in runs])
    if given:
        return given, "given"
    node = median([lr.r.environment.cores for lr in runs])
    return (node, "node") if node else (None, "")


def _cpu_seconds(r: RunResult) -> float | None:
    """CPU seconds of the engine's compaction, when the telemetry summary records them (it does not yet:
    TelemetrySummary has peak memory, cores and I/O; the samples' cumulative cpu_s covers the whole
    process, start-up included, so it is not used for a per-compaction figure)."""
    v = getattr(r.telemetry, "cpu_s", None)
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


# --- the floor ----------------------------------------------------------------------------------------
@dataclass
class FloorRow:
    engine: str
    color: str
    is_floor: bool
    row: EngineRow  # its statistics (for the floor: in the set it ran in)
    multiple: float | None = None  # the median of the paired multiples (no pairs: median time ÷ the floor's)
    spread: Spread = field(default_factory=lambda: Spread.of([]))  # per pair (paired) or per run combination
    paired: bool = False
    cores: float | None = None
    cores_source: str = ""  # given | node | ""
    mb_s_per_core: float | None = None
    mb_per_cpu_s: float | None = None


@dataclass
class FloorView:
    floor: str  # the floor's label
    source: ResultSet  # the set the floor ran in (this one, or one of the same scenario and scale)
    same_set: bool
    rows: list[FloorRow]
    anchor: str = ""
    check: FloorCheck | None = None  # engine, floor and bound; the floor's self-check (reports.floorcheck)

    @property
    def floor_row(self) -> FloorRow:
        return next(r for r in self.rows if r.is_floor)

    @property
    def engines(self) -> list[FloorRow]:
        return [r for r in self.rows if not r.is_floor]

    @property
    def beaten_by(self) -> list[str]:
        """Engines faster than the floor: then it is no lower bound of this rewrite (e.g. a bare library's
        way of applying deletes is slower than an engine's), and the multiples are not overhead."""
        return [r.engine for r in self.engines if r.multiple is not None and r.multiple < 1]

    @property
    def cpu_measured(self) -> bool:
        return any(r.mb_per_cpu_s is not None for r in self.rows)

    def chart_rows(self) -> list[tuple[str, float | None, float | None, float | None, list[float]]]:
        """(label, multiple, min, max, per-pair multiples) for a bar chart; the floor is 1×."""
        return [(r.engine, r.multiple, r.spread.min if r.spread.n else None, r.spread.max if r.spread.n else None,
                 r.spread.values if r.paired else []) for r in self.rows]


def _same_dataset(a: ResultSet, b: ResultSet) -> bool:
    ha, hb = a.first.dataset_recipe_hash, b.first.dataset_recipe_hash
    return a.scenario_name == b.scenario_name and math.isclose(a.scale, b.scale, rel_tol=1e-9) and (
        not ha or not hb or ha == hb)


def _floor_row(rs: ResultSet, engine: str, is_floor: bool) -> FloorRow:
    row = _row(rs, engine)
    cores, source = cores_given(rs, engine)
    good = [lr for lr in rs.runs if lr.r.engine == engine and lr.counts]
    out = FloorRow(engine=engine, color=rs.colors[engine], is_floor=is_floor, row=row, cores=cores,
                   cores_source=source)
    if row.throughput_mb_s is not None and cores:
        out.mb_s_per_core = row.throughput_mb_s / cores
    per_cpu = [lr.r.before.uncompressed_bytes / 1e6 / cpu for lr in good
               if lr.r.before.uncompressed_bytes and (cpu := _cpu_seconds(lr.r))]
    out.mb_per_cpu_s = median(per_cpu)
    return out


def floor_view(rs: ResultSet, source: ResultSet, floor: str) -> FloorView | None:
    engines = rs.committing
    if not engines:
        return None
    same = source is rs
    fl = _floor_row(source, floor, True)
    fmed = fl.row.stats.duration_s.median
    if fmed:
        fl.multiple = 1.0
    rows = [fl]
    paired = {fm.engine: fm for fm in floor_multiples(lr.r for lr in rs.runs) if fm.floor == floor} if same else {}
    for e in engines:
        fr = _floor_row(rs, e, False)
        d = fr.row.stats.duration_s
        if same and e in paired and paired[e].ratio.n:
            # rep i against rep i, the median of the pairs: the multiple the Markdown tables print (bench.core.stats)
            fr.multiple, fr.spread, fr.paired = paired[e].ratio.median, paired[e].ratio, True
        elif d.median and fmed:  # nothing to pair: the medians' ratio
            fr.multiple = d.median / fmed
            if not same:  # different run sets: every run of the engine against every run of the floor
                fr.spread = Spread.of(a / b for a in d.values for b in fl.row.stats.duration_s.values if b)
        rows.append(fr)
    runs = [lr.r for lr in source.runs if lr.r.engine == floor] + [lr.r for lr in rs.runs if lr.r.engine in engines]
    return FloorView(floor=floor, source=source, same_set=same, rows=rows, anchor=f"{rs.anchor}-floor-{floor}",
                     check=floor_check(runs, floor))


def floor_views(sets: list[ResultSet]) -> dict[str, list[FloorView]]:
    """Per run set (by anchor): its engines against each floor run in it, or, when it ran none, against
    the floor of another set of the same scenario, scale and dataset."""
    out: dict[str, list[FloorView]] = {}
    for rs in sets:
        pairs = [(rs, f) for f in rs.floor_labels]
        if not pairs:
            other = next((o for o in sets if o is not rs and o.floor_labels and _same_dataset(rs, o)), None)
            pairs = [(other, f) for f in other.floor_labels] if other else []
        views = [v for src, f in pairs if (v := floor_view(rs, src, f)) is not None]
        if views:
            out[rs.anchor] = views
    return out


# --- variants -----------------------------------------------------------------------------------------
def flatten(options: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested options as dotted keys: {"conf": {"a.b": 1}} -> {"conf.a.b": 1}."""
    out: dict[str, Any] = {}
    for k, v in options.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _first(values):
    return next((v for v in values if v is not None), None)


def deploy_facts(r: RunResult) -> list[tuple[str, str]]:
    """How the engine was deployed, as it reported it (`deployment`: mode, master, workers, nodes, executors,
    cores, memory granted per executor) and the heap of its own process (the memory cap of role heap).
    [] when it reported no deployment."""
    d = r.deployment
    if d is None:
        return []
    facts: list[tuple[str, str]] = [("mode", d.mode)]
    if d.master:
        facts.append(("master", d.master))
    if d.workers:
        facts.append(("workers", str(d.workers)))
    if r.nodes > 1:
        facts.append(("nodes", str(r.nodes)))
    if d.executors is not None:
        facts.append(("executors", str(d.executors)))
    if d.cores is not None:
        each = f" ({', '.join(map(str, d.executor_cores))} per executor)" if len(d.executor_cores) > 1 else ""
        facts.append(("cores", f"{d.cores}{each}"))
    if d.executor_memory_bytes:
        facts.append(("executor memory", ", ".join(fmt_bytes(m) for m in d.executor_memory_bytes)))
    heap = next((c for c in r.memory_caps if c.role == "heap" and c.bytes), None)
    if heap is not None:
        facts.append((heap.name, fmt_bytes(heap.bytes)))
    return facts


@dataclass
class VariantRow:
    label: str
    color: str
    profile: str | None
    row: EngineRow
    is_reference: bool
    diff: list[tuple[str, str, str]]  # (option, the reference's value, this one's)
    deploy: list[tuple[str, str]]
    options_recorded: bool
    ratio: float | None = None  # median time ÷ the reference's median time (above 1: slower)
    spread: Spread = field(default_factory=lambda: Spread.of([]))  # the same, per paired rep


@dataclass
class VariantGroup:
    engine: str  # the engine behind the labels
    reference: str  # the plain label (or, without one, the first label)
    plain: bool  # the reference is the plain engine
    rows: list[VariantRow]

    @property
    def deploy(self) -> bool:
        return any(r.deploy for r in self.rows)


def _options(rs: ResultSet, label: str) -> dict[str, Any] | None:
    runs = _runs_of(rs, label)
    recorded = [lr.r.engine_options for lr in runs if lr.r.engine_options]
    return flatten(recorded[0]) if recorded else None


def variant_groups(rs: ResultSet) -> list[VariantGroup]:
    """Per engine with several labels in the set: the labels side by side against the plain one."""
    base_of = {lr.r.engine: lr.r.engine_name for lr in rs.runs}
    results = [lr.r for lr in rs.runs]
    out = []
    for base in dict.fromkeys(base_of[e] for e in rs.engines):
        labels = [e for e in rs.engines if base_of[e] == base]
        if len(labels) < 2:
            continue
        ref = base if base in labels else labels[0]
        ref_opts = _options(rs, ref)
        ref_med = _row(rs, ref).stats.duration_s.median
        rows = []
        for label in labels:
            runs = _runs_of(rs, label)
            opts = _options(rs, label)
            diff = []
            if opts is not None and ref_opts is not None and label != ref:
                for k in sorted(set(opts) | set(ref_opts)):
                    if opts.get(k) != ref_opts.get(k):
                        diff.append((k, fmt_value(ref_opts.get(k), "unset"), fmt_value(opts.get(k), "unset")))
            row = _row(rs, label)
            vr = VariantRow(label=label, color=rs.colors[label], profile=_first(lr.r.profile for lr in runs),
                            row=row, is_reference=label == ref, diff=diff,
                            deploy=deploy_facts(runs[0].r) if runs else [], options_recorded=opts is not None)
            med = row.stats.duration_s.median
            if label != ref and med and ref_med:
                vr.ratio = med / ref_med
                sp = paired_speedup(results, ref, label)  # oriented faster / slower: turned to label / ref
                vr.spread = Spread.of(x if sp.faster == ref else 1 / x for _, x in sp.pairs)
            elif label == ref and med:
                vr.ratio = 1.0
            rows.append(vr)
        out.append(VariantGroup(engine=base, reference=ref, plain=ref == base, rows=rows))
    return out


# --- the sort comparison -----------------------------------------------------------------------------
SORT_QUERIES = ("point-lookup", "key-range")


def strategy_of(r: RunResult) -> str:
    """The rewrite strategy a run was compacted with, from the scenario it recorded (binpack unless it says)."""
    rewrite = (r.scenario_record.content or {}).get("rewrite") or {}
    return str(rewrite.get("strategy") or "binpack")


@dataclass
class SortRead:
    query: str
    before_s: float | None
    after_s: float | None
    files_before: float | None
    files_after: float | None

    @property
    def ratio(self) -> float | None:
        """before ÷ after: above 1, the query got faster."""
        return self.before_s / self.after_s if self.before_s and self.after_s else None


@dataclass
class SortRow:
    engine: str
    color: str
    strategy: str
    run_id: str
    anchor: str
    runs: int  # verified runs with usable after-reads
    reads: list[SortRead]
    duration_s: float | None = None  # median compaction time of those runs


@dataclass
class SortComparison:
    scenario: str
    scale: float
    strategies: list[str]
    rows: list[SortRow]


def _sort_row(rs: ResultSet, engine: str) -> SortRow | None:
    good = [lr.r for lr in rs.runs if lr.r.engine == engine and lr.counts and lr.r.reads is not None
            and lr.r.reads.after_usable]
    if not good:
        return None
    reads = []
    for name in SORT_QUERIES:
        qs = [q for r in good for q in r.reads.queries if q.name == name]  # type: ignore[union-attr]
        reads.append(SortRead(query=name, before_s=median([q.before_s for q in qs]),
                              after_s=median([q.after_s for q in qs]),
                              files_before=median([q.files_opened_before for q in qs]),
                              files_after=median([q.files_opened_after for q in qs])))
    return SortRow(engine=engine, color=rs.colors[engine], strategy=strategy_of(good[0]), run_id=rs.run_id,
                   anchor=rs.anchor, runs=len(good), reads=reads, duration_s=median([r.duration_s for r in good]))


def sort_comparisons(sets: list[ResultSet]) -> list[SortComparison]:
    """Per dataset compacted with more than one rewrite strategy across the run sets: each engine and
    strategy's reads (engines that commit nothing have no after-reads, and no row)."""
    out = []
    for (scenario, scale, _), members in group_by(sets, lambda rs: (rs.scenario_name, round(rs.scale, 12),
                                                                    rs.first.dataset_recipe_hash)):
        rows = [row for rs in members for e in rs.committing if (row := _sort_row(rs, e)) is not None]
        strategies = list(dict.fromkeys(row.strategy for row in rows))
        if len(strategies) > 1:
            rows.sort(key=lambda row: (row.engine, strategies.index(row.strategy)))
            out.append(SortComparison(scenario=scenario, scale=scale, strategies=strategies, rows=rows))
    return out


__all__ = ["FloorView", "SortComparison", "VariantGroup", "deploy_facts", "flatten", "floor_views",
           "sort_comparisons", "variant_groups"]
