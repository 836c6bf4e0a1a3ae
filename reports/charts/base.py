"""What every chart shares: the memo that draws a chart once per distinct arguments (`chart`), the house style and
colours, the SVG a figure becomes (ids under one prefix, the width left to CSS) and the axis ticks.

Each chart function returns an SVG string ready to be placed in the HTML: no files, no external resources.  Element
ids inside each SVG are prefixed with a unique chart id, so several SVGs can live in one document without clashing.
A chart is a pure function of its arguments: one drawn again with the same arguments in the same process is the
drawing kept (`chart`), under a new id prefix.  Engine colours come from the results (`RunResult.engine_color`,
resolved by reports.model.colors.assign_colors): every chart takes them as a dict engine -> colour.
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import pickle
import re
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt

from bench.core.fmt import fmt_ratio, fmt_usd
from bench.core.fmt import nbytes as _fmt_bytes
from bench.core.fmt import seconds as _fmt_seconds
from bench.core.units import GiB

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType


INK = "#1F2933"
MUTED = "#7B8794"
GRID = "#E4E7EB"
BAD = "#B42318"
SETUP = "#CBD2D9"

_counter = itertools.count(1)
ID_SLOT = "cQZXQ-"  # the id prefix of a drawn chart until `chart` gives it its unique one
MEMO_SIZE = 128
_memo: OrderedDict[bytes, str] = OrderedDict()
_depth = 0


def chart(fn: Callable[..., str]) -> Callable[..., str]:
    """A public chart: drawn once per distinct arguments in a process (matplotlib's layout and SVG writing are
    most of a report's time, and a report rendered again draws the same charts), every returned copy with
    its own id prefix.  Arguments that cannot be pickled are drawn every time."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        global _depth
        try:
            key: bytes | None = hashlib.sha256(pickle.dumps((fn.__qualname__, args, kwargs), protocol=5)).digest()
        except Exception:  # noqa: BLE001 - a lambda or an open handle among the arguments: no memo
            key = None
        text = _memo.get(key) if key is not None else None
        if text is None:
            _depth += 1
            try:
                text = fn(*args, **kwargs)
            finally:
                _depth -= 1
            if key is not None:
                _memo[key] = text
                while len(_memo) > MEMO_SIZE:
                    _memo.popitem(last=False)
        elif key is not None:
            _memo.move_to_end(key)
        # a chart drawn inside another keeps the slot: the outer one is memoized with it, then prefixed
        return text if _depth else text.replace(ID_SLOT, f"c{next(_counter)}-")
    return wrapper

STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",  # text stays text: selectable, crisp in print, small
    "svg.hashsalt": "bench-report",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],  # ships with matplotlib: same metrics everywhere
    "font.size": 9,
    "axes.edgecolor": "#9AA5B1",
    "axes.labelcolor": INK,
    "axes.titlesize": 9.5,
    "axes.titleweight": "bold",
    "axes.titlecolor": INK,
    "axes.titlelocation": "left",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "xtick.color": "#52606D",
    "ytick.color": "#52606D",
    "legend.frameon": False,
    "legend.fontsize": 8,
    "figure.dpi": 100,
}


def no_chart(text: str) -> str:
    """What a chart with nothing to draw is instead of an empty axes: one line saying what is missing."""
    from markupsafe import escape

    return f'<p class="no-chart" data-no-chart>{escape(text)}</p>'


def color_of(colors: dict[str, str], engine: str) -> str:
    return colors.get(engine) or MUTED


def tint(color: str, amount: float) -> str:
    """`color` mixed with white: 0 = itself, 1 = white."""
    c = color.lstrip("#")
    rgb = [int(c[i:i + 2], 16) for i in (0, 2, 4)] if len(c) == 6 else [123, 135, 148]
    return "#" + "".join(f"{round(v + (255 - v) * amount):02X}" for v in rgb)


def to_svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})  # fixed size: every chart at one scale
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # drop the XML prolog and DOCTYPE: it is inline SVG
    prefix = ID_SLOT
    ids = set(re.findall(r'\bid="([^"]+)"', text))
    for old in sorted(ids, key=len, reverse=True):
        new = prefix + old
        text = text.replace(f'id="{old}"', f'id="{new}"')
        text = text.replace(f"url(#{old})", f"url(#{new})")
        text = text.replace(f'href="#{old}"', f'href="#{new}"')
    # scale with the page: keep the viewBox, let CSS decide the width
    text = re.sub(r'<svg([^>]*?) width="([\d.]+)pt" height="([\d.]+)pt"',
                  lambda m: f'<svg{m.group(1)} width="100%" data-w="{m.group(2)}" data-h="{m.group(3)}"',
                  text, count=1)
    return text


def byte_locator(top: float):
    """Ticks at round numbers of the unit the axis is labelled in (MiB or GiB), not at 286.1 MiB."""
    from matplotlib.ticker import MaxNLocator as _M

    unit = GiB if top >= GiB else 1024**2 if top >= 1024**2 else 1024

    class _Loc(_M):
        def tick_values(self, vmin, vmax):
            return [v * unit for v in super().tick_values(vmin / unit, vmax / unit)]

    return _Loc(5, steps=[1, 2, 2.5, 5, 10])


def tick_label(v: float, value_fmt) -> str:
    """Axis ticks: the value format's unit with as few digits as the tick needs (8 s, not 8.00 s)."""
    if not v:
        return "0"
    if value_fmt is _fmt_bytes:
        return _fmt_bytes(v)
    if value_fmt is _fmt_seconds:
        return f"{v:,g} s"
    if value_fmt is fmt_usd:
        return f"${v:.8f}".rstrip("0").rstrip(".")
    if value_fmt is fmt_ratio:
        return f"{v:g}×"
    return f"{v:g}"
