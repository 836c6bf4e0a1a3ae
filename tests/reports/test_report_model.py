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

from bench.core.cost import Gp3Volume, run_cost
from reports.cli import report_cmd
from reports.export import frame
from reports.render import CHARTS
from tests.reports.hand_built import PUBLISHED, RULES, SCENARIO, make_result, render, write_results

REPORTS = Path(__file__).resolve().parents[2] / "reports"
GiB = 1024**3


@pytest.fixture
def results_dir(tmp_path):
    """spark never succeeds (a heap-oom and an oom); risingwave: two verified runs (4 s, 6 s) and one fast
    run whose output the verifier rejected (1 s)."""
    return write_results(tmp_path, [
        make_result("spark", 0, "heap-oom"), make_result("spark", 1, "oom", order=["risingwave", "spark"]),
        make_result("risingwave", 0, duration=4.0, samples="work/missing.parquet"),
        make_result("risingwave", 1, duration=6.0, order=["risingwave", "spark"]),
        make_result("risingwave", 2, duration=1.0, verified=False),
    ])


@pytest.fixture
def pairs_dir(tmp_path):
    """Both engines finish every rep; risingwave's rep 2 is fast but not verified: no pair there."""
    runs = []
    for rep, (s, r, ok) in enumerate([(30.0, 3.0, True), (20.0, 5.0, True), (40.0, 1.0, False)]):
        order = ["spark", "risingwave"] if rep % 2 == 0 else ["risingwave", "spark"]
        runs += [make_result("spark", rep, duration=s, order=order),
                 make_result("risingwave", rep, duration=r, verified=ok, order=order)]
    return write_results(tmp_path, runs)


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
    html = render([results_dir])
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
    html = render([results_dir])
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
    html = render([pairs_dir])
    m = re.search(r'data-metric="speedup_median" data-value="([^"]+)"', html)
    assert float(m.group(1)) == pytest.approx(7.0)  # median of 30/3 and 20/5; rep 2 (40/1) has no pair
    assert "1 rep(s) without a verified pair" in html
    assert "over 2 verified pairs" in html


def test_the_headline_is_the_first_engine_named_against_the_fastest_other(tmp_path):
    """Of three engines, the headline is the baseline (named first) against the fastest, not the largest ratio
    (which would be the fastest against the slowest)."""
    from bench.core.results import read_run_state
    from reports.model.loading import load_runs
    from reports.model.sets import build

    runs = [make_result(e, rep, duration=d) for rep in (0, 1) for e, d in
            (("spark", 30.0), ("risingwave", 3.0), ("repark", 60.0))]
    for engines, head in ((("spark", "risingwave", "repark"), ("risingwave", "spark", 10.0)),
                          (("repark", "spark", "risingwave"), ("risingwave", "repark", 20.0)),
                          ((), ("risingwave", "repark", 20.0))):  # no baseline recorded: the largest
        run_dir = write_results(tmp_path / "-".join(engines or ("none",)), runs, engines=engines)
        assert read_run_state(run_dir).engines == list(engines)
        (rs,) = build(load_runs([run_dir])).sets
        h = rs.headline_speedup
        assert (h.faster, h.slower, h.ratio.median) == pytest.approx(head), engines


def test_cost_is_the_stored_one_unless_repriced(results_dir):
    html = render([results_dir])
    assert float(_cell(html, "risingwave", "cost_median")) == pytest.approx(0.768 * 5.0 / 3600)
    assert "Cost per compaction at m5.4xlarge on-demand" in html
    caption = re.search(r"data-cost-caption>(.*?)</p>", html, re.S).group(1)
    assert "the published node, applied to the compaction time measured on this machine" in caption
    assert "hypothetical" in caption and "re-priced" not in html.lower()

    html = render([results_dir], instance_type="r5.4xlarge")
    assert float(_cell(html, "risingwave", "cost_median")) == pytest.approx(1.008 * 5.0 / 3600)
    assert "Cost per compaction at r5.4xlarge (re-priced) on-demand" in html
    caption = re.search(r"data-cost-caption>(.*?)</p>", html, re.S).group(1)
    assert "Re-priced with --instance-type" in caption and "hypothetical" in caption
    assert "stored in the results (computed when the runs ran) are at m5.4xlarge" in caption


def test_repricing_keeps_the_storage_and_s3_terms(tmp_path):
    stored = run_cost(4.0, "m5.4xlarge", gp3=Gp3Volume(size_gb=1000), s3_requests={"put": 1000, "get": 1000})
    assert stored.storage_usd and stored.s3_usd
    run_dir = write_results(tmp_path, [make_result("risingwave", 0, duration=4.0, cost=stored)])
    html = render([run_dir], instance_type="r5.4xlarge")
    expected = 1.008 * 4.0 / 3600 + stored.storage_usd + stored.s3_usd
    assert float(_cell(html, "risingwave", "cost_median")) == pytest.approx(expected)


