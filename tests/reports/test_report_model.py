"""The report from hand-written results (fast, no browser): statistics over verified runs only, failed and
unverified runs shown with their reasons, stored vs re-priced cost, phases, memory limits, the catalog
server, throughput of uncompressed bytes, incomplete runs, and results without published figures."""

from __future__ import annotations

import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.core.cost import run_cost
from bench.core.results import RunResult, RunState, save, write_run_state
from reports.cli import report_cmd
from reports.export import frame
from reports.render import CHARTS, render_html

REPORTS = Path(__file__).resolve().parents[2] / "reports"
GiB = 1024**3

PUBLISHED = {"source": "hand-written", "scale": 1.0, "machine": "AWS m5.4xlarge (16 vCPU, 64 GB, EBS)",
             "instance_type": "m5.4xlarge", "logical_bytes": 193_000_000_000,
             "duration_s": {"risingwave": 277, "spark": 1533}, "status": {"risingwave": "ok", "spark": "ok"},
             "notes": "hand-written notes"}
SCENARIO = {"name": "bin-packing", "description": "Bin-pack many small files (hand-written).", "kind": "binpack",
            "table": {"kind": "smallfiles", "files": 17358, "total_bytes": 193_000_000_000},
            "published": PUBLISHED}
RULES = ["content: rows and checksum equal the ground truth", "complete: at most one small file per partition"]
COLORS = {"spark": "#E25A1C", "risingwave": "#2F5BEA"}
SPARK_CAPS = [{"name": "JVM heap", "bytes": 8 * GiB, "source": "Runtime.maxMemory()"},
              {"name": "JVM metaspace", "bytes": None, "source": "-XX:MaxMetaspaceSize (no limit set)"}]


def _checks(ok: bool) -> dict:
    checks = [{"name": "content_duckdb", "ok": True, "message": "1000 rows, checksum equal"},
              {"name": "compaction_complete", "ok": ok,
               "message": "1 small file" if ok else "12 small files could still be merged: the compaction is partial"},
              {"name": "row_group_size", "ok": ok, "message": "row groups smaller than advised", "required": False}]
    return {"verified": ok, "checks": checks, "rules": RULES,
            "differences": [] if ok else [f"{c['name']}: {c['message']}" + ("" if c.get("required", True)
                                                                             else " (advisory)")
                                          for c in checks if not c["ok"]]}


def _result(engine, rep, status="ok", duration=10.0, verified=None, run_id="hand", samples=None, order=None,
            scenario=SCENARIO, sha="abc123", **kw) -> RunResult:
    ok = status == "ok"
    verified = ok if verified is None else verified
    order = order or ["spark", "risingwave"]
    phases = ([{"name": "plan", "seconds": duration * 0.2, "detail": "planning the rewrite"},
               {"name": "rewrite", "seconds": duration * 0.7, "detail": "reading and writing files"},
               {"name": "commit", "seconds": duration * 0.1, "detail": "one catalog commit"}] if ok else [])
    fields = dict(
        run_id=run_id, scenario="bin-packing", engine=engine, rep=rep, scale=0.001, seed=1,
        scenario_record={"name": "bin-packing", "sha256": sha, "content": scenario} if scenario is not None else {},
        status=status, verified=verified and ok, duration_s=duration if ok else None,
        phases=phases, setup_s=1.5,
        setup_phases=[{"name": "session start", "seconds": 1.5, "detail": "process and session start-up"}],
        process_wall_s=(duration or 5) + 2, files_in=16, files_out=1 if ok else None, bytes_in=10_000_000,
        engine_order=order, order_position=order.index(engine) if engine in order else 0,
        engine_color=COLORS.get(engine),
        cache={"mode": "cold", "requested": "cold", "dropped": True, "note": "sync, then drop_caches"},
        input={"fingerprint": "fp0123456789", "identical_to_dataset": True},
        before={"data_files": 16, "data_bytes": 10_000_000, "uncompressed_bytes": 30_000_000, "rows": 1000},
        after={"data_files": 1, "data_bytes": 9_000_000, "rows": 1000} if ok else None,
        verification=_checks(verified) if ok else {"rules": RULES},
        telemetry={"peak_rss_bytes": 500_000_000 if ok else 7_900_000_000, "peak_hwm_bytes": 400_000_000,
                   "mean_cores": 1.5, "p95_cores": 1.9, "samples": 10, "interval_s": 0.1},
        memory_budget_bytes=16 * GiB, memory_enforcement="cgroup v2 memory.max on the engine's process tree",
        memory_caps=SPARK_CAPS if engine == "spark" else [],
        catalog_server={"cpu_s": 0.4 + rep, "peak_rss_bytes": 150_000_000, "requests": 8 + rep, "commits": 1,
                        "commit_s": 0.05, "request_s": 0.2},
        cost=run_cost(duration if ok else None), samples_file=samples,
        error=None if ok else {"oom": "oom: killed by the kernel OOM killer in the engine's cgroup",
                               "heap-oom": "java.lang.OutOfMemoryError: Java heap space",
                               "failed": "engine crashed"}.get(status, status),
    )
    fields.update(kw)
    return RunResult(**fields)


