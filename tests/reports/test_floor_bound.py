"""Engine, floor and physical bound in the report, and the floor's self-check: an engine faster than the
floor by more than the run's own spread marks it "not a floor" with the numbers (HTML and markdown);
within the spread it does not; results without a bound say why there is none.  Hand-built results."""

from __future__ import annotations

import json
from pathlib import Path

from bench.core.rates import TableRates, physical_bound
from bench.core.records.engine_run import PhysicalBound
from reports.floorcheck import floor_check
from reports.markdown import render_markdown
from tests.reports.hand_built import make_result, render, write_results

ENGINES = json.loads((Path(__file__).resolve().parent / "data" / "floor-variants-tune" / "engines.json").read_text())
FLOOR = "arrow-floor"
RATES = TableRates(table="bench.t", measured_at="2026-11-27T06:00:00+00:00", input_codec="snappy", files=4,
                   bytes=4, rows=4, read_mb_s=400.0, decode_mb_s_per_core=100.0, decode_rows_s_per_core=1e6,
                   encode_rows_s_per_core={"snappy": 1e6}, join_rows_s_per_core=1e7,
                   cpu={"decode_mb": 200.0, "encode_rows_snappy": 2e6, "join_rows": 2e7})


def _runs(engine_times: list[float], floor_times: list[float], bound: dict | None) -> list:
    order = ["risingwave", FLOOR]
    out = []
    for rep, (e, f) in enumerate(zip(engine_times, floor_times)):
        fields = {k: v for k, v in ENGINES["risingwave"].items() if k != "engine"}
        out.append(make_result("risingwave", rep, duration=e, run_id="fb", order=order, **fields))
        fields = {k: v for k, v in ENGINES[FLOOR].items() if k != "engine"}
        fields["physical_bound"] = bound
        out.append(make_result(FLOOR, rep, duration=f, run_id="fb", order=order, **fields))
    return out


def test_an_engine_beyond_the_spread_marks_the_floor_and_the_bound_is_shown(tmp_path):
    # 200 MB read (0.5 s), 100 MB decoded (1 CPU-s), 2 M rows encoded (2 CPU-s), 10 M join rows (1 CPU-s): 2 s on 2
    # cores at the wall-clock rates; each rate per CPU-second is twice that: 1 s, and the bound is the smaller
    bound = physical_bound(RATES, 2, 200_000_000, 100_000_000, 2_000_000, "snappy", 10_000_000)
    assert bound.seconds == 1.0 and bound.limited_by == "CPU" and bound.basis == "rates per CPU-second"
    assert bound.idle_seconds == 1.0
    runs = _runs([11.3, 12.0, 13.0], [19.6, 20.0, 20.9], bound)
    check = floor_check(runs, FLOOR)
    assert check.floor_s == 20.0 and check.bound_s == 1.0 and check.floor_over_bound == 20.0 and not check.bound_beaten
    [beat] = check.beaten
    # the run's spread: the engine's 13.0 / 11.3 (above the floor's 20.9 / 19.6); 12.0 x 1.15 < 20.0
    assert beat.engine == "risingwave" and round(beat.spread, 3) == round(13.0 / 11.3, 3)
    assert round(beat.multiple, 2) == 0.6
    html = render([write_results(tmp_path, runs, run_id="fb")])
    assert "data-floor-not-a-floor" in html and "Not a floor:" in html
    assert "risingwave takes 12.0 s, 0.60× of arrow-floor's 20.0 s, beyond the run's own spread of 1.15×" in html
    assert 'data-bound="1.0"' in html and "physical bound 1.00 s (CPU-limited" in html and "Bound beaten" not in html
    assert "1.00 s with each core to itself" in html
    md = render_markdown([tmp_path / "fb"])
    assert "Engine, floor and bound: risingwave 12.00 s; floor arrow-floor 20.00 s; physical bound 1.00 s" in md
    assert "the floor takes 20.00× the bound" in md and "**Not a floor:** arrow-floor is NOT A FLOOR here" in md


def test_a_run_faster_than_the_bound_is_flagged_in_the_report(tmp_path):
    """The bound's self-check in the report: a floor run whose own check flagged its bound and an engine run
    faster than the floor's median bound are each named under 'Bound beaten' (HTML and markdown)."""
    bound = physical_bound(RATES, 2, 200_000_000, 100_000_000, 2_000_000, "snappy", 10_000_000)  # 1 s
    beaten = bound.model_copy(update={"measured_s": 0.8, "beaten": "BOUND BEATEN: its compaction took 0.80 s"})
    runs = _runs([0.9, 1.5], [1.1, 1.2], bound)
    runs[1] = runs[1].model_copy(update={"physical_bound": beaten})  # the floor's rep 0
    check = floor_check(runs, FLOOR)
    assert check.bound_s == 1.0 and check.bound_beaten == [
        "arrow-floor rep 0: BOUND BEATEN: its compaction took 0.80 s",
        "risingwave rep 0: 0.90 s, below the bound of 1.00 s"]
    html = render([write_results(tmp_path, runs, run_id="fb")])
    assert "data-bound-beaten" in html and "risingwave rep 0: 0.90 s, below the bound of 1.00 s" in html
    md = render_markdown([tmp_path / "fb"])
    assert "**Bound beaten** (the bound is not a bound" in md and "arrow-floor rep 0: BOUND BEATEN" in md


def test_within_the_spread_no_mark_and_no_bound_says_why(tmp_path):
    runs = _runs([18.0, 24.0], [20.0, 21.0],
                 PhysicalBound(missing="no rates measured for bench.t: run `bench selfcheck rates`"))
    check = floor_check(runs, FLOOR)
    assert check.engines == {"risingwave": 21.0} and not check.beaten  # 21.0 > 20.5: not even faster
    runs = _runs([18.0, 22.0], [20.0, 21.0], None)
    check = floor_check(runs, FLOOR)
    assert check.engines["risingwave"] == 20.0 and not check.beaten  # 20.0 x (22/18) > 20.5: within the spread
    assert check.bound_s is None and check.bound_missing.startswith("its results record no physical bound")
    html = render([write_results(tmp_path, runs, run_id="fb")])
    assert "data-floor-not-a-floor" not in html and "data-floor-beaten" in html and "Within the noise" in html
    assert "no physical bound: its results record no physical bound" in html
    md = render_markdown([tmp_path / "fb"])
    assert "Not a floor" not in md and "no physical bound" in md
