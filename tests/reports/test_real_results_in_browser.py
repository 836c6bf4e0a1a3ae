"""The HTML report, rendered from REAL results of `bench run` at the tiny scale and checked in a real
headless Chromium: it loads offline with no failed request, every chart is there, and the numbers in
its tables are the ones in the result files (statistics over verified runs only).  Also `bench export`."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.helpers import ROOT, TINY, run_bench

CHROMIUM = "/usr/bin/chromium"  # Debian's package `chromium` (make test-deps installs it)
CHARTS = ("duration", "cost", "phases", "memory", "memory_timeline", "cores", "cpu_timeline")


@pytest.fixture(scope="session")
def real_results(tmp_path_factory, shared_warehouse) -> dict[str, Path]:
    """Two real result sets: spark + risingwave (the comparison), and risingwave + an engine that
    crashes (a failed run must be shown, not dropped), two reps each on the second."""
    results = tmp_path_factory.mktemp("results")
    runs = {
        "compare": ["--engines", "spark,risingwave", "--reps", "1"],
        "failing": ["--engines", "risingwave,crash", "--reps", "2"],
    }
    for run_id, args in runs.items():
        p = run_bench("run", "bin-packing", "--scale", TINY, "--warehouse", shared_warehouse,
                      "--results-dir", results, "--run-id", run_id, "--timeout", "300", *args,
                      timeout=900)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return {run_id: results / run_id for run_id in runs}


def _json_results(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(run_dir.glob("*.json")) if p.name != "run.json"]


def _number(text: str) -> float:
    """'25.1 s' -> 25.1, '$0.00535' -> 0.00535, '1,533 s' -> 1533."""
    m = re.search(r"-?[\d,]*\.?\d+(?:e-?\d+)?", text.replace("$", ""))
    assert m, text
    return float(m.group(0).replace(",", ""))


def _decimals(text: str) -> int:
    m = re.search(r"\.(\d+)", text)
    return len(m.group(1)) if m else 0


def test_real_results_have_samples_files(real_results):
    for run_dir in real_results.values():
        for r in _json_results(run_dir):
            if r["status"] == "ok":
                assert r["samples_file"], r["engine"]
                samples = pq.read_table(run_dir / r["samples_file"])
                assert samples.num_rows >= 1 and "rss_bytes" in samples.column_names
                assert r["telemetry"]["samples"] == samples.num_rows
                assert r["cost"]["instance_type"] == "m5.4xlarge"
                assert r["phases"] and r["duration_s"] == pytest.approx(sum(p["seconds"] for p in r["phases"]))
                checks = r["verification"]["checks"]
                assert isinstance(checks, list) and all({"name", "ok", "required"} <= set(c) for c in checks)
            assert r["scenario_record"]["sha256"] and r["scenario_record"]["content"]["name"] == r["scenario"]
            assert r["engine_order"] and r["engine"] in r["engine_order"]
        state = json.loads((run_dir / "run.json").read_text())
        assert state["state"] == "complete" and state["expected_results"] == len(_json_results(run_dir))


def test_report_in_a_real_browser(real_results, tmp_path):
    from playwright.sync_api import sync_playwright

    out = tmp_path / "report.html"
    p = run_bench("report", real_results["compare"], real_results["failing"], "--out", out)
    assert p.returncode == 0, p.stderr
    assert str(out.resolve()) in p.stdout
    html = out.read_text()
    # self-contained: no reference to anything outside the file
    assert not re.search(r'(?:src|href)\s*=\s*["\'](?!#|data:)', html), "external resource referenced"
    assert "<script" not in html

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: apt-get install -y chromium"
    requests, failed, errors = [], [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            response = page.goto(out.resolve().as_uri(), wait_until="load")
            assert response is not None and response.ok
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)

            # -- loads offline, nothing else requested, no errors
            assert failed == [] and errors == []
            assert [u for u in requests if not u.startswith(("file:", "data:"))] == []

            # -- every chart of every result set is drawn
            sets = page.locator("section.set")
            assert sets.count() == 2
            for i in range(2):
                for chart in CHARTS:
                    svg = sets.nth(i).locator(f'figure[data-chart="{chart}"] svg')
                    assert svg.count() == 1, chart
                    box = svg.bounding_box()
                    assert box and box["width"] > 300 and box["height"] > 80, (chart, box)
                    assert svg.locator("path, rect, line, use").count() > 5, chart

            # -- the numbers in the tables are the result files' numbers
            for run_id, run_dir in real_results.items():
                section = page.locator(f'section.set[data-set^="{run_id}|"]')
                assert section.count() == 1
                rs = _json_results(run_dir)
                for engine in dict.fromkeys(r["engine"] for r in rs):
                    mine = [r for r in rs if r["engine"] == engine and not r["warmup"]]
                    ok = [r for r in mine if r["status"] == "ok"]
                    good = [r for r in ok if r["verified"]]  # every statistic is over verified runs only
                    row = section.locator(f'table[data-table="engines"] tr[data-engine="{engine}"]')
                    assert row.count() == 1
                    cell = row.locator('[data-metric="duration_median"]')
                    if good:
                        med = statistics.median(r["duration_s"] for r in good)
                        assert float(cell.get_attribute("data-value")) == pytest.approx(med, rel=1e-9)
                        shown = cell.inner_text()
                        assert abs(_number(shown) - med) <= 0.5 * 10 ** -_decimals(shown) + 1e-12, shown
                        cost = statistics.median(r["cost"]["total_usd"] for r in good)  # as stored
                        cost_cell = row.locator('[data-metric="cost_median"]')
                        assert float(cost_cell.get_attribute("data-value")) == pytest.approx(cost, rel=1e-9)
                        shown = cost_cell.inner_text()
                        assert abs(_number(shown) - cost) <= 0.5 * 10 ** -_decimals(shown) * 1.0001, shown
                        # time to result: set-up + compaction, beside the compaction time
                        ttr = statistics.median(r["setup_s"] + r["duration_s"] for r in good)
                        assert float(row.locator('[data-metric="time_to_result_median"]').get_attribute(
                            "data-value")) == pytest.approx(ttr, rel=1e-9)
                        rss = statistics.median(r["telemetry"]["peak_rss_bytes"] for r in good)
                        assert float(row.locator('[data-metric="peak_rss_median"]').get_attribute(
                            "data-value")) == pytest.approx(rss)
                        # each phase the engine timed, in the phases table, median over verified runs
                        for kind, key in (("compaction", "phases"), ("setup", "setup_phases")):
                            for name in dict.fromkeys(p["name"] for r in good for p in r[key]):
                                ph = section.locator(f'table[data-table="phases"] tr[data-engine="{engine}"]'
                                                     f'[data-phase="{name}"][data-kind="{kind}"] '
                                                     f'[data-metric="phase_median"]')
                                expected = statistics.median(sum(p["seconds"] for p in r[key] if p["name"] == name)
                                                             for r in good)
                                assert float(ph.get_attribute("data-value")) == pytest.approx(expected, rel=1e-9)
                        served = [r["catalog_server"] for r in good if r["catalog_server"]]
                        if served:
                            commits = section.locator(f'table[data-table="catalog"] tr[data-engine="{engine}"] '
                                                      f'[data-metric="catalog_commits"]')
                            assert float(commits.get_attribute("data-value")) == pytest.approx(
                                statistics.median(c["commits"] for c in served))
                    else:
                        assert cell.inner_text().startswith("no verified run")
                    assert row.locator('[data-metric="verified"]').inner_text() == f"{len(good)}/{len(mine)}"
                    # files after, from the first verified run (else the first finished one)
                    if ok:
                        files = section.locator(f'table[data-table="files"] tr[data-engine="{engine}"] '
                                                f'[data-metric="data_files"]')
                        assert int(files.inner_text()) == (good or ok)[0]["after"]["data_files"]
                    # memory limits and the catalog server: a row per engine
                    for table in ("memory", "catalog"):
                        assert section.locator(f'table[data-table="{table}"] tr[data-engine="{engine}"]').count() == 1
                # every run is listed with its real status, failures included
                for r in rs:
                    tag = "warmup" if r["warmup"] else r["rep"]
                    run_row = section.locator(f'table[data-table="runs"] tr[data-run="{r["engine"]}|{tag}"]')
                    assert run_row.count() == 1
                    assert run_row.get_attribute("data-status") == r["status"]
                    counts = r["status"] == "ok" and r["verified"] and not r["warmup"]
                    assert run_row.get_attribute("data-counts") == ("yes" if counts else "no")
                    assert r["status"] in run_row.locator(".badge").first.inner_text().lower()
                    assert run_row.locator('[data-metric="order"]').get_attribute("data-value") == str(
                        r["order_position"])
                    if r["error"]:
                        assert r["error"][:40] in run_row.inner_text()
                    for c in r["verification"].get("committed", []):  # what it committed, and in which step
                        assert c["operation"] in run_row.locator("[data-commits]").inner_text()
                    for c in r["verification"]["checks"]:  # a rejected output shows why
                        if not c["ok"] and c["required"]:
                            assert c["name"] in run_row.inner_text()
                # the method: the verification rules and the cache policy of the runs
                method = section.locator("[data-method]").inner_text()
                rules = next((r["verification"]["rules"] for r in rs if r["verification"]["rules"]), [])
                for rule in rules:
                    assert rule[:60] in method
                assert rs[0]["cache"]["mode"] in section.locator("[data-cache]").inner_text()
                assert section.locator("[data-incomplete]").count() == 0

            # -- the failing engine is shown as failed, in the headline too
            failing = page.locator('section.set[data-set^="failing|"]')
            crash_row = failing.locator('table[data-table="engines"] tr[data-engine="crash"]')
            assert "FAILED" in crash_row.inner_text().upper()
            assert "2 failed" in failing.locator('.kpi[data-engine="crash"]').inner_text()

            # -- the headline speedup is the median of the paired ratios of verified runs
            rs = _json_results(real_results["compare"])
            d = {r["engine"]: r["duration_s"] for r in rs if r["status"] == "ok" and r["verified"]}
            kpi = page.locator('section.set[data-set^="compare|"] [data-metric="speedup_median"]')
            if len(d) == 2:
                expected = max(d.values()) / min(d.values())
                assert float(kpi.get_attribute("data-value")) == pytest.approx(expected, rel=1e-9)
            else:
                assert kpi.count() == 0

            # -- published figures beside the measured ones, with reasons
            pub = page.locator('section.set[data-set^="compare|"] table[data-table="published"]')
            assert _number(pub.locator('tr[data-engine="spark"] [data-metric="published_s"]').inner_text()) == 1533
            assert _number(pub.locator('tr[data-engine="risingwave"] [data-metric="published_s"]').inner_text()) == 277
            reasons = page.locator('section.set[data-set^="compare|"] [data-reasons]').inner_text()
            for word in ("Scale", "Machine", "Versions"):
                assert word in reasons
            assert "mb/s of uncompressed input" in pub.inner_text().lower()  # headers are upper-cased by CSS
            # the cost is the one stored with each run, and says whose price it is
            caption = page.locator('section.set[data-set^="compare|"] [data-cost-caption]').inner_text()
            assert "m5.4xlarge" in caption and "re-priced" not in caption.lower()

            # -- print: readable on paper (print CSS applies, charts fit the page)
            page.emulate_media(media="print")
            page.screenshot(path=str(tmp_path / "report-print.png"), full_page=True)
            assert page.evaluate("getComputedStyle(document.querySelector('.masthead')).backgroundColor") \
                == "rgba(0, 0, 0, 0)"
            pdf = page.pdf(format="A4")
            assert pdf[:4] == b"%PDF" and len(pdf) > 20_000

            # -- the readers table fits the page (its SQL and file counts wrap): with every engine's reads (a
            # reference run: these results time no reads) it was 1564 px wide in 1124 px of room
            ref = tmp_path / "reads.html"
            (reads_ref,) = sorted((ROOT / "docs" / "reference").glob("*-bin-packing"))  # the docs' one (6 engines)
            p = run_bench("report", reads_ref, "--out", ref)
            assert p.returncode == 0, p.stderr
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(ref.resolve().as_uri(), wait_until="load")
            reads = page.locator('table[data-table="reads"]')
            assert reads.count() == 1
            width, room = reads.evaluate("t => [t.scrollWidth, t.parentElement.clientWidth]")
            assert width <= room, (width, room)
        finally:
            browser.close()


def test_export_csv_and_parquet(real_results, tmp_path):
    csv, parquet = tmp_path / "runs.csv", tmp_path / "runs.parquet"
    p = run_bench("export", real_results["compare"], real_results["failing"], "--csv", csv,
                  "--parquet", parquet)
    assert p.returncode == 0, p.stderr
    import pandas as pd

    n = sum(len(_json_results(d)) for d in real_results.values())
    for df in (pd.read_csv(csv), pd.read_parquet(parquet)):
        assert len(df) == n
        for col in ("run_id", "engine", "status", "duration_s", "telemetry.peak_rss_bytes", "cost.total_usd",
                    "after.data_files", "environment.cpu.model", "scenario_record.sha256", "order_position"):
            assert col in df.columns, col
        assert set(df["status"]) == {"ok", "failed"}
        # one column per verification check (whether it held), one per phase (seconds)
        assert "verification.checks" not in df.columns and "phases" not in df.columns
        for run_dir in real_results.values():
            for r in _json_results(run_dir):
                for c in r["verification"]["checks"]:
                    assert f"verification.check.{c['name']}" in df.columns
                for p in r["phases"]:
                    assert f"phase.{p['name']}" in df.columns


def test_report_and_export_bad_input(real_results, tmp_path):
    for args in (["report", tmp_path / "nothing-here"], ["report", tmp_path], ["export", tmp_path],
                 ["export", real_results["compare"]],
                 ["report", real_results["compare"], "--instance-type", "z9.huge"]):
        p = run_bench(*args)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:"), p.stderr
