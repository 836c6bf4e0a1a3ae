"""How the report presents what it has (fast, no browser): a chart without data is one line saying so, sizes
in human units (stored records too), no Python repr in the environment, the headline engine first, and the
conformance report's header and matrix."""

from __future__ import annotations

import re

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
    from reports import charts

    for svg in (charts.speedup_scaling_chart([("spark", "risingwave", [])], {}),
                charts.sink_chart({"spark": []}, {}, {}),
                charts.memory_timeline([("spark", "rep 0", True, True, None)], {}, None)):
        assert svg.startswith('<p class="no-chart"') and "<svg" not in svg, svg
