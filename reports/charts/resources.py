"""Compaction time against the resources it was given: the number of nodes (a cluster) and the storage cap, each
with its model."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, NullFormatter

from bench.core.fmt import seconds as _fmt_seconds
from reports.charts.base import GRID, MUTED, STYLE, chart, color_of, tick_label, to_svg


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
            color = color_of(colors, label)
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
            color = color_of(colors, label)
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
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: tick_label(v, _fmt_seconds)))
    ax.grid(axis="y", color=GRID, lw=0.8, zorder=0)
    ax.set_xlabel(xlabel, color=MUTED)
    ax.set_ylabel(ylabel, color=MUTED)
    ax.set_title(title)
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=7.5)
    return to_svg(fig)


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
            color = color_of(colors, label)
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
            color = color_of(colors, label)
            ax.plot([x for x, _ in line], [y for _, y in line], color=color, ls=":", lw=1.4, zorder=2)
            top = max(top, *(y for _, y in line))
            handles.append(Line2D([], [], color=color, ls=":", label=f"{label}: model max(uncapped, bytes / cap)"))
        for label, line in (read_models or {}).items():
            color = color_of(colors, label)
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
