"""Charts as inline SVG (matplotlib, Agg-free SVG backend): no files, no external resources.

Each function returns an SVG string ready to be placed in the HTML.  Element ids inside each SVG are
prefixed with a unique chart id, so several SVGs can live in one document without clashing.  A chart is a pure
function of its arguments: one drawn again with the same arguments in the same process is the drawing kept
(`chart`), under a new id prefix.  Engine
colours come from the results (`RunResult.engine_color`, resolved by reports.model.assign_colors):
every chart takes them as a dict engine -> colour.
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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter, NullLocator  # noqa: E402

from bench.core.fmt import GiB, fmt_bytes, fmt_ratio, fmt_seconds, fmt_usd  # noqa: E402
from bench.core.fmt import nbytes as _fmt_bytes  # noqa: E402
from bench.core.fmt import seconds as _fmt_seconds  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["fmt_bytes", "fmt_seconds", "fmt_usd"]

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


def _color(colors: dict[str, str], engine: str) -> str:
    return colors.get(engine) or MUTED


def _tint(color: str, amount: float) -> str:
    """`color` mixed with white: 0 = itself, 1 = white."""
    c = color.lstrip("#")
    rgb = [int(c[i:i + 2], 16) for i in (0, 2, 4)] if len(c) == 6 else [123, 135, 148]
    return "#" + "".join(f"{round(v + (255 - v) * amount):02X}" for v in rgb)


def _svg(fig) -> str:
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


def _byte_locator(top: float):
    """Ticks at round numbers of the unit the axis is labelled in (MiB or GiB), not at 286.1 MiB."""
    from matplotlib.ticker import MaxNLocator as _M

    unit = GiB if top >= GiB else 1024**2 if top >= 1024**2 else 1024

    class _Loc(_M):
        def tick_values(self, vmin, vmax):
            return [v * unit for v in super().tick_values(vmin / unit, vmax / unit)]

    return _Loc(5, steps=[1, 2, 2.5, 5, 10])


def _tick(v: float, value_fmt) -> str:
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


def _hbar(rows, value_fmt, title, xlabel, colors, *, marker_rows=None, line=None, line_label=None,
          missing_text=None, excluded_points=None):
    """Horizontal bars with min-max whiskers.  rows: [(engine, median, min, max, points)] over verified
    runs; excluded_points: {engine: [values]} of runs that do not count, drawn as red crosses."""
    excluded_points = excluded_points or {}
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 0.95 + 0.48 * max(1, len(rows))), layout="constrained")
        labels = [r[0] for r in rows]
        ys = list(range(len(rows)))[::-1]
        top = 0.0
        crosses = False
        markers = {eng: val for eng, val in marker_rows or [] if val}
        for y, (eng, med, lo, hi, pts) in zip(ys, rows):
            color = _color(colors, eng)
            mine = [p for p in excluded_points.get(eng) or [] if p]
            for p in mine:
                ax.plot(p, y, marker="x", ms=6, mew=1.6, color=BAD, zorder=5, ls="none")
                top = max(top, p)
                crosses = True
            if med is None:  # above the row when crosses are on it, so the two never overlap
                ax.text(0, y + (0.1 if mine else 0), "  " + (missing_text(eng) if missing_text else "no data"),
                        va="bottom" if mine else "center", ha="left", color=BAD, fontsize=8.5, fontweight="bold")
                continue
            ax.barh(y, med, height=0.56, color=color, alpha=0.9, zorder=2)
            if lo is not None and hi is not None and hi > lo:
                ax.errorbar(med, y, xerr=[[med - lo], [hi - med]], fmt="none", ecolor=INK,
                            elinewidth=1.1, capsize=4, capthick=1.1, zorder=3)
            for p in pts or []:
                ax.plot(p, y, marker="o", ms=3.2, mfc="white", mec=INK, mew=0.8, zorder=4, ls="none")
            right = max(hi or med, med, *(pts or [med]), markers.get(eng, med))  # the label clears the marker
            top = max(top, right)
            ax.annotate(value_fmt(med), (right, y), xytext=(6, 0), textcoords="offset points",
                        va="center", ha="left", color=INK, fontsize=8.5)
        if marker_rows:
            for y, (_eng, val) in zip(ys, marker_rows):
                if val:
                    ax.plot(val, y, marker="|", ms=14, mew=2, color=INK, zorder=5, ls="none")
                    top = max(top, val)
        if line is not None and (top == 0 or line <= 4 * top):
            ax.axvline(line, color=BAD, ls="--", lw=1.2, zorder=1)
            ax.text(line, ys[0] + 0.45, f" {line_label}", color=BAD, fontsize=8, va="bottom")
            top = max(top, line)
        ax.set_yticks(ys, labels)
        ax.set_xlim(0, (top or 1) * 1.28)
        ax.set_ylim(-0.6, len(rows) - 0.4 + (0.35 if line is not None else 0))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _tick(v, value_fmt)))
        ax.xaxis.set_major_locator(_byte_locator(top) if value_fmt is _fmt_bytes else MaxNLocator(5))
        ax.grid(axis="x", color=GRID, lw=0.8, zorder=0)
        ax.tick_params(axis="y", length=0, labelsize=9)
        ax.set_title(title)
        if xlabel or crosses:
            ax.set_xlabel(" · ".join(x for x in (xlabel, "× = a run that does not count (failed, oom, "
                                                 "timeout or not verified)" if crosses else "") if x),
                          color=MUTED, fontsize=8)
        return _svg(fig)


@chart
def duration_chart(rows, colors, missing_text=None) -> str:
    return _hbar(rows, _fmt_seconds, "Compaction time (verified runs: median, min–max, dots = reps)", None,
                 colors, missing_text=missing_text)


@chart
def cost_chart(rows, colors, instance_label: str, missing_text=None) -> str:
    return _hbar(rows, fmt_usd, f"Cost per compaction at {instance_label} on-demand (verified runs)", None,
                 colors, missing_text=missing_text)


@chart
def floor_chart(rows, colors, floor: str, paired: bool = True) -> str:
    """Each engine's compaction time as a multiple of the floor's (an engine that commits nothing).
    rows: [(engine, multiple, min, max, per-pair multiples)], the floor itself at 1×; paired: the range
    is over paired reps (else over every run of the engine against every run of the floor)."""
    spread = "dots = paired reps" if paired else "other runs: not paired"
    return _hbar(rows, fmt_ratio, f"Compaction time ÷ {floor}'s (median ÷ median; {spread})",
                 None, colors, line=1.0, line_label=f"{floor} = 1×",
                 missing_text=lambda _e: "no multiple: needs verified runs of both")


@chart
def memory_chart(rows, hwm_rows, colors, budget: int | None, excluded_points=None, missing_text=None) -> str:
    label = f"budget {_fmt_bytes(budget)}" if budget else None
    return _hbar(rows, _fmt_bytes, "Peak memory per engine (process-tree RSS; | = largest VmHWM)", None,
                 colors, marker_rows=hwm_rows, line=budget, line_label=label, excluded_points=excluded_points,
                 missing_text=missing_text)


@chart
def phases_chart(rows, colors, missing_text=None) -> str:
    """Stacked bars, one per engine: its setup (hatched grey: session start-up and catalog warm-up,
    excluded from the compaction time), then the median seconds of each of its compaction phases.
    rows: [(engine, setup_s or None, [(phase, median_s)])]; an engine with no phases at all gets
    missing_text(engine)."""
    with plt.rc_context(STYLE):
        n = max(1, len(rows))
        legend_lines = 1 + sum(1 for r in rows if r[2])
        fig, ax = plt.subplots(figsize=(9.0, 1.0 + 0.5 * n + 0.17 * legend_lines), layout="constrained")
        ys = list(range(len(rows)))[::-1]
        top = 0.0
        setup_handle = None
        legend_rows = []  # one row of legend entries per engine
        for y, (eng, setup, phases) in zip(ys, rows):
            color = _color(colors, eng)
            if setup is None and not phases:
                ax.text(0, y, "  " + (missing_text(eng) if missing_text else "no phases recorded"), va="center",
                        ha="left", color=BAD, fontsize=8.5, fontweight="bold")
                continue
            left = 0.0
            if setup:
                h = ax.barh(y, setup, left=0, height=0.56, color=SETUP, hatch="////", edgecolor="white",
                            linewidth=0.6, zorder=2, label="setup (excluded)")
                setup_handle = setup_handle or h
                left = setup
            k = len(phases)
            entries = []
            for i, (name, secs) in enumerate(phases):
                if not secs:
                    continue
                entries.append(ax.barh(y, secs, left=left, height=0.56, color=_tint(color, 0.62 * i / max(1, k - 1)),
                                       edgecolor="white", linewidth=0.8, zorder=2, label=f"{eng}: {name}"))
                left += secs
            if entries:
                legend_rows.append(entries)
            top = max(top, left)
            total = sum(s for _, s in phases if s)
            ax.annotate(f"{_fmt_seconds(total)}" + (f" + {_fmt_seconds(setup)} setup" if setup else ""),
                        (left, y), xytext=(6, 0), textcoords="offset points", va="center", ha="left",
                        color=INK, fontsize=8.5)
        # phase names inside the segments wide enough to hold them
        for y, (_eng, setup, phases) in zip(ys, rows):
            left = setup or 0.0
            for i, (name, secs) in enumerate(phases):
                if secs and top and secs / (top * 1.3) > 0.0078 * (len(name) + 1):
                    light = 0.62 * i / max(1, len(phases) - 1) > 0.35
                    ax.text(left + secs / 2, y, name, ha="center", va="center", fontsize=7.5,
                            color=INK if light else "white", zorder=4)
                left += secs or 0
        ax.set_yticks(ys, [r[0] for r in rows])
        ax.set_xlim(0, (top or 1) * 1.3)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _tick(v, _fmt_seconds)))
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.grid(axis="x", color=GRID, lw=0.8, zorder=0)
        ax.tick_params(axis="y", length=0, labelsize=9)
        ax.set_title("Where the time goes (verified runs: median seconds of each phase)")
        if setup_handle is not None:
            legend_rows.insert(0, [setup_handle])
        if legend_rows:  # a grid read row by row: matplotlib fills legends column by column
            from matplotlib.patches import Patch

            ncols = max(len(r) for r in legend_rows)
            grid = [r + [Patch(visible=False, label=" ")] * (ncols - len(r)) for r in legend_rows]
            handles = [grid[r][c] for c in range(ncols) for r in range(len(grid))]
            fig.legend(handles=handles, labels=[h.get_label() for h in handles], loc="outside lower left",
                       ncols=ncols, fontsize=7.5, handlelength=1.4, columnspacing=1.4)
        return _svg(fig)


@chart
def timeline_chart(series, colors, *, column: str, title: str, ylabel: str, fmt, hline=None,
                   hline_label=None, smooth: int = 1) -> str:
    """series: [(engine, label, highlight, counts, DataFrame of samples)] overlaid on one time axis;
    runs that do not count (failed, oom, not verified) are dashed."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 2.6), layout="constrained")
        seen = set()
        top = 0.0
        for eng, _label, highlight, counts, df in series:
            if df is None or df.empty or column not in df:
                continue
            y = df[column].astype(float)
            if smooth > 1:
                y = y.rolling(smooth, min_periods=1, center=True).mean()
            y = y.fillna(0.0)
            top = max(top, float(y.max()))
            ax.plot(df["t_s"], y, color=_color(colors, eng), lw=1.6 if highlight else 0.9,
                    alpha=1.0 if highlight else 0.45, label=eng if eng not in seen else None,
                    ls="-" if counts else (0, (4, 2)), zorder=3 if highlight else 2)
            seen.add(eng)
        if hline:
            ax.axhline(hline, color=MUTED, ls=":", lw=1)
            ax.text(0.005, hline, f" {hline_label}", color=MUTED, fontsize=7.5, ha="left", va="bottom",
                    transform=ax.get_yaxis_transform())
            top = max(top, hline)
        ax.set_ylim(0, (top or 1) * 1.12)
        ax.set_xlim(left=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v)))
        ax.yaxis.set_major_locator(_byte_locator(top) if column == "rss_bytes" else MaxNLocator(5))
        ax.grid(color=GRID, lw=0.8, zorder=0)
        ax.set_xlabel("seconds since the engine process started", color=MUTED)
        ax.set_ylabel(ylabel, color=MUTED)
        ax.set_title(title)
        if seen:  # in the title's row, right-aligned: never over the data
            ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=len(seen), borderaxespad=0.2,
                      handlelength=1.6)
        else:
            ax.text(0.5, 0.5, "no samples recorded", transform=ax.transAxes, ha="center", color=MUTED)
        return _svg(fig)


