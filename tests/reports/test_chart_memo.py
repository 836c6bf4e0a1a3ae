"""A chart drawn again with the same arguments is the same drawing under its own ids; other arguments draw anew."""

import re

from reports.charts.bars import duration_chart
from reports.charts.base import ID_SLOT, _memo
from reports.charts.timelines import memory_timeline

ROWS = [("spark", 14.8, 14.1, 15.3, [14.1, 14.8, 15.3]), ("risingwave", 3.9, 3.7, 4.1, [3.7, 3.9, 4.1])]
COLORS = {"spark": "#E4572E", "risingwave": "#17BEBB"}


def _ids(svg: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', svg))


def test_the_same_chart_twice_is_one_drawing_with_ids_of_its_own():
    _memo.clear()
    a = duration_chart(ROWS, COLORS)
    b = duration_chart(ROWS, COLORS)
    assert len(_memo) == 1 and ID_SLOT not in a + b
    assert _ids(a) and not _ids(a) & _ids(b)  # two copies can live in one document
    prefix = re.compile(r"\bc\d+-")
    assert prefix.sub("", a) == prefix.sub("", b)
    other = duration_chart([(*ROWS[0][:1], 20.0, 19.0, 21.0, [19.0, 20.0, 21.0]), ROWS[1]], COLORS)
    assert len(_memo) == 2 and prefix.sub("", other) != prefix.sub("", a)


def test_a_chart_drawn_inside_another_gets_one_prefix():
    _memo.clear()
    import pandas as pd

    df = pd.DataFrame({"t_s": [0.0, 0.5, 1.0], "rss_bytes": [1 << 30, 3 << 29, 2 << 30]})
    series = [("spark", "spark rep0", True, True, df)]
    svg = memory_timeline(series, COLORS)  # drawn by timeline_chart, itself a memoized chart
    again = memory_timeline(series, COLORS)
    assert ID_SLOT not in svg + again
    assert len({m for m in re.findall(r'\bid="(c\d+)-', svg)}) == 1
    assert not _ids(svg) & _ids(again)
