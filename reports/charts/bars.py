"""A result set's bars, one per engine: compaction time, cost, the multiple of a floor's time, peak memory, cores
busy, and where the time goes (the phases, stacked)."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, MaxNLocator

from bench.core.fmt import fmt_ratio, fmt_usd
from bench.core.fmt import nbytes as _fmt_bytes
from bench.core.fmt import seconds as _fmt_seconds
from reports.charts.base import (
    BAD,
    GRID,
    INK,
    MUTED,
    SETUP,
    STYLE,
    byte_locator,
    chart,
    color_of,
    no_chart,
    tick_label,
    tint,
    to_svg,
)


def _hbar(rows, value_fmt, title, xlabel, colors, *, marker_rows=None, line=None, line_label=None,
          missing_text=None, excluded_points=None):
    """Horizontal bars with min-max whiskers.  rows: [(engine, median, min, max, points)] over verified
    runs; excluded_points: {engine: [values]} of runs that do not count, drawn as red crosses."""
    excluded_points = excluded_points or {}
    if not any(r[1] is not None or any(excluded_points.get(r[0]) or []) for r in rows):
        return no_chart(_nothing(title, rows, missing_text))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 0.95 + 0.48 * max(1, len(rows))), layout="constrained")
        labels = [r[0] for r in rows]
        ys = list(range(len(rows)))[::-1]
        top = 0.0
        crosses = False
        markers = {eng: val for eng, val in marker_rows or [] if val}
        for y, (eng, med, lo, hi, pts) in zip(ys, rows):
            color = color_of(colors, eng)
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
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_label(v, value_fmt)))
        ax.xaxis.set_major_locator(byte_locator(top) if value_fmt is _fmt_bytes else MaxNLocator(5))
        ax.grid(axis="x", color=GRID, lw=0.8, zorder=0)
        ax.tick_params(axis="y", length=0, labelsize=9)
        ax.set_title(title)
        if xlabel or crosses:
            ax.set_xlabel(" · ".join(x for x in (xlabel, "× = a run that does not count (failed, oom, "
                                                 "timeout or not verified)" if crosses else "") if x),
                          color=MUTED, fontsize=8)
        return to_svg(fig)


def _nothing(title: str, rows, missing_text) -> str:
    """The one line of a chart without a value to draw: its title and why each engine has none."""
    why = "; ".join(f"{r[0]}: {missing_text(r[0]) if missing_text else 'no data'}" for r in rows)
    return f"{title.split(' (')[0]}: nothing to draw" + (f" ({why})." if why else ".")


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
    missing_text(engine); no engine with any: one line saying so."""
    if not any(setup is not None or phases for _eng, setup, phases in rows):
        return no_chart(_nothing("Where the time goes", rows,
                                 missing_text or (lambda _e: "no phases recorded")))
    with plt.rc_context(STYLE):
        n = max(1, len(rows))
        legend_lines = 1 + sum(1 for r in rows if r[2])
        fig, ax = plt.subplots(figsize=(9.0, 1.0 + 0.5 * n + 0.17 * legend_lines), layout="constrained")
        ys = list(range(len(rows)))[::-1]
        top = 0.0
        setup_handle = None
        legend_rows = []  # one row of legend entries per engine
        for y, (eng, setup, phases) in zip(ys, rows):
            color = color_of(colors, eng)
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
                entries.append(ax.barh(y, secs, left=left, height=0.56, color=tint(color, 0.62 * i / max(1, k - 1)),
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
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_label(v, _fmt_seconds)))
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
        return to_svg(fig)


@chart
def cores_chart(rows, p95_rows, colors, cores: int | None, missing_text=None) -> str:
    return _hbar(rows, lambda v: f"{v:.2f}", "Cores busy per engine (mean over the run; | = p95)", None,
                 colors, marker_rows=p95_rows, line=cores,
                 line_label=f"{cores} cores on this node" if cores else None, missing_text=missing_text)
