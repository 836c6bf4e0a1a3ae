"""Campaigns: measurements against input size (or partition count) with their fits, the speedup against size, the
memory frontier, and a tuning search's configurations in the order run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from bench.core.fmt import fmt_ratio, fmt_seconds
from bench.core.fmt import nbytes as _fmt_bytes
from bench.core.fmt import seconds as _fmt_seconds
from reports.charts.base import (
    BAD,
    GRID,
    INK,
    MUTED,
    STYLE,
    byte_locator,
    chart,
    color_of,
    no_chart,
    tick_label,
    to_svg,
)


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


def _x_right(gbs: list[float]) -> float:
    """Where a size axis ends: a little beyond the largest size drawn."""
    return (max(gbs) if gbs else 1.0) * 1.12 or 1.0


def _fit_handle(ax, eng: str, fit, color: str, x_right: float, value_fmt, per: str = "GB", per_x: float = 1.0):
    """An engine's legend entry, naming its fit (fixed + slope per `per_x` of x, `per`, in `value_fmt`) when it has a
    usable one, whose line it draws; and the highest value that line reaches (None without one)."""
    from matplotlib.lines import Line2D

    label, high = eng, None
    if _usable(fit):
        high = _draw_fit(ax, fit, color, x_right)
        label = (f"{eng}: {value_fmt(fit.fixed)} + {value_fmt(fit.per_gb * per_x)}/{per}"
                 + (" — POOR FIT" if fit.poor else ""))
    return Line2D([], [], color=color, marker="o", ms=5, mec="white", lw=1.5, label=label), high


def _gb_tick(v: float) -> str:
    return "0" if not v else f"{v:g} GB" if v >= 1 else f"{v:.3g} GB"


@dataclass(frozen=True)
class XAxis:
    """The x of a campaign's chart: the input size (linear, from 0) or the partition count (log 2, a tick
    at each measured count)."""

    label: str
    tick: Callable[[float], str]
    log: bool = False
    per: str = "GB"  # a fitted line's slope is given per `per_x` of x (legend: fixed + slope/per)
    per_x: float = 1.0


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
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_label(v, value_fmt)))
    ax.yaxis.set_major_locator(byte_locator(top) if byte_axis else MaxNLocator(5))
    ax.grid(color=GRID, lw=0.8, zorder=0)
    ax.set_xlabel(axis.label, color=MUTED, fontsize=8)


@chart
def scaling_chart(series, colors, *, title: str, value_fmt, byte_axis: bool = False, axis: XAxis = GB_AXIS) -> str:
    """One quantity against input size (or `axis`), per engine.  series: [(engine, [(gb, median, min, max)],
    fit or None)] (median None: no verified run at that size, drawn as a red × on the axis); points are medians with
    min–max whiskers, the fit's line is solid over the measured sizes and dashed outside them."""
    from matplotlib.lines import Line2D

    if not any(pts for _, pts, _ in series):
        return no_chart(f"{title.split(' (')[0]}: no point measured yet, nothing to draw.")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 3.2), layout="constrained")
        gbs = [gb for _, pts, _ in series for gb, *_ in pts]
        x_right = _x_right(gbs)
        top = 0.0
        handles, missing = [], False
        for eng, pts, fit in series:
            color = color_of(colors, eng)
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
            handle, high = _fit_handle(ax, eng, fit, color, x_right, value_fmt, axis.per, axis.per_x)
            top = top if high is None else max(top, high)
            handles.append(handle)
        if missing:
            handles.append(Line2D([], [], color=BAD, marker="x", ls="none", mew=1.8,
                                  label="no verified run at this size" if not axis.log else "no verified run here"))
        _finish_gb_axes(ax, top, byte_axis, value_fmt, x_right, axis, gbs)
        ax.set_title(title)
        if handles:
            ax.legend(handles=handles, loc="upper left", fontsize=7.5, handlelength=2.2)
        return to_svg(fig)


@chart
def speedup_scaling_chart(series, colors) -> str:
    """The speedup against input size.  series: [(ref, other, [(gb, median, min, max)])] with the ratio
    oriented as other's time ÷ ref's time (above 1: ref is faster), min–max over verified pairs."""
    from matplotlib.lines import Line2D

    if not any(pts for *_, pts in series):
        return no_chart("Speedup against input size: no size with a verified pair, nothing to draw.")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 3.2), layout="constrained")
        gbs = [gb for *_, pts in series for gb, *_ in pts]
        x_right = _x_right(gbs)
        top, handles = 1.0, []
        for ref, other, pts in series:
            color = color_of(colors, ref)
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
        ax.legend(handles=handles, loc="upper left", fontsize=7.5)
        return to_svg(fig)


@chart
def frontier_chart(series, colors, node_ram: int | None, node_label: str = "", axis: XAxis = GB_AXIS) -> str:
    """The smallest budget that passed, against input size (or `axis`).  series: [(engine, [(gb, min_budget or None,
    max_failed or None, ceiling)], fit or None)]: a thin bracket from the largest failing budget up to the
    smallest passing one (the true minimum lies between); a point that failed even at the ceiling is a red
    ▲ at the ceiling.  The published node's RAM is a line when it is within 4× of the plotted range, else
    a note says where it would be."""
    from matplotlib.lines import Line2D
    from matplotlib.transforms import offset_copy

    if not any(pts for _, pts, _ in series):
        return no_chart("Memory frontier: no point measured yet, nothing to draw.")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 3.4), layout="constrained")
        gbs = [gb for _, pts, _ in series for gb, *_ in pts]
        x_right = _x_right(gbs)
        top, handles, over, brackets = 0.0, [], False, False
        failed_at: set[tuple[float, float]] = set()  # one label per place, however many engines failed there
        for k, (eng, pts, fit) in enumerate(series):
            color = color_of(colors, eng)
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
            handle, high = _fit_handle(ax, eng, fit, color, x_right, _fmt_bytes)
            top = top if high is None else max(top, high)
            handles.append(handle)
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
        return to_svg(fig)


# --- campaigns: a tuning search -----------------------------------------------------------------------
@chart
def tune_chart(points, color: str, baseline: float | None) -> str:
    """The configurations a search ran, in order, against their median compaction time.  points:
    [(index, label, median or None, min, max, kept, best)]: kept configurations filled, the others
    hollow, the best a star, one with no verified run a red × on the axis; the best-so-far as a faint
    step line, the published configuration's time as a dashed line."""
    from matplotlib.lines import Line2D

    if not points:
        return no_chart("Tuning search: no configuration run yet, nothing to draw.")
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
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_label(v, _fmt_seconds)))
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
        return to_svg(fig)