@chart
def cores_chart(rows, p95_rows, colors, cores: int | None, missing_text=None) -> str:
    return _hbar(rows, lambda v: f"{v:.2f}", "Cores busy per engine (mean over the run; | = p95)", None,
                 colors, marker_rows=p95_rows, line=cores,
                 line_label=f"{cores} cores on this node" if cores else None, missing_text=missing_text)


@chart
def memory_timeline(series, colors, budget=None) -> str:
    peak = max((float(df["rss_bytes"].max()) for *_, df in series
                if df is not None and not df.empty and "rss_bytes" in df), default=0)
    show_budget = budget if budget and series and budget <= 4 * peak else None
    return timeline_chart(series, colors, column="rss_bytes", title="Memory over time (process-tree RSS)",
                          ylabel="RSS", fmt=lambda v: _fmt_bytes(v) if v else "0", hline=show_budget,
                          hline_label="budget")


@chart
def cpu_timeline(series, colors, cores: int | None) -> str:
    return timeline_chart(series, colors, column="cores", title="CPU over time (cores, 0.5 s mean)", ylabel="cores",
                          fmt=lambda v: f"{v:g}", hline=cores,
                          hline_label=f"{cores} cores on this node" if cores else None, smooth=5)


# --- campaigns: measurements against input size -------------------------------------------------------
def _usable(fit) -> bool:
    return fit is not None and fit.n >= 2 and len(set(fit.xs)) >= 2


