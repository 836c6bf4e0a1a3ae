"""The append sink writer of the `sink-*` streaming scenarios: an append-only streaming sink (the shape of an
Iceberg connector such as Rivven's, built on iceberg-rust) on top of a generated dataset, the same for every
engine, and the table every commit must leave (from the generator, never read from the table).

The sink (`AppendSink`, the scenario's `streaming.sink`):
    batch_size              a flush when this many events are buffered ...
    flush_interval_s        ... or when this many seconds passed since the last flush, whichever comes first
    target_file_size_bytes  a flush's rows of one partition roll to a new Parquet file at this size
    codec                   the Parquet codec of its files
    retry_backoff_ms        each flush is one fast_append commit; on a commit conflict it is retried after
                            100, 200, then 400 ms (the default), then the flush fails
The partitioning is the table's partition spec, whatever its transforms (identity, bucket, year, month, day,
hour: pyiceberg's own transforms decide each row's partition); an unpartitioned table gets one file per flush
(or more, rolled).

Time compression (the scale rule).  The sink's figures are a real sink's, over a stream of `events_per_s`
events per second (at scale 1).  A flush happens every p = min(flush_interval_s, batch_size / events_per_s)
stream seconds and holds events_per_s x p events; a maintenance cycle is `cycle_s` stream seconds, so
round(cycle_s / p) flushes.  Time is compressed: the writer commits its flushes one after the other (sequential
mode) or one every p / time_compression wall seconds (concurrent and branch modes).  --scale is a pure volume
factor: rows per flush (at least MIN_ROWS) and the rolling size are multiplied by it, the flushes per cycle
are not, so a preset makes the same number of flushes and files at every scale.

Rows.  Flush c holds rows_per_flush rows made by `datagen.schema.make_rows` (file index SINK_FILE_BASE + c,
keys v2 = STREAM_KEY_BASE + c x rows_per_flush + i), their event times rising through the flush's window of
stream time, which starts at 2026-01-01T00:00Z (where the dataset's newest period ends); a seeded `late_share`
of them are late by up to `late_window_s` (late events: with a day partition, into yesterday's partition).
Everything is deterministic from (dataset seed, flush index).  The expected table after every commit is the
dataset's plus every row of every flush that landed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.manifest import DataFile
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.checksum import column_hashes, combine, exact_sum
from bench.core.dataset import GeneratedTable
from bench.core.records.live import SinkRecord
from bench.core.records.reads import ReadQuery
from datagen.partitions import END_US
from datagen.recipes import Codec
from datagen.schema import PARTITIONED_SCHEMA, SCHEMA, RowShape, make_rows, pools_for
from datagen.streaming import STREAM_KEY_BASE, SUMMARY_KEY, Expected, StreamCommit
from datagen.writer import CODEC_PROPERTIES, write_rows

SINK_FILE_BASE = 2**30  # the generator's file index of flush c's rows: SINK_FILE_BASE + c
MIN_ROWS = 10
SECOND_US = 1_000_000
NO_RETRIES = ("commit.retry.num-retries", "0")  # pyiceberg's own retries of a commit (TableProperties)


class AppendSink(BaseModel):
    """An append-only streaming sink (see the module's docstring); figures at scale 1, a real sink's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    preset: str = ""  # a label for reports (e.g. low-latency)
    batch_size: int = Field(10_000, ge=1)
    flush_interval_s: float = Field(60.0, gt=0)
    target_file_size_bytes: int = Field(128 * 1024 * 1024, ge=1)
    codec: Codec = "snappy"
    events_per_s: float = Field(100.0, gt=0)  # the stream's event rate at scale 1
    cycle_s: float = Field(600.0, gt=0)  # stream seconds between two maintenance steps
    time_compression: float = Field(60.0, gt=0)  # stream seconds per wall second (concurrent and branch modes)
    late_share: float = Field(0.0, ge=0.0, le=1.0)  # events late by up to late_window_s
    late_window_s: float = Field(86_400.0, ge=0.0)
    retry_backoff_ms: list[int] = Field(default_factory=lambda: [100, 200, 400])

    @property
    def flush_s(self) -> float:
        """Stream seconds between two flushes: the batch fills or the interval passes, whichever first."""
        return min(self.flush_interval_s, self.batch_size / self.events_per_s)

    def at(self, scale: float) -> SinkShape:
        """The sink at `scale` (the scale rule)."""
        rows = max(MIN_ROWS, int(round(min(self.batch_size, self.events_per_s * self.flush_s) * scale)))
        return SinkShape(rows_per_flush=rows, flushes_per_cycle=max(1, int(round(self.cycle_s / self.flush_s))),
                         target_file_bytes=max(1, int(round(self.target_file_size_bytes * scale))),
                         flush_us=int(self.flush_s * SECOND_US), cadence_s=self.flush_s / self.time_compression,
                         codec=self.codec, late_share=self.late_share, late_us=int(self.late_window_s * SECOND_US),
                         backoff_s=tuple(ms / 1000 for ms in self.retry_backoff_ms))

    def record(self, scale: float, spec: str) -> SinkRecord:
        s = self.at(scale)
        return SinkRecord(preset=self.preset, batch_size=self.batch_size, flush_interval_s=self.flush_interval_s,
                          target_file_size_bytes=self.target_file_size_bytes, codec=self.codec,
                          events_per_s=self.events_per_s, flush_s=self.flush_s, cycle_s=self.cycle_s,
                          rows_per_flush=s.rows_per_flush, flushes_per_cycle=s.flushes_per_cycle,
                          target_file_bytes_at_scale=s.target_file_bytes, cadence_s=round(s.cadence_s, 4),
                          partitioning=spec, retry_backoff_ms=list(self.retry_backoff_ms))


@dataclass(frozen=True)
class SinkShape:
    """The sink at the run's scale."""

    rows_per_flush: int
    flushes_per_cycle: int
    target_file_bytes: int
    flush_us: int
    cadence_s: float
    codec: str = "snappy"
    late_share: float = 0.0
    late_us: int = 0
    backoff_s: tuple[float, ...] = (0.1, 0.2, 0.4)


@dataclass
class FlushPlan:
    index: int
    rows: pa.Table  # in the table's schema
    hashes: np.ndarray
    groups: list[tuple[Record, np.ndarray]]  # (partition, row indices), in partition order


def flush_rows(seed: int, shape: SinkShape, index: int, schema: Schema) -> pa.Table:
    """Flush `index`'s rows in `schema` (see the module's docstring)."""
    n = shape.rows_per_flush
    start = END_US + index * shape.flush_us
    rows = make_rows(pools_for(seed), seed, SINK_FILE_BASE + index, n, STREAM_KEY_BASE + index * n,
                     RowShape(start, max(1, shape.flush_us)))
    rng = np.random.default_rng([seed, 104729, index])
    late = rng.random(n) < shape.late_share
    if late.any() and shape.late_us:
        ts = rows.column("event_ts").cast(pa.int64()).to_numpy().copy()
        ts[late] -= rng.integers(0, shape.late_us, int(late.sum()))
        rows = rows.set_column(3, rows.schema.field(3), pa.array(ts, pa.int64()).cast(pa.timestamp("us")))
        day = pa.array((ts // (86_400 * SECOND_US)).astype(np.int32), pa.int32()).cast(pa.date32())
        rows = rows.set_column(rows.schema.get_field_index("event_date"), rows.schema.field("event_date"), day)
    names = [f.name for f in schema.fields]
    return rows.select(names)


def _source_ints(col: pa.ChunkedArray) -> np.ndarray:
    """A column as Iceberg's transforms take it: dates as days, timestamps as microseconds."""
    if pa.types.is_date32(col.type):
        col = col.cast(pa.int32())
    elif pa.types.is_timestamp(col.type):
        col = col.cast(pa.int64())
    return col.to_numpy()


def partition_groups(rows: pa.Table, spec: PartitionSpec, schema: Schema) -> list[tuple[Record, np.ndarray]]:
    """The rows of each partition of `spec` (pyiceberg's transforms on each row's source values), in the order of
    the partitions' values; an unpartitioned spec is one group."""
    if not spec.fields:
        return [(Record(), np.arange(rows.num_rows))]
    keys = []
    for f in spec.fields:
        field = schema.find_field(f.source_id)
        values = _source_ints(rows.column(field.name))
        uniq, inverse = np.unique(values, return_inverse=True)
        fn = f.transform.transform(field.field_type)
        keys.append(np.asarray([fn(int(v)) for v in uniq], dtype=object)[inverse])
    tuples = list(zip(*keys))
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate(tuples):
        groups.setdefault(t, []).append(i)
    return [(Record(*t), np.asarray(groups[t])) for t in sorted(groups, key=lambda t: tuple(map(str, t)))]


def roll(rows: pa.Table, write: Callable[[pa.Table, int], DataFile], target_bytes: int) -> list[DataFile]:
    """One partition's rows of a flush as files of at most about `target_bytes` (the rolling writer): written as
    one file; when it is larger than the target, written again as ceil(size / target) files of equal row counts
    (`write(rows, k)` writes part k)."""
    first = write(rows, 0)
    parts = min(rows.num_rows, math.ceil(first.file_size_in_bytes / target_bytes))
    if parts <= 1:
        return [first]
    bounds = [rows.num_rows * k // parts for k in range(parts + 1)]
    return [write(rows.slice(bounds[k], bounds[k + 1] - bounds[k]), k) for k in range(parts)]


def commit_with_retry(attempt: Callable[[], int], backoff_s: Sequence[float], rec: StreamCommit,
                      sleep: Callable[[float], None] = time.sleep) -> None:
    """The sink's retry policy: `attempt()` commits and returns the snapshot id; on a commit conflict
    (CommitFailedException) it is tried again after each of `backoff_s`, then the commit fails.  Any other error
    fails it at once.  Each conflict is in rec.conflicts; rec.attempts counts the tries."""
    for i in range(len(backoff_s) + 1):
        rec.attempts += 1
        try:
            rec.snapshot_id = attempt()
            return
        except CommitFailedException as e:
            rec.conflicts.append(f"CommitFailedException: {e}"[:300])
            if i == len(backoff_s):
                rec.error = f"failed after {rec.attempts} attempts: {rec.conflicts[-1]}"
                return
            sleep(backoff_s[i])
        except Exception as e:  # noqa: BLE001 - not a conflict: the flush fails, recorded
            rec.error = f"{type(e).__name__}: {e}"[:300]
            return


class AppendWriter:
    """The sink's state and flushes (one fast_append commit per `commit()`, pyiceberg on the SQLite catalog);
    `expected()` is the table after the last flush that landed.  The interface of datagen.streaming's writer."""

    def __init__(self, ds: GeneratedTable, settings: CatalogSettings, shape: SinkShape, prefix: str,
                 base_answers: dict[str, list[str]], branch: str = "main", sleep: Callable[[float], None] = time.sleep):
        self.ds, self.settings, self.shape, self.prefix, self.branch, self.sleep = (
            ds, settings, shape, prefix, branch, sleep)
        self.props = {"write.parquet.compression-codec": CODEC_PROPERTIES.get(shape.codec, shape.codec)}
        self.base_rows, self.base_sum = ds.ground_truth.rows, int(ds.ground_truth.checksum)
        self.base_quantity = int(base_answers["full-scan"][1])
        n = shape.rows_per_flush
        self.queries = [ReadQuery(name="full-scan"),
                        ReadQuery(name="key-range", lo=STREAM_KEY_BASE, hi=STREAM_KEY_BASE + n - 1),
                        ReadQuery(name="point-lookup", lo=STREAM_KEY_BASE + n // 2, hi=STREAM_KEY_BASE + n // 2)]
        self.commits: list[StreamCommit] = []
        self.rows = self.checksum = self.quantity = 0
        self.range_rows = self.range_quantity = 0  # the key-range query's answer
        self.point_hash: int | None = None
        self.catalog: Any = None
        self.schema, self.spec = SCHEMA, PartitionSpec()

    def __enter__(self) -> AppendWriter:
        self.catalog = load_sql_catalog(self.settings)
        tbl = self.catalog.load_table(self.ds.table)
        self.spec = tbl.spec()
        self.schema = PARTITIONED_SCHEMA if tbl.schema().find_field("event_date", case_sensitive=False) else SCHEMA
        return self

    def __exit__(self, *exc: object) -> None:
        engine = getattr(self.catalog, "engine", None)
        if engine is not None:
            engine.dispose()
        self.catalog = None

    def plan(self, index: int) -> FlushPlan:
        rows = flush_rows(self.ds.seed, self.shape, index, self.schema)
        return FlushPlan(index, rows, combine(column_hashes(rows)), partition_groups(rows, self.spec, self.schema))

    def _write(self, p: FlushPlan) -> list[DataFile]:
        out: list[DataFile] = []
        for g, (record, idx) in enumerate(p.groups):
            sub = f"{self.spec.partition_to_path(record, self.schema)}/" if self.spec.fields else ""
            base = f"{self.ds.location}/data/{sub}stream-{self.prefix}-{p.index:06d}-{g:03d}"

            def write(rows: pa.Table, k: int, base: str = base, record: Record = record) -> DataFile:
                return write_rows(f"{base}-{k:03d}.parquet", self.props, rows, self.schema,
                                  spec_id=self.spec.spec_id, partition=tuple(record))  # type: ignore[arg-type]
            out += roll(p.rows.take(pa.array(idx)), write, self.shape.target_file_bytes)
        return out

    def _load(self) -> Any:
        """The table as the catalog has it, with pyiceberg's own commit retries off (in memory only: the catalog's
        table is unchanged), so that a conflict is the sink's to retry (its policy, `commit_with_retry`)."""
        tbl = self.catalog.load_table(self.ds.table)
        tbl.metadata = tbl.metadata.model_copy(update={"properties": {**tbl.metadata.properties,
                                                                      NO_RETRIES[0]: NO_RETRIES[1]}})
        return tbl

    def _attempt(self, files: list[DataFile], index: int) -> int:
        """One fast_append of `files` on a freshly loaded table; its snapshot id."""
        tbl = self._load()
        with tbl.transaction() as tx, tx.update_snapshot(snapshot_properties={SUMMARY_KEY: str(index)},
                                                         branch=self.branch).fast_append() as fa:
            for f in files:
                fa.append_data_file(f)
        return int(tbl.metadata.refs[self.branch].snapshot_id)

    def commit(self, index: int) -> StreamCommit:
        """Plan, write and commit flush `index` (the retry policy: `commit_with_retry`); the state moves on only
        when it landed."""
        assert self.catalog is not None, "use the writer in a `with` block"
        p = self.plan(index)
        files = self._write(p)
        rec = StreamCommit(index=index, append_only=True, rows_inserted=p.rows.num_rows, rows_updated=0,
                           rows_deleted=0, bytes=sum(f.file_size_in_bytes for f in files), files=len(files),
                           started_unix=time.time())
        t0 = time.perf_counter()
        commit_with_retry(lambda: self._attempt(files, index), self.shape.backoff_s, rec, self.sleep)
        rec.commit_s = round(time.perf_counter() - t0, 4)
        if rec.landed:
            self._apply(p)
            rec.expected_rows, rec.expected_checksum = self.base_rows + self.rows, str(self.base_sum + self.checksum)
        self.commits.append(rec)
        return rec

    def _apply(self, p: FlushPlan) -> None:
        v2 = p.rows.column("v2").to_numpy()
        qty = p.rows.column("quantity").to_numpy(zero_copy_only=False).astype(np.int64)
        self.rows += p.rows.num_rows
        self.checksum += exact_sum(p.hashes)
        self.quantity += int(qty.sum())
        q, point = self.queries[1], self.queries[2]
        assert q.lo is not None and q.hi is not None
        in_range = (v2 >= q.lo) & (v2 <= q.hi)
        self.range_rows += int(in_range.sum())
        self.range_quantity += int(qty[in_range].sum())
        hit = np.flatnonzero(v2 == point.lo)
        if len(hit):
            self.point_hash = exact_sum(p.hashes[hit[:1]])

    def expected(self) -> Expected:
        """The table after the sink's last landed flush, and the reader queries' answers."""
        answers = {"full-scan": [str(self.base_rows + self.rows), str(self.base_quantity + self.quantity)],
                   "key-range": [str(self.range_rows), str(self.range_quantity)],
                   "point-lookup": ["1", str(self.point_hash)] if self.point_hash is not None else ["0", "0"]}
        return Expected(rows=self.base_rows + self.rows, checksum=str(self.base_sum + self.checksum), answers=answers)
