"""Campaign summaries -> the report's view of them: a sweep (one scenario at several scales: how time and
memory grow with the input, and where the fits lead), a memory frontier (the smallest budget each
engine passes at, per scale) and a tune (a search over an engine's settings, and the confirmation of
the best against the published configuration), and `bench selfcheck scaling` (the harness's own steps on 1 and
2 cores, the efficiencies `bench plan` scales them by).

Reads only the summary files (`sweep.json`, `frontier.json`, `tune.json`, `harness-scaling.json`, found by
bench.core.campaign)
and the result sets already loaded beside them, which it links to.  It recomputes nothing the campaign stored: the fits,
speedups, extrapolations and predictions are shown as written; the one derived figure is the split of a
NodeModel's time into its CPU and storage terms, by the model's own method.  Every extrapolation is a
model and is labelled so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from markupsafe import Markup
from pydantic import ValidationError

from bench.core.campaign import (
    SUMMARY_FILES,
    Extrapolation,
    FrontierPoint,
    FrontierPrediction,
    FrontierSummary,
    HarnessScalingSummary,
    Point,
    Probe,
    Summary,
    SweepSummary,
    TuneConfig,
    TuneKnob,
    TuneSummary,
    find_summaries,
)
from bench.core.children import pid_alive
from bench.core.errors import UserError
from bench.core.fit import Fit
from bench.core.fmt import fmt_bytes, fmt_r2, fmt_ratio, fmt_scale, fmt_seconds, fmt_value
from reports.charts.base import MUTED
from reports.charts.campaigns import PARTITIONS_AXIS, frontier_chart, scaling_chart, speedup_scaling_chart, tune_chart
from reports.model.colors import fill_colors
from reports.model.view import ResultSet

QUANTITY = {"duration_s": "compaction time", "peak_rss_bytes": "peak memory (RSS)",
            "min_budget_bytes": "smallest passing budget", "datagen_s": "data generation"}
STATE_NOTE = {
    "running": ("had not finished when this summary was last written (it is still running, or it was killed "
                "before it could record its end): what follows rests on the points measured so far"),
    "interrupted": "was interrupted: what follows rests on the points measured before it stopped",
}


# --- finding ------------------------------------------------------------------------------------------
@dataclass
class Located:
    summary: Summary
    path: Path  # the summary file: its directory holds the campaign's run directories


def locate(paths) -> list[Located]:
    """Every summary in or under `paths`, with the file it came from (found by bench.core.campaign, one
    file at a time so each summary keeps its place)."""
    out: list[Located] = []
    seen: set[Path] = set()
    names = list(SUMMARY_FILES.values())
    for p in map(Path, paths):
        if p.is_file():
            files = [p] if p.name in names else []
        elif p.is_dir():
            files = sorted(f for n in names for f in p.rglob(n))
        else:
            files = []
        for f in files:
            f = f.resolve()
            if f in seen:
                continue
            seen.add(f)
            try:
                found = find_summaries([f])
            except ValidationError as e:
                raise UserError(f"{f} is not a valid campaign summary: {str(e).splitlines()[0]}") from None
            out.extend(Located(s, f) for s in found)
    return out


def engine_colors(located: list[Located], base: dict[str, str]) -> dict[str, str]:
    """The results' colours where the results name the engine; the fallback palette, in the stable order
    of the summaries' engine lists, for the others."""
    engines = list(dict.fromkeys(e for loc in located for e in _engines(loc.summary)))
    return fill_colors({e: base.get(e) for e in engines}, base.values())


def _engines(s: Summary) -> list[str]:
    if isinstance(s, HarnessScalingSummary):  # the harness's steps: no engine
        return []
    if isinstance(s, TuneSummary):  # the engine as published, and the profile the search wrote
        return list(dict.fromkeys([s.engine, tuned_label(s)]))
    named = list(s.engines) + [p.engine for p in s.points]
    if isinstance(s, SweepSummary):
        named += list(s.time_fits) + list(s.memory_fits) + [e.engine for e in s.extrapolations]
    else:
        named += list(s.fits) + [p.engine for p in s.predictions]
    return list(dict.fromkeys(named))


# --- linking the campaign's run sets ------------------------------------------------------------------
def _set_dir(rs: ResultSet) -> Path | None:
    return rs.runs[0].path.parent.resolve() if rs.runs else None


