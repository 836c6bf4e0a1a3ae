"""The memory frontier: per engine, the smallest memory budget at which it completes verified, by bisection
between its lowest budget and the node's RAM, each probe a recorded run; fitted over scales and carried to
the published node (or, at one scale, over partition counts)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bench.campaigns.shared import campaign_dir
from bench.core.campaign import FrontierPoint, FrontierPrediction, FrontierSummary, Probe, recorded, write_summary
from bench.core.catalog import CatalogSettings
from bench.core.errors import UserError
from bench.core.fit import fit_line
from bench.core.fmt import fmt_bytes, fmt_scale
from bench.core.machine import environment, node_ram_bytes
from bench.core.progress import Progress
from bench.core.published import PUBLISHED_INSTANCE, PUBLISHED_RAM_BYTES
from bench.core.results import RunResult, file_label, now_iso
from bench.core.units import MiB, parse_size
from bench.engines import campaign_engines, engine_class, parse_engines
from bench.runner.context import CommonOptions, RunOptions, resolve_file_scale
from bench.runner.run import run_scenario
from bench.scenario import Scenario, load_scenario

DEFAULT_PRECISION = "64M"
PRECISION_SHARE = 0.05  # a frontier is found to max(precision, 5 % of the budget)
FIRST_GUESS = 1.25  # after the ceiling passes: try 1.25 x its peak RSS first
MAX_SLOWDOWN = 10.0  # a probe slower than this x the unconstrained run is stopped and counts as failing
MIN_PROBE_TIMEOUT_S = 60


@dataclass(kw_only=True)
class FrontierOptions(CommonOptions):
    scales: list[float]
    engines: str | None = None
    lowest: str | None = None  # --floor: the lowest budget to try
    ceiling: str | None = None
    precision: str = DEFAULT_PRECISION
    max_slowdown: float = MAX_SLOWDOWN
    partitions: list[int] | None = None  # partition counts at the one scale (the other axis)


def _at(scale: float, partitions: int | None) -> str:
    return f"scale {fmt_scale(scale)}" + (f", {partitions} partitions" if partitions else "")


def _probe(opts: FrontierOptions, directory: Path, engine: str, scale: float, budget: int, timeout_s: int,
           progress: Progress, partitions: int | None = None) -> Probe:
    run_id = f"{file_label(engine)}-s{fmt_scale(scale)}{f'-p{partitions}' if partitions else ''}-{budget // MiB}m"
    progress.info(f"frontier: {engine} at {_at(scale, partitions)} under {fmt_bytes(budget)}")
    got = run_scenario(RunOptions(**opts.common(results_dir=str(directory), run_id=run_id, timeout_s=timeout_s),
                                  scale=None if opts.source else scale, engines=engine, reps=1,
                                  memory_budget=str(budget), readers=False,
                                  partitions=partitions), progress)
    r = got[0]
    # the heap that does the work: the executor's in a cluster mode, else the one JVM's
    roles = {c.role: c.bytes for c in r.memory_caps}
    heap = roles.get("executor-heap", roles.get("heap"))
    # under a budget, a time limit set from the unconstrained run means thrashing: a memory failure
    thrashing = r.status == "timeout" and timeout_s < opts.timeout_s
    return Probe(budget_bytes=budget, status=r.status, verified=r.verified, passed=r.counts,
                 memory_failure=r.status in ("oom", "heap-oom") or thrashing,
                 peak_rss_bytes=r.telemetry.peak_rss_bytes, duration_s=r.duration_s, heap_bytes=heap,
                 error=(f"slower than {opts.max_slowdown:g}x the unconstrained run (memory pressure): "
                        if thrashing else "") + (r.error or "") or None,
                 result_file=f"{run_id}/{r.scenario}--{file_label(r.engine)}--{r.tag}.json")


def find_frontier(opts: FrontierOptions, directory: Path, engine: str, scale: float, lowest: int, ceiling: int,
                  precision: int, progress: Progress, partitions: int | None = None) -> FrontierPoint:
    """Bisection between `lowest` and `ceiling` for the smallest budget that passes (completes verified);
    `partitions`: the table reshaped to that many partitions (its own dataset)."""
    fp = FrontierPoint(engine=engine, scale=scale, gb=0.0, partitions=partitions, lowest_bytes=lowest,
                       ceiling_bytes=ceiling, precision_bytes=precision)

    limit = [opts.timeout_s]

    def probe(budget: int) -> Probe:
        p = _probe(opts, directory, engine, scale, budget, limit[0], progress, partitions)
        fp.probes.append(p)
        return p

    top = probe(ceiling)
    if not top.passed:
        fp.note = (f"fails even at the ceiling ({fmt_bytes(ceiling)}): {top.status}" if top.memory_failure else
                   f"no frontier: the run at the ceiling ended {top.status} (not a memory failure): {top.error}")
        fp.max_failed_bytes = ceiling if top.memory_failure else None
        return fp
    fp.duration_unconstrained_s = top.duration_s
    wall = _process_wall(directory / top.result_file) or top.duration_s or 0.0
    limit[0] = min(opts.timeout_s, max(MIN_PROBE_TIMEOUT_S, int(opts.max_slowdown * wall) + 1))
    lo, hi = lowest, ceiling
    guess = (int(FIRST_GUESS * (top.peak_rss_bytes or 0)) // MiB) * MiB
    candidates = [lowest] + ([guess] if lowest < guess < ceiling else [])
    for budget in candidates:  # the lowest budget, then a first guess above the peak at the ceiling
        p = probe(budget)
        if p.passed:
            hi = budget
            if budget == lowest:
                fp.note = (f"completes at the lowest budget tried ({fmt_bytes(lowest)}): the frontier is at or "
                           "below it")
                break
        else:
            lo = budget
            if not p.memory_failure:
                fp.note += f"{fmt_bytes(budget)} ended {p.status} (not a memory failure: counted as failing). "
    while hi != lowest and hi - lo > max(precision, int(PRECISION_SHARE * hi)):
        mid = ((lo + hi) // 2 // MiB) * MiB
        p = probe(mid)
        if p.passed:
            hi = mid
        else:
            lo = mid
            if not p.memory_failure:
                fp.note += f"{fmt_bytes(mid)} ended {p.status} (not a memory failure: counted as failing). "
    best = next(p for p in fp.probes if p.budget_bytes == hi)
    fp.min_budget_bytes, fp.max_failed_bytes = hi, (lo if hi != lowest else None)
    fp.peak_rss_at_min, fp.duration_at_min_s = best.peak_rss_bytes, best.duration_s
    fp.heap_at_min_bytes = best.heap_bytes
    return fp


def _process_wall(path: Path) -> float | None:
    try:
        return RunResult.model_validate_json(path.read_text()).process_wall_s
    except (OSError, ValueError):
        return None


def frontier(opts: FrontierOptions, progress: Progress) -> FrontierSummary:
    sc = load_scenario(opts.scenario)
    engines = parse_engines(opts.engines or campaign_engines())
    ram = node_ram_bytes()
    ceiling = parse_size(opts.ceiling, "--ceiling") if opts.ceiling else ram
    precision = parse_size(opts.precision, "--precision")
    user_lowest = parse_size(opts.lowest, "--floor") if opts.lowest else 0
    lowest = {e: max(user_lowest, engine_class(e)().min_budget(sc.options_for(e, opts.options))) for e in engines}
    for e, f in lowest.items():
        if f >= ceiling:
            raise UserError(f"{e}: its lowest budget {fmt_bytes(f)} is not below the ceiling {fmt_bytes(ceiling)}")
    if opts.source is not None:
        if opts.partitions or opts.scales:
            raise UserError("--scale, --scales and --partitions shape the generated table; with --source-table "
                            "your table is the input")
        opts.scales = [0.0]  # the clone: one point, no size axis
    if opts.partitions:
        if len(opts.scales) != 1:
            raise UserError("--partitions counts the partitions at one scale: give --scale S, not --scales")
        for n in opts.partitions:  # every count checked (UserError) before anything runs
            sc.with_partitions(n, opts.scales[0], opts.file_scale)
    if opts.file_scale is not None:  # bad --file-scale at any scale: UserError before anything runs
        if opts.source is not None:
            raise UserError("--file-scale shapes the generated table; with --source-table your table is the input")
        for scale in opts.scales:
            resolve_file_scale(sc, scale, opts.file_scale, opts.seed)
    points = ([(opts.scales[0], n) for n in opts.partitions] if opts.partitions
              else [(scale, None) for scale in opts.scales])
    directory = campaign_dir(opts.results_dir, opts.run_id, "frontier", sc.name)
    settings = CatalogSettings.for_warehouse(opts.warehouse)
    env = environment(settings.state_path if settings.is_remote else settings.warehouse_path)
    s = FrontierSummary(frontier_id=directory.name, scenario=sc.name, scenario_record=sc.record(), scales=opts.scales,
                        file_scale=opts.file_scale,
                        partitions=opts.partitions or [], engines=engines, started_at=now_iso(), pid=os.getpid(),
                        source_table=opts.source.table if opts.source else "",
                        machine=env.describe(), ram_bytes=ram,
                        notes=[f"a probe passes when the run completes verified within {opts.max_slowdown:g}x the "
                               f"wall time of the unconstrained run (at least {MIN_PROBE_TIMEOUT_S} s); slower is "
                               f"memory pressure (thrashing) and counts as failing",
                               f"bisection to max({fmt_bytes(precision)}, {PRECISION_SHARE:.0%} of the budget), "
                               f"between each engine's lowest budget and {fmt_bytes(ceiling)}"]
                        + ([f"partition counts at scale {fmt_scale(opts.scales[0])}: each a dataset of its own, the "
                            f"recipe's files placed in that many partitions (buckets kept, periods = partitions / "
                            f"buckets); no fit against size and no prediction at scale 1 (the points differ in "
                            f"layout, not size)"] if opts.partitions else [])
                        + ([f"your own table {opts.source.table} (a zero-copy clone, the original checked unchanged "
                            f"after every probe): one point, no fit against size and no prediction at scale 1"]
                           if opts.source else [])
                        + ([f"every probe has the file counts of scale {fmt_scale(opts.file_scale)} (--file-scale) "
                            f"and the bytes of its scale: the model at scale 1 scales the size, not the counts"]
                           if opts.file_scale is not None else []))
    directory.mkdir(parents=True)
    write_summary(directory, s)
    with recorded(directory, s):
        for scale, partitions in points:
            for e in engines:
                fp = find_frontier(opts, directory, e, scale, lowest[e], ceiling, precision, progress, partitions)
                first = directory / fp.probes[0].result_file
                if first.exists():
                    r0 = RunResult.model_validate_json(first.read_text())
                    fp.gb = r0.before.uncompressed_bytes / 1e9
                    fp.writes_at_once = r0.deployment.writes_at_once if r0.deployment else {}
                ample = max((p for p in fp.probes if p.passed), key=lambda p: p.budget_bytes, default=None)
                if ample is not None:
                    fp.peak_rss_ample, fp.ample_budget_bytes = ample.peak_rss_bytes, ample.budget_bytes
                s.points.append(fp)
                summarize_frontier(s, sc)
                write_summary(directory, s)
                progress.info(f"frontier: {e} at {_at(scale, partitions)}: "
                              + (f"completes from {fmt_bytes(fp.min_budget_bytes)}" if fp.min_budget_bytes
                                 else fp.note) + f" ({len(fp.probes)} runs)")
    progress.block(frontier_table(s))
    progress.info(f"frontier: {directory}")
    return s


def summarize_frontier(s: FrontierSummary, sc: Scenario) -> None:
    pub = sc.published
    s.fits, s.predictions = {}, []
    if s.partitions or s.source_table:  # one table: nothing to fit against size
        return
    for e in s.engines:
        pts = [p for p in s.points if p.engine == e and p.min_budget_bytes and p.gb]
        s.fits[e] = fit_line([p.gb for p in pts], [float(p.min_budget_bytes or 0) for p in pts],
                             "min_budget_bytes", "bytes")
        if not pts:
            continue
        top = max(pts, key=lambda p: p.scale)
        gb = top.gb / top.scale
        fit = s.fits[e]
        pred = frontier_at(s, e, gb)
        published = pub.status.get(e) if pub else None
        if pred is None:
            predicted = "unknown"
        else:
            predicted = "oom" if pred > PUBLISHED_RAM_BYTES else "ok"
        agrees = None if published is None or predicted == "unknown" else \
            (predicted == "oom") == (published in ("oom", "heap-oom"))
        note = (f"from {len(pts)} scale(s); " + ("the fit is poor: " + fit.note if fit.poor and len(pts) >= 2 else
                                                 "a straight line through the measured frontiers" if len(pts) >= 2 else
                                                 "one scale: assumes memory grows in proportion to size"))
        note += frontier_growth(pts)
        s.predictions.append(FrontierPrediction(engine=e, node=PUBLISHED_INSTANCE, gb=gb, min_budget_bytes=pred,
                                                interval=fit.interval(gb) if len({p.gb for p in pts}) >= 2 else None,
                                                node_ram_bytes=PUBLISHED_RAM_BYTES, predicted=predicted,
                                                published_status=published, agrees=agrees, note=note))


def frontier_growth(pts: list[FrontierPoint]) -> str:
    """Does the smallest budget keep growing with the table, or level off?  The budget each further GB
    took between neighbouring measured sizes (each frontier known to its bisection's precision)."""
    by_gb = sorted(pts, key=lambda p: p.gb)
    steps = [((b.min_budget_bytes or 0) - (a.min_budget_bytes or 0)) / (b.gb - a.gb)
             for a, b in zip(by_gb, by_gb[1:]) if b.gb > a.gb]
    if len(steps) < 2:
        return ""
    precision = max(p.precision_bytes for p in by_gb)
    return ("; budget per further GB between neighbouring sizes: "
            + ", ".join(f"{fmt_bytes(max(v, 0))}/GB" if v >= 0 else f"-{fmt_bytes(-v)}/GB" for v in steps)
            + f" ({by_gb[0].gb:.2g} to {by_gb[-1].gb:.2g} GB; each frontier within {fmt_bytes(precision)} or 5 %)")


def frontier_table(s: FrontierSummary) -> str:
    rows = [f"{'engine':<12} {'scale':>8} {'partitions':>10} {'input':>9} {'min budget':>11} {'peak RSS there':>15} "
            f"{'time there':>11} {'peak RSS ample':>15} {'unconstrained':>14} {'runs':>5}  writes at once (settings)"]
    for p in s.points:
        mb = fmt_bytes(p.min_budget_bytes) if p.min_budget_bytes else "none"
        rows.append(f"{p.engine:<12} {fmt_scale(p.scale):>8} {p.partitions or '-':>10} {p.gb:>7.2f}GB {mb:>11} "
                    f"{fmt_bytes(p.peak_rss_at_min) if p.peak_rss_at_min else '-':>15} "
                    f"{f'{p.duration_at_min_s:.1f} s' if p.duration_at_min_s else '-':>11} "
                    f"{fmt_bytes(p.peak_rss_ample) if p.peak_rss_ample else '-':>15} "
                    f"{f'{p.duration_unconstrained_s:.1f} s' if p.duration_unconstrained_s else '-':>14} "
                    f"{len(p.probes):>5}  " + (", ".join(f"{k}={v}" for k, v in p.writes_at_once.items()) or "-"))
    for x in s.predictions:
        pred = fmt_bytes(x.min_budget_bytes) if x.min_budget_bytes else "-"
        rows.append(f"model at scale 1 ({x.gb:,.0f} GB): {x.engine} needs ~{pred} -> {x.predicted} on a "
                    f"{x.node_ram_bytes / 1e9:.0f} GB node; published: {x.published_status or 'not published'}"
                    + ("" if x.agrees is None else f" ({'agrees' if x.agrees else 'DISAGREES'})"))
    return "\n".join(rows)


def frontier_at(fr: FrontierSummary, engine: str, gb: float) -> float | None:
    """The smallest budget at `gb` logical GB: the frontier fit with two scales or more, else in proportion
    to the one measured frontier (a model either way)."""
    pts = [p for p in fr.points if p.engine == engine and p.min_budget_bytes and p.gb]
    if not pts:
        return None
    if len({p.gb for p in pts}) >= 2:
        return fr.fits[engine].predict(gb)
    top = pts[0]
    return (top.min_budget_bytes or 0) / top.gb * gb