def test_cost_measured_on_the_priced_instance_is_not_hypothetical(tmp_path):
    run_dir = write_results(tmp_path, [make_result("risingwave", 0, duration=4.0,
                                        cost=run_cost(4.0, "m5.4xlarge", ran_on="m5.4xlarge"))])
    caption = re.search(r"data-cost-caption>(.*?)</p>", render([run_dir]), re.S).group(1)
    assert "measured on a m5.4xlarge" in caption and "hypothetical" not in caption


def test_missing_samples_are_reported(results_dir):
    html = render([results_dir])
    assert "samples file missing: work/missing.parquet" in html
    assert "no samples file recorded" in html


def test_a_scenario_record_without_published_figures_still_renders(tmp_path):
    content = {k: v for k, v in SCENARIO.items() if k != "published"}
    run_dir = write_results(tmp_path, [make_result("risingwave", 0, scenario=content)])
    html = render([run_dir])
    assert "This scenario has no published figures to compare with." in html
    assert "Bin-pack many small files (hand-written)." in html  # the description comes from the record
    assert len(CHARTS) == 7 and html.count("<svg") == len(CHARTS) - 2  # no samples: no timeline drawn


def test_results_without_a_scenario_record_still_render(tmp_path):
    run_dir = write_results(tmp_path, [make_result("risingwave", 0, scenario=None, sha="")])
    html = render([run_dir])
    assert "carry no scenario record" in html and html.count("<svg") == len(CHARTS) - 2  # no samples


def test_different_scenario_hashes_are_noted(tmp_path):
    run_dir = write_results(tmp_path, [make_result("spark", 0, sha="aaa111"),
                                       make_result("risingwave", 0, sha="bbb222")])
    html = render([run_dir])
    assert "2 different definitions of scenario" in html
    assert "aaa111 (1 run)" in html and "bbb222 (1 run)" in html


def test_phases_chart_and_table(results_dir):
    html = render([results_dir])
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
    html = render([results_dir])
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
    html = render([results_dir])
    # medians over risingwave's verified runs (rep 0 and 1): cpu 0.4 and 1.4, requests 8 and 9
    assert float(_cell(html, "risingwave", "catalog_cpu_s", "catalog")) == pytest.approx(0.9)
    assert float(_cell(html, "risingwave", "catalog_requests", "catalog")) == pytest.approx(8.5)
    assert float(_cell(html, "risingwave", "catalog_commits", "catalog")) == 1
    assert float(_cell(html, "risingwave", "catalog_peak_rss", "catalog")) == 150_000_000
    table = re.search(r'data-table="catalog">(.*?)</table>', html, re.S).group(1)
    assert re.search(r'tr data-engine="spark">.*?no verified run', table, re.S)


def test_throughput_uses_uncompressed_bytes_on_both_sides(results_dir, tmp_path):
    html = render([results_dir])
    assert float(_cell(html, "risingwave", "published_throughput", "published")) == pytest.approx(193e9 / 277 / 1e6)
    # measured: 30 MB uncompressed (not the 10 MB on disk) / 5 s
    assert float(_cell(html, "risingwave", "throughput", "published")) == pytest.approx(6.0)
    assert "MB/s of uncompressed input" in html
    # unknown sizes: "—", never compressed bytes instead
    pub = dict(PUBLISHED, logical_bytes=None)
    other = tmp_path / "other"
    run_dir = write_results(other, [make_result("risingwave", 0, scenario=dict(SCENARIO, published=pub),
                                     before={"data_files": 16, "data_bytes": 10_000_000, "rows": 1000})])
    html = render([run_dir])
    assert _cell(html, "risingwave", "published_throughput", "published") == ""
    assert _cell(html, "risingwave", "throughput", "published") == ""


def test_method_order_cache_input_and_rules(results_dir):
    html = render([results_dir])
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
    run_dir = write_results(tmp_path, [make_result("risingwave", 0)], state="running", pid=_dead_pid(), expected=4)
    html = render([run_dir])
    assert "incomplete run: 1 of 4 results written" in html
    assert "the harness" in html and "is gone" in html
    assert "data-incomplete-banner" in html and 'class="note warn incomplete"' in html


def test_run_json_without_results_renders_an_incomplete_report(tmp_path):
    run_dir = write_results(tmp_path, [], run_id="killed", state="interrupted", expected=4)
    html = render([run_dir])
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


