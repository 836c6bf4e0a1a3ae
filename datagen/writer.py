"""Writing a generated table: Parquet files with pyiceberg's writer, on a pool of processes, and
fast-append commits in writer checkpoints."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from pyiceberg.io.pyarrow import ParquetFormatModel, PyArrowFileIO
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.typedef import Record

from bench.core.catalog.s3 import fileio_properties, is_s3
from bench.core.checksum import exact_sum
from bench.core.children import pool_initializer
from datagen.recipes import DeletesRecipe, SmallFilesRecipe
from datagen.schema import PARTITIONED_SCHEMA, SCHEMA, KeyOrder, RowShape, make_rows, pools_for, row_hashes


@dataclass(frozen=True)
class FilePlan:
    """One data file to generate: its index, row count and first key (v2) offset; in a partitioned table
    also how its rows stay in its partition, the partition's tuple and its path (datagen.partitions)."""

    index: int
    rows: int
    key_offset: int
    shape: RowShape | None = None
    partition: tuple[int, ...] | None = None  # the partition tuple, Iceberg's representation
    partition_path: str | None = None  # e.g. event_date=2025-12-31/v1_bucket=3
    keys: KeyOrder | None = None  # a table with a sort order: the order its keys arrive in (v2 scattered)

    @property
    def schema(self) -> Schema:
        return SCHEMA if self.shape is None else PARTITIONED_SCHEMA


CODEC_PROPERTIES = {"uncompressed": "uncompressed", "snappy": "snappy", "zstd": "zstd", "gzip": "gzip"}


def write_properties(recipe: SmallFilesRecipe | DeletesRecipe) -> dict[str, str]:
    props = {"write.parquet.compression-codec": CODEC_PROPERTIES[recipe.codec]}
    if recipe.codec_level is not None:
        props["write.parquet.compression-level"] = str(recipe.codec_level)
    return props


# --- parallel writers ---------------------------------------------------------------------------
_FILE_IO: dict[tuple, PyArrowFileIO] = {}


def file_io(path: str = "") -> PyArrowFileIO:
    """pyiceberg's PyArrowFileIO for `path`: for s3:// with the S3 settings of this process's environment
    (bench.core.catalog.s3); one per process and settings (forked writers make their own: an S3 client is not
    shared across a fork)."""
    props = fileio_properties() if is_s3(path) else {}
    key = (os.getpid(), tuple(sorted(props.items())))
    io = _FILE_IO.get(key)
    if io is None:
        io = _FILE_IO[key] = PyArrowFileIO(props)
    return io


def partition_dir(location: str, partition_path: str | None) -> str:
    """Where a generated file goes: data/, or data/<partition path>/ in a partitioned table."""
    return f"{location}/data" if partition_path is None else f"{location}/data/{partition_path}"


def data_file_path(location: str, index: int, partition_path: str | None = None) -> str:
    return f"{partition_dir(location, partition_path)}/gen-{index:06d}.parquet"


def write_rows(path: str, props: dict, rows, schema: Schema = SCHEMA, spec_id: int = 0,
               content: DataFileContent = DataFileContent.DATA,
               partition: tuple[int, ...] | None = None) -> DataFile:
    """Write an Arrow table (whose schema carries the Iceberg field ids of `schema`) to one Parquet
    file with pyiceberg's own writer (field ids and column statistics as any Iceberg writer records
    them).  Used for data files and, with their own schemas, for delete files.  `partition`: the
    file's partition tuple (set in its DataFile, as Iceberg requires of a partitioned table)."""
    out = file_io(path).new_output(path)
    writer = ParquetFormatModel().create_writer(out, schema, props)
    with writer:
        writer.write(rows)
    stats = writer.result()
    return DataFile.from_args(
        content=content, file_path=path, file_format=FileFormat.PARQUET,
        partition=Record(*(partition or ())), file_size_in_bytes=len(out), sort_order_id=None, spec_id=spec_id,
        equality_ids=None, key_metadata=None, **stats.to_serialized_dict())


def write_data_file(location: str, props: dict, seed: int, plan: FilePlan,
                    spec_id: int = 0) -> tuple[DataFile, int]:
    """Generate one file's rows, write them (see `write_rows`) and return the file with the content
    checksum of its rows (`bench.core.checksum`: the generator's ground truth, from the rows
    generated, never read back)."""
    pools = pools_for(seed)
    rows = make_rows(pools, seed, plan.index, plan.rows, plan.key_offset, plan.shape, plan.keys)
    df = write_rows(data_file_path(location, plan.index, plan.partition_path), props, rows, plan.schema,
                    spec_id=spec_id, partition=plan.partition)
    return df, exact_sum(row_hashes(pools, seed, plan.index, plan.rows, plan.key_offset, rows, plan.shape,
                                         plan.keys))


def _write_task(args):
    return write_data_file(*args)


def parallel_write(tasks: list[tuple], workers: int) -> Iterable[Any]:
    """Run `write_data_file(*task)` on `workers` processes, yielding results in task order."""
    if workers <= 1:
        for t in tasks:
            yield _write_task(t)
        return
    import multiprocessing as mp

    # the workers die with the harness (bench.core.children): a killed datagen leaves no writer behind
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"), initializer=pool_initializer,
                             initargs=(os.getpid(),)) as ex:
        yield from ex.map(_write_task, tasks, chunksize=1)


def commit_in_checkpoints(table: Table, files: Iterable[DataFile], per_commit: int,
                          progress: Callable[[int], None] | None = None) -> int:
    """fast_append files in groups of `per_commit`, one snapshot each, like a streaming writer's
    checkpoints.  Returns the number of commits."""
    batch: list[DataFile] = []
    commits = 0

    def flush():
        nonlocal commits
        with table.transaction() as tx, \
                tx.update_snapshot(snapshot_properties={"bench.checkpoint": str(commits)}).fast_append() as fa:
            for f in batch:
                fa.append_data_file(f)
        commits += 1
        if progress:
            progress(len(batch))
        batch.clear()

    for f in files:
        batch.append(f)
        if len(batch) >= per_commit:
            flush()
    if batch:
        flush()
    return commits
