"""Repetition statistics: warm-up excluded, failures counted but not averaged, speedups paired by rep."""

from __future__ import annotations

import pytest

from bench.results import RunResult
from bench.stats import all_speedups, engine_stats, paired_speedup


def run(engine, rep, duration, status="ok", warmup=False, rss=None):
    return RunResult(run_id="t", scenario="bin-packing", engine=engine, rep=rep, warmup=warmup, scale=1e-4,
                     seed=1, status=status, verified=status == "ok", duration_s=duration,
                     telemetry={"peak_rss_bytes": rss})


RESULTS = [
    run("spark", 0, 100.0, warmup=True),  # a slow warm-up must not count
    run("rw", 0, 1.0, warmup=True),
    run("spark", 0, 30.0, rss=300), run("rw", 0, 3.0, rss=30),
    run("spark", 1, 20.0, rss=200), run("rw", 1, 5.0, rss=50),
    run("spark", 2, 40.0, rss=400), run("rw", 2, 2.0, rss=20),
    run("spark", 3, None, status="oom", rss=900), run("rw", 3, 4.0, rss=40),
]


def test_engine_stats_exclude_warmup_and_failures():
    st = engine_stats(RESULTS)
    sp = st["spark"]
    assert (sp.runs, sp.ok, sp.warmups) == (4, 3, 1)
    assert sp.statuses == {"ok": 3, "oom": 1}
    assert (sp.duration_s.median, sp.duration_s.min, sp.duration_s.max) == (30.0, 20.0, 40.0)
    # memory of the OOM run is real evidence and is kept
    assert sp.peak_rss_bytes.max == 900
    assert st["rw"].duration_s.median == pytest.approx(3.5)  # median of 3, 5, 2, 4
    assert st["rw"].verified == 4


def test_speedups_are_paired_by_rep():
    s = paired_speedup(RESULTS, "spark", "rw")
    assert (s.faster, s.slower) == ("rw", "spark")  # oriented so the ratio is >= 1
    assert s.pairs == [(0, 10.0), (1, 4.0), (2, 20.0)]  # rep 3: spark OOM, no pair
    assert s.unpaired_reps == [3]
    assert (s.ratio.median, s.ratio.min, s.ratio.max) == (10.0, 4.0, 20.0)
    # not the ratio of medians (30 / 3.5), nor of the warm-ups
    assert s.ratio.median != pytest.approx(30 / 3.5)
    assert paired_speedup(RESULTS, "rw", "spark").pairs == s.pairs
    assert len(all_speedups(RESULTS)) == 1


def test_no_pairs_when_one_engine_never_succeeds():
    s = paired_speedup([run("a", 0, 1.0), run("b", 0, None, status="timeout")], "a", "b")
    assert s.ratio.n == 0 and s.ratio.median is None and s.unpaired_reps == [0]


def test_an_unverified_run_gives_no_speedup():
    fast_but_wrong = run("b", 0, 1.0)
    fast_but_wrong.verified = False
    s = paired_speedup([run("a", 0, 10.0), fast_but_wrong, run("a", 1, 10.0), run("b", 1, 5.0)], "a", "b")
    assert s.pairs == [(1, 2.0)] and s.unpaired_reps == [0]