def _under(rs: ResultSet, root: Path) -> bool:
    d = _set_dir(rs)
    return d is not None and (d == root or root in d.parents)


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _path_matches(path: Path, stored: str, root: Path) -> bool:
    """`stored` (as a campaign recorded it: absolute, or relative to the campaign's or the results'
    directory) names `path`."""
    if not stored:
        return False
    s = Path(stored)
    if s.is_absolute():
        return s.resolve() == path
    return (root / s).resolve() == path or (root.parent / s).resolve() == path or (
        len(s.parts) <= len(path.parts) and path.parts[-len(s.parts):] == s.parts)


# --- views --------------------------------------------------------------------------------------------
@dataclass
class FitRow:
    engine: str
    color: str
    quantity: str  # as fitted: duration_s, peak_rss_bytes, min_budget_bytes, ...
    label: str
    fit: Fit
    fixed: str
    fixed_se: str
    per_gb: str
    per_gb_se: str
    r2: str
    usable: bool  # a line could be fitted at all


def _fmt_of(fit: Fit):
    if fit.unit == "bytes" or fit.quantity.endswith("_bytes"):
        return fmt_bytes
    return fmt_seconds


def fit_row(engine: str, color: str, fit: Fit) -> FitRow:
    f = _fmt_of(fit)
    usable = fit.n >= 2 and len(set(fit.xs)) >= 2
    return FitRow(engine=engine, color=color, quantity=fit.quantity, label=QUANTITY.get(fit.quantity, fit.quantity),
                  fit=fit, fixed=f(fit.fixed), fixed_se="" if fit.fixed_se is None else f"± {f(fit.fixed_se)}",
                  per_gb=f"{f(fit.per_gb)}/GB" if usable else "—",
                  per_gb_se="" if fit.per_gb_se is None else f"± {f(fit.per_gb_se)}",
                  r2=fmt_r2(fit.r2), usable=usable)


def fit_sentence(fit: Fit) -> str:
    r = fit_row("", "", fit)
    if not r.usable:
        return f"{r.fixed} on average — {fit.note}"
    return (f"{r.fixed} + {r.per_gb}{f' ({r.per_gb_se})' if r.per_gb_se else ''} over {fit.n} points, "
            f"R² {r.r2}")


@dataclass
class Link:
    anchor: str
    label: str


@dataclass
class PointRow:
    point: Point
    color: str
    links: list[Link]
    first: bool  # the first row of its scale
    span: int  # rows of its scale


@dataclass
class ExtrapolationRow:
    e: Extrapolation
    color: str
    cpu_s: float | None = None
    storage_s: float | None = None
    vs_published: float | None = None  # model ÷ published


@dataclass(kw_only=True)
class CampaignView:
    """What every campaign's view has: its summary file, anchor, engines and their colours, charts, a
    note when it did not finish, and the run sets it contains (their anchors)."""

    path: Path
    anchor: str
    colors: dict[str, str]
    engines: list[str]
    charts: dict[str, Markup] = field(default_factory=dict)
    state_note: str = ""
    run_sets: list[str] = field(default_factory=list)
    s: Summary

    kind: ClassVar[str]  # what the report calls it
    id_field: ClassVar[str]  # the field of its summary that names it

    @property
    def ident(self) -> str:
        return getattr(self.s, self.id_field)


@dataclass(kw_only=True)
class SweepView(CampaignView):
    s: SweepSummary
    points: list[PointRow] = field(default_factory=list)
    fits: list[FitRow] = field(default_factory=list)
    extrapolations: list[ExtrapolationRow] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    target: str = ""
    datagen: FitRow | None = None
    datagen_text: str = ""

    kind = "sweep"
    id_field = "sweep_id"


@dataclass
class ProbeRow:
    probe: Probe
    index: int  # in the order the bisection ran it
    role: str  # "smallest passing" | "largest failing" | ""
    link: Link | None


@dataclass
class FrontierRow:
    point: FrontierPoint
    color: str
    probes: list[ProbeRow]
    time_ratio: float | None  # time at the smallest budget ÷ time unconstrained


@dataclass
class PredictionRow:
    p: FrontierPrediction
    color: str
    fit: FitRow | None


@dataclass(kw_only=True)
class FrontierView(CampaignView):
    s: FrontierSummary
    rows: list[FrontierRow] = field(default_factory=list)
    fits: list[FitRow] = field(default_factory=list)
    predictions: list[PredictionRow] = field(default_factory=list)
    node_label: str = ""
    node_ram: int | None = None
    node_ram_on_chart: bool = False

    kind = "frontier"
    id_field = "frontier_id"


