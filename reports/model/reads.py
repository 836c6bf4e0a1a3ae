"""What readers gained: each reader query's time before and after each engine's compaction, over verified runs."""

from __future__ import annotations

from bench.core.results import QueryRead, RunResult
from bench.core.stats import median
from reports.model.loading import LoadedRun
from reports.model.view import ReadRow, ReadsView, ResultSet


def _query_reads(runs: list[LoadedRun], name: str) -> list[tuple[RunResult, QueryRead]]:
    return [(lr.r, q) for lr in runs if lr.r.reads is not None for q in lr.r.reads.queries if q.name == name]


def reads_view(rs: ResultSet) -> ReadsView | None:
    """What readers gained: per query, the before-time (median over the verified runs), the after-time
    per engine (median over its verified runs whose after-reads were measured) and the ratio of the
    medians.  Failed reads checks are listed from every measured run."""
    with_reads = [(lr, lr.r.reads) for lr in rs.measured if lr.r.reads is not None]
    if not with_reads:
        return None
    good = [lr for lr, rec in with_reads if lr.counts and rec.reader]
    names = list(dict.fromkeys(q.name for _, rec in with_reads for q in rec.queries))
    engines = [e for e in rs.engines if any(r.engine == e and r.reads is not None and r.reads.after_usable
                                            for r in (lr.r for lr in good))]
    rows = []
    for name in names:
        qs = _query_reads(good, name)
        row = ReadRow(query=name, sql=next((q.sql for _, q in qs), ""))
        before = [q.before_s for _, q in qs if q.before_s is not None]
        row.before_s, row.before_n = median(before), len(before)
        row.files_before = next((q.files_opened_before for _, q in qs if q.files_opened_before is not None), None)
        row.deletes_before = next((q.delete_files_merged_before for _, q in qs
                                   if q.delete_files_merged_before is not None), None)
        for e in engines:
            mine = [q for r, q in qs if r.engine == e and r.reads is not None and r.reads.after_usable
                    and q.after_s is not None]
            row.after_s[e], row.after_n[e] = median([q.after_s for q in mine]), len(mine)
            after = row.after_s[e]
            row.ratio[e] = row.before_s / after if row.before_s and after else None
            row.files_after[e] = mine[0].files_opened_after if mine else None
            row.deletes_after[e] = mine[0].delete_files_merged_after if mine else None
        rows.append(row)
    readers = sorted({f"{rec.reader or 'none'}: {rec.reader_reason}" for _, rec in with_reads})
    cache = sorted({f"{rec.cache} ({rec.cache_note})" if rec.cache_note else rec.cache for _, rec in with_reads})
    failures = [f"{lr.r.engine} {lr.r.tag}: {rec.message or rec.reader_reason}" for lr, rec in with_reads
                if not rec.ok]
    notes = sorted({f"{lr.r.engine}: {rec.after_note}" for lr, rec in with_reads if rec.after_note})
    source = next((q.counts_source for _, rec in with_reads for q in rec.queries if q.counts_source), "")
    return ReadsView(engines=engines, rows=rows, readers=readers, cache=cache, counts_source=source,
                     failures=failures, notes=notes)
