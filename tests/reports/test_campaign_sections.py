"""The report's campaign sections, from hand-built summaries (fast, no browser): a sweep (time and memory
against input size, fits, a poor fit flagged, the extrapolation labelled as a model with its assumptions)
and a memory frontier (smallest passing budgets, probes, predictions agreeing or not with the published
outcome), alone or with the run sets they contain, and an interrupted campaign with no result yet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.campaigns.sweep import storage_answers
from bench.core.campaign import (
    DatagenPoint,
    Extrapolation,
    FrontierPoint,
    FrontierPrediction,
    FrontierSummary,
    Point,
    Probe,
    Speedup,
    SweepSummary,
    write_summary,
)
from bench.core.fit import fit_line, node_model
from bench.core.fmt import fmt_bytes, fmt_seconds
from bench.core.records.scenario import ScenarioRecord
from bench.core.results import save
from bench.core.spread import Spread
from reports.cli import report_cmd
from reports.export import frame
from reports.model.colors import FALLBACK_COLORS
from reports.render import CHARTS
from tests.reports.hand_built import COLORS, SCENARIO, make_result, render, table_row

MiB, GiB = 1024**2, 1024**3
SCALES = [0.001, 0.002, 0.005, 0.01, 0.02]
FULL_GB = 193.0  # the published input, logical GB
RECORD = ScenarioRecord(name="bin-packing", sha256="abc123", content=SCENARIO)
# seconds = fixed + per GB x GB; spark's point at 0.965 GB is 45 % above its line: a poor fit
TIME = {"risingwave": (2.0, 10.0), "spark": (20.0, 60.0)}
RSS = {"risingwave": (200e6, 300e6), "spark": (2e9, 1e9)}
OFF = {("spark", 0.005): 1.45}


def _gb(scale: float) -> float:
    return round(scale * FULL_GB, 6)


def sweep(state="complete", with_points=True) -> SweepSummary:
    engines = ["spark", "risingwave"]
    points, time_fits, memory_fits, extrapolations = [], {}, {}, []
    if with_points:
        for e in engines:
            for s in SCALES:
                t = (TIME[e][0] + TIME[e][1] * _gb(s)) * OFF.get((e, s), 1.0)
                m = RSS[e][0] + RSS[e][1] * _gb(s)
                points.append(Point(engine=e, scale=s, gb=_gb(s), disk_gb=_gb(s) / 3, runs=3, verified=3,
                                    duration_s=Spread(median=t, min=0.9 * t, max=1.1 * t),
                                    peak_rss_bytes=Spread(median=m, min=0.95 * m, max=1.05 * m),
                                    setup_s=1.5, verify_s=0.8, mean_cores=3.5, run_dir=f"scale-{s:g}"))
            mine = [p for p in points if p.engine == e]
            time_fits[e] = fit_line([p.gb for p in mine], [p.duration_s.median for p in mine], "duration_s", "s")
            memory_fits[e] = fit_line([p.gb for p in mine], [p.peak_rss_bytes.median for p in mine],
                                      "peak_rss_bytes", "bytes")
            model = node_model("m5.4xlarge", 16, 125.0, 3.5 if e == "spark" else 6.0, 0.66, "a test box, 8 cores")
            split = model.seconds(time_fits[e], FULL_GB)
            extrapolations.append(Extrapolation(
                engine=e, gb=FULL_GB, this_node_s=time_fits[e].predict(FULL_GB),
                this_node_interval=time_fits[e].interval(FULL_GB),
                this_node_peak_rss_bytes=memory_fits[e].predict(FULL_GB), model=model, model_s=split["seconds"],
                model_bound=split["bound"], published_s={"spark": 1533.0, "risingwave": 277.0}[e],
                published_status="ok", read_gb=FULL_GB / 3, write_gb=FULL_GB / 6,
                storage=storage_answers(model, time_fits[e], FULL_GB, FULL_GB / 3 * 1e9, FULL_GB / 6 * 1e9,
                                        {"spark": 1533.0, "risingwave": 277.0}[e])))
    speedups = []
    for s in SCALES if with_points else []:
        t = {p.engine: p.duration_s.median for p in points if p.scale == s}
        speedups.append(Speedup(scale=s, gb=_gb(s), faster="risingwave", slower="spark",
                                median=t["spark"] / t["risingwave"], min=0.9 * t["spark"] / t["risingwave"],
                                max=1.1 * t["spark"] / t["risingwave"], pairs=3))
    datagen = [DatagenPoint(scale=s, bytes=int(_gb(s) * 1e9 / 3), logical_bytes=int(_gb(s) * 1e9),
                            seconds=3.0 + 40.0 * _gb(s), reused=s == 0.001) for s in SCALES]
    return SweepSummary(
        sweep_id="sw1", scenario="bin-packing", scenario_record=RECORD, scales=SCALES, reps=3, engines=engines,
        state=state, started_at="2025-01-01T00:00:00Z", ended_at="2025-01-01T02:00:00Z" if state != "running" else None,
        machine="a test box (8 cores, 32 GB)", cores=8, ram_bytes=32 * GiB, points=points, time_fits=time_fits,
        memory_fits=memory_fits, speedups=speedups, extrapolations=extrapolations, datagen=datagen,
        datagen_fit=fit_line([d.logical_bytes / 1e9 for d in datagen], [d.seconds for d in datagen], "datagen_s", "s"),
        run_dirs={f"{s:g}": f"scale-{s:g}" for s in SCALES}, notes=["hand-built sweep note"])


FRONTIER_SCALES = [0.001, 0.002, 0.005]
# smallest passing budget = fixed + per GB x GB (MiB precision); spark fails at the ceiling at the largest scale
BUDGET = {"risingwave": (160 * MiB, 150 * MiB), "spark": (1200 * MiB, 1600 * MiB)}
CEILING = 2 * GiB


def _probes(min_budget: int | None, floor: int, ceiling: int, precision: int) -> list[Probe]:
    """The bisection's probes: the ceiling first, then halves."""
    out, lo, hi = [], floor, ceiling
    budget = ceiling
    while True:
        passed = min_budget is not None and budget >= min_budget
        out.append(Probe(budget_bytes=budget, status="ok" if passed else "oom", verified=passed, passed=passed,
                         memory_failure=not passed, peak_rss_bytes=int(0.9 * budget),
                         duration_s=10.0 if passed else None, error=None if passed else "oom: killed by the kernel",
                         result_file=""))
        if not passed and budget == ceiling:
            return out
        if passed:
            hi = budget
        else:
            lo = budget
        if hi - lo <= precision:
            return out
        budget = (lo + hi) // 2 // MiB * MiB