def _write(tmp_path: Path, results, run_id="hand", state="complete", pid=0, expected=None) -> Path:
    for r in results:
        save(tmp_path, r)
    write_run_state(tmp_path / run_id, RunState(run_id=run_id, state=state, pid=pid, scenario="bin-packing",
                                                engines=["spark", "risingwave"], reps=2,
                                                expected_results=len(results) if expected is None else expected,
                                                started_at="2025-01-01T00:00:00Z"))
    return tmp_path / run_id


@pytest.fixture
def results_dir(tmp_path):
    """spark never succeeds (a heap-oom and an oom); risingwave: two verified runs (4 s, 6 s) and one fast
    run whose output the verifier rejected (1 s)."""
    return _write(tmp_path, [
        _result("spark", 0, "heap-oom"), _result("spark", 1, "oom", order=["risingwave", "spark"]),
        _result("risingwave", 0, duration=4.0, samples="work/missing.parquet"),
        _result("risingwave", 1, duration=6.0, order=["risingwave", "spark"]),
        _result("risingwave", 2, duration=1.0, verified=False),
    ])


@pytest.fixture
def pairs_dir(tmp_path):
    """Both engines finish every rep; risingwave's rep 2 is fast but not verified: no pair there."""
    runs = []
    for rep, (s, r, ok) in enumerate([(30.0, 3.0, True), (20.0, 5.0, True), (40.0, 1.0, False)]):
        order = ["spark", "risingwave"] if rep % 2 == 0 else ["risingwave", "spark"]
        runs += [_result("spark", rep, duration=s, order=order),
                 _result("risingwave", rep, duration=r, verified=ok, order=order)]
    return _write(tmp_path, runs)


def _render(*args, **kw) -> str:
    """The report's HTML with entities decoded, so text reads as on screen."""
    return unescape(render_html(*args, **kw))


def _cell(html, engine, metric, table="engines"):
    m = re.search(rf'data-table="{table}".*?tr data-engine="{engine}".*?data-metric="{metric}" data-value="([^"]*)"',
                  html, re.S)
    assert m, (engine, metric)
    return m.group(1)


def _row(html, run):
    m = re.search(rf'<tr data-run="{re.escape(run)}"(.*?)</tr>', html, re.S)
    assert m, run
    return m.group(0)


def test_an_engine_that_never_succeeds_is_shown_not_dropped(results_dir):
    html = _render([results_dir])
    assert html.count('data-status="oom"') == 1 and html.count('data-status="heap-oom"') == 1
    assert "no verified run (HEAP-OOM, OOM)" in html  # in the tables, the KPI and the charts
    assert "killed by the kernel OOM killer" in html and "Java heap space" in html
    assert re.search(r'data-engine="spark".*?1 heap-oom, 1 oom', html, re.S)
    assert _cell(html, "spark", "duration_median") == ""
    # no speedup can be claimed without a verified pair
    assert "no pair of verified runs" in html
    # published OK but failed here: said so among the reasons
    assert "spark succeeded in the published run but not here" in html


