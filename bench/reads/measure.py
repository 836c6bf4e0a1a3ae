"""Before and after: choose the reader once (on the uncompacted input), time the queries, count files
from the manifests, check the answers.

A fixed set of reader queries (`bench.core.records.reads.ReadQuery`: full scan aggregate, a ~1 % key range,
a point lookup) is timed on the table before the compaction (the dataset snapshot) and after it (the
snapshot the verifier checked), with the same reader and cache policy, and every answer is checked
against the generator's truth (computed by datagen and handed in by the runner: nothing here reads
datagen).  Readers: DuckDB's iceberg extension through the REST catalog (`duck`), or, where its
equality-delete work is too large, Spark SQL in a subprocess (`spark`).  Files opened and delete files
merged come from the snapshot's manifests (`scan_counts`).  Depends on bench.core only.

    rec = read_before(tbl, settings, queries, truth, cache_mode)      # after the reset
    read_after(rec, tbl, settings, queries, truth, usable=verified)   # after verification
"""

from __future__ import annotations

from typing import Any, cast

from pyiceberg.conversions import from_bytes
from pyiceberg.table import Table

from bench.core.catalog import CatalogSettings
from bench.core.records.reads import QueryRead, ReadQuery, ReadsRecord
from bench.core.table.deletes import (
    DUCKDB_ICEBERG_EQ_WORK_LIMIT,
    equality_delete_work,
    is_global,
    position_targets,
    read_position_targets,
    scope,
    seq,
)
from bench.core.table.entries import LiveFiles, live_files
from bench.reads import duck, spark
from bench.reads.queries import check, query_sql

CACHE_NOTES = {"cold": "sync + drop the page cache right before each timed query",
               "warm": "one untimed run of each query, then the timed one",
               "none": "S3 warehouse, no local page cache: one untimed run, then the timed one"}


def choose_reader(tbl: Table, settings: CatalogSettings, files, forced: str = "auto") -> tuple[str, str]:
    """(reader, why): DuckDB unless its equality-delete work is above its limit (or `forced` is
    spark-sql), then Spark SQL."""
    work = equality_delete_work(files, tbl.specs())
    if work > DUCKDB_ICEBERG_EQ_WORK_LIMIT or forced == spark.NAME:
        why = (f"{work:.3g} row x equality-key comparisons exceed DuckDB's iceberg limit of "
               f"{DUCKDB_ICEBERG_EQ_WORK_LIMIT:.3g} (duckdb-iceberg#626)" if forced != spark.NAME
               else "asked for (--readers spark-sql)")
        problem = spark.unavailable(settings)
        if problem:
            return "", f"reader unavailable: {why}; Spark SQL cannot read instead: {problem}"
        return spark.NAME, f"Spark SQL (local session, JdbcCatalog): {why}"
    if not settings.rest_uri:
        return "", "reader unavailable: DuckDB reads through a REST catalog and none is served"
    return duck.NAME, (f"DuckDB's iceberg extension through the REST catalog ({work:.3g} row x equality-key "
                       f"comparisons, within its limit)")


def _run(reader: str, settings: CatalogSettings, table: str, queries: list[ReadQuery],
         cache_mode: str) -> dict[str, tuple[list[str], float]]:
    if reader == duck.NAME:
        return duck.run_queries(settings, table, queries, cache_mode)
    return spark.run_queries(settings, table, queries, cache_mode)


def _table_name(tbl: Table) -> str:
    return ".".join(tuple(tbl.name())[-2:])


def read_before(tbl: Table, settings: CatalogSettings, queries: list[ReadQuery], truth: dict[str, list[str]],
                cache_mode: str, truth_source: str = "", reader: str = "auto") -> ReadsRecord:
    """Time the queries on the table as it is (the dataset snapshot), with the reader chosen for it."""
    files = live_files(tbl)
    reader, why = choose_reader(tbl, settings, files, reader)
    rec = ReadsRecord(reader=reader, reader_reason=why, cache=cache_mode, cache_note=CACHE_NOTES.get(cache_mode, ""),
                      truth_source=truth_source)
    counts = scan_counts(tbl, queries, files)
    table = _table_name(tbl)
    answers = _run(reader, settings, table, queries, cache_mode) if reader else {}
    for q in queries:
        ref = duck.table_ref(table) if reader != spark.NAME else spark.table_ref(table)
        qr = QueryRead(name=q.name, sql=query_sql(q, ref), counts_source=COUNTS_SOURCE,
                       files_opened_before=counts[q.name][0], delete_files_merged_before=counts[q.name][1])
        if q.name in answers:
            qr.before, qr.before_s = answers[q.name]
        rec.queries.append(qr)
    return check(rec, truth)