def _draw_fit(ax, fit, color: str, x_right: float) -> float:
    """The fitted line: solid over the measured range, dashed from 0 to it and beyond it to `x_right`
    (a poor fit is drawn faint).  Returns the highest value drawn."""
    lo, hi = min(fit.xs), max(fit.xs)
    alpha = 0.45 if fit.poor else 0.9
    ax.plot([lo, hi], [fit.predict(lo), fit.predict(hi)], color=color, lw=1.5, alpha=alpha, zorder=2,
            solid_capstyle="butt")
    for a, b in ((0.0, lo), (hi, x_right)):
        if b > a:
            ax.plot([a, b], [fit.predict(a), fit.predict(b)], color=color, lw=1.1, alpha=alpha * 0.8,
                    ls=(0, (4, 3)), zorder=2)
    return max(fit.predict(0.0), fit.predict(x_right))


def _gb_tick(v: float) -> str:
    return "0" if not v else f"{v:g} GB" if v >= 1 else f"{v:.3g} GB"


@dataclass(frozen=True)
class XAxis:
    """The x of a campaign's chart: the input size (linear, from 0) or the partition count (log 2, a tick
    at each measured count)."""

    label: str
    tick: Callable[[float], str]
    log: bool = False


GB_AXIS = XAxis("input, GB uncompressed (logical)", _gb_tick)
PARTITIONS_AXIS = XAxis("partitions in the table", lambda v: f"{v:,.0f}", log=True)


