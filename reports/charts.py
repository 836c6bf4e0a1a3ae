"""Charts as inline SVG (matplotlib, Agg-free SVG backend): no files, no external resources.

Each function returns an SVG string ready to be placed in the HTML.  Element ids inside each SVG are
prefixed with a unique chart id, so several SVGs can live in one document without clashing.
"""

from __future__ import annotations

import io
import itertools
import re

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

ENGINE_COLORS = {"spark": "#E25A1C", "risingwave": "#2F5BEA"}
_FALLBACK = ["#0F9D8A", "#8E44AD", "#B7950B", "#C0392B", "#2C3E50", "#16A085"]
INK = "#1F2933"
MUTED = "#7B8794"
GRID = "#E4E7EB"
GiB = 1024**3

_counter = itertools.count(1)

STYLE = {
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


def engine_color(engine: str, engines: list[str] | None = None) -> str:
    if engine in ENGINE_COLORS:
        return ENGINE_COLORS[engine]
    others = [e for e in (engines or [engine]) if e not in ENGINE_COLORS]
    i = others.index(engine) if engine in others else 0
    return _FALLBACK[i % len(_FALLBACK)]


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})  # fixed size: every chart at one scale
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # drop the XML prolog and DOCTYPE: it is inline SVG
    prefix = f"c{next(_counter)}-"
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
    return f"{v:g}"


def _fmt_seconds(v: float) -> str:
    if v >= 100:
        return f"{v:,.0f} s"
    if v >= 10:
        return f"{v:.1f} s"
    return f"{v:.2f} s"