def frontier(state="complete") -> FrontierSummary:
    points, fits, predictions = [], {}, []
    for e in ("spark", "risingwave"):
        for s in FRONTIER_SCALES:
            want = int(BUDGET[e][0] + BUDGET[e][1] * _gb(s))
            mn = None if want > CEILING else want
            probes = _probes(mn, 128 * MiB, CEILING, 64 * MiB)
            passed = [p.budget_bytes for p in probes if p.passed]
            failed = [p.budget_bytes for p in probes if not p.passed]
            best = min(passed) if passed else None
            at = next((p for p in probes if p.budget_bytes == best), None)
            points.append(FrontierPoint(
                engine=e, scale=s, gb=_gb(s), lowest_bytes=128 * MiB, ceiling_bytes=CEILING, precision_bytes=64 * MiB,
                min_budget_bytes=best, max_failed_bytes=max(failed) if failed else None,
                peak_rss_at_min=at.peak_rss_bytes if at else None, duration_at_min_s=13.0 if at else None,
                duration_unconstrained_s=10.0 if at else None, probes=probes,
                note="" if at else "fails even with the node's whole RAM"))
        ok = [p for p in points if p.engine == e and p.min_budget_bytes]
        fits[e] = fit_line([p.gb for p in ok], [p.min_budget_bytes for p in ok], "min_budget_bytes", "bytes")
        pred = fits[e].predict(FULL_GB)
        predicted = "ok" if pred < 64 * GiB else "oom"
        published = "ok"
        predictions.append(FrontierPrediction(engine=e, gb=FULL_GB, min_budget_bytes=pred,
                                              interval=fits[e].interval(FULL_GB), node_ram_bytes=64 * GiB,
                                              predicted=predicted, published_status=published,
                                              agrees=predicted == published))
    return FrontierSummary(frontier_id="fr1", scenario="bin-packing", scenario_record=RECORD,
                           scales=FRONTIER_SCALES, engines=["spark", "risingwave"], state=state,
                           started_at="2025-01-02T00:00:00Z", machine="a test box (8 cores, 2 GB)",
                           ram_bytes=CEILING, points=points, fits=fits, predictions=predictions,
                           notes=["hand-built frontier note"])


