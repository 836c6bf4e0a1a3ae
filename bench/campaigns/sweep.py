"""The sweep: time = fixed + per_GB x input GB (and peak memory the same way) per engine, over ordinary runs
at several scales, extrapolated to scale 1; and where the fits lead: the stated model of the published node, its
storage options, and the extrapolation to a scale (1.0: the published size)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bench.campaigns.points import core_runs, datagen_points, fits_of, point_of
from bench.campaigns.shared import campaign_dir
from bench.core.campaign import Extrapolation, Point, Speedup, StorageAnswer, SweepSummary, recorded, write_summary
from bench.core.catalog import CatalogSettings
from bench.core.cost import PRICES
from bench.core.errors import UserError
from bench.core.fit import CoreScaling, Fit, NodeModel, fit_line, node_model, scaling_for
from bench.core.fmt import fmt_scale
from bench.core.machine import environment, node_ram_bytes, usable_cores
from bench.core.progress import Progress
from bench.core.published import PUBLISHED_INSTANCE
from bench.core.results import RunResult, now_iso
from bench.core.stats import paired_speedup
from bench.core.storage import GP3_BASELINE_MB_S, M5_4XLARGE_EBS_MB_S, M5_4XLARGE_STORAGE, StorageOption
from bench.engines import campaign_engines, parse_engines
from bench.runner.context import CommonOptions, RunOptions
from bench.runner.run import run_scenario
from bench.scenario import Scenario, load_scenario


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


def published_model(point: Point, scaling: CoreScaling | None = None) -> NodeModel:
    """The stated model carrying this node's per-core throughput to the published m5.4xlarge (by the engine's
    measured 1 -> 2 core efficiency where `scaling` is given, else linearly)."""
    here = f"{usable_cores()} cores"
    disk = (point.disk_gb + (point.output_disk_gb or 0.0)) / point.gb if point.gb else 1.0
    return node_model(PUBLISHED_INSTANCE, PRICES[PUBLISHED_INSTANCE].vcpu, GP3_BASELINE_MB_S,
                      point.mean_cores or 1.0, disk, here, scaling)


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