def read_after(rec: ReadsRecord, tbl: Table, settings: CatalogSettings, queries: list[ReadQuery],
               truth: dict[str, list[str]], usable: bool, note: str = "") -> ReadsRecord:
    """Time the same queries on the compacted table with the same reader and cache policy; `usable`:
    the run was verified (an unverified run's after-timings never enter statistics)."""
    if not rec.reader:
        return skip_after(rec, rec.reader_reason)
    files = live_files(tbl)
    counts = scan_counts(tbl, queries, files)
    answers = _run(rec.reader, settings, _table_name(tbl), queries, rec.cache)
    for qr in rec.queries:
        qr.files_opened_after, qr.delete_files_merged_after = counts[qr.name]
        if qr.name in answers:
            qr.after, qr.after_s = answers[qr.name]
            if qr.before_s and qr.after_s:
                qr.ratio = qr.before_s / qr.after_s
    rec.after_measured, rec.after_usable = True, usable
    rec.after_note = note or ("" if usable else "the run was not verified: its after-timings are not used in "
                                                "statistics")
    return check(rec, truth)


def skip_after(rec: ReadsRecord, why: str) -> ReadsRecord:
    rec.after_measured, rec.after_usable, rec.after_note = False, False, why
    return rec


def summary_line(rec: ReadsRecord) -> str:
    """One line for the runner's log."""
    if not rec.reader:
        return f"reads: {rec.reader_reason}"
    parts = []
    for q in rec.queries:
        b = f"{q.before_s:.3f} s" if q.before_s is not None else "-"
        a = f" -> {q.after_s:.3f} s ({q.ratio:.2f}x)" if q.after_s is not None and q.ratio else ""
        files = f", files {q.files_opened_before}" + (f" -> {q.files_opened_after}"
                                                      if q.files_opened_after is not None else "")
        parts.append(f"{q.name} {b}{a}{files}")
    verdict = "answers = truth" if rec.ok else f"READS CHECK FAILED: {rec.message}"
    return f"reads ({rec.reader}, {rec.cache}): " + "; ".join(parts) + f"; {verdict}" + (
        f" [{rec.after_note}]" if rec.after_note else "")


COUNTS_SOURCE = ("computed from the snapshot's manifests (data files whose column bounds overlap the predicate: v2, "
                 "or the time column of recent-partition; delete files that apply to them by the Iceberg v2 rules), "
                 "not reported by the reader")


def _overlaps(df, field_id: int, field_type, lo: int | None, hi: int | None) -> bool:
    if lo is None and hi is None:
        return True
    low, high = (df.lower_bounds or {}).get(field_id), (df.upper_bounds or {}).get(field_id)
    if low is None or high is None:
        return True  # no bounds: the file must be opened
    # the queries' columns decode to ints: the key (an integer), a date (days), a timestamp (microseconds)
    fmin, fmax = cast(int, from_bytes(field_type, low)), cast(int, from_bytes(field_type, high))
    return not ((hi is not None and fmin > hi) or (lo is not None and fmax < lo))


def scan_counts(tbl: Table, queries: list[ReadQuery], files: LiveFiles | None = None) -> dict[str, tuple[int, int]]:
    """Per query: (data files opened, delete files merged) on the table's current snapshot."""
    files = files or live_files(tbl)
    field = tbl.schema().find_field("v2")
    specs = tbl.specs()
    unknown = [e.data_file.file_path for e in files.position if position_targets(e.data_file) is None]
    read = read_position_targets(unknown)
    targets = {e.data_file.file_path: position_targets(e.data_file) or read.get(e.data_file.file_path, [])
               for e in files.position}
    out: dict[str, tuple[int, int]] = {}
    for q in queries:
        f = tbl.schema().find_field(q.column) if q.column else field  # recent-partition: its time column
        opened = [e for e in files.data if _overlaps(e.data_file, f.field_id, f.field_type, q.lo, q.hi)]
        seq_of = {e.data_file.file_path: seq(e) for e in opened}
        merged = sum(1 for p in files.position
                     if any(t in seq_of and seq_of[t] <= seq(p) for t in targets[p.data_file.file_path]))
        merged += equality_merged(files.equality, opened, specs)
        out[q.name] = (len(opened), merged)
    return out


def equality_merged(equality: list, opened: list, specs: dict[int, Any]) -> int:
    """How many equality-delete files a reader merges into the data files it opened: one applies to an opened
    file with a smaller sequence number, of its partition unless it is global.  The oldest opened file per
    partition answers for all (linear: at the published 20k + 20k counts the pairwise test took hours)."""
    oldest: dict[tuple, int] = {}
    for d in opened:
        key = scope(d.data_file)
        oldest[key] = min(oldest.get(key, seq(d)), seq(d))
    first = min(oldest.values(), default=None)
    n = 0
    for x in equality:
        if is_global(x.data_file, specs):
            n += first is not None and seq(x) > first
        elif scope(x.data_file) in oldest:
            n += seq(x) > oldest[scope(x.data_file)]
    return n