def _section(html: str, kind: str) -> str:
    m = re.search(rf'<section class="campaign {kind}"(.*?)</section>', html, re.S)
    assert m, kind
    return m.group(0)


@pytest.fixture
def campaigns_dir(tmp_path) -> Path:
    """results/ with a sweep and a frontier, summaries only."""
    root = tmp_path / "results"
    write_summary(root / "sw1", sweep())
    write_summary(root / "fr1", frontier())
    return root


def test_scaling_and_frontier_sections_with_their_charts(campaigns_dir):
    html = render([campaigns_dir])
    sw, fr = _section(html, "sweep"), _section(html, "frontier")
    for chart in ("scaling_time", "scaling_memory", "scaling_speedup"):
        assert re.search(rf'<figure data-chart="{chart}">\s*<svg', sw), chart
    assert re.search(r'<figure data-chart="frontier">\s*<svg', fr)
    assert html.count("<svg") == 4  # no run set: the campaign charts only
    assert html.index('class="campaign sweep"') < html.index('class="campaign frontier"')
    assert "<script" not in html and not re.search(r'(?:src|href)\s*=\s*["\'](?!#|data:)', html)
    assert "Scaling: bin-packing" in html and "Memory frontier: bin-packing" in html
    assert "hand-built sweep note" in sw and "hand-built frontier note" in fr
    # the chart legends carry the fits
    f = sweep().time_fits["risingwave"]
    assert f"risingwave: {fmt_seconds(f.fixed)} + {fmt_seconds(f.per_gb)}/GB" in sw
    assert "POOR FIT" in sw  # spark's time fit, in its legend


def test_fits_are_shown_as_formatted_and_a_poor_fit_is_flagged(campaigns_dir):
    html = render([campaigns_dir])
    s = sweep()
    good, poor = s.time_fits["risingwave"], s.time_fits["spark"]
    assert not good.poor and poor.poor and "% below the line" in poor.note
    row = table_row(html, "fits", engine="risingwave", quantity="duration_s")
    assert f"{fmt_seconds(good.per_gb)}/GB" in row and fmt_seconds(good.fixed) in row
    assert f"± {fmt_seconds(good.per_gb_se)}" in row and f"{good.r2:.3f}" in row
    assert re.search(r'data-metric="fit_per_gb" data-value="([^"]+)"', row).group(1) == repr(good.per_gb)
    assert 'data-poor="no"' in row
    row = table_row(html, "fits", engine="spark", quantity="duration_s")
    assert 'data-poor="yes"' in row and "poor fit" in row and poor.note in row
    mem = s.memory_fits["spark"]
    row = table_row(html, "fits", engine="spark", quantity="peak_rss_bytes")
    assert f"{fmt_bytes(mem.per_gb)}/GB" in row and fmt_bytes(mem.fixed) in row
    # the datagen fit, in one line
    line = re.search(r"data-datagen>(.*?)</p>", html, re.S).group(1)
    assert f"{fmt_seconds(s.datagen_fit.per_gb)}/GB" in line and "1 of 5 datasets were reused" in line