def _finish_gb_axes(ax, top: float, byte_axis: bool, value_fmt, x_right: float, axis: XAxis = GB_AXIS,
                    xs=()) -> None:
    value_fmt = _fmt_bytes if byte_axis else {fmt_seconds: _fmt_seconds}.get(value_fmt, value_fmt)
    if axis.log:
        ax.set_xscale("log", base=2)
        ax.set_xlim(min(xs, default=1) / 1.5, max(xs, default=1) * 1.5)
        ax.xaxis.set_major_locator(FixedLocator(sorted(set(xs))))
        ax.xaxis.set_minor_locator(NullLocator())
    else:
        ax.set_xlim(0, x_right)
        ax.xaxis.set_major_locator(MaxNLocator(6))
    ax.set_ylim(0, (top or 1) * 1.18)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: axis.tick(v)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _tick(v, value_fmt)))
    ax.yaxis.set_major_locator(_byte_locator(top) if byte_axis else MaxNLocator(5))
    ax.grid(color=GRID, lw=0.8, zorder=0)
    ax.set_xlabel(axis.label, color=MUTED, fontsize=8)


@chart
def scaling_chart(series, colors, *, title: str, value_fmt, byte_axis: bool = False, axis: XAxis = GB_AXIS) -> str:
    """One quantity against input size (or `axis`), per engine.  series: [(engine, [(gb, median, min, max)],
    fit or None)] (median None: no verified run at that size, drawn as a red × on the axis); points are medians with
    min–max whiskers, the fit's line is solid over the measured sizes and dashed outside them."""
    from matplotlib.lines import Line2D

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 3.2), layout="constrained")
        gbs = [gb for _, pts, _ in series for gb, *_ in pts]
        x_right = (max(gbs) if gbs else 1.0) * 1.12 or 1.0
        top = 0.0
        handles, missing = [], False
        for eng, pts, fit in series:
            color = _color(colors, eng)
            good = [(g, m, lo, hi) for g, m, lo, hi in pts if m is not None]
            if good:
                g = [p[0] for p in good]
                m = [p[1] for p in good]
                yerr = [[max(p[1] - (p[2] if p[2] is not None else p[1]), 0) for p in good],
                        [max((p[3] if p[3] is not None else p[1]) - p[1], 0) for p in good]]
                ax.errorbar(g, m, yerr=yerr, fmt="o", ms=5, color=color, mec="white", mew=0.8, ecolor=color,
                            elinewidth=1.1, capsize=3, capthick=1.1, zorder=4)
                top = max(top, *(p[3] if p[3] is not None else p[1] for p in good))
            for g, m, *_ in pts:
                if m is None:
                    ax.plot(g, 0, marker="x", ms=7, mew=1.8, color=BAD, zorder=5, ls="none", clip_on=False)
                    missing = True
            label = eng
            if _usable(fit):
                top = max(top, _draw_fit(ax, fit, color, x_right))
                label = (f"{eng}: {value_fmt(fit.fixed)} + {value_fmt(fit.per_gb)}/GB"
                         + (" — POOR FIT" if fit.poor else ""))
            handles.append(Line2D([], [], color=color, marker="o", ms=5, mec="white", lw=1.5, label=label))
        if missing:
            handles.append(Line2D([], [], color=BAD, marker="x", ls="none", mew=1.8,
                                  label="no verified run at this size" if not axis.log else "no verified run here"))
        _finish_gb_axes(ax, top, byte_axis, value_fmt, x_right, axis, gbs)
        ax.set_title(title)
        if handles:
            ax.legend(handles=handles, loc="upper left", fontsize=7.5, handlelength=2.2)
        return _svg(fig)


