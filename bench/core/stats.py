"""Statistics over repetitions: per-engine median/min/max and paired speedups.

Warm-up runs are excluded everywhere.  Every statistic (durations, phases, memory, cores, cost) uses
verified runs only: a run that failed, ran out of memory, timed out, or finished with an output the
verifier rejected is counted by status (and listed, with its reasons, by the report) but contributes
no number.  Speedups are paired by repetition: rep i of engine A against rep i of engine B (the
runner runs them back to back, rotating their order from one repetition to the next), and summarised
by median/min/max.  Only pairs where both runs were verified count: a fast wrong answer is no speedup.
An engine that commits nothing (`commits: none`, a floor such as arrow-floor) does not do the whole job:
it is never in a speedup; engines are instead compared to it as a multiple of its time (floor_multiples).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from bench.core.results import RunResult
from bench.core.spread import Spread


def median(values: Iterable[float | None]) -> float | None:
    """The median of the values that are not None; None when there are none (one home for the harness)."""
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None

@dataclass
class EngineStats:
    engine: str
    runs: int  # measured runs (warm-up excluded)
    ok: int  # finished (status ok), verified or not
    statuses: dict[str, int]
    duration_s: Spread  # of verified runs, like every Spread here
    process_wall_s: Spread
    setup_s: Spread
    peak_rss_bytes: Spread
    peak_hwm_bytes: Spread
    mean_cores: Spread
    verified: int  # ok runs whose table was verified: the runs every statistic uses
    warmups: int = 0
    phases: dict[str, Spread] = field(default_factory=dict)  # phase name -> seconds, in first-seen order
    unverified: int = 0  # ok runs whose output the verifier rejected
    time_to_result_s: Spread = field(default_factory=lambda: Spread.of([]))  # setup + compaction


@dataclass
class Speedup:
    faster: str  # ratio = slower engine time / faster engine time
    slower: str
    ratio: Spread  # slower.duration / faster.duration, per paired rep
    pairs: list[tuple[int, float]] = field(default_factory=list)  # (rep, ratio)
    unpaired_reps: list[int] = field(default_factory=list)  # reps where either run did not succeed


def measured(results: Iterable[RunResult]) -> list[RunResult]:
    """The runs a statistic may use: not a warm-up, not a run in a shared process (bench conformance)."""
    return [r for r in results if not r.warmup and not r.shared_process]


def _spread(runs: list[RunResult], get: Callable[[RunResult], float | None]) -> Spread:
    return Spread.of(get(r) for r in runs)


def engine_stats(results: Iterable[RunResult]) -> dict[str, EngineStats]:
    """Per engine, in order of first appearance."""
    results = list(results)
    out: dict[str, EngineStats] = {}
    for engine in dict.fromkeys(r.engine for r in results):
        mine = [r for r in results if r.engine == engine]
        runs = measured(mine)
        ok = [r for r in runs if r.status == "ok"]
        good = [r for r in ok if r.verified]
        names = list(dict.fromkeys(p.name for r in good for p in r.phases))
        out[engine] = EngineStats(
            engine=engine,
            runs=len(runs),
            ok=len(ok),
            statuses=dict(Counter(r.status for r in runs)),
            duration_s=_spread(good, lambda r: r.duration_s),
            process_wall_s=_spread(good, lambda r: r.process_wall_s),
            setup_s=_spread(good, lambda r: r.setup_s),
            time_to_result_s=_spread(good, lambda r: r.time_to_result_s),
            peak_rss_bytes=_spread(good, lambda r: r.telemetry.peak_rss_bytes),
            peak_hwm_bytes=_spread(good, lambda r: r.telemetry.peak_hwm_bytes),
            mean_cores=_spread(good, lambda r: r.telemetry.mean_cores),
            verified=len(good),
            warmups=len(mine) - len(runs),
            phases={n: Spread.of(sum(p.seconds for p in r.phases if p.name == n) for r in good) for n in names},
            unverified=len(ok) - len(good),
        )
    return out


def paired_speedup(results: Iterable[RunResult], a: str, b: str) -> Speedup:
    """How many times faster the faster of `a` and `b` is, pair by pair (rep i against rep i).

    Which engine is 'faster' is decided by the median of the pair ratios (b/a >= 1 -> a is faster)."""
    runs = measured(results)
    by_rep: dict[str, dict[int, RunResult]] = {a: {}, b: {}}
    for r in runs:
        if r.engine in by_rep:
            by_rep[r.engine][r.rep] = r
    pairs, unpaired = [], []
    for rep in sorted(set(by_rep[a]) | set(by_rep[b])):
        ra, rb = by_rep[a].get(rep), by_rep[b].get(rep)
        if ra and rb and ra.counts and rb.counts and ra.duration_s and rb.duration_s:
            pairs.append((rep, rb.duration_s / ra.duration_s))
        else:
            unpaired.append(rep)
    if pairs and statistics.median(x for _, x in pairs) < 1:
        a, b = b, a
        pairs = [(rep, 1 / x) for rep, x in pairs]
    return Speedup(faster=a, slower=b, ratio=Spread.of(x for _, x in pairs), pairs=pairs,
                   unpaired_reps=unpaired)


def floors(results: Iterable[RunResult]) -> list[str]:
    """Labels of engines that commit nothing (floors), in order of appearance."""
    return list(dict.fromkeys(r.engine for r in results if r.commits == "none"))


@dataclass
class FloorMultiple:
    engine: str
    floor: str
    ratio: Spread  # engine time / floor time, per paired rep
    pairs: list[tuple[int, float]] = field(default_factory=list)


def floor_multiples(results: Iterable[RunResult]) -> list[FloorMultiple]:
    """Each committing engine's compaction time as a multiple of each floor's, pair by pair."""
    results = measured(results)
    out = []
    for f in floors(results):
        fl = {r.rep: r.duration_s for r in results if r.engine == f and r.counts and r.duration_s}
        for e in dict.fromkeys(r.engine for r in results if r.commits != "none"):
            pairs = [(r.rep, r.duration_s / fl[r.rep]) for r in results
                     if r.engine == e and r.counts and r.duration_s and fl.get(r.rep)]
            out.append(FloorMultiple(engine=e, floor=f, ratio=Spread.of(x for _, x in pairs), pairs=pairs))
    return out


def all_speedups(results: Iterable[RunResult]) -> list[Speedup]:
    """Every pair of engines that commit present, each once (floors are compared by floor_multiples)."""
    results = list(results)
    engines = list(dict.fromkeys(r.engine for r in results if r.commits != "none"))
    return [paired_speedup(results, engines[i], engines[j])
            for i in range(len(engines)) for j in range(i + 1, len(engines))]