def test_the_report_of_a_directory_goes_beside_its_results(tmp_path):
    """No --out: one directory's report is its report.html (never in the renderer's package); a second report
    of the same directory reads the same results (loaders skip the HTML); several results need --out."""
    run_dir = write_results(tmp_path, [make_result("risingwave", 0), make_result("spark", 0)])
    for _ in range(2):
        res = CliRunner().invoke(report_cmd, [str(run_dir)])
        assert res.exit_code == 0, res.output
        assert res.output.strip() == f"report: {(run_dir / 'report.html').resolve()}"
        assert "1 result set (2 runs)" in unescape((run_dir / "report.html").read_text())
    assert not list(REPORTS.glob("*.html"))
    other = write_results(tmp_path, [make_result("risingwave", 0, run_id="other")], run_id="other")
    res = CliRunner().invoke(report_cmd, [str(run_dir), str(other)])
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "needs --out" in res.output
    assert not (other / "report.html").exists()


def test_engine_colours_come_from_the_results(tmp_path):
    run_dir = write_results(tmp_path, [make_result("risingwave", 0, engine_color="#123456"),
                                make_result("newcomer", 0, engine_color=None)])
    html = render([run_dir])
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


def test_a_speedup_across_runtimes_says_which_differ(tmp_path):
    """Two engines on different Iceberg (and Spark) versions, as their results record them: the headline and the
    summary say so beside the speedup; engines on the same versions get no such note."""
    order = ["spark", "gluten"]
    runs = [make_result("spark", 0, duration=30.0, order=order, versions={"iceberg": "1.10.2", "spark": "3.5.9"}),
            make_result("gluten", 0, duration=20.0, order=order, versions={"iceberg": "1.10.0", "spark": "3.5.5"})]
    html = render([write_results(tmp_path, runs)])
    assert "different runtimes: Iceberg 1.10.0 vs 1.10.2, Spark 3.5.5 vs 3.5.9" in html
    from reports.markdown import render_markdown

    md = render_markdown([tmp_path / "hand"])
    assert "different runtimes: Iceberg 1.10.0 vs 1.10.2, Spark 3.5.5 vs 3.5.9" in md
    same = [make_result("spark", 0, duration=30.0, order=order, run_id="same", versions={"iceberg": "1.10.2"}),
            make_result("gluten", 0, duration=20.0, order=order, run_id="same", versions={"iceberg": "1.10.2"})]
    assert "different runtimes" not in render_markdown([write_results(tmp_path, same, run_id="same")])


def test_a_runtime_is_named_from_the_engines_declaration_when_no_run_reported_its_versions(tmp_path):
    """A run that timed out reported no versions: the block names the runtime its engine declared, and says so; a
    run that reported them is named by what it reported."""
    from reports.markdown import render_markdown

    order = ["spark", "risingwave"]
    runs = [make_result("spark", 0, status="timeout", order=order, engine_runtime="Spark 9.9 + Iceberg 9.9.9"),
            make_result("risingwave", 0, order=order, versions={"iceberg": "0.7.0"}, engine_runtime="")]
    md = render_markdown([write_results(tmp_path, runs)])
    assert "spark Spark 9.9 + Iceberg 9.9.9 (as declared: no run reported its versions)" in md
    assert "risingwave Iceberg 0.7.0" in md


def test_the_markdown_block_counts_each_runs_opens_of_the_input_timed_out_or_not(tmp_path):
    """How far a run that timed out had got, in the files it opened, beside a verified run's count; a run without a
    count (no delete files) adds no line."""
    from bench.core.records.telemetry import DeleteOpens
    from reports.markdown import render_markdown

    sampled = DeleteOpens(source="inotify", delete_files=40_000, opened=5_700, opens=3_279_700, data_files=20_000,
                          data_opens=1_900, watched_files=600, note="sampled")
    every = DeleteOpens(source="inotify", delete_files=40_000, opened=40_000, opens=80_000, data_files=20_000,
                        data_opens=20_000)
    run = write_results(tmp_path, [make_result("spark", 0, status="timeout", delete_opens=sampled),
                                   make_result("risingwave", 0, duration=4.0, delete_opens=every),
                                   make_result("arrow-floor", 0, duration=3.0)])
    text = render_markdown([run], root=tmp_path)
    assert "The input's files opened while each engine compacted (counted by the harness):" in text
    assert ("- spark rep 0 (timeout): about 3,279,700 opens of about 5,700 of 40,000 delete files" in text
            and "data files: about 1,900 opens of 20,000." in text), text
    assert "- risingwave rep 0 (ok): 80,000 opens of 40,000 of 40,000 delete files" in text
    assert "data files: 20,000 opens of 20,000." in text and "arrow-floor rep 0 (ok)" not in text