@chart
def speedup_scaling_chart(series, colors) -> str:
    """The speedup against input size.  series: [(ref, other, [(gb, median, min, max)])] with the ratio
    oriented as other's time ÷ ref's time (above 1: ref is faster), min–max over verified pairs."""
    from matplotlib.lines import Line2D

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 3.2), layout="constrained")
        gbs = [gb for *_, pts in series for gb, *_ in pts]
        x_right = (max(gbs) if gbs else 1.0) * 1.12 or 1.0
        top, handles = 1.0, []
        for ref, other, pts in series:
            color = _color(colors, ref)
            pts = sorted(pts)
            g = [p[0] for p in pts]
            m = [p[1] for p in pts]
            yerr = [[max(p[1] - p[2], 0) for p in pts], [max(p[3] - p[1], 0) for p in pts]]
            ax.plot(g, m, color=color, lw=1.0, alpha=0.5, zorder=2)
            ax.errorbar(g, m, yerr=yerr, fmt="o", ms=5, color=color, mec="white", mew=0.8, ecolor=color,
                        elinewidth=1.1, capsize=3, capthick=1.1, zorder=4)
            for x, y, *_ in pts:
                ax.annotate(fmt_ratio(y), (x, y), xytext=(5, 4),
                            textcoords="offset points", fontsize=7.5, color=INK)
            top = max(top, *(p[3] for p in pts)) if pts else top
            handles.append(Line2D([], [], color=color, marker="o", ms=5, mec="white",
                                  label=f"{other} time ÷ {ref} time"))
        ax.axhline(1.0, color=MUTED, ls=":", lw=1, zorder=1)
        ax.text(0.995, 1.0, "equal ", color=MUTED, fontsize=7.5, ha="right", va="bottom",
                transform=ax.get_yaxis_transform())
        _finish_gb_axes(ax, top, False, lambda v: f"{v:g}×", x_right)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.set_title("Speedup against input size (verified pairs: median, min–max)")
        if handles:
            ax.legend(handles=handles, loc="upper left", fontsize=7.5)
        else:
            ax.text(0.5, 0.5, "no size with a verified pair", transform=ax.transAxes, ha="center", color=MUTED)
        return _svg(fig)


@chart
def frontier_chart(series, colors, node_ram: int | None, node_label: str = "", axis: XAxis = GB_AXIS) -> str:
    """The smallest budget that passed, against input size (or `axis`).  series: [(engine, [(gb, min_budget or None,
    max_failed or None, ceiling)], fit or None)]: a thin bracket from the largest failing budget up to the
    smallest passing one (the true minimum lies between); a point that failed even at the ceiling is a red
    ▲ at the ceiling.  The published node's RAM is a line when it is within 4× of the plotted range, else
    a note says where it would be."""
    from matplotlib.lines import Line2D
    from matplotlib.transforms import offset_copy

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 3.4), layout="constrained")
        gbs = [gb for _, pts, _ in series for gb, *_ in pts]
        x_right = (max(gbs) if gbs else 1.0) * 1.12 or 1.0
        top, handles, over, brackets = 0.0, [], False, False
        failed_at: set[tuple[float, float]] = set()  # one label per place, however many engines failed there
        for k, (eng, pts, fit) in enumerate(series):
            color = _color(colors, eng)
            good = [(g, b, f) for g, b, f, _c in pts if b is not None]
            for g, b, f in good:
                if f:
                    ax.plot([g, g], [f, b], color=color, lw=2.4, alpha=0.35, zorder=3, solid_capstyle="butt")
                    brackets = True
            if good:
                ax.plot([p[0] for p in good], [p[1] for p in good], "o", ms=5.5, color=color, mec="white", mew=0.8,
                        zorder=4)
                top = max(top, *(p[1] for p in good))
            shift = offset_copy(ax.transData, fig=fig, x=(k - (len(series) - 1) / 2) * 7, units="points")
            for g, b, _f, ceiling in pts:
                if b is None:  # engines side by side when several failed at the same place
                    ax.plot(g, ceiling, marker="^", ms=8, color=color, mec=BAD, mew=1.6, zorder=5, ls="none",
                            transform=shift)
                    if (g, ceiling) not in failed_at:
                        ax.annotate("fails at the ceiling", (g, ceiling), xytext=(0, 7), textcoords="offset points",
                                    ha="center", fontsize=7, color=BAD)
                        failed_at.add((g, ceiling))
                    top = max(top, ceiling)
                    over = True
            label = eng
            if _usable(fit):
                top = max(top, _draw_fit(ax, fit, color, x_right))
                label = (f"{eng}: {_fmt_bytes(fit.fixed)} + {_fmt_bytes(fit.per_gb)}/GB"
                         + (" — POOR FIT" if fit.poor else ""))
            handles.append(Line2D([], [], color=color, marker="o", ms=5, mec="white", lw=1.5, label=label))
        if over:
            handles.append(Line2D([], [], color=MUTED, marker="^", mec=BAD, mew=1.6, ls="none",
                                  label="fails even at the ceiling (this node's RAM)"))
        if brackets:
            handles.append(Line2D([], [], color=MUTED, lw=2.4, alpha=0.35,
                                  label="bracket: largest failing → smallest passing budget"))
        if node_ram and top and node_ram <= 4 * top:
            ax.axhline(node_ram, color=BAD, ls="--", lw=1.2, zorder=1)
            ax.text(0.995, node_ram, f"{node_label or 'published node'}: {_fmt_bytes(node_ram)} RAM ",
                    color=BAD, fontsize=7.5, ha="right", va="bottom", transform=ax.get_yaxis_transform())
            top = max(top, node_ram)
        _finish_gb_axes(ax, top, True, _fmt_bytes, x_right, axis, gbs)
        if node_ram and not (top and node_ram <= 4 * top):  # under the axis label: never over the data
            ax.set_xlabel(ax.get_xlabel() + "\n ")
            ax.annotate(f"↑ {node_label or 'published node'}'s RAM ({_fmt_bytes(node_ram)}) is off this chart: "
                        f"{node_ram / (top or 1):,.0f}× the highest value drawn", (1.0, 0.0), xycoords="axes fraction",
                        xytext=(0, -36), textcoords="offset points", ha="right", va="top", fontsize=7.5, color=BAD)
        ax.set_ylabel("smallest passing budget", color=MUTED)
        ax.set_title("Memory frontier: the smallest budget that passed")
        ax.legend(handles=handles, loc="upper left", fontsize=7.5, handlelength=2.2)
        return _svg(fig)


