"""Runs of runs: a sweep over scales, a memory frontier over budgets, and the plan of a full reproduction.

Each loop is ordinary `bench run`s (`bench.runner.run_scenario`), each writing ordinary result files
into one campaign directory, plus one summary record (`bench.core.campaign`) with the fits the report
reads.  Nothing here re-implements the runner.

    sweep     time = fixed + per_GB x input GB (and peak memory the same way) per engine, with residuals
              and an interval; extrapolated to scale 1 on this node and, by a stated model, to the
              published node (bench.core.fit.NodeModel), beside the published figures
    frontier  per engine, the smallest memory budget at which it completes verified: bisection between a
              lowest budget (the engine's own minimum) and the node's RAM, each probe a recorded run; over
              several scales fitted like the curves and carried to scale 1 against the published node's
              64 GB: does the model predict the published OOMs?  Or, at one scale, over partition counts
              of a partitioned scenario (each its own dataset, Scenario.with_partitions): memory against
              the number of partitions (no fit, no prediction: the points differ in layout, not size)
    plan      from the fits: datagen time, disk space, engine times, memory frontiers, wall time, cost,
              the EBS size and deadline a full reproduction needs (`bench aws up` uses it)
"""

from __future__ import annotations

import math
import os
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from bench.core.campaign import (
    HARNESS_STEPS,
    DatagenPoint,
    Extrapolation,
    FrontierPoint,
    FrontierPrediction,
    FrontierSummary,
    HarnessScalingSummary,
    Plan,
    PlannedEngine,
    PlannedNode,
    PlannedScenario,
    Point,
    Probe,
    Speedup,
    StorageAnswer,
    SweepSummary,
    find_summaries,
    recorded,
    write_summary,
)
from bench.core.catalog import CatalogSettings
from bench.core.cost import (
    PRICES,
    S3_USD_PER_GB_MONTH,
    SECONDS_PER_MONTH,
    Gp3Volume,
    InstancePrice,
    gp3_usd,
    parse_instance,
    s3_usd,
)
from bench.core.dataset import load_manifest
from bench.core.errors import UserError
from bench.core.fit import CoreScaling, Fit, NodeModel, core_scalings, fit_line, node_model, scaling_for
from bench.core.fmt import fmt_bytes, fmt_scale
from bench.core.machine import environment, node_ram_bytes, usable_cores
from bench.core.progress import Progress
from bench.core.published import PUBLISHED_INSTANCE, PUBLISHED_RAM_BYTES
from bench.core.results import RunResult, file_label, now_iso
from bench.core.spread import Spread
from bench.core.stats import median, paired_speedup
from bench.core.storage import (
    GP3_BASELINE_MB_S,
    M5_4XLARGE_EBS_MB_S,
    M5_4XLARGE_STORAGE,
    StorageOption,
    custom_storage,
    storage_option,
)
from bench.core.units import GiB, MiB, check_scale, parse_size
from bench.engines import campaign_engines, engine_class, parse_engines
from bench.runner import CommonOptions, RunOptions, run_scenario
from bench.runner.context import check_results_dir, resolve_file_scale
from bench.scenario import Scenario, load_scenario

DEFAULT_PRECISION = "64M"
PRECISION_SHARE = 0.05  # a frontier is found to max(precision, 5 % of the budget)
FIRST_GUESS = 1.25  # after the ceiling passes: try 1.25 x its peak RSS first
MAX_SLOWDOWN = 10.0  # a probe slower than this x the unconstrained run is stopped and counts as failing
MIN_PROBE_TIMEOUT_S = 60


def parse_scales(text: str) -> list[float]:
    try:
        scales = [check_scale(float(s), "--scales") for s in text.split(",") if s.strip()]
    except ValueError:
        raise UserError(f"--scales {text!r}: give a comma-separated list of positive numbers") from None
    if not scales:
        raise UserError("--scales is empty: give e.g. 0.001,0.002,0.005")
    if len(set(scales)) != len(scales):
        raise UserError(f"--scales {text!r} names a scale twice")
    return sorted(scales)