def _state_note(kind: str, s: Summary) -> str:
    note = STATE_NOTE.get(s.state)
    if not note:
        return ""
    pid = getattr(s, "pid", 0)  # a harness-scaling check records none
    if s.state == "running" and pid and pid_alive(pid, s.started_at) is False:
        note = (f"was killed before it could record its end (its process, pid {pid}, is gone): what follows "
                "rests on the points measured before that")
    when = f" (started {s.started_at}" + (f", ended {s.ended_at})" if s.ended_at else ")") if s.started_at else ""
    return f"This {kind}{when} {note}."


V = TypeVar("V", bound=CampaignView)


def _open(cls: type[V], loc: Located, anchor: str, colors: dict[str, str], sets: list[ResultSet],
          **extra: Any) -> tuple[V, list[ResultSet]]:
    """A campaign's view with what every one has (its summary, engines and their colours, the note when it did not
    finish, the anchors of the run sets under its directory), and those run sets."""
    engines = _engines(loc.summary)
    v = cls(s=loc.summary, path=loc.path, anchor=anchor, colors={e: colors[e] for e in engines}, engines=engines,
            state_note=_state_note(cls.kind, loc.summary), **extra)
    mine = [rs for rs in sets if _under(rs, loc.path.parent)]
    v.run_sets = [rs.anchor for rs in mine]
    return v, mine


def _order(engines: list[str], present) -> list[str]:
    return [e for e in engines if e in set(present)]


def sweep_view(loc: Located, anchor: str, colors: dict[str, str], sets: list[ResultSet]) -> SweepView:
    v, mine = _open(SweepView, loc, anchor, colors, sets)
    s, root, engines = v.s, loc.path.parent, v.engines

    def links(scale: float, run_dir: str) -> list[Link]:
        found = [rs for rs in mine if _same(rs.scale, scale)]
        named = [rs for rs in found if (d := _set_dir(rs)) is not None and _path_matches(d, run_dir, root)]
        return [Link(rs.anchor, f"run {rs.run_id}") for rs in (named or found)]

    for scale in sorted({p.scale for p in s.points}):
        pts = sorted((p for p in s.points if _same(p.scale, scale)),
                     key=lambda p: engines.index(p.engine) if p.engine in engines else len(engines))
        for i, p in enumerate(pts):
            v.points.append(PointRow(point=p, color=v.colors.get(p.engine, MUTED),
                                     links=links(scale, p.run_dir or s.run_dirs.get(fmt_scale(scale), "")),
                                     first=i == 0, span=len(pts)))
    # fits: time then memory, per engine
    for fits in (s.time_fits, s.memory_fits):
        for e in _order(engines, fits):
            v.fits.append(fit_row(e, v.colors[e], fits[e]))
    # extrapolations
    for x in sorted(s.extrapolations, key=lambda x: engines.index(x.engine) if x.engine in engines else 99):
        row = ExtrapolationRow(e=x, color=v.colors.get(x.engine, MUTED))
        fit = s.time_fits.get(x.engine)
        if x.model is not None and fit is not None:
            split = x.model.seconds(fit, x.gb)
            row.cpu_s, row.storage_s = split.get("cpu_s"), split.get("storage_s")
        if x.model_s and x.published_s:
            row.vs_published = x.model_s / x.published_s
        v.extrapolations.append(row)
    models = [x.model for x in s.extrapolations if x.model is not None]
    if models:
        m = models[0]
        v.target = f"{m.target} ({m.target_cores} cores, storage {m.storage_mb_s:g} MB/s)"
        shared = {a for a in m.assumptions if all(a in other.assumptions for other in models)}
        # in the model's order; what differs per engine (e.g. the cores it kept busy here) once per engine
        for i in range(max(len(x.assumptions) for x in models)):
            for x in s.extrapolations:
                a = x.model.assumptions[i] if x.model is not None and i < len(x.model.assumptions) else None
                if a is None:
                    continue
                text = a if a in shared else f"{x.engine}: {a}"
                if text not in v.assumptions:
                    v.assumptions.append(text)
    if s.datagen_fit is not None:
        v.datagen = fit_row("datagen", MUTED, s.datagen_fit)
        v.datagen_text = fit_sentence(s.datagen_fit)
    reused = sum(1 for d in s.datagen if d.reused)
    if reused:
        v.datagen_text += (f"{'; ' if v.datagen_text else ''}{reused} of {len(s.datagen)} datasets were reused: "
                           f"their time is the one recorded when they were generated")
    # charts
    time_series, mem_series = [], []
    for e in engines:
        pts = [p for p in s.points if p.engine == e]
        if not pts and e not in s.time_fits:
            continue
        time_series.append((e, [(p.gb, p.duration_s.median, p.duration_s.min, p.duration_s.max) for p in pts],
                            s.time_fits.get(e)))
        mem_series.append((e, [(p.gb, p.peak_rss_bytes.median, p.peak_rss_bytes.min, p.peak_rss_bytes.max)
                               for p in pts], s.memory_fits.get(e)))
    v.charts["time"] = Markup(scaling_chart(
        time_series, v.colors, title="Compaction time against input size (verified runs: median, min–max)",
        value_fmt=fmt_seconds))
    v.charts["memory"] = Markup(scaling_chart(
        mem_series, v.colors, title="Peak memory against input size (process-tree RSS: median, min–max)",
        value_fmt=fmt_bytes, byte_axis=True))
    v.charts["speedup"] = Markup(speedup_scaling_chart(_speedup_series(s), v.colors))
    return v