# --- campaigns: a tuning search -----------------------------------------------------------------------
@chart
def tune_chart(points, color: str, baseline: float | None) -> str:
    """The configurations a search ran, in order, against their median compaction time.  points:
    [(index, label, median or None, min, max, kept, best)]: kept configurations filled, the others
    hollow, the best a star, one with no verified run a red × on the axis; the best-so-far as a faint
    step line, the published configuration's time as a dashed line."""
    from matplotlib.lines import Line2D

    with plt.rc_context(STYLE):
        n = max(1, len(points))
        fig, ax = plt.subplots(figsize=(max(6.6, 2.4 + 0.45 * n), 3.6), layout="constrained")
        top, missing = 0.0, False
        steps_x, steps_y, best_so_far = [], [], None
        for x, _label, med, lo, hi, kept, best in points:
            if med is None:
                ax.plot(x, 0, marker="x", ms=7, mew=1.8, color=BAD, zorder=5, ls="none", clip_on=False)
                missing = True
            else:
                if lo is not None and hi is not None and hi > lo:
                    ax.errorbar(x, med, yerr=[[med - lo], [hi - med]], fmt="none", ecolor=color, elinewidth=1.1,
                                capsize=3, capthick=1.1, zorder=3)
                ax.plot(x, med, marker="*" if best else "o", ms=13 if best else 6.5, mfc=color if kept else "white",
                        mec=INK if best else color, mew=1.0 if best else 1.4, zorder=4, ls="none")
                top = max(top, med, hi if hi is not None else med)
                if kept:
                    best_so_far = med
            if best_so_far is not None:
                steps_x.append(x)
                steps_y.append(best_so_far)
        if len(steps_x) > 1:
            ax.step(steps_x, steps_y, where="post", color=color, lw=1.2, alpha=0.35, zorder=2)
        if baseline:
            ax.axhline(baseline, color=MUTED, ls="--", lw=1.1, zorder=1)
            top = max(top, baseline)
        ax.set_xticks([p[0] for p in points], [p[1] for p in points], rotation=30, ha="right", fontsize=7.5)
        ax.set_xlim(min((p[0] for p in points), default=0) - 0.6, max((p[0] for p in points), default=0) + 0.6)
        ax.set_ylim(0, (top or 1) * 1.2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _tick(v, _fmt_seconds)))
        ax.yaxis.set_major_locator(MaxNLocator(5))
        ax.grid(axis="y", color=GRID, lw=0.8, zorder=0)
        ax.set_ylabel("compaction time", color=MUTED)
        ax.set_title("Each configuration's compaction time, in the order run (median, min–max)")
        handles = [Line2D([], [], color=color, marker="o", mfc=color, ls="none", label="kept (best so far)"),
                   Line2D([], [], color=color, marker="o", mfc="white", mew=1.4, ls="none", label="not kept"),
                   Line2D([], [], color=INK, marker="*", mfc=color, ms=11, ls="none", label="best"),
                   Line2D([], [], color=color, lw=1.2, alpha=0.35, label="best so far")]
        if baseline:
            handles.append(Line2D([], [], color=MUTED, ls="--", label=f"published configuration "
                                                                   f"{_fmt_seconds(baseline)}"))
        if missing:
            handles.append(Line2D([], [], color=BAD, marker="x", ls="none", mew=1.8, label="no verified run"))
        fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=7.5, handlelength=1.6)
        return _svg(fig)


