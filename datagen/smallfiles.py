"""The small-file table of the bin-packing scenarios.

Scale rule (documented in docs/scenarios-and-engines.md): at scale s the table has
    n = max(min_files, round(files * s))            data files, and
    B = total_bytes * s                              bytes (uncompressed, the published ~193 GB at s=1),
so at s >= min_files / files (~0.001) the file count and the total scale together and the file sizes keep
the published spread (mean ~11 MB); below that the count stops at `min_files` and the files shrink
instead, which keeps tiny test scales meaningful (many files to pack, a few MB in all).
File sizes are log-normal (sigma 0.5) around B / n, clipped to [mean/8, mean*6], deterministic from the
seed.  Rows per file come from a calibration of bytes per row for the uncompressed encoding, so the ZSTD
table holds exactly the same rows as the uncompressed one; only its files are smaller.

Partitioned (`partitioning` set): the n files are placed in partitions by `datagen.partitions` (its
scale rule and skew); each file's rows stay in its partition and its DataFile carries the partition tuple.

With a sort order (`sort_order`): the table is created with the recipe's `sort_order` as its Iceberg sort order
(pyiceberg's SortOrder: identity transforms, the direction and null order of each key), so a compaction that sorts
("strategy: sort") sorts by it, and the integrity check `same_sort_order` sees it unchanged.  The data are written as
a stream writes them, in arrival order, not sorted: the key v2 of the i-th row written is (a x i + b) mod n
(`datagen.schema.KeyOrder`, n the table's rows, a near n x 0.618 and coprime to n, b from the seed), so each small
file's keys are spread over the whole key range and every file's [min, max] of v2 overlaps every other's; the files,
rows and other columns are those of the same recipe without it.  A point lookup on v2 must open every file until a
compaction sorts them.  Deterministic from the seed and scale.

Ground truth: each writer computes the content checksum of the rows it generated (the verifier's
checksum, `bench.core.checksum`); their sum and the row count are the table's ground truth, and in a
partitioned table the sums over each partition's files are that partition's.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import IdentityTransform

from bench.core.dataset import GroundTruth
from bench.core.errors import UserError
from datagen import partitions
from datagen.context import GenContext, Generated
from datagen.recipes import SmallFilesRecipe, SortKey
from datagen.schema import PARTITIONED_SCHEMA, SCHEMA, KeyOrder, bucket_members, make_rows, pools_for
from datagen.writer import FilePlan, commit_in_checkpoints, parallel_write, write_properties

ROUGH_BYTES_PER_ROW = 180  # only sizes the calibration sample
SIZE_SIGMA = 0.5


def file_count(files_at_1: int, scale: float, min_files: int) -> int:
    return max(min_files, round(files_at_1 * scale))


def _measured_bytes_per_row(seed: int, rows: int) -> float:
    table = make_rows(pools_for(seed), seed, 0, rows, 0)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="none")
    return sink.getvalue().size / rows


def bytes_per_row(seed: int, mean_file_bytes: float) -> float:
    """Uncompressed Parquet bytes per row of this schema for files of about `mean_file_bytes`
    (dictionary pages amortize with file size, so calibrate at the mean file's row count).
    Deterministic for a given pyarrow version."""
    rows = int(min(max(mean_file_bytes / ROUGH_BYTES_PER_ROW, 100), 2_000_000))
    return _measured_bytes_per_row(seed, rows)


def plan_files(files_at_1: int, total_bytes_at_1: int, scale: float, min_files: int, seed: int,
               file_scale: float | None = None) -> list[FilePlan]:
    """The files at `scale`; with `file_scale` the count of that scale holding the bytes of `scale` (the
    rule of the two scales; UserError when a file would hold less than one row)."""
    n = file_count(files_at_1, scale if file_scale is None else file_scale, min_files)
    total = total_bytes_at_1 * scale
    mean = total / n
    bpr = bytes_per_row(seed, mean)
    if file_scale is not None and file_scale != scale and mean < bpr:
        raise UserError(f"--file-scale {file_scale:g}: {n} files would hold {mean / bpr:.2g} rows each at scale "
                        f"{scale:g} (less than one row per file); use a smaller --file-scale or a larger --scale")
    rng = np.random.default_rng([seed, 0x5172E])
    sizes = rng.lognormal(mean=0.0, sigma=SIZE_SIGMA, size=n)
    sizes = np.clip(sizes / sizes.mean(), 1 / 8, 6) * mean
    sizes *= total / sizes.sum()
    rows = np.maximum(1, np.round(sizes / bpr)).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(rows)[:-1]])
    return [FilePlan(i, int(r), int(o)) for i, (r, o) in enumerate(zip(rows, offsets))]


def plan(recipe: SmallFilesRecipe, scale: float, seed: int, file_scale: float | None = None) -> list[FilePlan]:
    """Every data file of the table, placed in its partition when the recipe is partitioned."""
    plans = plan_files(recipe.files, recipe.total_bytes, scale, recipe.min_files, seed, file_scale)
    if recipe.sort_order:
        keys = key_order(sum(p.rows for p in plans), seed)
        plans = [replace(p, keys=keys) for p in plans]
    if recipe.partitioning is None:
        return plans
    return partitions.place(plans, partitions.layout(recipe.partitioning, len(plans)))


def generate(ctx: GenContext) -> Generated:
    """Create the table and fill it with the planned files, committed in writer checkpoints."""
    recipe = ctx.recipe
    assert isinstance(recipe, SmallFilesRecipe)
    plans = plan(recipe, ctx.scale, ctx.seed, ctx.file_scale)
    props = write_properties(recipe)
    table_props = {**props, "format-version": "2"}
    part = recipe.partitioning
    schema = SCHEMA if part is None else PARTITIONED_SCHEMA
    order = sort_order(recipe.sort_order, schema) if recipe.sort_order else UNSORTED_SORT_ORDER
    if part is None:
        tbl = ctx.catalog.create_table(ctx.ident, SCHEMA, properties=table_props, sort_order=order)
    else:
        tbl = ctx.catalog.create_table(ctx.ident, PARTITIONED_SCHEMA, partition_spec=partitions.partition_spec(part),
                                       properties=table_props, sort_order=order)
        if part.buckets:
            bucket_members(part.buckets)  # built once here; forked writers inherit them
    pools_for(ctx.seed).hashes()  # built once here; forked writers inherit them
    tasks = [(tbl.location(), props, ctx.seed, p) for p in plans]
    nbytes, checksum = 0, 0
    tally = partitions.PartitionTally(partitions.layout(part, len(plans))) if part else None
    with ctx.progress.task(f"datagen {ctx.ident}", total=len(plans), unit="files") as task:
        def counted():
            nonlocal nbytes, checksum
            for p, (df, file_checksum) in zip(plans, parallel_write(tasks, ctx.workers)):
                nbytes += df.file_size_in_bytes
                checksum += file_checksum
                if tally is not None:
                    tally.add_data(p.index, p.rows, file_checksum)
                yield df
        commits = commit_in_checkpoints(tbl, counted(), recipe.files_per_commit, task.advance)
    rows = sum(p.rows for p in plans)
    gt = GroundTruth(rows=rows, checksum=str(checksum), rows_written=rows, data_files=len(plans),
                     data_bytes=nbytes, commits=commits,
                     computed_by="generator: sum of bench.core.checksum over each file's generated rows",
                     partition_spec=partitions.spec_text(part) if part else "",
                     partitions=tally.truth() if tally else {})
    return Generated(files=len(plans), bytes=nbytes, rows=rows, ground_truth=gt)


GOLDEN = (math.sqrt(5) - 1) / 2


def sort_order(keys: list[SortKey], schema: Schema) -> SortOrder:
    """The recipe's keys as an Iceberg sort order of `schema` (order id 1)."""
    return SortOrder(*(SortField(source_id=schema.find_field(k.column).field_id, transform=IdentityTransform(),
                                 direction=SortDirection.ASC if k.direction == "asc" else SortDirection.DESC,
                                 null_order=NullOrder.NULLS_FIRST if k.nulls_first else NullOrder.NULLS_LAST)
                       for k in keys), order_id=1)


def key_order(rows: int, seed: int) -> KeyOrder:
    """The arrival order of `rows` keys: a stride near the golden section of n (coprime to n) and an
    offset from the seed."""
    n = max(1, rows)
    a = max(1, round(n * GOLDEN))
    while math.gcd(a, n) != 1:
        a += 1
    b = int(np.random.default_rng([seed, 0x50F7]).integers(0, n))
    return KeyOrder(n=n, a=a % n or 1, b=b)