def test_the_extrapolation_is_labelled_a_model_with_its_assumptions(campaigns_dir):
    html = render([campaigns_dir])
    sw = _section(html, "sweep")
    assert "MODEL, not a measurement" in sw and "MODEL, not a measurement" in _section(html, "frontier")
    s = sweep()
    for e in s.extrapolations:
        row = table_row(sw, "extrapolation", engine=e.engine)
        assert fmt_seconds(e.this_node_s) in row and fmt_seconds(e.model_s) in row
        assert fmt_seconds(e.this_node_interval[0]) in row and fmt_seconds(e.this_node_interval[1]) in row
        assert f"{e.model_bound}-bound" in row and fmt_seconds(e.published_s) in row
        assert fmt_bytes(e.this_node_peak_rss_bytes) in row
    # the assumptions right under the table: shared ones once, per-engine ones with the engine's name
    under = re.search(r'data-table="extrapolation">.*?</table>\s*</div>\s*<p class="assume-title">.*?'
                      r"data-assumptions>(.*?)</ul>", sw, re.S)
    assert under, "the assumptions are not right under the extrapolation table"
    assumptions = under.group(1)
    for e in s.extrapolations:
        for a in e.model.assumptions:
            assert a in assumptions, a
    assert assumptions.count("fixed costs as measured here") == 1
    assert "spark: per-core throughput as measured here" in assumptions
    assert "m5.4xlarge (16 cores, storage 125 MB/s)" in sw
    # the published node's storage options: per engine, each option's model time and whether it can produce
    # the published time (its bytes alone within it)
    for e in s.extrapolations:
        for a in e.storage:
            row = table_row(sw, "storage-options", engine=e.engine, storage=a.option)
            assert fmt_seconds(a.model_s) in row and fmt_seconds(a.storage_s) in row
            assert f'data-can-produce="{"yes" if a.can_produce else "no"}"' in row
    rw = {a.option: a.can_produce for a in s.extrapolations[1].storage}
    assert rw == {"gp3-baseline": False, "gp3-max": True, "s3-sustained": True, "s3-burst": True}


def test_frontier_table_probes_and_predictions(campaigns_dir):
    html = render([campaigns_dir])
    fr = _section(html, "frontier")
    f = frontier()
    rw = next(p for p in f.points if p.engine == "risingwave" and p.scale == 0.002)
    row = table_row(fr, "frontier", engine="risingwave", scale=0.002)
    assert fmt_bytes(rw.min_budget_bytes) in row and fmt_bytes(rw.max_failed_bytes) in row
    assert fmt_bytes(rw.peak_rss_at_min) in row and "1.30×" in row  # 13 s at the budget vs 10 s free
    assert f"{len(rw.probes)} probes" in row and "<details>" in row and "smallest passing" in row
    assert row.count("<tr data-budget=") == len(rw.probes)
    failing = table_row(fr, "frontier", engine="spark", scale=0.005)
    assert "fails at the ceiling" in failing and fmt_bytes(CEILING) in failing
    # predictions: one agrees with the published outcome, one does not
    agree = table_row(fr, "predictions", engine="risingwave")
    assert 'data-agrees="yes"' in agree and "agrees" in agree and "disagrees" not in agree
    disagree = table_row(fr, "predictions", engine="spark")
    assert 'data-agrees="no"' in disagree and "disagrees" in disagree
    assert 'data-predicted="oom"' in disagree and fmt_bytes(f.predictions[0].min_budget_bytes) in disagree
    assert 'data-poor="yes"' in disagree  # two points: the line goes through them, nothing checks it
    # 64 GiB is far above every budget drawn: said so, not drawn
    assert "is off this chart" in fr and "more than 4× every budget drawn" in fr


