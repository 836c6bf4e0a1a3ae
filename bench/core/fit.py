"""Straight-line fits of measurements against input size, and the stated model that carries them to
another node.  Pure arithmetic over numbers the harness measured; nothing here runs anything.

    y = fixed + per_gb x GB        (numpy.polyfit with its covariance)

A fit says how good it is: R², the residuals (absolute and relative), standard errors of both
coefficients, and a prediction interval (about 95 %: 2 standard deviations of the prediction plus the
residual scatter).  It is `poor` when it rests on fewer than three points, when R² < 0.9, or when a point
lies more than 25 % off the line; `note` says which.  Every extrapolation is a model and says so.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
from pydantic import BaseModel, Field

from bench.core.published import PUBLISHED_VCPU
from bench.core.results import RunResult, file_label

POOR_R2 = 0.9
POOR_RELATIVE_RESIDUAL = 0.25


class Fit(BaseModel):
    quantity: str  # what was fitted, e.g. "duration_s", "peak_rss_bytes", "min_budget_bytes"
    unit: str = ""  # of y: "s", "bytes"
    x: str = "input GB (uncompressed, logical)"
    fixed: float = 0.0
    per_gb: float = 0.0
    fixed_se: float | None = None
    per_gb_se: float | None = None
    cov: list[list[float]] | None = None  # covariance of (per_gb, fixed), polyfit's order
    n: int = 0
    r2: float | None = None
    residual_sd: float = 0.0
    residuals: list[float] = Field(default_factory=list)  # y - fit, per point, in input order
    relative_residuals: list[float] = Field(default_factory=list)
    xs: list[float] = Field(default_factory=list)
    ys: list[float] = Field(default_factory=list)
    poor: bool = True
    note: str = ""

    def predict(self, gb: float) -> float:
        return self.fixed + self.per_gb * gb

    def interval(self, gb: float) -> tuple[float, float] | None:
        """About 95 % (± 2 sd) around predict(gb): the coefficients' uncertainty plus the scatter of the
        points about the line; None when the fit has no covariance (fewer than 4 points)."""
        if self.cov is None:
            return None
        c = np.array(self.cov)
        var = c[0, 0] * gb * gb + 2 * c[0, 1] * gb + c[1, 1] + self.residual_sd ** 2
        half = 2 * math.sqrt(max(var, 0.0))
        y = self.predict(gb)
        return y - half, y + half


def fit_line(xs: list[float], ys: list[float], quantity: str, unit: str = "", x_unit: str = "GB") -> Fit:
    """Least squares y = fixed + per_gb x over the points (x in GB, or in `x_unit`: a count sweep's files)."""
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    f = Fit(quantity=quantity, unit=unit, n=len(x), xs=[float(v) for v in x], ys=[float(v) for v in y])
    if len(x) < 2 or len(set(x.tolist())) < 2:
        f.note = f"{len(x)} point(s) at {len(set(x.tolist()))} size(s): no line can be fitted"
        if len(y):
            f.fixed = float(y.mean())
        return f
    if len(x) >= 4:
        coef, cov = np.polyfit(x, y, 1, cov=True)
        f.cov = [[float(v) for v in row] for row in cov]
        f.per_gb_se, f.fixed_se = float(math.sqrt(max(cov[0, 0], 0))), float(math.sqrt(max(cov[1, 1], 0)))
    else:
        coef = np.polyfit(x, y, 1)
    f.per_gb, f.fixed = float(coef[0]), float(coef[1])
    pred = f.per_gb * x + f.fixed
    res = y - pred
    f.residuals = [float(r) for r in res]
    f.relative_residuals = [float(r / v) if v else 0.0 for r, v in zip(res, y)]
    ss_tot = float(((y - y.mean()) ** 2).sum())
    f.r2 = 1 - float((res ** 2).sum()) / ss_tot if ss_tot > 0 else None
    f.residual_sd = float(math.sqrt((res ** 2).sum() / (len(x) - 2))) if len(x) > 2 else 0.0
    problems = []
    if len(x) < 3:
        problems.append(f"only {len(x)} points: the line goes through them, nothing checks it")
    if f.r2 is not None and f.r2 < POOR_R2:
        problems.append(f"R² = {f.r2:.2f} < {POOR_R2}")
    far: dict[float, list[float]] = {}
    for xv, rr in zip(x, f.relative_residuals):
        if abs(rr) > POOR_RELATIVE_RESIDUAL:
            far.setdefault(float(xv), []).append(rr)
    for xv, rrs in far.items():
        side = "above" if all(r > 0 for r in rrs) else "below" if all(r < 0 for r in rrs) else "off"
        lo, hi = f"{min(map(abs, rrs)):.0%}", f"{max(map(abs, rrs)):.0%}"
        size = lo if lo == hi else f"{lo}-{hi}"
        runs = "" if len(rrs) == 1 else f" ({len(rrs)} points)"
        problems.append(f"at {xv:.3g} {x_unit}{runs} the measured value is {size} {side} the line")
    if f.fixed < 0:
        problems.append(f"negative fixed cost ({f.fixed:.3g} {unit}): the line does not describe small tables")
    f.poor = bool(problems)
    r2 = f"R² = {f.r2:.3f}" if f.r2 is not None else "a flat line (every value the same)"
    f.note = "; ".join(problems) if problems else f"{r2}, every point within {POOR_RELATIVE_RESIDUAL:.0%}"
    return f


MIN_BUSY = 0.8  # cores busy on 1 core for a 1 -> 2 core measurement to describe the engine's scaling


class CoreScaling(BaseModel):
    """An engine's measured parallel efficiency from 1 to 2 cores (`bench run --cores 1` and `--cores 2`, the same
    scenario and scale), and Amdahl's law fitted to it: a model of its speedup on n cores,

        S(n) = 1 / ((1 - p) + p / n),   p = 2 - 1 / e,   e = t1 / (2 t2)

    (p clipped to [0, 1]: an efficiency above 1, superlinear on two points, is taken as linear).  Two points fix
    p and check nothing; the growth to the published machine's cores is the model's, not a measurement."""

    engine: str
    scenario: str = ""
    scale: float = 0.0
    t1_s: float  # median compaction time on 1 core
    t2_s: float  # ... on 2 cores
    runs: list[str] = Field(default_factory=list)  # the evidence: result files (run id / file) of both
    busy_1: float | None = None  # mean cores the engine kept busy on 1 core (median over its runs)
    busy_2: float | None = None  # ... on 2 cores
    note: str = ""

    @property
    def usable(self) -> bool:
        """The 1-core runs kept their core busy (>= MIN_BUSY): only then does 1 -> 2 measure how the engine's work
        divides over cores, not how long it waited (for a shared disk, another tenant's CPU)."""
        return self.busy_1 is not None and self.busy_1 >= MIN_BUSY

    @property
    def efficiency(self) -> float:
        return self.t1_s / (2 * self.t2_s)

    @property
    def parallel_fraction(self) -> float:
        return min(1.0, max(0.0, 2 - 1 / self.efficiency))

    def speedup(self, n: float) -> float:
        p = self.parallel_fraction
        return 1 / ((1 - p) + p / max(n, 1.0))

    def describe(self) -> str:
        busy = (f", {self.busy_1:.2f} and {self.busy_2:.2f} cores busy" if self.busy_1 is not None
                and self.busy_2 is not None else "")
        return (f"{self.engine}: {self.t1_s:.1f} s on 1 core, {self.t2_s:.1f} s on 2 ({self.scenario} at scale "
                f"{self.scale:g}{busy}): efficiency {self.efficiency:.2f}, Amdahl parallel fraction "
                f"{self.parallel_fraction:.3f}, so {self.speedup(PUBLISHED_VCPU):.1f}x on {PUBLISHED_VCPU} cores "
                "(model)"
                + ("" if self.usable else f"; NOT USED: on 1 core it kept less than {MIN_BUSY} of it busy, so the "
                   "runs waited on something else (a shared disk, other tenants) and say nothing of its scaling"))


def core_scalings(results: list[RunResult]) -> list[CoreScaling]:
    """Per (scenario, scale, engine): the 1 -> 2 core efficiency from verified runs confined by `--cores 1` and
    `--cores 2` (medians of each), with the result files as evidence."""
    groups: dict[tuple[str, float, str], dict[int, list[RunResult]]] = {}
    for r in results:
        if r.counts and r.core_limit is not None and r.core_limit.cores in (1, 2) and r.duration_s:
            groups.setdefault((r.scenario, r.scale, r.engine), {}).setdefault(r.core_limit.cores, []).append(r)
    out = []
    for (scenario, scale, engine), by in sorted(groups.items()):
        if 1 in by and 2 in by:
            runs = [f"{r.run_id}/{r.scenario}--{file_label(r.engine)}--{r.tag}" for n in (1, 2) for r in by[n]]
            out.append(CoreScaling(engine=engine, scenario=scenario, scale=scale, runs=runs,
                                   t1_s=statistics.median(r.duration_s or 0.0 for r in by[1]),
                                   t2_s=statistics.median(r.duration_s or 0.0 for r in by[2]),
                                   busy_1=_median_busy(by[1]), busy_2=_median_busy(by[2]),
                                   note=f"{len(by[1])} run(s) on 1 core, {len(by[2])} on 2"))
    return out


def _median_busy(runs: list[RunResult]) -> float | None:
    busy = [r.telemetry.mean_cores for r in runs if r.telemetry.mean_cores is not None]
    return statistics.median(busy) if busy else None


def scaling_for(scalings: list[CoreScaling], scenario: str, engine: str) -> CoreScaling | None:
    """The engine's measured, usable scaling: on this scenario (the largest scale), else on another one (its note
    says so).  None: the model scales linearly."""
    mine = [c for c in scalings if c.engine == engine and c.usable]
    same = [c for c in mine if c.scenario == scenario]
    pick = max(same or mine, key=lambda c: c.scale, default=None)
    if pick is not None and not same:
        pick = pick.model_copy(update={"note": f"{pick.note}; measured on {pick.scenario}, not {scenario}"})
    return pick


class NodeModel(BaseModel):
    """The stated model that carries a time fit from this node to another (e.g. the published m5.4xlarge):
    the per-core throughput measured here, times the target's cores (perfect scaling, or Amdahl's law fitted to
    the engine's measured 1 -> 2 core efficiency where `scaling` is given), capped by the
    target's storage throughput over the bytes a compaction moves through the disk; fixed costs as
    measured here.  A model, not a measurement: every assumption is in `assumptions`."""

    target: str  # e.g. "m5.4xlarge"
    target_cores: int
    storage_mb_s: float  # the target's storage throughput (e.g. gp3's 125 MiB/s baseline)
    cores_used_here: float  # mean cores the engine kept busy here (the per-core throughput's divisor)
    disk_gb_per_logical_gb: float  # bytes through the disk (input read + output written) per logical GB
    assumptions: list[str] = Field(default_factory=list)
    # the measured 1 -> 2 core efficiency and its Amdahl model; None: perfect (linear) scaling is assumed
    scaling: CoreScaling | None = None

    def cores_ratio(self) -> float:
        """How much faster the target's cores compute than the cores busy here: S(target) / S(here)."""
        if self.scaling is None:
            return self.target_cores / self.cores_used_here
        return self.scaling.speedup(self.target_cores) / self.scaling.speedup(self.cores_used_here)

    def seconds(self, fit: Fit, gb: float) -> dict:
        """{cpu_s, storage_s, seconds, bound} for `gb` logical GB."""
        if fit.per_gb <= 0 or self.cores_used_here <= 0:
            return {"cpu_s": None, "storage_s": None, "seconds": None, "bound": "no usable fit"}
        cpu_s = gb * fit.per_gb / self.cores_ratio()
        storage_s = gb * self.disk_gb_per_logical_gb * 1e9 / (self.storage_mb_s * 1e6) if self.storage_mb_s else 0.0
        bound = "storage" if storage_s > cpu_s else "cpu"
        return {"cpu_s": cpu_s, "storage_s": storage_s, "seconds": max(fit.fixed, 0.0) + max(cpu_s, storage_s),
                "bound": bound}


def node_model(target: str, target_cores: int, storage_mb_s: float, cores_used_here: float,
               disk_gb_per_logical_gb: float, here: str, scaling: CoreScaling | None = None) -> NodeModel:
    cores = (f"scaled perfectly to {target_cores} cores" if scaling is None else
             f"scaled to {target_cores} cores by Amdahl's law fitted to the measured 1 -> 2 core efficiency ("
             f"{scaling.describe()}; runs {', '.join(scaling.runs)})")
    return NodeModel(target=target, target_cores=target_cores, storage_mb_s=storage_mb_s,
                     cores_used_here=cores_used_here, disk_gb_per_logical_gb=disk_gb_per_logical_gb, scaling=scaling,
                     assumptions=[
                         f"per-core throughput as measured here ({here}, {cores_used_here:.2f} cores busy on average), "
                         + cores,
                         f"capped by storage at {storage_mb_s:g} MB/s over {disk_gb_per_logical_gb:.2f} GB read and "
                         "written per logical GB (input files + output files)",
                         "fixed costs as measured here; the same versions, settings and data shape",
                         "no effect of memory pressure, the OS page cache or other tenants",
                     ])