@chart
def cluster_chart(series, colors, reference: tuple[str, float, str] | None, models=()) -> str:
    """Compaction time against the number of nodes.  series: label -> [(nodes, median, min, max)];
    reference: (label, time, colour) of the single-node reference, a dashed line; models: (label, fixed,
    parallel) curves, dotted and labelled as a model."""
    from matplotlib.lines import Line2D

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 3.4), layout="constrained")
        top, right = 0.0, 1
        handles = []
        for label, pts in series.items():
            color = _color(colors, label)
            pts = sorted(pts)
            xs = [p[0] for p in pts]
            ax.plot(xs, [p[1] for p in pts], marker="o", color=color, lw=1.4, zorder=4)
            for n, med, lo, hi in pts:
                if hi > lo:
                    ax.errorbar(n, med, yerr=[[med - lo], [hi - med]], fmt="none", ecolor=color, capsize=3, zorder=3)
                top = max(top, hi, med)
            right = max(right, *xs)
            handles.append(Line2D([], [], color=color, marker="o", label=f"{label} (measured)"))
        for label, fixed, parallel in models:
            color = _color(colors, label)
            n_right = max(right * 2, 4)
            xs = [1 + i * (n_right - 1) / 60 for i in range(61)]
            ax.plot(xs, [fixed + parallel / x for x in xs], color=color, ls=":", lw=1.2, zorder=2)
            right = max(right, n_right)
            handles.append(Line2D([], [], color=color, ls=":", label=f"{label}: model fixed + parallel / n"))
        if reference:
            ref_label, ref_t, ref_color = reference
            ax.axhline(ref_t, color=ref_color, ls="--", lw=1.2, zorder=1)
            top = max(top, ref_t)
            handles.append(Line2D([], [], color=ref_color, ls="--",
                                  label=f"{ref_label} on one node {_fmt_seconds(ref_t)}"))
        ax.set_xlim(0.5, right + 0.5)
        ax.set_xticks([n for n in range(1, int(right) + 1)] if right <= 12 else
                      [n for n in range(0, int(right) + 1, max(1, int(right) // 8)) if n])
        return _time_chart_end(fig, ax, handles, top * 1.2 / 1.15, "nodes (this one plus the cluster's other hosts)",
                               "compaction time", "Compaction time against the number of nodes (median, min–max)")


def _time_chart_end(fig, ax, handles, top: float, xlabel: str, ylabel: str, title: str) -> str:
    """A chart of seconds: its y axis from 0 to above `top`, labels, title and legend below; the SVG."""
    ax.set_ylim(0, (top or 1) * 1.15)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _tick(v, _fmt_seconds)))
    ax.grid(axis="y", color=GRID, lw=0.8, zorder=0)
    ax.set_xlabel(xlabel, color=MUTED)
    ax.set_ylabel(ylabel, color=MUTED)
    ax.set_title(title)
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=7.5)
    return _svg(fig)


@chart
def cap_chart(series, colors, models, read_models=None) -> str:
    """Compaction time against the storage cap.  series: label -> [(cap MiB/s or None, median, min, max)]; a None
    cap (no limit) is a dashed line across; models: label -> [(cap MiB/s, model seconds)], dotted; read_models: the
    same with the reads alone capped, dash-dotted."""
    from matplotlib.lines import Line2D

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 3.4), layout="constrained")
        top, handles = 0.0, []
        for label, pts in series.items():
            color = _color(colors, label)
            capped = sorted(p for p in pts if p[0] is not None)
            for cap, med, lo, hi in pts:
                top = max(top, hi, med)
                if cap is None:
                    ax.axhline(med, color=color, ls="--", lw=1.0, zorder=1)
                    handles.append(Line2D([], [], color=color, ls="--", label=f"{label} uncapped {_fmt_seconds(med)}"))
                elif hi > lo:
                    ax.errorbar(cap, med, yerr=[[med - lo], [hi - med]], fmt="none", ecolor=color, capsize=3, zorder=3)
            if capped:
                ax.plot([p[0] for p in capped], [p[1] for p in capped], marker="o", color=color, lw=1.4, zorder=4)
                handles.append(Line2D([], [], color=color, marker="o", label=f"{label} (measured)"))
        for label, line in models.items():
            color = _color(colors, label)
            ax.plot([x for x, _ in line], [y for _, y in line], color=color, ls=":", lw=1.4, zorder=2)
            top = max(top, *(y for _, y in line))
            handles.append(Line2D([], [], color=color, ls=":", label=f"{label}: model max(uncapped, bytes / cap)"))
        for label, line in (read_models or {}).items():
            color = _color(colors, label)
            ax.plot([x for x, _ in line], [y for _, y in line], color=color, ls="-.", lw=1.0, alpha=0.7, zorder=2)
            handles.append(Line2D([], [], color=color, ls="-.", alpha=0.7,
                                  label=f"{label}: model, reads alone capped"))
        ax.set_xscale("log")
        caps = sorted({p[0] for pts in series.values() for p in pts if p[0] is not None})
        if caps:
            ax.set_xticks(caps)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        return _time_chart_end(fig, ax, handles, top, "storage cap on the warehouse's disk (MiB/s, reads and writes "
                               "each)", "compaction time (flush included)",
                               "Compaction time against the storage cap, with the model")