def _speedup_series(s: SweepSummary):
    """One series per pair of engines, oriented towards the engine that is faster at most sizes (ties:
    the one faster at the largest), so a change of the faster engine shows as a crossing of 1×."""
    pairs: dict[frozenset, list] = {}
    for sp in s.speedups:
        pairs.setdefault(frozenset((sp.faster, sp.slower)), []).append(sp)
    out = []
    for pair, sps in pairs.items():
        wins: dict[str, int] = {}
        for sp in sps:
            wins[sp.faster] = wins.get(sp.faster, 0) + 1
        largest = max(sps, key=lambda sp: sp.gb).faster
        ref = max(sorted(pair), key=lambda e: (wins.get(e, 0), e == largest))
        other = next(iter(pair - {ref}), ref)
        pts = []
        for sp in sps:
            if sp.faster == ref:
                pts.append((sp.gb, sp.median, sp.min, sp.max))
            elif sp.median and sp.min and sp.max:
                pts.append((sp.gb, 1 / sp.median, 1 / sp.max, 1 / sp.min))
        out.append((ref, other, pts))
    return out


def frontier_view(loc: Located, anchor: str, colors: dict[str, str], sets: list[ResultSet]) -> FrontierView:
    v, mine = _open(FrontierView, loc, anchor, colors, sets)
    s, root, engines = v.s, loc.path.parent, v.engines

    def link(point: FrontierPoint, probe: Probe) -> Link | None:
        for rs in mine:
            if any(_path_matches(lr.path.resolve(), probe.result_file, root) for lr in rs.runs):
                return Link(rs.anchor, f"run {rs.run_id}")
        for rs in mine:
            if _same(rs.scale, point.scale) and point.engine in rs.engines and rs.budget == probe.budget_bytes:
                return Link(rs.anchor, f"run {rs.run_id}")
        return None

    for e in engines:
        for p in sorted((p for p in s.points if p.engine == e), key=lambda p: (p.scale, p.partitions or 0)):
            probes = []
            for i, pr in enumerate(p.probes):
                role = ("smallest passing" if pr.passed and pr.budget_bytes == p.min_budget_bytes else
                        "largest failing" if not pr.passed and pr.budget_bytes == p.max_failed_bytes else "")
                probes.append(ProbeRow(probe=pr, index=i + 1, role=role, link=link(p, pr)))
            ratio = (p.duration_at_min_s / p.duration_unconstrained_s
                     if p.duration_at_min_s and p.duration_unconstrained_s else None)
            v.rows.append(FrontierRow(point=p, color=v.colors[e], probes=probes, time_ratio=ratio))
    for e in _order(engines, s.fits):
        v.fits.append(fit_row(e, v.colors[e], s.fits[e]))
    fits = {f.engine: f for f in v.fits}
    for pred in sorted(s.predictions, key=lambda x: engines.index(x.engine) if x.engine in engines else 99):
        v.predictions.append(PredictionRow(p=pred, color=v.colors.get(pred.engine, MUTED),
                                           fit=fits.get(pred.engine)))
    # the published node, for the chart's line
    rams = [p.node_ram_bytes for p in s.predictions if p.node_ram_bytes]
    v.node_ram = rams[0] if rams else None
    try:
        pub = s.scenario_record.published()
    except ValidationError:
        pub = None
    v.node_label = pub.instance_type if pub else "published node"
    series = []
    for e in engines:
        pts = [p for p in s.points if p.engine == e]
        if pts or e in s.fits:
            series.append((e, [(p.gb, p.min_budget_bytes, p.max_failed_bytes, p.ceiling_bytes) for p in pts],
                           s.fits.get(e)))
    drawn = [b for _, pts, _ in series for _, mn, _, ceil in pts for b in (mn if mn is not None else ceil,)]
    v.node_ram_on_chart = bool(v.node_ram and drawn and v.node_ram <= 4 * max(drawn))
    if s.partitions:
        partitions_charts(v)
    else:
        v.charts["frontier"] = Markup(frontier_chart(series, v.colors, v.node_ram, v.node_label))
    return v