def test_a_summary_only_directory_renders_with_its_state(tmp_path):
    d = tmp_path / "sw-killed"
    write_summary(d, sweep(state="interrupted", with_points=False))
    html = render([d])
    sw = _section(html, "sweep")
    assert 'data-state="interrupted"' in sw and "was interrupted" in sw
    assert "data-campaign-banner" in html and "no point measured yet" in sw
    # no point measured: the sweep's three charts are one line each, never empty axes
    assert html.count("<svg") == 0 and sw.count("data-no-chart") == 3
    out = tmp_path / "r.html"
    res = CliRunner().invoke(report_cmd, [str(d), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert 'data-state="interrupted"' in out.read_text()
    # the summary file itself can be given too; a running frontier says it is unfinished
    f = tmp_path / "fr-running"
    write_summary(f, frontier(state="running"))
    html = render([f / "frontier.json"])
    assert 'data-state="running"' in html and "had not finished" in html
    # summary colours: the palette in the order of the summary's engines
    assert f"background: {FALLBACK_COLORS[0]}\"></span>spark" in html
    assert f"background: {FALLBACK_COLORS[1]}\"></span>risingwave" in html


def test_campaigns_with_their_run_sets(tmp_path):
    """A sweep directory holding two per-scale run directories: the run sets follow the campaign sections,
    linked both ways, in the results' colours; export still reads results only."""
    d = tmp_path / "sw1"
    write_summary(d, sweep())
    for s in (0.001, 0.002):
        for e in ("spark", "risingwave"):
            save(d, make_result(e, 0, run_id=f"scale-{s:g}", scale=s))
    html = render([d])
    # no samples in hand-built runs: each set's two timelines are one line each, never an empty chart
    assert html.count("<svg") == 3 + 2 * (len(CHARTS) - 2) and html.count("data-no-chart") == 2 * 2
    assert html.index('class="campaign sweep"') < html.index('class="set"')
    rows = table_row(html, "sweep-points", engine="spark", scale=0.001)
    assert "1.50 s" in rows and "0.80 s" in rows  # setup / verify
    anchor = re.search(r'<a href="#(set-\d+)">run scale-0.001</a>', rows).group(1)
    assert f'id="{anchor}"' in html
    overview = re.search(r'data-table="overview">(.*?)</table>', html, re.S).group(1)
    assert "<th>Part of</th>" in overview and overview.count('<a href="#sweep-1">sweep sw1</a>') == 2
    assert html.count('· part of <a href="#sweep-1">sweep sw1</a>') == 2
    assert f"background: {COLORS['spark']}\"></span>spark" in _section(html, "sweep")
    assert len(frame([d])) == 4


def test_a_directory_without_summary_or_result_is_still_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(report_cmd, [str(tmp_path / "empty")])
    assert res.exit_code == 2 and res.output.startswith("error: no results found")


def test_frontier_probes_link_to_their_run_sets(tmp_path):
    """A probe names its result file: its row links to that run set, and the run set back to the frontier."""
    d = tmp_path / "fr1"
    f = frontier()
    point = next(p for p in f.points if p.engine == "risingwave" and p.scale == 0.001)
    probe = next(p for p in point.probes if p.budget_bytes == point.min_budget_bytes)
    run_id = f"risingwave-s0.001-{probe.budget_bytes // MiB}m"
    path = save(d, make_result("risingwave", 0, run_id=run_id, memory_budget_bytes=probe.budget_bytes))
    probe.result_file = str(path.relative_to(d))
    write_summary(d, f)
    html = render([d])
    row = table_row(html, "frontier", engine="risingwave", scale=0.001)
    anchor = re.search(rf'<tr data-budget="{probe.budget_bytes}".*?<a href="#(set-\d+)">run {run_id}</a>', row,
                       re.S).group(1)
    assert f'<section class="set" id="{anchor}"' in html
    assert '· part of <a href="#frontier-1">frontier fr1</a>' in html