# --- streaming runs: one value per cycle ------------------------------------------------------------
@chart
def cycle_panels_chart(panels, colors) -> str:
    """Small multiples over the cycles of a streaming run: panels [(title, fmt, {engine: [(cycle, value)]})],
    one line per engine (the baseline `none` dashed), a panel with no value at all left out."""
    panels = [p for p in panels if any(v is not None for pts in p[2].values() for _, v in pts)]
    ncols = 3
    nrows = max(1, -(-len(panels) // ncols))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(nrows, ncols, figsize=(9.6, 2.3 * nrows), layout="constrained", squeeze=False)
        seen: dict[str, Any] = {}
        for i, ax in enumerate(axes.flat):
            if i >= len(panels):
                ax.set_visible(False)
                continue
            title, fmt, series = panels[i]
            top = 0.0
            for eng, pts in series.items():
                xs = [c for c, v in pts if v is not None]
                ys = [float(v) for _, v in pts if v is not None]
                if not xs:
                    continue
                top = max(top, max(ys))
                (line,) = ax.plot(xs, ys, color=_color(colors, eng), lw=1.5, marker="o", ms=2.5,
                                  ls=(0, (4, 2)) if eng == "none" else "-", label=eng)
                seen.setdefault(eng, line)
            ax.set_ylim(0, (top or 1) * 1.12)
            ax.xaxis.set_major_locator(MaxNLocator(6, integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(4))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _, f=fmt: f(v)))
            ax.grid(color=GRID, lw=0.8, zorder=0)
            ax.set_title(title)
            ax.set_xlabel("cycle", color=MUTED)
        if seen:
            fig.legend(handles=list(seen.values()), labels=list(seen), loc="outside lower left", ncols=len(seen))
        return _svg(fig)


# --- append sinks: cost per GB ingested against files per GB ------------------------------------------
@chart
def sink_chart(points, colors, markers: dict[str, str]) -> str:
    """The append-sink presets: maintenance cost per GB ingested (y) against the data files the sink made per GB
    (x, log), one colour per engine, each point labelled with its preset; the presets of one engine and mode
    joined in order of files per GB.  points: {engine: [(files_per_gb, usd_per_gb, preset, marker)]}; markers:
    mode -> marker (the legend)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogLocator

    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.2, 3.8), layout="constrained")
        top = 0.0
        for eng, pts in points.items():
            color = _color(colors, eng)
            for marker in sorted({p[3] for p in pts}):
                mine = sorted((p for p in pts if p[3] == marker), key=lambda p: p[0])
                ax.plot([p[0] for p in mine], [p[1] for p in mine], color=color, lw=1.2, alpha=0.6, marker=marker,
                        ms=6, zorder=3)
                for x, y, label, _ in mine:
                    ax.annotate(label, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7.5, color=INK)
                    top = max(top, y)
        if points:
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0, (top or 1) * 1.2)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: _tick(v, fmt_usd)))
        ax.yaxis.set_major_locator(MaxNLocator(5))
        ax.grid(color=GRID, lw=0.8, zorder=0)
        ax.set_xlabel("data files the sink wrote per GB ingested", color=MUTED)
        ax.set_ylabel("maintenance cost per GB ingested", color=MUTED)
        ax.set_title("What each preset's files cost in maintenance, per engine")
        handles = [Line2D([], [], color=_color(colors, e), lw=1.2, marker="o", label=e) for e in points]
        if len(markers) > 1:
            handles += [Line2D([], [], color=MUTED, ls="none", marker=m, label=mode) for mode, m in markers.items()]
        if not points:
            ax.text(0.5, 0.5, "no engine run with a cost per GB", transform=ax.transAxes, ha="center", color=MUTED)
        if handles:
            fig.legend(handles=handles, loc="outside lower center", ncols=min(6, len(handles)))
        return _svg(fig)
