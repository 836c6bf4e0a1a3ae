"""How the report presents what it has (fast, no browser): a chart without data is one line saying so, sizes
in human units (stored records too), no Python repr in the environment, the headline engine first, and the
conformance report's header and matrix."""

from __future__ import annotations

import re
from pathlib import Path

from tests.reports.hand_built import make_result, render, write_results


def _figure(html: str, name: str) -> str:
    m = re.search(rf'<figure data-chart="{name}"[^>]*>(.*?)</figure>', html, re.S)
    assert m, name
    return m.group(1)


def test_timelines_without_samples_are_one_line_not_an_empty_chart(tmp_path):
    run_dir = write_results(tmp_path, [make_result("spark", 0, duration=20.0), make_result("risingwave", 0)])
    html = render([run_dir])
    for name, title in (("memory_timeline", "Memory over time"), ("cpu_timeline", "CPU over time")):
        fig = _figure(html, name)
        assert "<svg" not in fig and "data-no-chart" in fig, name
        assert f"{title} (" in fig and "no samples recorded for any run" in fig, fig
    assert "<svg" in _figure(html, "duration")  # the charts with data are still drawn


def test_bar_charts_without_any_value_are_one_line(tmp_path):
    """No engine with a verified run: the time, cost, phases and cores charts have nothing to draw; the memory
    chart still draws the failed runs' peaks (a cross each)."""
    run_dir = write_results(tmp_path, [make_result("spark", 0, "oom"), make_result("risingwave", 0, "failed")])
    html = render([run_dir])
    for name in ("duration", "cost", "phases", "cores"):
        fig = _figure(html, name)
        assert "<svg" not in fig and "nothing to draw" in fig and "spark: no verified run" in fig, (name, fig)
    assert "<svg" in _figure(html, "memory")


def test_charts_with_nothing_to_draw_return_a_line():
    from reports.charts.campaigns import speedup_scaling_chart
    from reports.charts.streaming import sink_chart
    from reports.charts.timelines import memory_timeline

    for svg in (speedup_scaling_chart([("spark", "risingwave", [])], {}),
                sink_chart({"spark": []}, {}, {}),
                memory_timeline([("spark", "rep 0", True, True, None)], {}, None)):
        assert svg.startswith('<p class="no-chart"') and "<svg" not in svg, svg


REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"
# a stored run whose results hold the old raw byte counts: the cgroup limit, an advisory's total-files-size, and a
# warehouse recorded as a mapping
OLD_BYTES = REFERENCE / "20261129-001643-deletes-high-filescale"


def test_the_memory_limit_is_written_in_human_units(tmp_path, monkeypatch):
    from bench.telemetry import limits

    monkeypatch.setattr(limits, "_own_cgroup", lambda: ("v2", tmp_path))
    lim = limits.Limiter(25276502016)
    try:
        assert lim.description == "cgroup v2 memory limit 23.5 GiB on the engine's process tree (kernel OOM killer)"
    finally:
        lim.release(wait_s=0)


def test_stored_records_state_sizes_for_people():
    """Every kept record's sentences give sizes for people as stored (the report rewrites none): a memory limit in
    GiB, a misstated total-files-size with its exact difference; counts stay counts."""
    from reports.model.loading import load_runs

    raw = (OLD_BYTES / "deletes-high--risingwave--rep0.json").read_text()
    assert "memory limit 23.5 GiB" in raw and "total-files-size 122 MiB (manifests: 122 MiB, 117 KiB more)" in raw
    assert "total-equality-deletes 0 (manifests: 9649)" in raw
    raw_sizes = re.compile(r"memory limit \d+ bytes|total-files-size \d+ \(manifests: \d+\)")
    assert not [p.name for p in REFERENCE.rglob("*--rep*.json") if raw_sizes.search(p.read_text())]
    runs = {lr.r.engine: lr.r for lr in load_runs([OLD_BYTES]).runs}
    messages = " ".join(c.message for c in runs["risingwave"].verification.checks)
    assert "total-files-size 122 MiB (manifests: 122 MiB, 117 KiB more)" in messages


def test_no_raw_byte_count_and_no_python_repr_in_a_stored_runs_report():
    html = render([OLD_BYTES])
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<svg.*?</svg>|<style>.*?</style>", "", html, flags=re.S))
    assert "memory limit 23.5 GiB on the engine's process tree" in text
    assert not re.findall(r".{30}(?:\d{9,} bytes|size \d{9,}|manifests: \d{9,}|limit \d{9,}).{10}", text)
    env = html[html.index("<h3>Environment</h3>"):]
    env = env[:env.index("</section>")]
    assert "{'" not in env and "['" not in env and "{&#39;" not in env and "[&#39;" not in env
    assert re.search(r"<td data-warehouse>storage: local, warehouse: /\S+</td>", env), env


def test_the_headline_engine_has_the_first_card(tmp_path):
    """spark is the baseline (named first), risingwave the fastest: the headline is risingwave against spark, so
    risingwave's card leads, spark's follows, then the others; the tables keep their order."""
    runs = [make_result(e, rep, duration=d) for rep in (0, 1) for e, d in
            (("spark", 30.0), ("repark", 60.0), ("risingwave", 3.0))]
    html = render([write_results(tmp_path, runs, engines=("spark", "repark", "risingwave"))])
    head = html[html.index("data-headline"):html.index("data-summary")]
    assert "risingwave faster than spark" in head
    assert re.findall(r'class="kpi" data-engine="([^"]+)"', head) == ["risingwave", "spark", "repark"]
    table = html[html.index('data-table="engines"'):]
    assert re.findall(r'<tr data-engine="([^"]+)"', table[:table.index("</table>")]) == [
        "repark", "spark", "risingwave"]


def test_the_conformance_report_says_what_it_is_from_and_keeps_its_rows_short():
    import json

    src = REFERENCE / "20261203-conformance"
    rec = json.loads((src / "conformance.json").read_text())
    html = render([src])
    meta = re.search(r'<p class="meta">(.*?)</p>', html, re.S).group(1)
    assert "0 result sets" not in meta and "(0 runs)" not in meta, meta
    n_cases, n_engines, n_cells = len(rec["cases"]), len(rec["engines"]), len(rec["cells"])
    assert f"the conformance record of run {rec['run_id']} ({n_cases} cases × {n_engines} engines: {n_cells} cells)" \
        in meta, meta
    writers = re.findall(r'<td class="sub writer" title="([^"]*)" data-writer>([^<]*)</td>', html)
    assert len(writers) == n_cases
    longest = max(len(w["written_by"]) for w in rec["cases"])
    assert longest > 100  # the stored text that made each row eight lines tall
    for full, shown in writers:  # the whole text one hover away, the cell its first clause
        assert len(shown) <= 64 and full.startswith(shown.removesuffix(" …")), (full, shown)
    assert re.search(r'data-table="conformance"\] \.writer \{ min-width: \d+em', html)
