"""Partition placement of a table's live data files, read from the files themselves.

Iceberg requires every data file of a partitioned spec to hold rows of one partition only, and the
partition tuple recorded in its manifest entry (DataFile.partition) to be that partition: a reader
prunes by the recorded tuple, so a file with rows of another partition silently drops or duplicates
them under a filter, and no content checksum over the whole table notices.  This module checks both
for every live data file by reading the file's source columns (by Iceberg field id) and recomputing
each partition field with pyiceberg's own transform.  Pure functions: nothing is written; the runner
calls it through `bench.verify.checks.partition_checks` on every file a run wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.manifest import DataFile, DataFileContent
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.typedef import Record
from pyiceberg.types import DateType, IcebergType, TimestampType, TimestamptzType, TimeType

from bench.core.catalog.s3 import filesystem
from bench.core.table.entries import live_entries

FIELD_ID = b"PARQUET:field_id"


def _open_parquet(path: str) -> pq.ParquetFile:
    fs, p = filesystem(path)
    return pq.ParquetFile(fs.open_input_file(p))


def _column_by_id(pf: pq.ParquetFile, field_id: int) -> str | None:
    schema = pf.schema_arrow
    for name in schema.names:
        meta = schema.field(name).metadata or {}
        if meta.get(FIELD_ID) == str(field_id).encode():
            return name
    return None


def _internal(values: pa.Array, source: IcebergType) -> list[Any]:
    """Distinct values of a column in Iceberg's internal representation (what pyiceberg's transforms
    take): timestamps and times as microseconds, dates as days, numbers and strings as they are."""
    if isinstance(source, TimestampType | TimestamptzType) and pa.types.is_timestamp(values.type):
        per_us = {"s": (10**6, 1), "ms": (1000, 1), "us": (1, 1), "ns": (1, 1000)}[values.type.unit]
        ints = pc.cast(values, pa.int64()).to_pylist()
        return [None if v is None else v * per_us[0] // per_us[1] for v in ints]
    if isinstance(source, DateType) and pa.types.is_date(values.type):
        return pc.cast(values, pa.int32()).to_pylist()
    if isinstance(source, TimeType) and pa.types.is_time(values.type):  # microseconds from midnight
        div = {"s": (10**6, 1), "ms": (1000, 1), "us": (1, 1), "ns": (1, 1000)}[values.type.unit]
        ints = pc.cast(values, pa.int64()).to_pylist()
        return [None if v is None else v * div[0] // div[1] for v in ints]
    return values.to_pylist()


def _human(spec: PartitionSpec, schema: Schema, values: Iterable[Any]) -> str:
    ptype = spec.partition_type(schema)
    return "/".join(f"{f.name}={f.transform.to_human_string(t.field_type, v)}"
                    for f, t, v in zip(spec.fields, ptype.fields, values))


def _derived(pf: pq.ParquetFile, spec: PartitionSpec, schema: Schema) -> list[set[Any]] | str:
    """The distinct values of each partition field over a file's rows (recomputed with the spec's
    transforms from the source columns, read by field id), or what prevents it."""
    derived: list[set[Any]] = []
    for f in spec.fields:
        source = schema.find_field(f.source_id)
        column = _column_by_id(pf, f.source_id)
        if column is None:
            return f"no column with field id {f.source_id} ({source.name}), the source of partition field {f.name}"
        distinct = pc.unique(pf.read(columns=[column]).column(0).combine_chunks())
        to_partition = f.transform.transform(source.field_type)
        derived.append({to_partition(v) for v in _internal(distinct, source.field_type)})
    return derived


def rows_partition(pf: pq.ParquetFile, spec: PartitionSpec, schema: Schema) -> Record:
    """The one partition of a file's rows (ValueError when they span several, or a source column is
    missing): where pyiceberg cannot infer it from column bounds (bucket, truncate)."""
    derived = _derived(pf, spec, schema)
    if isinstance(derived, str):
        raise ValueError(derived)
    spans = [f"{f.name}: {sorted(vals, key=repr)[:5]}" for f, vals in zip(spec.fields, derived) if len(vals) > 1]
    if spans:
        raise ValueError(f"holds rows of more than one partition ({'; '.join(spans)})")
    return Record(*[next(iter(vals)) if vals else None for vals in derived])


def file_partition_problems(df: DataFile, spec: PartitionSpec, schema: Schema,
                            open_file: Callable[[str], pq.ParquetFile] = _open_parquet) -> list[str]:
    """What is wrong with one data file's partition placement ([] when nothing): its rows span more than
    one partition, or the tuple its DataFile records is not the partition of its rows."""
    if spec.is_unpartitioned():
        return []
    pf = open_file(df.file_path)
    if pf.metadata.num_rows == 0:
        return []
    recorded = [df.partition[i] for i in range(len(df.partition))]
    if len(recorded) != len(spec.fields):
        return [f"{df.file_path}: records a partition of {len(recorded)} values, spec {spec.spec_id} has "
                f"{len(spec.fields)} fields"]
    try:
        record = rows_partition(pf, spec, schema)
    except ValueError as exc:
        return [f"{df.file_path}: {exc}"]
    rows_in = [record[i] for i in range(len(record))]
    if rows_in != recorded:
        return [f"{df.file_path}: records partition {_human(spec, schema, recorded)} but its rows are in "
                f"{_human(spec, schema, rows_in)}"]
    return []


def partition_problems(tbl: Table, snapshot_id: int | None = None,
                       open_file: Callable[[str], pq.ParquetFile] = _open_parquet) -> list[str]:
    """Every partition-placement problem of the live data files of `tbl` (at `snapshot_id`, or its
    current snapshot): [] for a table whose every data file holds rows of one partition, the one its
    DataFile records.  Each file is checked against the spec it was written with (its spec id)."""
    specs, schema = tbl.specs(), tbl.schema()
    problems: list[str] = []
    for entry in live_entries(tbl, snapshot_id):
        df = entry.data_file
        if df.content != DataFileContent.DATA:
            continue
        problems += file_partition_problems(df, specs[df.spec_id], schema, open_file)
    return problems