def parse_partitions(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--partitions {text!r}: give a comma-separated list of whole numbers, e.g. 8,64,512") from None
    if not counts or min(counts) < 1:
        raise UserError(f"--partitions {text!r}: give positive partition counts, e.g. 8,64,512")
    if len(set(counts)) != len(counts):
        raise UserError(f"--partitions {text!r} names a count twice")
    return sorted(counts)


def campaign_dir(results_dir: str | None, requested: str | None, kind: str, scenario: str) -> Path:
    results = check_results_dir(results_dir)
    base = requested or f"{time.strftime('%Y%m%d-%H%M%S')}-{kind}-{scenario}"
    if not re.fullmatch(r"[A-Za-z0-9._-]+", base):
        raise UserError(f"--run-id {base!r} may only contain letters, digits, '.', '_' and '-'")
    d, n = results / base, 1
    while d.exists():
        n += 1
        d = results / f"{base}-{n}"
    return d


# --- from results to points ------------------------------------------------------------------------
def stat_of(values: list[float]) -> Spread:
    return Spread.of(values)


def point_of(engine: str, scale: float, results: list[RunResult], run_dir: str = "") -> Point | None:
    runs = [r for r in results if r.engine == engine and not r.warmup]
    if not runs:
        return None
    good = [r for r in runs if r.counts]
    before = runs[0].before
    return Point(
        engine=engine, scale=scale, gb=before.uncompressed_bytes / 1e9,
        disk_gb=(before.data_bytes + before.delete_bytes) / 1e9,
        output_disk_gb=statistics.median([r.after.data_bytes / 1e9 for r in good if r.after]) if good else None,
        runs=len(runs), verified=len(good),
        duration_s=stat_of([r.duration_s for r in good if r.duration_s is not None]),
        peak_rss_bytes=stat_of([float(r.telemetry.peak_rss_bytes) for r in good if r.telemetry.peak_rss_bytes]),
        setup_s=statistics.median([r.setup_s for r in good if r.setup_s is not None]) if good else None,
        verify_s=median([r.verify_s for r in good]),
        restore_s=median([r.setup_io.restore_s if r.setup_io else None for r in good]),
        reads_s=median([_reads_s(r) for r in good]),
        mean_cores=statistics.median([r.telemetry.mean_cores for r in good if r.telemetry.mean_cores]) if good
        else None,
        run_dir=run_dir)



def _reads_s(r: RunResult) -> float | None:
    """The reader queries of one run, before and after, summed (None: readers off)."""
    if r.reads is None or not r.reads.queries:
        return None
    return sum((q.before_s or 0.0) + (q.after_s or 0.0) for q in r.reads.queries)


def fits_of(points: list[Point], results: list[RunResult], engines: list[str]) -> tuple[dict, dict]:
    """Per engine: duration and peak RSS against input GB, over every verified run (each rep a point)."""
    gb_of = {(p.engine, p.scale): p.gb for p in points}
    time_fits, memory_fits = {}, {}
    for e in engines:
        good = [r for r in results if r.engine == e and r.counts and (e, r.scale) in gb_of]
        xs = [gb_of[(e, r.scale)] for r in good]
        time_fits[e] = fit_line(xs, [r.duration_s or 0.0 for r in good], "duration_s", "s")
        memory_fits[e] = fit_line(xs, [float(r.telemetry.peak_rss_bytes or 0) for r in good], "peak_rss_bytes",
                                  "bytes")
    return time_fits, memory_fits


def published_model(point: Point, scaling: CoreScaling | None = None) -> NodeModel:
    """The stated model carrying this node's per-core throughput to the published m5.4xlarge (by the engine's
    measured 1 -> 2 core efficiency where `scaling` is given, else linearly)."""
    here = f"{usable_cores()} cores"
    disk = (point.disk_gb + (point.output_disk_gb or 0.0)) / point.gb if point.gb else 1.0
    return node_model(PUBLISHED_INSTANCE, PRICES[PUBLISHED_INSTANCE].vcpu, GP3_BASELINE_MB_S,
                      point.mean_cores or 1.0, disk, here, scaling)


def core_runs(paths: list[Path]) -> list[CoreScaling]:
    """The measured 1 -> 2 core efficiencies in the results under `paths` (runs of `bench run --cores 1|2`)."""
    from bench.core.results import read_results

    return core_scalings([r for p in paths for r in read_results(Path(p))])


def extrapolate(sc: Scenario, points: list[Point], time_fits: dict[str, Fit], memory_fits: dict[str, Fit],
                scale: float = 1.0, scalings: list[CoreScaling] | None = None) -> list[Extrapolation]:
    pub = sc.published
    out = []
    for e, fit in time_fits.items():
        mine = sorted((p for p in points if p.engine == e and p.verified), key=lambda p: p.scale)
        if not mine:
            continue
        top = mine[-1]  # the largest measured scale: above the small-table floor, bytes scale with s
        gb = top.gb / top.scale * scale
        model = published_model(top, scaling_for(scalings or [], sc.name, e))
        m = model.seconds(fit, gb)
        fast = model.model_copy(update={"storage_mb_s": M5_4XLARGE_EBS_MB_S}).seconds(fit, gb)
        x = Extrapolation(engine=e, scale=scale, gb=gb, this_node_s=fit.predict(gb),
                          this_node_interval=fit.interval(gb),
                          this_node_peak_rss_bytes=memory_fits[e].predict(gb), model=model, model_s=m["seconds"],
                          model_bound=m["bound"], model_cpu_s=m["cpu_s"], model_storage_s=m["storage_s"],
                          model_fast_s=fast["seconds"], model_fast_bound=fast["bound"],
                          fast_storage_mb_s=M5_4XLARGE_EBS_MB_S,
                          published_s=pub.duration_s.get(e) if pub else None,
                          published_status=pub.status.get(e) if pub else None)
        if x.published_s and scale == 1.0:
            x.published_implied_mb_s = gb * model.disk_gb_per_logical_gb * 1e9 / x.published_s / 1e6
        if top.gb:
            x.read_gb, x.write_gb = top.disk_gb / top.gb * gb, (top.output_disk_gb or 0.0) / top.gb * gb
            x.storage = storage_answers(model, fit, gb, x.read_gb * 1e9, x.write_gb * 1e9,
                                        x.published_s if scale == 1.0 else None)
        notes = [f"{gb:,.0f} GB logical at scale {fmt_scale(scale)}, from the largest measured point "
                 f"({fmt_scale(top.scale)}: {top.gb:.2f} GB) scaled by size"]
        if fit.poor:
            notes.append(f"the time fit is poor ({fit.note})")
        if x.published_implied_mb_s and x.published_implied_mb_s > M5_4XLARGE_EBS_MB_S:
            notes.append(f"the published {x.published_s:,.0f} s implies {x.published_implied_mb_s:,.0f} MB/s through "
                         f"the disk for this table's {model.disk_gb_per_logical_gb:.2f} GB read and written per "
                         f"logical GB, more than an m5.4xlarge moves to EBS ({M5_4XLARGE_EBS_MB_S:,.0f} MB/s): the "
                         f"published input was smaller on disk, cached, or not on EBS")
        x.note = "; ".join(notes)
        out.append(x)
    return out


def storage_answers(model: NodeModel, fit: Fit, gb: float, read_bytes: float, write_bytes: float,
                    published_s: float | None,
                    options: list[StorageOption] = M5_4XLARGE_STORAGE) -> list[StorageAnswer]:
    """The node model with each storage option of the published node, and whether that storage alone can
    move the run's bytes within the published time (a model: bench.core.storage states each option)."""
    out = []
    for o in options:
        m = model.model_copy(update={"storage_mb_s": o.effective_mb_s(read_bytes, write_bytes)}).seconds(fit, gb)
        floor = o.seconds(read_bytes, write_bytes)
        out.append(StorageAnswer(option=o.name, label=o.label, mb_s=o.mb_s, duplex=o.duplex, model_s=m["seconds"],
                                 bound=m["bound"], storage_s=floor,
                                 needed_mb_s=o.needed_mb_s(read_bytes, write_bytes, published_s) if published_s
                                 else None,
                                 can_produce=floor <= published_s if published_s else None))
    return out


def storage_table(s: SweepSummary) -> list[str]:
    """Per engine and storage option of the published node: the model's time, the storage's own least time,
    and whether it can produce the published time."""
    rows = []
    for x in s.extrapolations:
        if not x.storage:
            continue
        pub = f"published {x.published_s:,.0f} s" if x.published_s else f"published: {x.published_status or '-'}"
        rows.append(f"{x.engine} at scale 1 ({x.read_gb or 0:,.0f} GB read, {x.write_gb or 0:,.0f} GB written; "
                    f"{pub}):")
        for a in x.storage:
            need = (f"; the published time needs {a.needed_mb_s:,.0f} MB/s{' per direction' if a.duplex else ''}: "
                    + ("CAN produce it" if a.can_produce else "CANNOT produce it")) if a.needed_mb_s else ""
            model = f"{a.model_s:,.0f} s ({a.bound}-bound)" if a.model_s else "no usable fit"
            rows.append(f"  {a.option:<13} {a.mb_s:>6,.0f} MB/s{' each way' if a.duplex else ' shared  '}  model "
                        f"{model}, its bytes alone {a.storage_s:,.0f} s{need}")
    return rows


def datagen_points(settings: CatalogSettings, results: list[RunResult], scale: float) -> DatagenPoint | None:
    r = next((r for r in results if r.dataset), None)
    if r is None:
        return None
    ds = load_manifest(settings.state_path, r.dataset.split(".")[-1])
    if ds is None:
        return None
    return DatagenPoint(scale=scale, bytes=ds.bytes, logical_bytes=r.before.uncompressed_bytes,
                        seconds=ds.generation_s, reused=ds.reused)


# --- sweep ------------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class SweepOptions(CommonOptions):
    scales: list[float]
    reps: int = 3
    engines: str | None = None
    memory_budget: str | None = None
    instance_type: str | None = None
    core_runs: str | None = None  # results of `bench run --cores 1|2`: the measured efficiencies the model uses


def sweep(opts: SweepOptions, progress: Progress) -> SweepSummary:
    sc = load_scenario(opts.scenario)
    engines = parse_engines(opts.engines or campaign_engines())
    directory = campaign_dir(opts.results_dir, opts.run_id, "sweep", sc.name)
    settings = CatalogSettings.for_warehouse(opts.warehouse)
    env = environment(settings.state_path if settings.is_remote else settings.warehouse_path)
    s = SweepSummary(sweep_id=directory.name, scenario=sc.name, scenario_record=sc.record(), scales=opts.scales,
                     file_scale=opts.file_scale, reps=opts.reps, engines=engines, started_at=now_iso(), pid=os.getpid(),
                     machine=env.describe(),
                     cores=usable_cores(), ram_bytes=node_ram_bytes(),
                     core_scalings=core_runs([Path(opts.core_runs)]) if opts.core_runs else [])
    if opts.core_runs and not s.core_scalings:
        raise UserError(f"--core-runs {opts.core_runs}: no verified runs of one engine with --cores 1 and --cores 2 "
                        "there")
    directory.mkdir(parents=True)
    write_summary(directory, s)
    results: list[RunResult] = []
    with recorded(directory, s):
        for i, scale in enumerate(opts.scales):
            run_id = f"scale-{fmt_scale(scale)}"
            progress.info(f"sweep {s.sweep_id}: scale {fmt_scale(scale)} ({i + 1} of {len(opts.scales)})")
            got = run_scenario(RunOptions(
                **opts.common(results_dir=str(directory), run_id=run_id), scale=scale, engines=",".join(engines),
                reps=opts.reps, memory_budget=opts.memory_budget, instance_type=opts.instance_type,
                readers=False), progress)  # compaction only
            results += got
            s.run_dirs[fmt_scale(scale)] = run_id
            for e in engines:
                p = point_of(e, scale, got, run_id)
                if p is not None:
                    s.points.append(p)
            dp = datagen_points(settings, got, scale)
            if dp is not None:
                s.datagen.append(dp)
            summarize_sweep(s, sc, results)
            write_summary(directory, s)
    progress.block(sweep_table(s))
    progress.info(f"sweep: {directory}")
    return s


def summarize_sweep(s: SweepSummary, sc: Scenario, results: list[RunResult]) -> None:
    s.time_fits, s.memory_fits = fits_of(s.points, results, s.engines)
    s.speedups = []
    for scale in sorted({p.scale for p in s.points}):
        at = [r for r in results if r.scale == scale]
        gb = next(p.gb for p in s.points if p.scale == scale)
        for i, a in enumerate(s.engines):
            for b in s.engines[i + 1:]:
                sp = paired_speedup(at, a, b)
                if sp.pairs:
                    s.speedups.append(Speedup(scale=scale, gb=gb, faster=sp.faster, slower=sp.slower,
                                              median=sp.ratio.median or 0, min=sp.ratio.min or 0,
                                              max=sp.ratio.max or 0, pairs=len(sp.pairs)))
    s.extrapolations = extrapolate(sc, s.points, s.time_fits, s.memory_fits, scalings=s.core_scalings)
    fresh = [d for d in s.datagen if not d.reused] or s.datagen
    s.datagen_fit = fit_line([d.logical_bytes / 1e9 for d in fresh], [d.seconds for d in fresh],
                             "datagen_s", "s") if fresh else None
    s.notes = [f"{e}: the {q} fit is poor: {f.note}" for e in s.engines
               for q, f in (("time", s.time_fits[e]), ("memory", s.memory_fits[e])) if f.poor]


def sweep_table(s: SweepSummary) -> str:
    rows = [f"{'engine':<12} {'fixed':>9} {'per GB':>10} {'R2':>6}  {'scale 1 here':>13} {'m5.4xlarge model':>17} "
            f"{'(fast disk)':>17} {'published':>10}"]
    ex = {x.engine: x for x in s.extrapolations}
    for e in s.engines:
        f = s.time_fits.get(e)
        if f is None:
            continue
        x = ex.get(e)
        here = f"{x.this_node_s:,.0f} s" if x and x.this_node_s else "-"
        model = f"{x.model_s:,.0f} s ({x.model_bound})" if x and x.model_s else "-"
        fast = f"{x.model_fast_s:,.0f} s ({x.model_fast_bound})" if x and x.model_fast_s else "-"
        pub = (f"{x.published_s:,.0f} s" if x.published_s else (x.published_status or "-")) if x else "-"
        r2 = f"{f.r2:.3f}" if f.r2 is not None else "-"
        rows.append(f"{e:<12} {f.fixed:>7.2f} s {f.per_gb:>7.2f} s/GB {r2:>6}  {here:>13} {model:>17} {fast:>17} "
                    f"{pub:>10}"
                    + ("  (poor fit)" if f.poor else ""))
    rows.append("scale 1 and the m5.4xlarge columns are models, not measurements: gp3 at its 125 MiB/s baseline, "
                f"and at the instance's EBS maximum ({M5_4XLARGE_EBS_MB_S:,.0f} MB/s); the report lists the "
                "assumptions")
    opts = storage_table(s)
    if opts:
        rows.append("the m5.4xlarge's storage options (a MODEL, not a measurement; bench.core.storage states each):")
        rows += opts
    rows += [f"note: {x.engine}: {x.note}" for x in s.extrapolations if "implies" in x.note]
    return "\n".join(rows)


# --- frontier ---------------------------------------------------------------------------------------
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


# --- plan -------------------------------------------------------------------------------------------
def latest(summaries: list, kind: str, scenario: str):
    # a frontier over partition counts is of a reshaped table at one scale: no size to plan from
    mine = [s for s in summaries if s.kind == kind and s.scenario == scenario and not getattr(s, "partitions", None)]
    return max(mine, key=lambda s: s.started_at) if mine else None


def recipe_objects(sc: Scenario, scale: float) -> int:
    """Data and delete files the scenario's recipe writes at `scale` (its declared counts; metadata files,
    a few per commit, not counted)."""
    t = sc.table
    full = sum(int(getattr(t, k, 0) or 0) for k in ("files", "data_files", "position_delete_files",
                                                      "equality_delete_files"))
    return int(math.ceil(full * scale))


def harness_scalings(summaries: list) -> dict[str, CoreScaling]:
    """Per harness step, the latest complete `bench selfcheck scaling` measurement found."""
    found = [x for x in summaries if isinstance(x, HarnessScalingSummary) and x.state == "complete"]
    out: dict[str, CoreScaling] = {}
    for x in sorted(found, key=lambda x: x.started_at):
        out |= {c.engine: c for c in x.steps if c.engine in HARNESS_STEPS}
    return out


def harness_assumption(measured: dict[str, CoreScaling], cores: int) -> str:
    """The plan's assumption line for the harness's own steps: measured scaling where usable, else perfect."""
    def how(step: str) -> str:
        sc = measured.get(step)
        if sc is None:
            return f"{step}: perfectly to {cores} cores (not measured: run `bench selfcheck scaling`)"
        if not sc.usable:
            return (f"{step}: perfectly to {cores} cores (its 1 -> 2 core measurement kept {sc.busy_1 or 0:.2f} "
                    f"of one core busy: not used)")
        busy = f", {sc.busy_1:.2f} and {sc.busy_2 or 0:.2f} cores busy" if sc.busy_1 is not None else ""
        return (f"{step}: {sc.t1_s:.2f} s on 1 core, {sc.t2_s:.2f} s on 2{busy}: efficiency {sc.efficiency:.2f}, "
                f"Amdahl parallel fraction {sc.parallel_fraction:.3f}, so {sc.speedup(cores):.1f}x of one core on "
                f"{cores} cores (model)")
    return ("the harness's own steps, each at least its bytes at that storage (datagen's writes; the input read "
            "once per dataset, its bytes alone; verification, each run's output read twice, by name and by field "
            "id), else as measured here scaled by size and by cores: " + "; ".join(how(x) for x in HARNESS_STEPS
                                                                                  if x != "input read"))


NODE_SETUP_S = 300.0  # each node's boot and setup in a plan: an assumption (see make_plan's assumptions)
DEFAULT_TIMEOUT_S = 3600.0  # the time limit of one engine run: bench run --timeout's and Terraform's default


def assign_nodes(walls: dict[str, float | None], nodes: int) -> list[list[str]]:
    """Spread scenarios over `nodes` nodes: the longest planned wall first, each onto the node with the least
    planned so far (LPT); a scenario without a planned wall goes last, in the order given.  A scenario is never
    split: both engines of it run on one node, on one input.  Never more nodes than scenarios."""
    if nodes < 1:
        raise UserError(f"--nodes {nodes}: give at least 1")
    names = list(dict.fromkeys(walls))
    n = min(nodes, len(names)) or 1
    groups: list[list[str]] = [[] for _ in range(n)]
    load = [0.0] * n
    known = sorted((x for x in names if walls[x] is not None), key=lambda x: -(walls[x] or 0.0))
    for name in known + [x for x in names if walls[x] is None]:
        i = min(range(n), key=lambda k: (load[k], len(groups[k]), k))
        groups[i].append(name)
        load[i] += walls[name] or 0.0
    return [g for g in groups if g]


def plan_assumptions(st: StorageOption, inst: InstancePrice, measured: dict[str, CoreScaling],
                     core_scalings: list[CoreScaling], nodes: int, node_setup_s: float,
                     timeout_s: float | None) -> list[str]:
    """The plan's stated assumptions, one line each (a model throughout: these are what it assumes)."""
    engine_times = (f"engine times: the per-core throughput measured in the latest sweep, scaled perfectly to "
                    f"{inst.vcpu} cores, capped by that storage over the bytes each run reads and writes; fixed "
                    f"costs as measured")
    if core_scalings:
        engine_times = (f"engine times: the per-core throughput measured in the latest sweep, scaled to "
                        f"{inst.vcpu} cores by Amdahl's law fitted to each engine's measured 1 -> 2 "
                        f"core efficiency ({'; '.join(c.describe() for c in core_scalings)}), "
                        "linearly for an engine without one, capped by that storage over the bytes each "
                        "run reads and writes; fixed costs as measured")
    out = [
        f"storage: {st.label}, {st.mb_s:,.0f} MB/s{' per direction' if st.duplex else ''} ({st.assumption})",
        engine_times,
        harness_assumption(measured, inst.vcpu),
        "engine start-up (session and catalog warm-up) and the harness's restore and cache step per "
        "run: as measured here, not scaled",
        "reads (reader queries before and after each run): as measured here scaled by size and cores "
        "when the sweep ran them; a sweep runs compaction only, so they are not planned then (run "
        "with --readers off, or plan them from a run with readers)",
        "memory: the frontier fit (if any) against the instance's RAM; a run predicted to run out "
        "of memory is planned for its modelled time all the same (when it would run out is not "
        "modelled), up to the time limit",
        (f"time limit of one engine run: {timeout_s / 60:g} min (bench run --timeout, Terraform's "
         "engine_timeout_seconds): a run modelled longer is planned at the limit, recorded as a timeout "
         "(unless it runs out of memory first), with no output to verify" if timeout_s else
         "time limit of one engine run: none"),
        f"each node's boot and setup (EC2's boot, apt, pip, `bench setup`): "
        f"{node_setup_s / 60:g} min, assumed, not measured (`make test-deps`, more than a node "
        "installs, took 3.6 min on a fresh machine here)",
        "not planned: the report and the upload of the results",
        "disk: the largest scenario's input and output, plus 30 % and 20 GB of headroom",
        "cost: on-demand price x the planned time, plus the storage's own price for that time "
        "(provisioned gp3 above its baseline; on S3 its PUT and GET requests for the recipe's data "
        "and delete files and the outputs, and its GB-months)"]
    if nodes > 1:
        out.append(
            f"{nodes} nodes of this type at once: the scenarios spread over them, the longest planned first onto "
            "the least loaded node; both engines of a scenario on one node, on one input (as on one node); the "
            "wall is the longest node's, the cost the sum of the nodes' times; nodes do not slow each other (each "
            "its own volume; on S3 one bucket, assumed not to throttle)")
    return out


@dataclass
class PlanTarget:
    """What a plan plans for: the instance and its storage, the scale and reps, the time limit of one run,
    and the measured scalings (the engines' 1 -> 2 core runs, the harness's steps)."""
    inst: InstancePrice
    st: StorageOption
    scale: float
    reps: int
    timeout_s: float | None
    measured: dict[str, CoreScaling]
    core_scalings: list[CoreScaling]
    file_scale: float | None = None  # --file-scale: the file counts of this scale (None: those of `scale`)

    def harness(self, step: str, here: int | None) -> float:
        """How much shorter a harness step is on the target's cores than on the sweep's: measured (Amdahl on the
        step's 1 -> 2 core efficiency) where `bench selfcheck scaling` found it usable, else perfectly."""
        sc = self.measured.get(step)
        if sc is None or not sc.usable:
            return (here or 1) / self.inst.vcpu
        return sc.speedup(here or 1) / sc.speedup(self.inst.vcpu)


@dataclass
class ScenarioBounds:
    """One planned scenario's lower bounds and S3 requests: the engines' bytes at the storage (`bytes_s`), the
    harness's own bytes (datagen's, the input read's, the verifier's), the published engine times."""
    bytes_s: float = 0.0
    harness_bytes_s: float = 0.0
    published_s: float = 0.0
    puts: int = 0
    gets: int = 0
    complete: bool = True


def plan_engine(t: PlanTarget, sc: Scenario, sw: SweepSummary, fr: FrontierSummary | None, ps: PlannedScenario,
                e: str, b: ScenarioBounds, objects: int) -> PlannedEngine | None:
    """One engine of a planned scenario from its sweep's fit (and frontier), its bounds added to `b`; None
    without a fit or a verified point."""
    fit = sw.time_fits.get(e)
    mine = [p for p in sw.points if p.engine == e and p.verified]
    if fit is None or not mine:
        return None
    st, reps, gb = t.st, t.reps, ps.logical_bytes / 1e9
    top_e = max(mine, key=lambda p: p.scale)
    read_b = top_e.disk_gb / top_e.gb * gb * 1e9 if top_e.gb else ps.dataset_bytes
    write_b = (top_e.output_disk_gb or 0.0) / top_e.gb * gb * 1e9 if top_e.gb else ps.output_bytes
    model = node_model(t.inst.name, t.inst.vcpu, st.effective_mb_s(read_b, write_b), top_e.mean_cores or 1.0,
                       (read_b + write_b) / ps.logical_bytes if ps.logical_bytes else 1.0, f"{sw.cores} cores",
                       scaling_for(t.core_scalings, sc.name, e))
    m = model.seconds(fit, gb)
    pe = PlannedEngine(engine=e, seconds=m["seconds"], bound=m["bound"], setup_s=top_e.setup_s,
                       restore_s=top_e.restore_s, source=f"sweep {sw.sweep_id}: {fit.note}")
    shrink = (sw.cores or 1) / t.inst.vcpu * gb / top_e.gb if top_e.gb else None
    if top_e.verify_s is not None and top_e.gb:
        pe.verify_s = max(top_e.verify_s * t.harness("verification", sw.cores) * gb / top_e.gb,
                          st.seconds(2 * write_b, 0.0))
    if top_e.reads_s is not None and shrink is not None:
        pe.reads_s = top_e.reads_s * shrink
    if fr is not None:
        pe.min_budget_bytes = frontier_at(fr, e, gb)
        if pe.min_budget_bytes is not None:
            pe.predicted_memory = "oom" if pe.min_budget_bytes > int(t.inst.memory_gib * GiB) else "ok"
            ps.sources.append(f"frontier {fr.frontier_id}")
    if pe.seconds is not None and t.timeout_s and pe.seconds > t.timeout_s:
        # the run's time limit ends it (a recorded timeout, unless it runs out of memory first): it
        # spends the limit, writes no complete output and has nothing to verify
        pe.modelled_s, pe.seconds, pe.verify_s = pe.seconds, t.timeout_s, None
    if pe.seconds is None:
        b.complete = False
    else:
        cut = pe.modelled_s is not None
        b.bytes_s += reps * min(st.seconds(read_b, write_b), pe.seconds)
        b.harness_bytes_s += 0.0 if cut else reps * st.seconds(2 * write_b, 0.0)
        for step, secs in ((f"{e} runs", pe.seconds), ("engine start-up", pe.setup_s),
                           ("verification", pe.verify_s), ("restore", pe.restore_s), ("reads", pe.reads_s)):
            ps.steps[step] = ps.steps.get(step, 0.0) + reps * (secs or 0.0)
        out_files = max(1, int(math.ceil(write_b / sc.target_file_size_bytes))) \
            if sc.target_file_size_bytes and not cut else 0
        b.puts += reps * out_files
        b.gets += reps * (objects + 2 * out_files)  # the engine reads the input, the verifier the output twice
    pub_s = sc.published.duration_s.get(e) if sc.published and t.scale == sc.published.scale else None
    if pub_s:
        b.published_s += reps * pub_s
    return pe


def plan_scenario(t: PlanTarget, name: str, summaries: list, sources: list[Path]) -> tuple[PlannedScenario,
                                                                                          ScenarioBounds]:
    """One scenario of the plan from its latest sweep (and frontier): its sizes, steps, wall and bounds."""
    sc = load_scenario(name)
    sw = latest(summaries, "sweep", sc.name)
    fr = latest(summaries, "frontier", sc.name)
    ps = PlannedScenario(scenario=sc.name, scale=t.scale, logical_bytes=0, dataset_bytes=0, output_bytes=0)
    b = ScenarioBounds()
    if sw is None or not sw.points:
        ps.notes.append(f"no sweep of {sc.name} found under {', '.join(map(str, sources))}: run "
                        f"`bench sweep {sc.name} --scales ...` first")
        b.complete = False
        return ps, b
    st = t.st
    ps.sources.append(f"sweep {sw.sweep_id}")
    top = max(sw.points, key=lambda p: p.scale)
    gb = top.gb / top.scale * t.scale
    ps.logical_bytes = gb * 1e9
    ps.dataset_bytes = top.disk_gb / top.gb * gb * 1e9 if top.gb else 0
    outs = [p for p in sw.points if p.output_disk_gb]
    ps.output_bytes = (max(p.output_disk_gb or 0 for p in outs) / top.gb * gb * 1e9) if outs and top.gb else 0
    if sw.datagen_fit is not None and sw.datagen_fit.per_gb > 0:
        ps.datagen_s = max(max(sw.datagen_fit.predict(gb), 0.0) * t.harness("datagen", sw.cores),
                           st.seconds(0.0, ps.dataset_bytes))
        ps.steps["datagen"] = ps.datagen_s
    else:
        ps.notes.append("no datagen fit in the sweep: datagen not planned")
    ps.steps["input read once"] = st.seconds(ps.dataset_bytes, 0.0)
    b.harness_bytes_s += st.seconds(0.0, ps.dataset_bytes) + st.seconds(ps.dataset_bytes, 0.0)
    objects = recipe_objects(sc, t.scale if t.file_scale is None else t.file_scale)
    if t.file_scale is not None:
        ps.notes.append(f"file counts of scale {fmt_scale(t.file_scale)} ({objects:,} data and delete files): S3 "
                        f"requests are counted for them, but the engine times come from the sweep's fits against "
                        f"bytes, which do not see file counts (a count sweep, `bench sweep {sc.name} --scale S "
                        f"--file-scales ...`, measures them)")
    b.puts += objects
    b.gets += objects  # the baseline read
    for e in sw.engines:
        pe = plan_engine(t, sc, sw, fr, ps, e, b, objects)
        if pe is not None:
            ps.engines.append(pe)
    if not any(pe.reads_s is not None for pe in ps.engines):
        ps.notes.append("reads: not planned (the sweep measured none: it runs compaction only)")
    ps.wall_s = sum(ps.steps.values())
    return ps, b


def plan_nodes(plan: Plan, bounds: dict[str, ScenarioBounds], nodes: int, node_setup_s: float) -> None:
    """Spread the planned scenarios over the nodes (each its boot and setup, then its scenarios one after the
    other); the plan's wall (the longest node), node time and lower bounds of the wall."""
    plan.node_setup_s = node_setup_s
    walls = {ps.scenario: ps.wall_s for ps in plan.scenarios}
    for group in assign_nodes(walls, nodes):
        mine = [bounds.get(x, ScenarioBounds()) for x in group]
        harness_s = sum(b.harness_bytes_s for b in mine)
        plan.nodes.append(PlannedNode(scenarios=group, wall_s=node_setup_s + sum(walls[x] or 0.0 for x in group),
                                      bytes_bound_s=sum(b.bytes_s for b in mine) + harness_s, harness_bytes_s=harness_s,
                                      published_s=sum(b.published_s for b in mine)))
    if node_setup_s:
        plan.steps["node boot and setup"] = node_setup_s * len(plan.nodes)
    longest = max(plan.nodes, key=lambda n: n.wall_s)
    plan.total_s = longest.wall_s  # a budget of minutes holds the longest node
    plan.node_s = sum(n.wall_s for n in plan.nodes)  # what is paid for
    # the lower bounds of the wall: the node whose scenarios' bytes (or published times) take longest
    plan.bytes_bound_s = max(n.bytes_bound_s for n in plan.nodes)
    bound = max(plan.nodes, key=lambda n: n.published_s + n.harness_bytes_s)
    plan.published_s = bound.published_s or None
    plan.harness_bytes_s = bound.harness_bytes_s


def plan_price(plan: Plan, t: PlanTarget, bounds: list[ScenarioBounds]) -> None:
    """The plan's cost (the nodes' time at the instance's price, plus the storage's own) and deadline."""
    st = t.st
    vol = Gp3Volume(plan.ebs_gb, st.volume_iops, st.volume_mib_s)  # each node has its own data volume
    plan.storage_usd = sum(sum(gp3_usd(n.wall_s, vol).values()) for n in plan.nodes)
    if st.warehouse == "s3":
        puts, gets = sum(b.puts for b in bounds), sum(b.gets for b in bounds)
        s3_gb_s = 0.0
        for ps in plan.scenarios:
            s3_gb_s += (ps.dataset_bytes + ps.output_bytes) / 1e9 * (ps.wall_s or 0.0)
        plan.storage_usd += s3_usd({"put": puts, "get": gets}) + s3_gb_s / SECONDS_PER_MONTH * S3_USD_PER_GB_MONTH
    plan.cost_usd = t.inst.usd_per_hour * (plan.node_s or 0.0) / 3600 + plan.storage_usd
    plan.deadline_minutes = min(2880, int(math.ceil(((plan.total_s or 0.0) * 1.5 / 60 + 30) / 10) * 10))


def make_plan(scenarios: list[str], scale: float, instance_type: str | None, reps: int, sources: list[Path],
              storage: StorageOption | float | None = None, budget_minutes: float | None = None,
              budget_usd: float | None = None, nodes: int = 1, node_setup_s: float | None = None,
              timeout_s: float | None = DEFAULT_TIMEOUT_S, file_scale: float | None = None) -> Plan:
    """Each step of a full reproduction from the fitted models (a model throughout): `storage` is where the
    table lives on the target (a bench.core.storage option, or a volume's MB/s; default gp3's baseline)."""
    st = storage if isinstance(storage, StorageOption) else custom_storage(storage) if storage \
        else storage_option("gp3-baseline")
    inst = parse_instance(instance_type or PUBLISHED_INSTANCE)
    node_setup_s = NODE_SETUP_S if node_setup_s is None else node_setup_s
    if node_setup_s < 0:
        raise UserError(f"--node-setup-minutes {node_setup_s / 60:g}: give 0 or more")
    summaries = find_summaries(sources)
    measured = harness_scalings(summaries)
    core_scalings = core_runs(sources)
    plan = Plan(instance_type=inst.name, cores=inst.vcpu, ram_bytes=int(inst.memory_gib * GiB),
                usd_per_hour=inst.usd_per_hour, reps=reps, storage_mb_s=st.mb_s, storage=st,
                budget_s=budget_minutes * 60 if budget_minutes else None, budget_usd=budget_usd,
                assumptions=plan_assumptions(st, inst, measured, core_scalings, nodes, node_setup_s, timeout_s),
                core_scalings=core_scalings, harness_scalings=list(measured.values()))
    t = PlanTarget(inst=inst, st=st, scale=scale, reps=reps, timeout_s=timeout_s, measured=measured,
                   core_scalings=core_scalings, file_scale=None if file_scale == scale else file_scale)
    bounds: list[ScenarioBounds] = []
    for name in scenarios:
        ps, b = plan_scenario(t, name, summaries, sources)
        for k, v in ps.steps.items():
            plan.steps[k] = plan.steps.get(k, 0.0) + v
        plan.scenarios.append(ps)
        bounds.append(b)
    plan.complete = all(b.complete for b in bounds)
    biggest = max((p.dataset_bytes + p.output_bytes for p in plan.scenarios), default=0.0)
    plan.ebs_gb = int(math.ceil((biggest * 1.3 / 1e9 + 20) / 10) * 10)
    if not sum(ps.wall_s or 0.0 for ps in plan.scenarios):
        return plan
    plan_nodes(plan, {ps.scenario: b for ps, b in zip(plan.scenarios, bounds)}, nodes, node_setup_s)
    plan_price(plan, t, bounds)
    return plan


def expected_on_table(scenario: str, logical_bytes: int, sources: list[Path]) -> dict:
    """Expected time and peak memory per engine, on this node, for a table of `logical_bytes` (Parquet
    uncompressed) under `scenario`: the latest sweep's fits (and frontier's, for the smallest budget) of
    that scenario found under `sources`.  A model fitted on generated tables of the scenario's shape, not a
    measurement; {"model": None, "note": ...} when there is no fit."""
    sc = load_scenario(scenario)
    summaries = find_summaries(sources)
    sw, fr = latest(summaries, "sweep", sc.name), latest(summaries, "frontier", sc.name)
    where = ", ".join(map(str, sources))
    if sw is None or not sw.time_fits:
        return {"model": None, "note": f"no fitted model of {sc.name} under {where}: run bench sweep "
                                       f"{sc.name} --scales ... first"}
    gb = logical_bytes / 1e9
    engines: dict[str, dict] = {}
    for e, fit in sw.time_fits.items():
        measured = sorted(p.gb for p in sw.points if p.engine == e and p.verified)
        mem = sw.memory_fits.get(e)
        engines[e] = {
            "seconds": max(fit.predict(gb), 0.0), "interval": fit.interval(gb), "time_fit": fit.note,
            "peak_rss_bytes": max(mem.predict(gb), 0.0) if mem is not None and mem.n else None,
            "min_budget_bytes": frontier_at(fr, e, gb) if fr is not None else None,
            "extrapolated": bool(measured) and not measured[0] <= gb <= measured[-1],
            "measured_gb": [measured[0], measured[-1]] if measured else []}
    return {"model": f"sweep {sw.sweep_id} of {sw.scenario} ({sw.started_at}, {sw.machine or 'this node'}, "
                     f"{sw.cores} cores)" + (f" and frontier {fr.frontier_id}" if fr is not None else "")
                     + f", found under {where}",
            "gb": gb, "engines": engines,
            "note": "a MODEL, not a measurement: time = fixed + per_GB x the table's logical GB and peak memory "
                    "the same way, fitted on generated tables of this scenario's shape on the sweep's node; "
                    "your table's schema, file sizes, partitions and deletes differ from them"}


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


def plan_table(plan: Plan) -> str:
    def t(s: float | None) -> str:
        return "-" if s is None else f"{s / 60:,.1f} min"

    st = plan.storage
    rows = [f"plan (a MODEL, not a measurement): {plan.instance_type} ({plan.cores} vCPU, "
            f"{fmt_bytes(plan.ram_bytes)}), {plan.reps} rep(s) per engine, "
            + (f"storage {st.name} ({st.label}, {st.mb_s:,.0f} MB/s{' per direction' if st.duplex else ''})" if st
               else f"storage {plan.storage_mb_s:,.0f} MB/s")]
    for ps in plan.scenarios:
        rows.append(f"  {ps.scenario} at scale {fmt_scale(ps.scale)}: {ps.logical_bytes / 1e9:,.0f} GB logical, "
                    f"{ps.dataset_bytes / 1e9:,.0f} GB on disk, datagen {t(ps.datagen_s)}, wall {t(ps.wall_s)}")
        for e in ps.engines:
            mem = (f", needs ~{fmt_bytes(e.min_budget_bytes)} -> {e.predicted_memory}" if e.min_budget_bytes else "")
            if e.modelled_s is not None:
                mem += (f"; modelled {t(e.modelled_s)}: cut at the time limit (a timeout, unless out of memory "
                        "first; nothing to verify)")
            rows.append(f"    {e.engine:<12} {t(e.seconds)} per run ({e.bound}-bound), start-up "
                        f"{e.setup_s or 0:.0f} s, restore {e.restore_s or 0:.0f} s, verification {t(e.verify_s)}"
                        + (f", reads {t(e.reads_s)}" if e.reads_s is not None else "") + mem)
        rows += [f"    note: {n}" for n in ps.notes]
    missing = [p.scenario for p in plan.scenarios if not p.engines]
    if plan.cost_usd is not None and plan.total_s:
        paid = plan.node_s or plan.total_s
        if len(plan.nodes) > 1:
            rows += [f"  node {i + 1}: {', '.join(n.scenarios)}: {t(n.wall_s)} (with its boot and setup "
                     f"{t(plan.node_setup_s)})" for i, n in enumerate(plan.nodes)]
        rows.append(f"  total {t(plan.total_s)}"
                    + (f" (the longest of {len(plan.nodes)} nodes at once; {t(paid)} of node time)"
                       if len(plan.nodes) > 1 else "")
                    + f", cost ${plan.cost_usd:,.2f} (compute ${plan.usd_per_hour * paid / 3600:,.2f} at "
                    f"${plan.usd_per_hour:g}/h, storage ${plan.storage_usd or 0:,.2f})"
                    + (f" for the planned scenarios only ({', '.join(missing)}: no sweep, not counted)"
                       if missing else ""))
        rows.append("  shares" + (" of the node time" if len(plan.nodes) > 1 else "") + ": "
                    + ", ".join(f"{k} {t(v)} ({v / paid:.0%})"
                                for k, v in sorted(plan.steps.items(), key=lambda kv: -kv[1])))
        rows += plan_verdict(plan)
    else:
        rows.append("  total: unknown (no scenario has a sweep)")
    rows.append(f"  EBS: {plan.ebs_gb} GB at {plan.storage_mb_s:.0f} MB/s; deadline {plan.deadline_minutes} min")
    rows += [f"  assumes: {a}" for a in plan.assumptions]
    return "\n".join(rows)


@dataclass
class NodesAnswer:
    """The fewest nodes (scenarios spread longest first) whose longest node fits a time budget: `nodes` and that
    spread's `wall_s`; or None when none can, `longest` alone taking `wall_s` (`cut`: it has runs cut at the
    time limit)."""
    nodes: int | None
    wall_s: float = 0.0
    longest: str = ""
    cut: bool = False


def nodes_to_fit(plan: Plan, budget_s: float) -> NodesAnswer | None:
    """How many nodes at once fit `budget_s` (None: nothing planned)."""
    walls = {ps.scenario: ps.wall_s for ps in plan.scenarios if ps.wall_s}
    if not walls:
        return None
    longest = max(walls, key=lambda x: walls[x] or 0.0)
    alone = plan.node_setup_s + (walls[longest] or 0.0)
    if alone > budget_s:
        mine = next((ps for ps in plan.scenarios if ps.scenario == longest), None)
        return NodesAnswer(nodes=None, wall_s=alone, longest=longest,
                           cut=bool(mine and any(e.modelled_s is not None for e in mine.engines)))
    for n in range(1, len(walls) + 1):
        wall = max(plan.node_setup_s + sum(walls[x] or 0.0 for x in g) for g in assign_nodes(walls, n))
        if wall <= budget_s:
            return NodesAnswer(nodes=n, wall_s=wall, longest=longest)
    return NodesAnswer(nodes=None, wall_s=alone, longest=longest)  # unreachable: one scenario per node is `alone`


@dataclass
class PlanVerdict:
    """Whether a plan fits the budgets it was given, as numbers (`plan_verdict` says them): each None where
    the plan has no such budget or figure."""
    over_s: float | None = None  # the wall minus the time budget (<= 0: fits)
    largest_step: tuple[str, float] = ("-", 0.0)
    nodes: NodesAnswer | None = None  # when over the time budget: the nodes at once that would fit it
    bytes_over_budget: bool = False  # the bytes alone at this storage take longer than the time budget
    least_s: float | None = None  # the published engine times plus the harness's own bytes at this storage
    least_over_budget: bool = False
    over_usd: float | None = None  # the cost minus the dollar budget (<= 0: fits)
    least_usd: float | None = None  # least_s at the instance's price, compute only (one node)
    max_usd_per_hour: float | None = None  # over the dollar budget: the instance price that would hold it
    storage_over_usd: bool = False  # over the dollar budget: the storage alone costs more than it


def verdict(plan: Plan) -> PlanVerdict:
    """The plan against its time and dollar budgets, and its lower bounds against them."""
    v = PlanVerdict()
    total = plan.total_s or 0.0
    v.largest_step = max(plan.steps.items(), key=lambda kv: kv[1], default=("-", 0.0))
    if plan.budget_s:
        v.over_s = total - plan.budget_s
        if v.over_s > 0:
            v.nodes = nodes_to_fit(plan, plan.budget_s)
        v.bytes_over_budget = bool(plan.bytes_bound_s and plan.bytes_bound_s > plan.budget_s)
    if plan.published_s:
        v.least_s = plan.published_s + (plan.harness_bytes_s or 0.0)
        v.least_over_budget = bool(plan.budget_s and v.least_s > plan.budget_s)
    if plan.budget_usd and plan.cost_usd is not None:
        v.over_usd = plan.cost_usd - plan.budget_usd
        if v.least_s is not None and len(plan.nodes) <= 1:
            v.least_usd = plan.usd_per_hour * v.least_s / 3600
        paid_h = (plan.node_s or total) / 3600
        left = plan.budget_usd - (plan.storage_usd or 0.0)
        if v.over_usd > 0 and paid_h:
            v.max_usd_per_hour = left / paid_h if left > 0 else None
            v.storage_over_usd = left <= 0
    return v


def plan_verdict(plan: Plan) -> list[str]:
    """Whether the plan fits the budget it was given, and if not by how much and where the time goes."""
    v, rows = verdict(plan), []
    if plan.budget_s and v.over_s is not None:
        over, biggest = v.over_s, v.largest_step
        rows.append(f"  budget {plan.budget_s / 60:,.0f} min: " + (
            f"fits, {-over / 60:,.1f} min to spare" if over <= 0 else
            f"does NOT fit: {over / 60:,.1f} min over ({over / plan.budget_s:.0%}); the largest step is "
            f"{biggest[0]} ({biggest[1] / 60:,.1f} min)"))
        if over > 0:
            rows.append("  " + nodes_needed(v.nodes))
    if plan.bytes_bound_s:
        rows.append(f"  the bytes alone at this storage: {plan.bytes_bound_s / 60:,.1f} min (datagen's writes, the "
                    f"input read once, each run's reads and writes, the verification's two reads of each output)"
                    + (": more than the budget, so no faster engine, datagen or verifier fits it on this storage"
                       if v.bytes_over_budget else ""))
    if plan.published_s and v.least_s is not None:
        rows.append(f"  the published engine times alone: {plan.published_s / 60:,.1f} min (each planned run's "
                    f"published time; runs published as out of memory not counted); with the harness's own bytes at "
                    f"this storage (datagen, the input read once, verification): {v.least_s / 60:,.1f} min"
                    + (": more than the budget for any reproduction that reproduces the published times"
                       if v.least_over_budget else ""))
    if plan.budget_usd and v.over_usd is not None:
        rows += _usd_verdict(plan, v)
    return rows


def _usd_verdict(plan: Plan, v: PlanVerdict) -> list[str]:
    over_usd, budget = v.over_usd or 0.0, plan.budget_usd or 0.0
    rows = [f"  budget ${budget:,.2f}: " + (
        f"fits, ${-over_usd:,.2f} to spare" if over_usd <= 0 else
        f"does NOT fit: ${over_usd:,.2f} over ({over_usd / budget:.0%})")]
    if v.least_usd is not None:
        rows.append(f"  the published engine times and the harness's own bytes alone, at ${plan.usd_per_hour:g}/h "
                    f"(compute only, no storage): ${v.least_usd:,.2f}"
                    + (": more than the budget for any reproduction that reproduces the published times at "
                       "this price" if v.least_usd > budget else ""))
    if v.max_usd_per_hour is not None:
        rows.append(f"  ${budget:,.2f} holds at an instance price of ${v.max_usd_per_hour:,.3f}/h or less"
                    f" ({v.max_usd_per_hour / plan.usd_per_hour:.0%} of ${plan.usd_per_hour:g}/h): a spot price, if "
                    "AWS's of the day is that low (not known offline: plan with "
                    f"--instance-type {plan.instance_type.split('=')[0]}=PRICE, run with bench aws up --spot)")
    elif v.storage_over_usd:
        rows.append(f"  the storage alone costs ${plan.storage_usd or 0:,.2f}: no instance price fits ${budget:,.2f}")
    return rows


def nodes_needed(a: NodesAnswer | None) -> str:
    """The fewest nodes whose longest node fits the budget, or why none can, said."""
    if a is None:
        return "nodes: nothing planned"
    if a.nodes is None:
        limit = " or a shorter time limit per run (--timeout) for its runs cut at it" if a.cut else ""
        return (f"no number of nodes fits it: {a.longest} alone takes {a.wall_s / 60:,.1f} min on one node (a "
                f"scenario is never split: both engines run on one node, on one input); only faster runs{limit} "
                "would")
    return (f"with {a.nodes} nodes at once it fits: {a.wall_s / 60:,.1f} min (bench plan --nodes {a.nodes}; "
            f"bench aws up --nodes {a.nodes})")


def refit(directory: Path) -> SweepSummary:
    """Recompute a sweep's points, fits and extrapolations from its result files (e.g. after this harness's
    fitting or its points changed); the measurements are not touched."""
    from bench.core.campaign import read_summary
    from bench.core.results import read_results

    s = read_summary(Path(directory) / "sweep.json")
    if not isinstance(s, SweepSummary):
        raise UserError(f"no sweep summary in {directory}")
    results, points = [], []
    for scale, run_dir in s.run_dirs.items():
        got = read_results(Path(directory) / run_dir)
        results += got
        points += [p for e in s.engines if (p := point_of(e, float(scale), got, run_dir)) is not None]
    s.points = points or s.points
    summarize_sweep(s, load_scenario(s.scenario), results)
    write_summary(Path(directory), s)
    return s
