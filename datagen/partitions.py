"""Partitioned tables: the partition spec, which partitions exist at a scale, how many data
files each holds, and how a file's rows are confined to its partition.  Deterministic, no I/O, no
randomness: the same recipe and scale give the same layout.

Spec (`datagen.recipes.Partitioning.spec`), with pyiceberg's own transforms (pyiceberg.transforms), on
the partitioned schema (`datagen.schema.PARTITIONED_SCHEMA`: the table's columns plus event_date, the
UTC day of event_ts, like a daily table's `dt`):
    day         identity(event_date)
    hour        hour(event_ts)
    bucket      bucket(N, v1)                  v1 is a column of the key (v1, v2)
    day+bucket  identity(event_date), bucket(N, v1)

Time.  The table's newest period ends at 2026-01-01T00:00Z (exclusive); the period of age r (0 = the
newest) covers [END - (r+1) L, END - r L), L a day or an hour.  The k-th of the m files of a partition
covers the k-th m-th of its period (event_ts rising through it like a stream's); without a time field
(bucket) event_ts is as in an unpartitioned table.  With a bucket field a file's v1 values are drawn
from those pyiceberg's bucket transform puts in its bucket (`datagen.schema.bucket_members`).

Scale rule.  The table's kind gives n data files at scale s (its own rule: `datagen.smallfiles`,
`datagen.deletes`).  With B = buckets (1 without a bucket field), T1 = periods (1 without a time
field) and f = min_files_per_partition:
    T = min(T1, max(1, n // (f x B)))     time periods (the newest T of the T1)
    P = min(T x B, n)                      partitions (every bucket of each kept period, newest first)
so from scale 1 down to where n = T1 x B x f the table keeps all its partitions and their files shrink
in number (files per partition ~ n / P); below that the oldest periods go and each partition keeps
about f files on average.  Bucket counts never scale (N is part of the spec).

Files per partition (the skew).  Every partition holds at least one file; the other n - P files go by
weight w = 1 / (r + 1)^skew (r: the age of the partition's period; the buckets of one period alike), by
largest remainder, ties to the newer partition: most files in the most recent partitions, a long tail of
cold ones with a file or two (skew 0: uniform).  Files are written and committed oldest period first,
within a period bucket by bucket in turn, as a writer filling the table over time would.

A given partition count (`bench frontier --partitions`, `reshape`).  "P partitions" means the table has
exactly P partitions at the scale it is generated at.  The bucket count is part of the spec and is kept:
with a time field P must be a multiple of B and periods become P / B; with spec bucket alone (no time
field) the bucket count becomes P.  The table keeps its data files (the kind's scale rule) and must hold
at least f of them per partition (n >= P x f), else the scale rule would drop periods: then it is an error,
not a silently smaller table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, HourTransform, IdentityTransform, Transform
from pyiceberg.typedef import Record

from bench.core.dataset import PartitionTruth
from datagen.recipes import Partitioning
from datagen.schema import _EPOCH_US, DAY_US, PARTITIONED_SCHEMA, RowShape, bucket_members
from datagen.writer import FilePlan

HOUR_US = 3_600_000_000
END_US = _EPOCH_US + 365 * DAY_US  # 2026-01-01T00:00Z: where the newest period ends
FIRST_FIELD_ID = 1000


def _field(source: str, transform: Transform, name: str, i: int) -> PartitionField:
    return PartitionField(source_id=PARTITIONED_SCHEMA.find_field(source).field_id, field_id=FIRST_FIELD_ID + i,
                          transform=transform, name=name)


def partition_spec(p: Partitioning) -> PartitionSpec:
    """The table's partition spec (spec id 0), from pyiceberg's transforms."""
    fields: list[tuple[str, Transform, str]] = []
    if p.spec in ("day", "day+bucket"):
        fields.append(("event_date", IdentityTransform(), "event_date"))
    if p.spec == "hour":
        fields.append(("event_ts", HourTransform(), "event_ts_hour"))
    if p.spec in ("bucket", "day+bucket"):
        assert p.buckets is not None
        fields.append(("v1", BucketTransform(p.buckets), "v1_bucket"))
    return PartitionSpec(*(_field(s, t, n, i) for i, (s, t, n) in enumerate(fields)), spec_id=0)


def period_us(p: Partitioning) -> int:
    return {"day": DAY_US, "day+bucket": DAY_US, "hour": HOUR_US}.get(p.spec, 0)


def counts(p: Partitioning, n: int) -> tuple[int, int]:
    """(time periods T, partitions P) of a table of `n` data files (the scale rule)."""
    b = p.buckets or 1
    t = min(p.periods or 1, max(1, n // (p.min_files_per_partition * b)))
    return t, min(t * b, n)


def reshape(p: Partitioning, partitions: int, n: int, where: str = "the table") -> Partitioning:
    """`p` reshaped so that a table of `n` data files has exactly `partitions` partitions (the module
    docstring); ValueError saying why not when it cannot."""
    b = p.buckets or 1
    f = p.min_files_per_partition
    if partitions < 1:
        raise ValueError("give a positive count")
    if p.spec == "bucket":
        if not 2 <= partitions <= 1024:
            raise ValueError("spec bucket has one partition per bucket, and bucket(N) "
                             "takes 2 to 1024 buckets")
        new = p.model_copy(update={"buckets": partitions})
    else:
        if partitions % b:
            raise ValueError(f"spec {p.spec} has {b} buckets per {_unit(p)}, so the count "
                             f"must be a multiple of {b}")
        new = p.model_copy(update={"periods": partitions // b})
    if n < partitions * f:
        most = min(n // f, 1024) if p.spec == "bucket" else n // f // b * b
        raise ValueError(f"{where} has {n} data files, fewer than {partitions} x {f} "
                         f"(min_files_per_partition): at most {most} partitions there, or a larger scale")
    assert counts(new, n)[1] == partitions
    return new


def _unit(p: Partitioning) -> str:
    return "hour" if p.spec == "hour" else "day"


def files_per_partition(p: Partitioning, n: int) -> np.ndarray:
    """Data files of each partition, newest first (partition q: period q // B, bucket q % B)."""
    _, parts = counts(p, n)
    b = p.buckets or 1
    ages = np.arange(parts) // b
    weight = 1.0 / (ages + 1.0) ** p.skew
    share = weight / weight.sum() * (n - parts)
    out = np.floor(share).astype(np.int64)
    left = (n - parts) - int(out.sum())
    order = np.lexsort((np.arange(parts), -(share - out)))  # largest remainder first, ties to the newer
    out[order[:left]] += 1
    return out + 1


@dataclass(frozen=True, eq=False)
class PartitionLayout:
    """Which partition each data file is in, and what that partition is.  Arrays, so a plan that
    carries it pickles cheaply to the writers."""

    partitioning: Partitioning
    file_partition: np.ndarray  # data file i -> its partition (index into the arrays below)
    file_rank: np.ndarray  # data file i -> k: the k-th file of its partition
    partition_files: np.ndarray  # files per partition; partition q: period age q // B, bucket q % B

    @property
    def partitions(self) -> int:
        return len(self.partition_files)

    @property
    def buckets(self) -> int:
        return self.partitioning.buckets or 1

    def age(self, q: int) -> int:
        return q // self.buckets

    def bucket(self, q: int) -> int:
        return q % self.buckets

    def period_start(self, q: int) -> int:
        return END_US - (self.age(q) + 1) * period_us(self.partitioning)

    def shape(self, i: int) -> RowShape:
        """How data file i's rows stay in its partition."""
        q = int(self.file_partition[i])
        pbuckets = self.partitioning.buckets or 0
        length = period_us(self.partitioning)
        if not length:  # no time field: event_ts as in an unpartitioned table
            return RowShape(_EPOCH_US + i * 60_000_000, 60_000_000, pbuckets, self.bucket(q))
        m, k = int(self.partition_files[q]), int(self.file_rank[i])
        return RowShape(self.period_start(q) + k * length // m, (k + 1) * length // m - k * length // m,
                        pbuckets, self.bucket(q))

    def record(self, q: int) -> Record:
        """Partition q's tuple in Iceberg's representation, each value the transform (pyiceberg's) of a
        value of the source column the partition's rows hold."""
        spec = partition_spec(self.partitioning)
        start = self.period_start(q)
        source = {"event_date": start // DAY_US, "event_ts": start}
        if self.partitioning.buckets:
            source["v1"] = int(bucket_members(self.partitioning.buckets)[self.bucket(q)][0])
        values = []
        for f in spec.fields:
            col = PARTITIONED_SCHEMA.find_field(f.source_id)
            values.append(f.transform.transform(col.field_type)(source[col.name]))
        return Record(*values)

    def path(self, q: int, schema: Schema = PARTITIONED_SCHEMA) -> str:
        """Partition q as Iceberg spells it in paths, e.g. `event_date=2025-12-31/v1_bucket=3`."""
        return partition_spec(self.partitioning).partition_to_path(self.record(q), schema)


def layout(p: Partitioning, n: int) -> PartitionLayout:
    """The layout of a table of `n` data files (see the module docstring)."""
    per = files_per_partition(p, n)
    b = p.buckets or 1
    periods = len(per) // b + (1 if len(per) % b else 0)
    file_partition, file_rank = [], []
    for age in range(periods - 1, -1, -1):  # oldest period first
        qs = [q for q in range(age * b, min((age + 1) * b, len(per)))]
        for k in range(int(max(per[q] for q in qs))):
            for q in qs:  # bucket by bucket in turn
                if k < per[q]:
                    file_partition.append(q)
                    file_rank.append(k)
    return PartitionLayout(p, np.asarray(file_partition, np.int32), np.asarray(file_rank, np.int32), per)


def place(plans: list[FilePlan], lay: PartitionLayout, only: int | None = None) -> list[FilePlan]:
    """`plans` (data files by index) placed in their partitions: each gets its rows' shape, its
    partition's tuple and path (`only`: every plan is in that partition)."""
    qs = range(lay.partitions) if only is None else [only]
    records: dict[int, tuple[Any, ...]] = {q: tuple(cast(Iterable[Any], lay.record(q))) for q in qs}
    paths = {q: lay.path(q) for q in qs}
    out = []
    for p in plans:
        q = int(lay.file_partition[p.index])
        out.append(replace(p, shape=lay.shape(p.index), partition=records[q], partition_path=paths[q]))
    return out


class PartitionTally:
    """The per-partition ground truth, accumulated file by file (rows and checksums of what the
    generator wrote that no delete removes)."""

    def __init__(self, lay: PartitionLayout):
        self.lay = lay
        self.paths = [lay.path(q) for q in range(lay.partitions)]
        self.values = [list(cast(Iterable[Any], lay.record(q))) for q in range(lay.partitions)]
        self.rows = [0] * lay.partitions
        self.checksum = [0] * lay.partitions
        self.data_files = [0] * lay.partitions
        self.delete_files = [0] * lay.partitions

    def add_data(self, index: int, rows: int, checksum: int) -> None:
        q = int(self.lay.file_partition[index])
        self.rows[q] += rows
        self.checksum[q] += checksum
        self.data_files[q] += 1

    def add_deletes(self, index: int, files: int = 1) -> None:
        """Delete files written in data file `index`'s partition."""
        self.delete_files[int(self.lay.file_partition[index])] += files

    def truth(self) -> dict[str, PartitionTruth]:
        return {self.paths[q]: PartitionTruth(values=self.values[q], rows=self.rows[q],
                                              checksum=str(self.checksum[q]), data_files=self.data_files[q],
                                              delete_files=self.delete_files[q])
                for q in range(self.lay.partitions)}


def spec_text(p: Partitioning) -> str:
    """The spec in one line, e.g. `identity(event_date), bucket[4](v1)`."""
    return ", ".join(f"{f.transform}({PARTITIONED_SCHEMA.find_column_name(f.source_id)})"
                     for f in partition_spec(p).fields)
