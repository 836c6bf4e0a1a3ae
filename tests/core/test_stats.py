"""Repetition statistics: warm-up excluded, verified runs only (failed, oom and unverified runs are counted
but contribute no number), speedups paired by rep over verified pairs."""

from __future__ import annotations

import pytest

from bench.core.results import RunResult
from bench.core.stats import all_speedups, engine_stats, paired_speedup


def run(engine, rep, duration, status="ok", warmup=False, rss=None, verified=None, phases=None):
    return RunResult(run_id="t", scenario="bin-packing", engine=engine, engine_name=engine.split(":")[0], rep=rep,
                     warmup=warmup, scale=1e-4,
                     seed=1, status=status, verified=(status == "ok") if verified is None else verified,
                     duration_s=duration, telemetry={"peak_rss_bytes": rss},
                     phases=phases if phases is not None else
                     ([{"name": "rewrite", "seconds": duration}] if duration is not None else []))


RESULTS = [
    run("spark", 0, 100.0, warmup=True),  # a slow warm-up must not count
    run("rw", 0, 1.0, warmup=True),
    run("spark", 0, 30.0, rss=300), run("rw", 0, 3.0, rss=30),
    run("spark", 1, 20.0, rss=200), run("rw", 1, 5.0, rss=50),
    run("spark", 2, 40.0, rss=400), run("rw", 2, 2.0, rss=20),
    run("spark", 3, None, status="oom", rss=900), run("rw", 3, 4.0, rss=40),
    # finished, fast, and wrong: the verifier rejected its output; it must count nowhere
    run("spark", 4, 0.5, rss=5, verified=False), run("rw", 4, 6.0, rss=60),
]


def test_engine_stats_use_verified_runs_only():
    st = engine_stats(RESULTS)
    sp = st["spark"]
    assert (sp.runs, sp.ok, sp.verified, sp.unverified, sp.warmups) == (5, 4, 3, 1, 1)
    assert sp.statuses == {"ok": 4, "oom": 1}  # the unverified run is ok by status
    # neither the oom run nor the unverified 0.5 s run moves a number
    assert (sp.duration_s.median, sp.duration_s.min, sp.duration_s.max) == (30.0, 20.0, 40.0)
    assert sp.duration_s.n == 3
    assert (sp.peak_rss_bytes.min, sp.peak_rss_bytes.max) == (200, 400)
    assert sp.phases["rewrite"].values == [30.0, 20.0, 40.0]
    rw = st["rw"]
    assert rw.duration_s.median == pytest.approx(4.0)  # median of 3, 5, 2, 4, 6
    assert (rw.verified, rw.unverified) == (5, 0)


def test_speedups_are_paired_by_rep():
    s = paired_speedup(RESULTS, "spark", "rw")
    assert (s.faster, s.slower) == ("rw", "spark")  # oriented so the ratio is >= 1
    assert s.pairs == [(0, 10.0), (1, 4.0), (2, 20.0)]  # rep 3: spark OOM; rep 4: spark not verified
    assert s.unpaired_reps == [3, 4]
    assert (s.ratio.median, s.ratio.min, s.ratio.max) == (10.0, 4.0, 20.0)
    # not the ratio of medians (30 / 4), nor of the warm-ups
    assert s.ratio.median != pytest.approx(30 / 4)
    assert paired_speedup(RESULTS, "rw", "spark").pairs == s.pairs
    assert len(all_speedups(RESULTS)) == 1


def test_no_pairs_when_one_engine_never_succeeds():
    s = paired_speedup([run("a", 0, 1.0), run("b", 0, None, status="timeout")], "a", "b")
    assert s.ratio.n == 0 and s.ratio.median is None and s.unpaired_reps == [0]


def test_an_unverified_run_gives_no_speedup():
    fast_but_wrong = run("b", 0, 1.0, verified=False)
    s = paired_speedup([run("a", 0, 10.0), fast_but_wrong, run("a", 1, 10.0), run("b", 1, 5.0)], "a", "b")
    assert s.pairs == [(1, 2.0)] and s.unpaired_reps == [0]


def test_an_engine_with_only_unverified_runs_has_no_numbers():
    st = engine_stats([run("a", 0, 1.0, verified=False), run("a", 1, 2.0, verified=False)])["a"]
    assert (st.ok, st.verified, st.unverified) == (2, 0, 2)
    assert st.duration_s.n == 0 and st.duration_s.median is None and st.phases == {}


def test_a_floor_is_never_in_a_speedup_engines_are_multiples_of_it():
    floor = [run("arrow-floor", i, d) for i, d in enumerate([1.0, 2.0, 1.0, None, 0.1])]
    for r in floor:
        r.commits = "none"
    floor[4].verified = False  # a fast wrong floor is no yardstick
    from bench.core.stats import floor_multiples, floors

    res = RESULTS + floor
    assert floors(res) == ["arrow-floor"]
    assert all("arrow-floor" not in (s.faster, s.slower) for s in all_speedups(res))
    fm = {m.engine: m for m in floor_multiples(res)}
    assert set(fm) == {"spark", "rw"}
    # spark: reps 0-2 verified (30, 20, 40) against the floor's 1, 2, 1; rep 3 oom, rep 4 unverified
    assert fm["spark"].pairs == [(0, 30.0), (1, 10.0), (2, 40.0)]
    assert (fm["spark"].ratio.median, fm["spark"].ratio.min, fm["spark"].ratio.max) == (30.0, 10.0, 40.0)
    assert fm["rw"].pairs == [(0, 3.0), (1, 2.5), (2, 2.0)]  # rep 3: no floor run; rep 4: wrong floor