def partitions_charts(v: FrontierView) -> None:
    """Memory against the number of partitions (one scale): the smallest passing budget, and the peak
    RSS of the passing probe with the largest budget (verified runs only: none, a red × on the axis)."""
    budget, peak = [], []
    for e in v.engines:
        pts = sorted((r.point for r in v.rows if r.point.engine == e and r.point.partitions),
                     key=lambda p: p.partitions or 0)
        if pts:
            budget.append((e, [(p.partitions, p.min_budget_bytes, p.max_failed_bytes, p.ceiling_bytes) for p in pts],
                           None))
            peak.append((e, [(p.partitions, p.peak_rss_ample, p.peak_rss_ample, p.peak_rss_ample) for p in pts], None))
    v.charts["partitions-budget"] = Markup(frontier_chart(budget, v.colors, None, axis=PARTITIONS_AXIS))
    v.charts["partitions-peak"] = Markup(scaling_chart(
        peak, v.colors, title="Peak memory against partitions (RSS at the largest passing budget)",
        value_fmt=fmt_bytes, byte_axis=True, axis=PARTITIONS_AXIS))


# --- a tune -------------------------------------------------------------------------------------------
def tuned_label(s: TuneSummary) -> str:
    """The label the tuned configuration runs under (ENGINE:PROFILE; the summary names it)."""
    p = s.profile or "tuned"
    return p if ":" in p else f"{s.engine}:{p}"


@dataclass
class KnobRow:
    knob: TuneKnob
    values: str  # the values tried, in this node's units
    published: str
    tried: list[str]  # values the search ran (from its configurations)


@dataclass
class ConfigRow:
    c: TuneConfig
    setting: str  # "published configuration" or knob=value
    changed: str  # every setting against the published configuration
    best: bool  # the configuration the search ended with
    link: Link | None
    vs_published: float | None  # median ÷ the published configuration's median


@dataclass(kw_only=True)
class TuneView(CampaignView):
    s: TuneSummary
    tuned: str  # the tuned configuration's label
    knobs: list[KnobRow] = field(default_factory=list)
    configs: list[ConfigRow] = field(default_factory=list)
    baseline: float | None = None  # the published configuration's median time in the search
    best: str = ""  # the winning settings, in words
    confirm_link: Link | None = None
    verdict: str = ""

    kind = "tune"
    id_field = "tune_id"

    @property
    def searchable(self) -> list[KnobRow]:
        return [k for k in self.knobs if k.knob.searchable]

def _setting(c: TuneConfig) -> str:
    return "published configuration" if c.knob is None else f"{c.knob}={fmt_value(c.value)}"


def _settings(d: dict) -> str:
    return ", ".join(f"{k}={fmt_value(v)}" for k, v in d.items())


def _verdict(s: TuneSummary, tuned: str) -> str:
    c = s.confirmation
    if c is None:
        return ("No confirmation was recorded: the search's single runs are all there is, and they only "
                "steer the search; do not quote them as a speedup.")
    sp = c.speedup
    if sp.median is None:
        return (f"The confirmation has no verified pair ({c.published_verified} verified runs of {s.engine}, "
                f"{c.tuned_verified} of {tuned}): no speedup can be quoted.")
    spread = (f", min–max {fmt_ratio(sp.min)}–{fmt_ratio(sp.max)}" if c.pairs > 1 and sp.min is not None else "")
    pairs = f"over {c.pairs} paired repetition{'s' if c.pairs != 1 else ''}{spread}"
    if sp.median >= 1:
        return f"{tuned} is {fmt_ratio(sp.median)} as fast as {s.engine} ({pairs})."
    return (f"{tuned} was slower than {s.engine} in the confirmation ({fmt_ratio(sp.median)}, {pairs}): the gain "
            f"the search saw did not hold up.")