def test_an_unverified_run_counts_nowhere_and_is_shown_with_its_reasons(results_dir):
    html = _render([results_dir])
    # medians over the two verified runs (4 s, 6 s), not over 4, 6 and the rejected 1 s
    assert float(_cell(html, "risingwave", "duration_median")) == pytest.approx(5.0)
    assert _cell(html, "risingwave", "duration_range") == "4.0,6.0"
    assert re.search(r'tr data-engine="risingwave".*?data-metric="verified" data-value="2">2/3', html, re.S)
    assert float(_cell(html, "risingwave", "cost_median")) == pytest.approx(0.768 * 5.0 / 3600)
    row = _row(html, "risingwave|2")
    assert 'data-counts="no"' in row and "excluded" in row and "NOT verified" in row
    assert "compaction_complete: 12 small files could still be merged: the compaction is partial" in row
    assert "advisory: row_group_size" in row  # shown, but not a reason
    verified_row = _row(html, "risingwave|1")
    assert 'data-counts="yes"' in verified_row and "excluded" not in verified_row
    assert "1 NOT verified" in html  # in the engine's KPI


def test_the_headline_speedup_pairs_verified_runs_only(pairs_dir):
    html = _render([pairs_dir])
    m = re.search(r'data-metric="speedup_median" data-value="([^"]+)"', html)
    assert float(m.group(1)) == pytest.approx(7.0)  # median of 30/3 and 20/5; rep 2 (40/1) has no pair
    assert "1 rep(s) without a verified pair" in html
    assert "over 2 verified pairs" in html


def test_cost_is_the_stored_one_unless_repriced(results_dir):
    html = _render([results_dir])
    assert float(_cell(html, "risingwave", "cost_median")) == pytest.approx(0.768 * 5.0 / 3600)
    assert "Cost per compaction at m5.4xlarge on-demand" in html
    caption = re.search(r"data-cost-caption>(.*?)</p>", html, re.S).group(1)
    assert "the published node, applied to the compaction time measured on this machine" in caption
    assert "hypothetical" in caption and "re-priced" not in html.lower()

    html = _render([results_dir], instance_type="r5.4xlarge")
    assert float(_cell(html, "risingwave", "cost_median")) == pytest.approx(1.008 * 5.0 / 3600)
    assert "Cost per compaction at r5.4xlarge (re-priced) on-demand" in html
    caption = re.search(r"data-cost-caption>(.*?)</p>", html, re.S).group(1)
    assert "Re-priced with --instance-type" in caption and "hypothetical" in caption
    assert "stored in the results (computed when the runs ran) are at m5.4xlarge" in caption


def test_cost_measured_on_the_priced_instance_is_not_hypothetical(tmp_path):
    run_dir = _write(tmp_path, [_result("risingwave", 0, duration=4.0,
                                        cost=run_cost(4.0, "m5.4xlarge", ran_on="m5.4xlarge"))])
    caption = re.search(r"data-cost-caption>(.*?)</p>", _render([run_dir]), re.S).group(1)
    assert "measured on a m5.4xlarge" in caption and "hypothetical" not in caption


def test_missing_samples_are_reported(results_dir):
    html = _render([results_dir])
    assert "samples file missing: work/missing.parquet" in html
    assert "no samples file recorded" in html


def test_a_scenario_record_without_published_figures_still_renders(tmp_path):
    content = {k: v for k, v in SCENARIO.items() if k != "published"}
    run_dir = _write(tmp_path, [_result("risingwave", 0, scenario=content)])
    html = _render([run_dir])
    assert "This scenario has no published figures to compare with." in html
    assert "Bin-pack many small files (hand-written)." in html  # the description comes from the record
    assert html.count("<svg") == len(CHARTS) == 7


