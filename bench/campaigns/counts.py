"""A count sweep: one scenario at one byte scale over several file scales, each an ordinary
`bench run` (bench.runner.run.run_scenario) into one campaign directory, then lines against the input's file
count per engine: time, peak memory and each phase the engine reported, and where each memory line would
reach the runs' memory budget.  The record is bench.core.campaign.CountSweepSummary.

Why counts: the Spark mechanisms known for delete-heavy rewrites grow with files, not bytes (every
rewrite task opens each delete file that may apply to its data files; an unpartitioned table's equality
deletes apply to all of them), so at the same bytes a table of more files may need more time and memory.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass
from pathlib import Path

from bench.core.campaign import FILES_X, PAIRS_X, BudgetMeet, CountPoint, CountSweepSummary, recorded, write_counts
from bench.core.fit import Fit, fit_line
from bench.core.fmt import fmt_bytes, fmt_scale
from bench.core.machine import environment
from bench.core.progress import Progress
from bench.core.records.telemetry import DeleteOpens
from bench.core.results import RunResult, now_iso
from bench.core.spread import Spread
from bench.core.units import check_scale
from bench.engines import campaign_engines, parse_engines
from bench.runner.context import CommonOptions, RunOptions, check_results_dir, resolve_file_scale
from bench.runner.run import run_scenario
from bench.scenario import load_scenario

FLAT_SHARE = 0.05  # a memory line rising less than this share of its peak over the measured files is flat
MIN_PHASE_RUNS = 2  # a phase is fitted when at least this many verified runs at two file scales report it


@dataclass(kw_only=True)
class CountSweepOptions(CommonOptions):
    scale: float
    file_scales: list[float]
    reps: int = 1
    engines: str | None = None
    memory_budget: str | None = None


def count_point(engine: str, file_scale: float, results: list[RunResult], run_dir: str) -> CountPoint | None:
    runs = [r for r in results if r.engine == engine and not r.warmup]
    if not runs:
        return None
    good = [r for r in runs if r.counts]
    b = runs[0].before
    names = [p.name for r in good for p in r.phases]
    return CountPoint(
        engine=engine, file_scale=file_scale, files=b.data_files + b.delete_files, data_files=b.data_files,
        position_delete_files=b.position_delete_files, equality_delete_files=b.equality_delete_files,
        bytes=b.data_bytes + b.delete_bytes, runs=len(runs), verified=len(good), statuses=[r.status for r in runs],
        duration_s=Spread.of(r.duration_s for r in good),
        peak_rss_bytes=Spread.of(float(r.telemetry.peak_rss_bytes) if r.telemetry.peak_rss_bytes else None
                                 for r in good),
        read_chars=Spread.of(r.telemetry.read_chars for r in good),
        phases_s={n: statistics.median(sum(p.seconds for p in r.phases if p.name == n) for r in good)
                  for n in dict.fromkeys(names)},
        delete_opens=median_opens(good), run_dir=run_dir)


def median_opens(runs: list[RunResult]) -> DeleteOpens | None:
    """The delete-file opens of the run with the median count (the first run's record when none was counted)."""
    counted = sorted((r.delete_opens for r in runs if r.delete_opens is not None and r.delete_opens.opens is not None),
                     key=lambda o: o.opens or 0)
    if counted:
        return counted[(len(counted) - 1) // 2]
    return next((r.delete_opens for r in runs if r.delete_opens is not None), None)


def _line(xs: list[float], ys: list[float], quantity: str, unit: str, x: str = FILES_X) -> Fit:
    f = fit_line(xs, ys, quantity, unit, x_unit="files" if x == FILES_X else "pairs")
    f.x = x  # per_gb is then per file (or per pair)
    return f


def fit_counts(s: CountSweepSummary, results: list[RunResult]) -> None:
    """Per engine: time, peak RSS and each phase against the input's files, over every verified run."""
    s.time_fits, s.memory_fits, s.read_fits, s.phase_fits, s.budget_meets = {}, {}, {}, {}, []
    s.pair_time_fits, s.pair_read_fits = {}, {}
    for e in s.engines:
        good = [r for r in results if r.engine == e and r.counts]
        xs = [float(r.before.data_files + r.before.delete_files) for r in good]
        s.time_fits[e] = _line(xs, [r.duration_s or 0.0 for r in good], "duration_s", "s")
        s.memory_fits[e] = _line(xs, [float(r.telemetry.peak_rss_bytes or 0) for r in good], "peak_rss_bytes",
                                 "bytes")
        reads = [(x, float(r.telemetry.read_chars)) for x, r in zip(xs, good) if r.telemetry.read_chars is not None]
        s.read_fits[e] = _line([x for x, _ in reads], [y for _, y in reads], "read_chars", "bytes")
        pairs = [float(r.before.data_files * r.before.equality_delete_files) for r in good]
        if any(pairs):
            s.pair_time_fits[e] = _line(pairs, [r.duration_s or 0.0 for r in good], "duration_s", "s", PAIRS_X)
            s.pair_read_fits[e] = _line([p for p, r in zip(pairs, good) if r.telemetry.read_chars is not None],
                                        [y for _, y in reads], "read_chars", "bytes", PAIRS_X)
        phases: dict[str, Fit] = {}
        for name in dict.fromkeys(p.name for r in good for p in r.phases):
            have = [(x, sum(p.seconds for p in r.phases if p.name == name)) for x, r in zip(xs, good)
                    if any(p.name == name for p in r.phases)]
            if len(have) >= MIN_PHASE_RUNS and len({x for x, _ in have}) >= 2:
                phases[name] = _line([x for x, _ in have], [y for _, y in have], f"phase {name}", "s")
        s.phase_fits[e] = phases
        if s.budget_bytes:
            s.budget_meets.append(budget_meet(e, s.memory_fits[e], s.budget_bytes))
    s.notes = [f"{e}: the {q} line is poor: {f.note}" for e in s.engines
               for q, f in (("time", s.time_fits[e]), ("memory", s.memory_fits[e])) if f.poor and f.note]


def budget_meet(engine: str, fit: Fit, budget: int) -> BudgetMeet:
    """The file count where the memory line reaches `budget` (None when it does not rise)."""
    rise = fit.per_gb * (max(fit.xs) - min(fit.xs)) if fit.n >= 2 else 0.0
    if fit.n < 2 or rise <= FLAT_SHARE * max(fit.ys):
        return BudgetMeet(engine=engine, budget_bytes=budget,
                          note=f"no rising memory line: peak memory did not grow with the file count here (by "
                               f"{rise / max(max(fit.ys), 1):.1%} of its peak over the files measured; "
                               f"{FLAT_SHARE:.0%} or less counts as flat)")
    files = (budget - fit.fixed) / fit.per_gb
    top = max(fit.xs)
    return BudgetMeet(engine=engine, budget_bytes=budget, files=files,
                      note=(f"a linear extrapolation from {fit.n} runs up to {top:,.0f} files"
                            + (" (far beyond them)" if files > 10 * top else "")))


def count_sweep(opts: CountSweepOptions, progress: Progress) -> CountSweepSummary:
    from bench.campaigns.shared import campaign_dir
    from bench.core.machine import node_ram_bytes
    from bench.core.units import parse_size

    sc = load_scenario(opts.scenario)
    engines = parse_engines(opts.engines or campaign_engines())
    check_results_dir(opts.results_dir)
    scale = check_scale(opts.scale)
    for fs in opts.file_scales:  # bad input at any file scale: UserError before anything runs
        resolve_file_scale(sc, scale, fs, opts.seed)
    directory = campaign_dir(opts.results_dir, opts.run_id, "counts", sc.name)
    budget = parse_size(opts.memory_budget, "--memory-budget") if opts.memory_budget else node_ram_bytes()
    env = environment(Path.cwd())
    s = CountSweepSummary(sweep_id=directory.name, scenario=sc.name, scenario_record=sc.record(), scale=opts.scale,
                          file_scales=opts.file_scales, reps=opts.reps, engines=engines, started_at=now_iso(),
                          machine=env.describe(), budget_bytes=budget)
    directory.mkdir(parents=True)
    write_counts(directory, s)
    results: list[RunResult] = []
    with recorded(directory, s, write_counts):
        for i, fs in enumerate(opts.file_scales):
            run_id = f"files-{fmt_scale(fs)}"
            progress.info(f"count sweep {s.sweep_id}: file scale {fmt_scale(fs)} at scale {fmt_scale(opts.scale)} "
                          f"({i + 1} of {len(opts.file_scales)})")
            got = run_scenario(RunOptions(
                **opts.common(results_dir=str(directory), run_id=run_id, file_scale=fs), scale=opts.scale,
                engines=",".join(engines), reps=opts.reps, memory_budget=opts.memory_budget, readers=False), progress)
            results += got
            s.run_dirs[fmt_scale(fs)] = run_id
            s.points += [p for e in engines if (p := count_point(e, fs, got, run_id)) is not None]
            fit_counts(s, results)
            write_counts(directory, s)
    progress.block(count_table(s))
    progress.info(f"count sweep: {directory} (pid {os.getpid()})")
    return s


def count_table(s: CountSweepSummary) -> str:
    """The points, the lines per engine (and per phase), and where memory meets the budget, as text."""
    rows = [f"count sweep of {s.scenario} at scale {fmt_scale(s.scale)} (bytes and rows), file scales "
            f"{', '.join(fmt_scale(f) for f in s.file_scales)}",
            f"{'engine':<12} {'files':>7} {'data':>6} {'pos':>6} {'eq':>6} {'status':<14} {'time':>9} {'peak RSS':>10} "
            f"{'read (rchar)':>12}"]
    for p in s.points:
        t = f"{p.duration_s.median:.1f} s" if p.duration_s.median is not None else "-"
        m = fmt_bytes(int(p.peak_rss_bytes.median)) if p.peak_rss_bytes.median else "-"
        rows.append(f"{p.engine:<12} {p.files:>7,} {p.data_files:>6,} {p.position_delete_files:>6,} "
                    f"{p.equality_delete_files:>6,} {','.join(sorted(set(p.statuses))):<14} {t:>9} {m:>10} "
                    f"{fmt_bytes(int(p.read_chars.median)) if p.read_chars.median else '-':>12}")
    rows += [f"{p.engine} at {p.files:,} files: delete files opened: {p.delete_opens.describe()}"
             for p in s.points if p.delete_opens is not None]
    for e in s.engines:
        for label, f, unit in (("time", s.time_fits.get(e), "s"), ("peak RSS", s.memory_fits.get(e), "MB"),
                               ("bytes read (rchar)", s.read_fits.get(e), "MB")):
            if f is None or f.n < 2:
                continue
            k = 1e6 if unit == "MB" else 1.0
            r2 = f"R2 {f.r2:.3f}" if f.r2 is not None else "R2 -"
            rows.append(f"{e}: {label} = {f.fixed / k:,.1f} {unit} + {f.per_gb / k * 1000:,.3f} {unit} per 1,000 files "
                        f"({r2}, {f.n} runs){' (poor)' if f.poor else ''}")
        for name, f in s.phase_fits.get(e, {}).items():
            rows.append(f"{e}:   phase {name} = {f.fixed:,.2f} s + {f.per_gb * 1000:,.3f} s per 1,000 files "
                        f"(R2 {f.r2:.3f})" if f.r2 is not None else f"{e}:   phase {name}: {f.note}")
    for e, f in s.pair_read_fits.items():
        t = s.pair_time_fits.get(e)
        if f.n >= 2 and t is not None:
            rows.append(f"{e}: against data x equality-delete files: bytes read R2 "
                        f"{f.r2 if f.r2 is not None else 0:.3f} ({f.per_gb:,.0f} bytes per pair), time R2 "
                        f"{t.r2 if t.r2 is not None else 0:.3f}")
    for b in s.budget_meets:
        poor = " (from a poor memory line)" if s.memory_fits.get(b.engine) and s.memory_fits[b.engine].poor else ""
        where = (f"reaches the budget {fmt_bytes(b.budget_bytes)} at ~{b.files:,.0f} input files{poor}"
                 if b.files is not None else f"does not reach the budget {fmt_bytes(b.budget_bytes)}")
        rows.append(f"{b.engine}: memory {where} ({b.note})")
    return "\n".join(rows)