def _fmt_bytes(v: float) -> str:
    for unit, div in (("GiB", GiB), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(v) >= div:
            x = v / div
            return f"{x:.2f} {unit}" if x < 10 else f"{x:.1f} {unit}" if x < 100 else f"{x:.0f} {unit}"
    return f"{v:.0f} B"


def fmt_usd(v: float | None) -> str:
    """3 decimals as published; smaller amounts keep 3 significant digits instead of showing $0.000."""
    if v is None:
        return "—"
    if v >= 0.01 or v == 0:
        return f"${v:,.3f}"
    return f"${v:.3g}" if v >= 1e-4 else f"${v:.2e}"


def _hbar(rows, value_fmt, title, xlabel, engines, *, marker_rows=None, line=None, line_label=None,
          missing_text=None):
    """Horizontal bars with min-max whiskers.  rows: [(engine, median, min, max, points)]."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 0.95 + 0.48 * max(1, len(rows))), layout="constrained")
        labels = [r[0] for r in rows]
        ys = list(range(len(rows)))[::-1]
        top = 0.0
        for y, (eng, med, lo, hi, pts) in zip(ys, rows):
            color = engine_color(eng, engines)
            if med is None:
                ax.text(0, y, "  " + (missing_text(eng) if missing_text else "no data"), va="center",
                        ha="left", color="#B42318", fontsize=8.5, fontweight="bold")
                continue
            ax.barh(y, med, height=0.56, color=color, alpha=0.9, zorder=2)
            if lo is not None and hi is not None and hi > lo:
                ax.errorbar(med, y, xerr=[[med - lo], [hi - med]], fmt="none", ecolor=INK,
                            elinewidth=1.1, capsize=4, capthick=1.1, zorder=3)
            for p in pts or []:
                ax.plot(p, y, marker="o", ms=3.2, mfc="white", mec=INK, mew=0.8, zorder=4, ls="none")
            right = max(hi or med, med, *(pts or [med]))
            top = max(top, right)
            ax.annotate(value_fmt(med), (right, y), xytext=(6, 0), textcoords="offset points",
                        va="center", ha="left", color=INK, fontsize=8.5)
        if marker_rows:
            for y, (eng, val) in zip(ys, marker_rows):
                if val:
                    ax.plot(val, y, marker="|", ms=14, mew=2, color=INK, zorder=5, ls="none")
                    top = max(top, val)
        if line is not None and (top == 0 or line <= 4 * top):
            ax.axvline(line, color="#B42318", ls="--", lw=1.2, zorder=1)
            ax.text(line, ys[0] + 0.45, f" {line_label}", color="#B42318", fontsize=8, va="bottom")
            top = max(top, line)
        ax.set_yticks(ys, labels)
        ax.set_xlim(0, (top or 1) * 1.28)
        ax.set_ylim(-0.6, len(rows) - 0.4 + (0.35 if line is not None else 0))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _tick(v, value_fmt)))
        ax.xaxis.set_major_locator(_byte_locator(top) if value_fmt is _fmt_bytes else MaxNLocator(5))
        ax.grid(axis="x", color=GRID, lw=0.8, zorder=0)
        ax.tick_params(axis="y", length=0, labelsize=9)
        ax.set_title(title)
        if xlabel:
            ax.set_xlabel(xlabel, color=MUTED)
        return _svg(fig)


def duration_chart(rows, engines, missing_text=None) -> str:
    return _hbar(rows, _fmt_seconds, "Compaction time per engine (median, whiskers min–max, dots = reps)",
                 None, engines, missing_text=missing_text)


def cost_chart(rows, engines, instance_label: str, missing_text=None) -> str:
    return _hbar(rows, fmt_usd, f"Cost per compaction at {instance_label} on-demand", None, engines,
                 missing_text=missing_text)


def memory_chart(rows, hwm_rows, engines, budget: int | None) -> str:
    label = f"budget {_fmt_bytes(budget)}" if budget else None
    return _hbar(rows, _fmt_bytes, "Peak memory per engine (process-tree RSS; | = largest VmHWM)", None,
                 engines, marker_rows=hwm_rows, line=budget, line_label=label)


def timeline_chart(series, engines, *, column: str, title: str, ylabel: str, fmt, hline=None,
                   hline_label=None, smooth: int = 1) -> str:
    """series: [(engine, label, highlight, DataFrame of samples)] overlaid on one time axis."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(6.6, 2.6), layout="constrained")
        seen = set()
        top = 0.0
        for eng, label, highlight, df in series:
            if df is None or df.empty or column not in df:
                continue
            y = df[column].astype(float)
            if smooth > 1:
                y = y.rolling(smooth, min_periods=1, center=True).mean()
            y = y.fillna(0.0)
            top = max(top, float(y.max()))
            ax.plot(df["t_s"], y, color=engine_color(eng, engines), lw=1.6 if highlight else 0.9,
                    alpha=1.0 if highlight else 0.45, label=eng if eng not in seen else None,
                    zorder=3 if highlight else 2)
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


def cores_chart(rows, p95_rows, engines, cores: int | None) -> str:
    return _hbar(rows, lambda v: f"{v:.2f}", "Cores busy per engine (mean over the run; | = p95)", None,
                 engines, marker_rows=p95_rows, line=cores,
                 line_label=f"{cores} cores on this node" if cores else None)


def memory_timeline(series, engines, budget=None) -> str:
    show_budget = budget if budget and series and budget <= 4 * max(
        (float(df["rss_bytes"].max()) for _, _, _, df in series if df is not None and not df.empty),
        default=0) else None
    return timeline_chart(series, engines, column="rss_bytes", title="Memory over time (process-tree RSS)", ylabel="RSS", fmt=lambda v: _fmt_bytes(v) if v else "0",
                          hline=show_budget, hline_label="budget")


def cpu_timeline(series, engines, cores: int | None) -> str:
    return timeline_chart(series, engines, column="cores", title="CPU over time (cores, 0.5 s mean)", ylabel="cores", fmt=lambda v: f"{v:g}", hline=cores,
                          hline_label=f"{cores} cores on this node" if cores else None, smooth=5)


def fmt_bytes(v) -> str:
    return "—" if v is None else _fmt_bytes(float(v))


def fmt_seconds(v) -> str:
    return "—" if v is None else _fmt_seconds(float(v))