def test_results_without_a_scenario_record_still_render(tmp_path):
    run_dir = _write(tmp_path, [_result("risingwave", 0, scenario=None, sha="")])
    html = _render([run_dir])
    assert "carry no scenario record" in html and html.count("<svg") == len(CHARTS)


def test_different_scenario_hashes_are_noted(tmp_path):
    run_dir = _write(tmp_path, [_result("spark", 0, sha="aaa111"), _result("risingwave", 0, sha="bbb222")])
    html = _render([run_dir])
    assert "2 different definitions of scenario" in html
    assert "aaa111 (1 run)" in html and "bbb222 (1 run)" in html


def test_phases_chart_and_table(results_dir):
    html = _render([results_dir])
    assert "phases" in CHARTS
    fig = re.search(r'<figure data-chart="phases"[^>]*>(.*?)</figure>', html, re.S).group(1)
    assert "<svg" in fig
    for name in ("plan", "rewrite", "commit", "setup"):
        assert name in fig, name
    table = re.search(r'data-table="phases">(.*?)</table>', html, re.S).group(1)
    # median over the verified runs only (rewrite = 0.7 x 4 s and 0.7 x 6 s), never the rejected 1 s run
    m = re.search(r'data-phase="rewrite" data-kind="compaction".*?data-metric="phase_median" data-value="([^"]+)"',
                  table, re.S)
    assert float(m.group(1)) == pytest.approx(0.7 * 5.0)
    assert "reading and writing files" in table  # the phase's detail
    assert 'data-phase="session start" data-kind="setup"' in table  # setup shown, apart
    assert "no verified run (HEAP-OOM, OOM)" in table  # spark: no phases to show


def test_memory_caps_and_oom_kinds_are_explained(results_dir):
    html = _render([results_dir])
    table = re.search(r'data-table="memory">(.*?)</table>', html, re.S).group(1)
    spark = re.search(r'tr data-engine="spark">(.*?)</tr>', table, re.S).group(1)
    assert "JVM heap" in spark and "8.00 GiB" in spark and "JVM metaspace" in spark and "no limit" in spark
    assert "16.0 GiB" in spark  # the budget
    rw = re.search(r'tr data-engine="risingwave">(.*?)</tr>', table, re.S).group(1)
    assert ">none<" in rw
    notes = re.search(r"data-memory-notes>(.*?)</ul>", html, re.S).group(1)
    assert "HEAP-OOM" in notes and "JVM heap 8.00 GiB" in notes and "below the harness's budget" in notes
    assert "the harness's memory budget (16.0 GiB) was exceeded" in notes
    assert "the engine's own memory limit" in _row(html, "spark|0")  # next to the run
    assert "the harness's memory budget was exceeded" in _row(html, "spark|1")


def test_catalog_server_numbers_are_shown(results_dir):
    html = _render([results_dir])
    # medians over risingwave's verified runs (rep 0 and 1): cpu 0.4 and 1.4, requests 8 and 9
    assert float(_cell(html, "risingwave", "catalog_cpu_s", "catalog")) == pytest.approx(0.9)
    assert float(_cell(html, "risingwave", "catalog_requests", "catalog")) == pytest.approx(8.5)
    assert float(_cell(html, "risingwave", "catalog_commits", "catalog")) == 1
    assert float(_cell(html, "risingwave", "catalog_peak_rss", "catalog")) == 150_000_000
    table = re.search(r'data-table="catalog">(.*?)</table>', html, re.S).group(1)
    assert re.search(r'tr data-engine="spark">.*?no verified run', table, re.S)


