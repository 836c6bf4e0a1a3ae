"""A count sweep (bench.count_sweep, its counts.json) as Markdown: the points per engine and file scale, the
lines of time, peak memory and each phase against the input's files, and where each memory line meets the
budget.  Reads the summary alone; the text depends on it only (no clock, no absolute path)."""

from __future__ import annotations

from pathlib import Path

from bench.core.count_campaign import COUNTS_FILE, CountSweepSummary, read_counts
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


def _line(f: Fit, unit: str, k: float) -> str:
    if f.n < 2:
        return f"— ({f.note})"
    r2 = f"R² {f.r2:.2f}" if f.r2 is not None else "flat"
    return (f"{f.fixed / k:,.1f} {unit} + {f.per_gb / k * 1000:,.2f} {unit} per 1,000 files ({r2}, {f.n} runs"
            + (", poor" if f.poor else "") + ")")


def count_markdown(s: CountSweepSummary, level: int = 3) -> str:
    out = [f"{'#' * level} {s.scenario}: file counts at scale {fmt_scale(s.scale)}", "",
           f"Run `{s.sweep_id}` (a count sweep, {s.state}), file scales "
           f"{', '.join(fmt_scale(f) for f in s.file_scales)}, "
           f"{s.reps} repetition{'s' if s.reps != 1 else ''} each, on {s.machine}; the bytes and rows of scale "
           f"{fmt_scale(s.scale)} at every point.", "",
           "| engine | file scale | input files (data + pos + eq) | input on disk | status | time | peak RSS | "
           "read (rchar) | phases |",
           "|---|---|---|---|---|---|---|---|---|"]
    for p in s.points:
        t = f"{p.duration_s.median:.1f} s" if p.duration_s.median is not None else "—"
        m = fmt_bytes(int(p.peak_rss_bytes.median)) if p.peak_rss_bytes.median else "—"
        ph = ", ".join(f"{k} {v:.1f} s" for k, v in p.phases_s.items()) or "—"
        rc = fmt_bytes(int(p.read_chars.median)) if p.read_chars.median else "—"
        out.append(f"| {p.engine} | {fmt_scale(p.file_scale)} | {p.files:,} ({p.data_files:,} + "
                   f"{p.position_delete_files:,} + {p.equality_delete_files:,}) | {fmt_bytes(p.bytes)} | "
                   f"{', '.join(sorted(set(p.statuses)))} | {t} | {m} | {rc} | {ph} |")
    out += ["", "Lines against the input's files (verified runs; a line, not a law):", ""]
    for e in s.engines:
        if e in s.time_fits:
            out.append(f"- {e}: time {_line(s.time_fits[e], 's', 1.0)}; peak RSS {_line(s.memory_fits[e], 'MB', 1e6)}"
                       + (f"; bytes read (rchar, cached or not) {_line(s.read_fits[e], 'MB', 1e6)}"
                          if e in s.read_fits and s.read_fits[e].n >= 2 else ""))
        for name, f in s.phase_fits.get(e, {}).items():
            out.append(f"  - phase {name}: {_line(f, 's', 1.0)}")
        pr, pt = s.pair_read_fits.get(e), s.pair_time_fits.get(e)
        if pr is not None and pt is not None and pr.n >= 2:
            out.append(f"  - against data files x equality-delete files: bytes read R² "
                       f"{pr.r2 if pr.r2 is not None else 0:.2f} ({pr.per_gb:,.0f} bytes per pair), time R² "
                       f"{pt.r2 if pt.r2 is not None else 0:.2f}")
    for b in s.budget_meets:
        mf = s.memory_fits.get(b.engine)
        poor = ", from a poor memory line" if mf is not None and mf.poor else ""
        where = (f"reaches the budget {fmt_bytes(b.budget_bytes)} at ~{b.files:,.0f} input files{poor}"
                 if b.files is not None and b.files > 0 else
                 f"is above the budget {fmt_bytes(b.budget_bytes)} already at the smallest table{poor}"
                 if b.files is not None else f"does not reach the budget {fmt_bytes(b.budget_bytes)}")
        out.append(f"- {b.engine}: memory {where} ({b.note})")
    return "\n".join(out) + "\n"


def counts_markdown(paths: list[Path]) -> str:
    return "\n".join(count_markdown(s) for s in _summaries(paths))
