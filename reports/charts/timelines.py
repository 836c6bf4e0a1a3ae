"""A result set's runs over time: memory (process-tree RSS) and CPU (cores) against the seconds since each engine
process started."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, MaxNLocator

from bench.core.fmt import nbytes as _fmt_bytes
from reports.charts.base import GRID, MUTED, STYLE, byte_locator, chart, color_of, no_chart, to_svg


@chart
def timeline_chart(series, colors, *, column: str, title: str, ylabel: str, fmt, hline=None,
                   hline_label=None, smooth: int = 1) -> str:
    """series: [(engine, label, highlight, counts, DataFrame of samples)] overlaid on one time axis;
    runs that do not count (failed, oom, not verified) are dashed; no run with samples: one line saying so."""
    if not any(df is not None and not df.empty and column in df for *_, df in series):
        return no_chart(f"{title}: no samples recorded for any run, nothing to draw.")
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
            ax.plot(df["t_s"], y, color=color_of(colors, eng), lw=1.6 if highlight else 0.9,
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
        ax.yaxis.set_major_locator(byte_locator(top) if column == "rss_bytes" else MaxNLocator(5))
        ax.grid(color=GRID, lw=0.8, zorder=0)
        ax.set_xlabel("seconds since the engine process started", color=MUTED)
        ax.set_ylabel(ylabel, color=MUTED)
        ax.set_title(title)
        # in the title's row, right-aligned: never over the data
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncols=len(seen), borderaxespad=0.2,
                  handlelength=1.6)
        return to_svg(fig)


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
