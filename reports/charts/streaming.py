"""Streaming runs: small multiples of one value per cycle, and the append sinks' cost per GB ingested against the
files they wrote per GB."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from bench.core.fmt import fmt_usd
from reports.charts.base import GRID, INK, MUTED, STYLE, chart, color_of, no_chart, tick_label, to_svg


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
                (line,) = ax.plot(xs, ys, color=color_of(colors, eng), lw=1.5, marker="o", ms=2.5,
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
        return to_svg(fig)


# --- append sinks: cost per GB ingested against files per GB ------------------------------------------
@chart
def sink_chart(points, colors, markers: dict[str, str]) -> str:
    """The append-sink presets: maintenance cost per GB ingested (y) against the data files the sink made per GB
    (x, log), one colour per engine, each point labelled with its preset; the presets of one engine and mode
    joined in order of files per GB.  points: {engine: [(files_per_gb, usd_per_gb, preset, marker)]}; markers:
    mode -> marker (the legend)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import LogLocator

    if not any(points.values()):
        return no_chart("Maintenance cost per GB ingested: no engine run with a cost per GB, nothing to draw.")
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.2, 3.8), layout="constrained")
        top = 0.0
        for eng, pts in points.items():
            color = color_of(colors, eng)
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
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_label(v, fmt_usd)))
        ax.yaxis.set_major_locator(MaxNLocator(5))
        ax.grid(color=GRID, lw=0.8, zorder=0)
        ax.set_xlabel("data files the sink wrote per GB ingested", color=MUTED)
        ax.set_ylabel("maintenance cost per GB ingested", color=MUTED)
        ax.set_title("What each preset's files cost in maintenance, per engine")
        handles = [Line2D([], [], color=color_of(colors, e), lw=1.2, marker="o", label=e) for e in points]
        if len(markers) > 1:
            handles += [Line2D([], [], color=MUTED, ls="none", marker=m, label=mode) for mode, m in markers.items()]
        if handles:
            fig.legend(handles=handles, loc="outside lower center", ncols=min(6, len(handles)))
        return to_svg(fig)
