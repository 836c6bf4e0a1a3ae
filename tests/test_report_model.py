"""Report edge cases from hand-written results (fast, no browser): failures stay visible, costs are
recomputed for another instance type, missing samples are reported, unknown scenarios still render."""

from __future__ import annotations

import re

import pytest

from bench.cost import run_cost
from bench.results import RunResult, save
from reports.render import render_html


def _result(engine, rep, status="ok", duration=10.0, scenario="bin-packing", samples=None, **kw):
    return RunResult(run_id="hand", scenario=scenario, engine=engine, rep=rep, scale=0.001, seed=1,
                     status=status, verified=status == "ok", duration_s=duration if status == "ok" else None,
                     setup_s=1.0, process_wall_s=(duration or 5) + 2, files_in=16,
                     files_out=1 if status == "ok" else None, bytes_in=10_000_000,
                     before={"data_files": 16, "data_bytes": 10_000_000, "rows": 1000},
                     after={"data_files": 1, "data_bytes": 9_000_000, "rows": 1000} if status == "ok" else None,
                     telemetry={"peak_rss_bytes": 500_000_000, "peak_hwm_bytes": 400_000_000, "mean_cores": 1.5,
                                "p95_cores": 1.9, "samples": 10, "interval_s": 0.1},
                     memory_budget_bytes=2_000_000_000,
                     cost=run_cost(duration if status == "ok" else None), samples_file=samples,
                     error=None if status == "ok" else f"{status}: killed by the kernel OOM killer", **kw)


@pytest.fixture
def results_dir(tmp_path):
    for r in (_result("spark", 0, "oom"), _result("spark", 1, "oom"),
              _result("risingwave", 0, duration=4.0, samples="work/missing.parquet"),
              _result("risingwave", 1, duration=6.0)):
        save(tmp_path, r)
    return tmp_path


def test_an_engine_that_never_succeeds_is_shown_not_dropped(results_dir):
    html = render_html([results_dir])
    assert html.count('data-status="oom"') == 2
    assert "no successful run (OOM ×2)" in html  # in the duration and cost charts
    assert "killed by the kernel OOM killer" in html
    assert re.search(r'data-engine="spark".*?2 oom', html, re.S)
    # no speedup can be claimed without a successful pair
    assert "no pair of successful runs" in html
    # published OK but failed here: said so among the reasons
    assert "spark succeeded in the published run but not here" in html


def test_cost_is_recomputed_for_another_instance_type(results_dir):
    html = render_html([results_dir], instance_type="r5.4xlarge")
    m = re.search(r'tr data-engine="risingwave".*?data-metric="cost_median" data-value="([^"]+)"', html, re.S)
    assert float(m.group(1)) == pytest.approx(1.008 * 5.0 / 3600)  # median of 4 s and 6 s at $1.008/h
    assert "Cost per compaction at r5.4xlarge" in html


def test_missing_samples_are_reported(results_dir):
    html = render_html([results_dir])
    assert "samples file missing: work/missing.parquet" in html
    assert "no samples file recorded" in html


def test_unknown_scenario_still_renders(tmp_path):
    save(tmp_path, _result("risingwave", 0, scenario="gone-scenario"))
    html = render_html([tmp_path])
    assert "unknown scenario" in html and "gone-scenario" in html
    assert html.count("<svg") == 6
