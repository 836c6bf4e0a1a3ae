"""Read amplification: the reader queries timed before and after a compaction, and their answers."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

READ_QUERIES: tuple[str, ...] = ("full-scan", "key-range", "point-lookup", "recent-partition")


class ReadQuery(BaseModel):
    """One reader query over the key column v2 (bench.reads builds its SQL; datagen its ground truth):
    full-scan (no bounds), key-range (v2 BETWEEN lo AND hi), point-lookup (v2 = lo = hi); and on a
    time-partitioned table recent-partition: count and sum over the newest period (`column` >= `literal`,
    `lo` the same bound in Iceberg's representation of the column: days or microseconds)."""

    name: Literal["full-scan", "key-range", "point-lookup", "recent-partition"]
    lo: int | None = None
    hi: int | None = None
    column: str | None = None  # recent-partition: the time column
    literal: str | None = None  # recent-partition: its lower bound as a SQL literal, e.g. DATE '2025-12-31'


class QueryRead(BaseModel):
    """One query timed on the table before compaction and after it, with the same reader and cache
    policy.  Answers: [count, sum(quantity)] for the aggregates; [rows, content checksum] (as
    bench.core.checksum) of the fetched rows for the point lookup; as strings (exact big integers)."""

    name: str
    sql: str
    before_s: float | None = None
    after_s: float | None = None
    ratio: float | None = None  # before_s / after_s: > 1 means the reader gained from the compaction
    before: list[str] | None = None
    after: list[str] | None = None
    truth: list[str] = Field(default_factory=list)  # from the generator, never read from the table
    ok: bool = False  # every answer measured equals the truth (before, and after when measured)
    message: str = ""
    files_opened_before: int | None = None
    files_opened_after: int | None = None
    delete_files_merged_before: int | None = None
    delete_files_merged_after: int | None = None
    counts_source: str = ""  # how files opened / delete files merged were obtained


class ReadsRecord(BaseModel):
    """Read amplification: reader queries timed before the compaction (the dataset snapshot) and after
    it (the snapshot verified).  The timings are a separate measurement; the answers after are a check of the
    output (`reader_queries`, bench.runner.reads.answers_check)."""

    reader: str = ""  # duckdb-iceberg | spark-sql | "" (none could read the table)
    reader_reason: str = ""  # why this reader (or `reader unavailable: <why>`)
    cache: str = ""  # cold | warm | none: as the run's cache policy, applied before each timed query
    cache_note: str = ""
    truth_source: str = ""
    ok: bool = False  # every query's answers equal the truth, and before equals after
    message: str = ""  # what failed, when not ok
    after_measured: bool = False
    after_note: str = ""  # why after is missing, or that the run was unverified
    after_usable: bool = False  # after timings may enter statistics: the run was ok and verified
    queries: list[QueryRead] = Field(default_factory=list)

    def query(self, name: str) -> QueryRead | None:
        return next((q for q in self.queries if q.name == name), None)
