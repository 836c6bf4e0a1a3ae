"""A count sweep (bench.campaigns.counts's counts.json) in the HTML report: time and peak memory against the input's
file count per engine, each phase per engine, with the lines the sweep fitted (as it stored them: nothing is
fitted again here), the points table and where each memory line would meet the budget, in the words of the
Markdown blocks (reports.counts).  Reads only the summary files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from markupsafe import Markup

from bench.core.campaign import COUNTS_FILE, CountSweepSummary, read_counts
from bench.core.errors import UserError
from bench.core.fmt import fmt_bytes, fmt_scale, fmt_seconds
from reports.charts.campaigns import XAxis, scaling_chart
from reports.counts import budget_text, engine_lines, point_cells
from reports.model.colors import FALLBACK_COLORS, fill_colors

FILES_AXIS = XAxis("input files (data + delete, live before the run)", lambda v: f"{v:,.0f}",
                          per="1,000 files", per_x=1000.0)


@dataclass
class CountView:
    s: CountSweepSummary
    path: Path
    anchor: str
    colors: dict[str, str]
    rows: list[dict[str, str]] = field(default_factory=list)  # the points table, one row per point
    lines: list[tuple[str, int, str]] = field(default_factory=list)  # (engine, depth, text)
    budgets: list[str] = field(default_factory=list)
    charts: dict[str, Markup] = field(default_factory=dict)  # time, memory, phases <engine>
    opens: bool = False  # a point carries a count of delete-file opens


def locate_counts(paths) -> list[tuple[Path, CountSweepSummary]]:
    """Every counts.json in or under `paths`, read; a file named so that is no count sweep's is an error."""
    out: list[tuple[Path, CountSweepSummary]] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        files = [p] if p.is_file() and p.name == COUNTS_FILE else sorted(p.rglob(COUNTS_FILE)) if p.is_dir() else []
        for f in (f.resolve() for f in files):
            if f in seen:
                continue
            seen.add(f)
            s = read_counts(f)
            if s is None:
                raise UserError(f"{f}: not a count sweep's {COUNTS_FILE}")
            out.append((f, s))
    return out


def _series(s: CountSweepSummary, engine: str, value) -> list[tuple[float, float | None, float | None, float | None]]:
    return [(float(p.files), *value(p)) for p in s.points if p.engine == engine]


def count_view(path: Path, s: CountSweepSummary, anchor: str, base_colors: dict[str, str]) -> CountView:
    colors = fill_colors({e: base_colors.get(e) for e in s.engines}, base_colors.values())
    v = CountView(s=s, path=path, anchor=anchor, colors=colors)
    for p in s.points:
        v.rows.append({"engine": p.engine, "file_scale": fmt_scale(p.file_scale), "color": colors.get(p.engine, ""),
                       "run_dir": p.run_dir, **point_cells(p)})
    v.opens = any(p.delete_opens is not None for p in s.points)
    v.lines = [(e, depth, text) for e in s.engines for depth, text in engine_lines(s, e)]
    v.budgets = [f"{b.engine}: {budget_text(s, b)}" for b in s.budget_meets]
    time = [(e, _series(s, e, lambda p: (p.duration_s.median, p.duration_s.min, p.duration_s.max)),
             s.time_fits.get(e)) for e in s.engines]
    mem = [(e, _series(s, e, lambda p: (p.peak_rss_bytes.median, p.peak_rss_bytes.min, p.peak_rss_bytes.max)),
            s.memory_fits.get(e)) for e in s.engines]
    v.charts["time"] = Markup(scaling_chart(
        time, colors, title="Compaction time against the input's files (verified runs: median, min–max)",
        value_fmt=fmt_seconds, axis=FILES_AXIS))
    v.charts["memory"] = Markup(scaling_chart(
        mem, colors, title="Peak memory against the input's files (process-tree RSS: median, min–max)",
        value_fmt=fmt_bytes, byte_axis=True, axis=FILES_AXIS))
    for e in s.engines:
        names = list(dict.fromkeys(n for p in s.points if p.engine == e for n in p.phases_s))
        if not names:
            continue
        phase_colors = {n: FALLBACK_COLORS[i % len(FALLBACK_COLORS)] for i, n in enumerate(names)}
        series = [(n, [(float(p.files), p.phases_s.get(n), None, None) for p in s.points
                       if p.engine == e and n in p.phases_s], s.phase_fits.get(e, {}).get(n)) for n in names]
        v.charts[f"phases {e}"] = Markup(scaling_chart(
            series, phase_colors, title=f"{e}: each phase against the input's files (median of verified runs)",
            value_fmt=fmt_seconds, axis=FILES_AXIS))
    return v


def is_counts_file(p) -> bool:
    return Path(p).is_file() and Path(p).name == COUNTS_FILE


def count_sections(located: list[tuple[Path, CountSweepSummary]], base_colors: dict[str, str]) -> list[CountView]:
    return [count_view(f, s, f"counts-{i}", base_colors) for i, (f, s) in enumerate(located, 1)]