def test_throughput_uses_uncompressed_bytes_on_both_sides(results_dir, tmp_path):
    html = _render([results_dir])
    assert float(_cell(html, "risingwave", "published_throughput", "published")) == pytest.approx(193e9 / 277 / 1e6)
    # measured: 30 MB uncompressed (not the 10 MB on disk) / 5 s
    assert float(_cell(html, "risingwave", "throughput", "published")) == pytest.approx(6.0)
    assert "MB/s of uncompressed input" in html
    # unknown sizes: "—", never compressed bytes instead
    pub = dict(PUBLISHED, logical_bytes=None)
    other = tmp_path / "other"
    run_dir = _write(other, [_result("risingwave", 0, scenario=dict(SCENARIO, published=pub),
                                     before={"data_files": 16, "data_bytes": 10_000_000, "rows": 1000})])
    html = _render([run_dir])
    assert _cell(html, "risingwave", "published_throughput", "published") == ""
    assert _cell(html, "risingwave", "throughput", "published") == ""


def test_method_order_cache_input_and_rules(results_dir):
    html = _render([results_dir])
    method = re.search(r"data-method>(.*?)</table>", html, re.S).group(1)
    assert "spark → risingwave" in method and "risingwave → spark" in method and "rotates" in method
    assert "cold (sync, then drop_caches)" in method
    assert "fingerprint fp0123456789: identical to the dataset (every run)" in method
    for rule in RULES:
        assert rule in method
    assert re.search(r'data-metric="order" data-value="1">2 of 2', _row(html, "risingwave|0"))


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_an_incomplete_run_is_reported(tmp_path):
    run_dir = _write(tmp_path, [_result("risingwave", 0)], state="running", pid=_dead_pid(), expected=4)
    html = _render([run_dir])
    assert "incomplete run: 1 of 4 results written" in html
    assert "the harness" in html and "is gone" in html
    assert "data-incomplete-banner" in html and 'class="note warn incomplete"' in html


def test_run_json_without_results_renders_an_incomplete_report(tmp_path):
    run_dir = _write(tmp_path, [], run_id="killed", state="interrupted", expected=4)
    html = _render([run_dir])
    assert "incomplete run: 0 of 4 results written; interrupted" in html
    assert "No result was written" in html
    out = tmp_path / "r.html"
    res = CliRunner().invoke(report_cmd, [str(run_dir), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "incomplete run" in out.read_text()
    # neither results nor run.json: still a one-line error, exit 2
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(report_cmd, [str(empty)])
    assert res.exit_code == 2 and res.output.startswith("error: no results found")


def test_engine_colours_come_from_the_results(tmp_path):
    run_dir = _write(tmp_path, [_result("risingwave", 0, engine_color="#123456"),
                                _result("newcomer", 0, engine_color=None)])
    html = _render([run_dir])
    assert "background: #123456" in html
    assert re.search(r'tr data-engine="newcomer">\s*<th scope="row"><span class="swatch" style="background: #',
                     html)
    # no engine is named anywhere in the report's code
    for p in list(REPORTS.rglob("*.py")) + list(REPORTS.rglob("*.j2")) + list(REPORTS.rglob("*.css")):
        text = p.read_text().lower()
        assert "spark" not in text and "risingwave" not in text, p


def test_report_imports_only_the_core(tmp_path):
    for p in REPORTS.rglob("*.py"):
        for m in re.finditer(r"^\s*(?:from|import)\s+(bench|datagen)(\.[\w.]+)?", p.read_text(), re.M):
            assert m.group(1) == "bench" and (m.group(2) or "").startswith(".core"), (p, m.group(0))


def test_export_one_row_per_run_with_a_column_per_check(results_dir):
    df = frame([results_dir])
    assert len(df) == 5
    rw = df[df["engine"] == "risingwave"].set_index("rep")
    assert rw.loc[2, "verification.check.compaction_complete"] == False  # noqa: E712
    assert rw.loc[0, "verification.check.compaction_complete"] == True  # noqa: E712
    assert rw.loc[1, "phase.rewrite"] == pytest.approx(4.2)
    sp = df[df["engine"] == "spark"].set_index("rep")
    assert sp.loc[0, "memory_cap.JVM heap"] == 8 * GiB
    assert "verification.checks" not in df.columns
