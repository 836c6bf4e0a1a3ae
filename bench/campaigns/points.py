"""From results to points: one engine at one scale (verified runs only), the fits over them, the datagen
points and the measured 1 -> 2 core efficiencies."""

from __future__ import annotations

import statistics
from pathlib import Path

from bench.core.campaign import DatagenPoint, Point
from bench.core.catalog import CatalogSettings
from bench.core.dataset import load_manifest
from bench.core.fit import CoreScaling, core_scalings, fit_line
from bench.core.results import RunResult
from bench.core.spread import Spread
from bench.core.stats import median


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


def core_runs(paths: list[Path]) -> list[CoreScaling]:
    """The measured 1 -> 2 core efficiencies in the results under `paths` (runs of `bench run --cores 1|2`)."""
    from bench.core.results import read_results

    return core_scalings([r for p in paths for r in read_results(Path(p))])


def datagen_points(settings: CatalogSettings, results: list[RunResult], scale: float) -> DatagenPoint | None:
    r = next((r for r in results if r.dataset), None)
    if r is None:
        return None
    ds = load_manifest(settings.state_path, r.dataset.split(".")[-1])
    if ds is None:
        return None
    return DatagenPoint(scale=scale, bytes=ds.bytes, logical_bytes=r.before.uncompressed_bytes,
                        seconds=ds.generation_s, reused=ds.reused)
