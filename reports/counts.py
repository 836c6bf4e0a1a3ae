"""A count sweep (bench.campaigns.counts, its counts.json) as Markdown: the points per engine and file scale, the
lines of time, peak memory and each phase against the input's files, and where each memory line meets the
budget.  Reads the summary alone; the text depends on it only (no clock, no absolute path).  The phrases are
shared with the HTML report's section (reports.countview)."""

from __future__ import annotations

from pathlib import Path

from bench.core.campaign import COUNTS_FILE, BudgetMeet, CountPoint, CountSweepSummary, read_counts
from bench.core.errors import UserError
from bench.core.fit import Fit
from bench.core.fmt import fmt_bytes, fmt_scale


def _summaries(paths: list[Path]) -> list[CountSweepSummary]:
    out = []
    for p in paths:
        f = p / COUNTS_FILE if p.is_dir() else p
        s = read_counts(f)
        if s is None:
            raise UserError(f"{f}: not a count sweep's {COUNTS_FILE}")
        out.append(s)
    return out


def line_text(f: Fit, unit: str, k: float) -> str:
    """A line against the input's files, in words: fixed + slope per 1,000 files (R², runs)."""
    if f.n < 2:
        return f"— ({f.note})"
    r2 = f"R² {f.r2:.2f}" if f.r2 is not None else "flat"
    return (f"{f.fixed / k:,.1f} {unit} + {f.per_gb / k * 1000:,.2f} {unit} per 1,000 files ({r2}, {f.n} runs"
            + (", poor" if f.poor else "") + ")")


def _status(p: CountPoint) -> str:
    """The runs' statuses; runs that ended ok and were not verified said so (they count in no cell and no line)."""
    said = ", ".join(sorted(set(p.statuses)))
    unverified = p.statuses.count("ok") - p.verified
    return f"{said}, not verified ({unverified} of {len(p.statuses)})" if unverified > 0 else said


def point_cells(p: CountPoint) -> dict[str, str]:
    """One point's table cells, as both the Markdown and the HTML tables show them."""
    return {"files": f"{p.files:,} ({p.data_files:,} + {p.position_delete_files:,} + {p.equality_delete_files:,})",
            "bytes": fmt_bytes(p.bytes), "status": _status(p),
            "time": f"{p.duration_s.median:.1f} s" if p.duration_s.median is not None else "—",
            "rss": fmt_bytes(int(p.peak_rss_bytes.median)) if p.peak_rss_bytes.median else "—",
            "read": fmt_bytes(int(p.read_chars.median)) if p.read_chars.median else "—",
            "phases": ", ".join(f"{k} {v:.1f} s" for k, v in p.phases_s.items()) or "—",
            "opens": opens_cell(p)}


def opens_cell(p: CountPoint) -> str:
    """The delete files' opens the harness counted (the median run), or why there is no count."""
    return p.delete_opens.describe() if p.delete_opens is not None else "—"


def budget_text(s: CountSweepSummary, b: BudgetMeet) -> str:
    mf = s.memory_fits.get(b.engine)
    poor = ", from a poor memory line" if mf is not None and mf.poor else ""
    where = (f"reaches the budget {fmt_bytes(b.budget_bytes)} at ~{b.files:,.0f} input files{poor}"
             if b.files is not None and b.files > 0 else
             f"is above the budget {fmt_bytes(b.budget_bytes)} already at the smallest table{poor}"
             if b.files is not None else f"does not reach the budget {fmt_bytes(b.budget_bytes)}")
    return f"memory {where} ({b.note})"


def pair_text(s: CountSweepSummary, engine: str) -> str:
    """Bytes read and time against data files x equality-delete files ("" without such a line)."""
    pr, pt = s.pair_read_fits.get(engine), s.pair_time_fits.get(engine)
    if pr is None or pt is None or pr.n < 2:
        return ""
    return (f"against data files x equality-delete files: bytes read R² {pr.r2 if pr.r2 is not None else 0:.2f} "
            f"({pr.per_gb:,.0f} bytes per pair), time R² {pt.r2 if pt.r2 is not None else 0:.2f}")


def engine_lines(s: CountSweepSummary, e: str) -> list[tuple[int, str]]:
    """(depth, text) per line of engine `e`: time, memory and bytes read, each phase, the pairs' line."""
    out: list[tuple[int, str]] = []
    if e in s.time_fits:
        out.append((0, f"time {line_text(s.time_fits[e], 's', 1.0)}; peak RSS {line_text(s.memory_fits[e], 'MB', 1e6)}"
                       + (f"; bytes read (rchar, cached or not) {line_text(s.read_fits[e], 'MB', 1e6)}"
                          if e in s.read_fits and s.read_fits[e].n >= 2 else "")))
    out += [(1, f"phase {name}: {line_text(f, 's', 1.0)}") for name, f in s.phase_fits.get(e, {}).items()]
    if pair := pair_text(s, e):
        out.append((1, pair))
    return out


def count_markdown(s: CountSweepSummary, level: int = 3) -> str:
    opens = any(p.delete_opens is not None for p in s.points)
    out = [f"{'#' * level} {s.scenario}: file counts at scale {fmt_scale(s.scale)}", "",
           f"Run `{s.sweep_id}` (a count sweep, {s.state}), file scales "
           f"{', '.join(fmt_scale(f) for f in s.file_scales)}, "
           f"{s.reps} repetition{'s' if s.reps != 1 else ''} each, on {s.machine}; the data of scale "
           f"{fmt_scale(s.scale)} at every point (the generator's target; on disk and in rows, many small files' "
           "Parquet overhead shows: the input column).", "",
           "| engine | file scale | input files (data + pos + eq) | input on disk | status | time | peak RSS | "
           "read (rchar) | phases |" + (" delete-file opens |" if opens else ""),
           "|---|---|---|---|---|---|---|---|---|" + ("---|" if opens else "")]
    for p in s.points:
        c = point_cells(p)
        out.append(f"| {p.engine} | {fmt_scale(p.file_scale)} | {c['files']} | {c['bytes']} | {c['status']} | "
                   f"{c['time']} | {c['rss']} | {c['read']} | {c['phases']} |" + (f" {c['opens']} |" if opens else ""))
    out += ["", "Lines against the input's files (verified runs; a line, not a law):", ""]
    for e in s.engines:
        out += [f"{'  ' * depth}- {e + ': ' if not depth else ''}{text}" for depth, text in engine_lines(s, e)]
    out += [f"- {b.engine}: {budget_text(s, b)}" for b in s.budget_meets]
    return "\n".join(out) + "\n"


def counts_markdown(paths: list[Path]) -> str:
    return "\n".join(count_markdown(s) for s in _summaries(paths))