def tune_view(loc: Located, anchor: str, colors: dict[str, str], sets: list[ResultSet]) -> TuneView:
    v, mine = _open(TuneView, loc, anchor, colors, sets, tuned=tuned_label(loc.summary))  # type: ignore[arg-type]
    s, root, tuned = v.s, loc.path.parent, v.tuned

    def link(run_dir: str) -> Link | None:
        for rs in mine:
            d = _set_dir(rs)
            if d is not None and _path_matches(d, run_dir, root):
                return Link(rs.anchor, f"run {rs.run_id}")
        return None

    for k in s.knobs:
        tried = [fmt_value(c.value) for c in s.configs if c.knob == k.name]
        v.knobs.append(KnobRow(knob=k, values=", ".join(fmt_value(x) for x in k.values) or "—",
                               published=fmt_value(k.published), tried=tried))
    published = next((c for c in s.configs if c.knob is None), None)
    v.baseline = published.duration_s.median if published else None
    kept = [c for c in s.configs if c.accepted]
    last = kept[-1] if kept else None
    for c in s.configs:
        ratio = c.duration_s.median / v.baseline if c.duration_s.median and v.baseline else None
        v.configs.append(ConfigRow(c=c, setting=_setting(c), changed=_settings(c.changed) or "none",
                                   best=c is last, link=link(c.run_dir), vs_published=ratio))
    v.best = _settings(s.best) or "the published configuration (no other setting was kept)"
    if s.confirmation is not None:
        v.confirm_link = link(s.confirmation.run_dir)
    v.verdict = _verdict(s, tuned)
    color = v.colors.get(s.engine, MUTED)
    points = [(r.c.index, f"#{r.c.index} {'published' if r.c.knob is None else r.setting}", r.c.duration_s.median,
               r.c.duration_s.min, r.c.duration_s.max, r.c.accepted, r.best) for r in v.configs]
    v.charts["tune"] = Markup(tune_chart(points, color, v.baseline))
    return v


# --- the harness's own steps on 1 and 2 cores (bench selfcheck scaling) -----------------------------------
HARNESS_TITLE = "The harness's own steps on 1 and 2 cores"


@dataclass(kw_only=True)
class HarnessView(CampaignView):
    """A `bench selfcheck scaling` summary: its steps' CoreScaling, shown as the engines' 1 -> 2 core table is
    (reports/templates/cores.html.j2); no run set of its own."""

    s: HarnessScalingSummary

    kind = "harness scaling"
    id_field = "scaling_id"


def harness_view(loc: Located, anchor: str) -> HarnessView:
    s: HarnessScalingSummary = loc.summary  # type: ignore[assignment]
    return HarnessView(s=s, path=loc.path, anchor=anchor, colors={}, engines=[],
                       state_note=_state_note("harness scaling check", s))


@dataclass
class Campaigns:
    sweeps: list[SweepView] = field(default_factory=list)
    frontiers: list[FrontierView] = field(default_factory=list)
    tunes: list[TuneView] = field(default_factory=list)
    harness: list[HarnessView] = field(default_factory=list)
    member: dict[str, tuple[str, str]] = field(default_factory=dict)  # run-set anchor -> (campaign, its anchor)

    @property
    def all(self) -> list[SweepView | FrontierView | TuneView | HarnessView]:
        return [*self.sweeps, *self.frontiers, *self.tunes, *self.harness]

    def __bool__(self) -> bool:
        return bool(self.sweeps or self.frontiers or self.tunes or self.harness)


def build(located: list[Located], sets: list[ResultSet], base_colors: dict[str, str]) -> Campaigns:
    colors = engine_colors(located, base_colors)
    out = Campaigns()
    for loc in located:
        if isinstance(loc.summary, SweepSummary):
            out.sweeps.append(sweep_view(loc, f"sweep-{len(out.sweeps) + 1}", colors, sets))
        elif isinstance(loc.summary, FrontierSummary):
            out.frontiers.append(frontier_view(loc, f"frontier-{len(out.frontiers) + 1}", colors, sets))
        elif isinstance(loc.summary, HarnessScalingSummary):
            out.harness.append(harness_view(loc, f"harness-scaling-{len(out.harness) + 1}"))
        else:
            out.tunes.append(tune_view(loc, f"tune-{len(out.tunes) + 1}", colors, sets))
    for v in out.all:
        for a in v.run_sets:
            out.member.setdefault(a, (f"{v.kind} {v.ident}", v.anchor))
    return out


__all__ = ["HARNESS_TITLE", "Campaigns", "HarnessView", "Located", "build", "locate"]
