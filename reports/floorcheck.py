"""Engine, floor and physical bound of one run set, and the floor's self-check.

The floor (an engine that commits nothing) claims to be the fastest way this machine can do the same
rewrite; the physical bound (`engine_result.bound` of its results: bench.core.rates) is the least time
the bytes and rows can take on the cores given.  Each run checks the claim: an engine whose median
compaction time is below the floor's by more than the run's own spread marks the floor "not a floor",
with the numbers.  The run's spread: the largest max ÷ min of the verified compaction times of the floor
and of that engine in this run (1× with one repetition each: then any engine faster than the floor
marks it).

The bound checks itself too: a floor run whose covered phases took less than the bound it recorded
(`PhysicalBound.beaten`, bench.core.rates.check_bound) or a committing engine's verified run faster than
the floor's median bound is listed in `bound_beaten`, and the report says BOUND BEATEN: the bound is
then no bound.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from bench.core.records.engine_run import PhysicalBound
from bench.core.results import RunResult
from bench.core.stats import floors, measured


@dataclass
class Beat:
    engine: str
    median_s: float
    floor_s: float
    spread: float  # the run's spread (max ÷ min) the gap exceeds

    @property
    def multiple(self) -> float:
        return self.median_s / self.floor_s


@dataclass
class FloorCheck:
    floor: str
    floor_s: float | None  # median verified compaction time
    bound_s: float | None = None  # median physical bound of the floor's runs
    bound_missing: str = ""  # why there is no bound
    limited_by: str = ""
    bound_terms: PhysicalBound = field(default_factory=PhysicalBound)  # of the run whose bound is the median
    engines: dict[str, float] = field(default_factory=dict)  # committing engine -> median verified time
    beaten: list[Beat] = field(default_factory=list)
    bound_beaten: list[str] = field(default_factory=list)  # runs faster than the bound: it is not one

    @property
    def floor_over_bound(self) -> float | None:
        return self.floor_s / self.bound_s if self.floor_s and self.bound_s else None

    def verdict(self) -> str:
        """One line: 'not a floor' with the numbers, or that no engine beat it beyond the spread."""
        if self.floor_s is None:
            return f"{self.floor}: no verified run, nothing checked"
        if not self.beaten:
            return (f"{self.floor} holds as a floor: no engine's median is below its {self.floor_s:.2f} s by more "
                    f"than the run's spread")
        return f"{self.floor} is NOT A FLOOR here: " + "; ".join(
            f"{b.engine} {b.median_s:.2f} s = {b.multiple:.2f}× its {b.floor_s:.2f} s, beyond the run's spread "
            f"of {b.spread:.2f}×" for b in self.beaten)


def _verified_times(runs: list[RunResult], engine: str) -> list[float]:
    return [r.duration_s for r in runs if r.engine == engine and r.counts and r.duration_s]


def _spread(values: list[float]) -> float:
    return max(values) / min(values) if values else 1.0


def _bound(runs: list[RunResult], floor: str) -> tuple[PhysicalBound | None, str]:
    bounds = [r.physical_bound for r in runs if r.engine == floor and r.counts and r.physical_bound is not None]
    have = sorted((b for b in bounds if b.seconds), key=lambda b: b.seconds or 0.0)
    if have:
        return have[(len(have) - 1) // 2], ""
    missing = next((b.missing for b in bounds if b.missing), "")
    return None, missing or "its results record no physical bound (older results, or no verified run)"


def floor_check(results: Iterable[RunResult], floor: str) -> FloorCheck:
    runs = measured(results)
    ftimes = _verified_times(runs, floor)
    out = FloorCheck(floor=floor, floor_s=statistics.median(ftimes) if ftimes else None)
    bound, out.bound_missing = _bound(runs, floor)
    if bound is not None:
        out.bound_s, out.limited_by = bound.seconds, bound.limited_by
        out.bound_terms = bound
    for e in dict.fromkeys(r.engine for r in runs if r.commits != "none"):
        times = _verified_times(runs, e)
        if not times:
            continue
        med = statistics.median(times)
        out.engines[e] = med
        spread = max(_spread(ftimes), _spread(times))
        if out.floor_s and med * spread < out.floor_s:
            out.beaten.append(Beat(engine=e, median_s=med, floor_s=out.floor_s, spread=spread))
    out.bound_beaten = _bound_beaten(runs, floor, out.bound_s)
    return out


def _bound_beaten(runs: list[RunResult], floor: str, bound_s: float | None) -> list[str]:
    """The runs faster than the bound: each floor run whose own check flagged it, each verified run of a
    committing engine faster than the floor's median bound."""
    out = [f"{r.engine} rep {r.rep}: {r.physical_bound.beaten}" for r in runs
           if r.engine == floor and r.physical_bound is not None and r.physical_bound.beaten]
    if bound_s:
        out += [f"{r.engine} rep {r.rep}: {r.duration_s:.2f} s, below the bound of {bound_s:.2f} s"
                for r in runs if r.engine != floor and r.commits != "none" and r.counts and r.duration_s
                and r.duration_s < bound_s]
    return out


def floor_checks(results: Iterable[RunResult]) -> list[FloorCheck]:
    results = list(results)
    return [floor_check(results, f) for f in floors(results)]


def bound_text(c: FloorCheck) -> str:
    """The bound and its terms, in words."""
    if c.bound_s is None:
        return f"no physical bound: {c.bound_missing}"
    t = c.bound_terms
    return (f"physical bound {c.bound_s:.2f} s ({c.limited_by}-limited: device read {t.read_s:.2f} s of "
            f"{t.read_bytes / 1e6:.0f} MB at {t.rates.read_mb_s:.0f} MB/s cold; CPU "
            f"{t.cpu_s:.2f} s = decode {t.decode_cpu_s:.2f} + encode {t.encode_cpu_s:.2f}"
            f" + hash join {t.join_cpu_s:.2f} CPU-s on {t.cores:g} cores; rates of {t.rates.measured_at or '?'})"
            + (f"; {t.idle_seconds:.2f} s with each core to itself (the rates per CPU-second)"
               if t.idle_seconds else ""))


def summary_lines(c: FloorCheck) -> list[str]:
    """Engine, floor and bound in a few lines (markdown), and the self-check."""
    if c.floor_s is None:
        return [f"Floor: {c.floor} has no verified run here."]
    fb = c.floor_over_bound
    out = [f"Engine, floor and bound: {', '.join(f'{e} {s:.2f} s' for e, s in c.engines.items()) or 'no engine'}; "
           f"floor {c.floor} {c.floor_s:.2f} s; " + bound_text(c)
           + (f"; the floor takes {fb:.2f}× the bound" if fb else "") + "."]
    if c.beaten:
        out.append(f"**Not a floor:** {c.verdict()}.")
    if c.bound_beaten:
        out.append("**Bound beaten** (the bound is not a bound: its rates are not the fastest here): "
                   + "; ".join(c.bound_beaten) + ".")
    return out


__all__ = ["Beat", "FloorCheck", "bound_text", "floor_check", "floor_checks", "summary_lines"]
