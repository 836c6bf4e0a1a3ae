"""The delete-heavy table of the copy-on-write scenarios, shaped like a streaming CDC writer: the plan (what to
write, deterministic), the writers (in worker processes), and the pipeline: writers on a process pool -> RowDelta
commits through Iceberg's Java API -> the ground truth, summed from what each writer computed for its own file.

Shape.  Writer checkpoint i (i = 0 .. n-1) closes one data file, and may close one position-delete file
deleting rows OF THAT data file and one equality-delete file deleting by the key (v1, v2).  With n data,
p position-delete and e equality-delete files, checkpoint i has a position delete iff
floor((i+1)p/n) > floor(ip/n) (exactly p of them, evenly spread), and likewise for equality deletes:
deletes-standard (20k : 10k : 10k) puts deletes on every other checkpoint, deletes-high (20k : 20k : 20k)
on every one.  Checkpoints commit in groups of K = `files_per_commit` (default 32): one snapshot adding
the group's data files and their position deletes, then a later one adding the group's equality
deletes.  So every equality delete has a higher data sequence number than every data file written at or
before its checkpoint and applies to all of them (Iceberg v2: an equality delete applies to data files
of smaller sequence number, a position delete to those of smaller or equal one) - the shape of the
generator iceberg-compaction is tested with.

Which rows die - decided at plan time, deterministic from the seed (`numpy` generators seeded with
(seed, file index, purpose)):
- data file j loses k_pos = max(1, round(f_pos x R)) rows to its own position-delete file when checkpoint
  j has one, f_pos = deleted_fraction x position_delete_share (defaults 0.2 x 0.5 = 10 %);
- and k_eq = round(f_eq x R) other rows to equality deletes, f_eq = deleted_fraction x (1 - share)
  (default 10 %): each such row is assigned to one of the first `equality_window` (default 4) equality-
  delete checkpoints at or after j, uniformly; rows of data files after the last equality checkpoint
  are not equality-deleted.  Keys (v1, v2) are unique in the table (v2 = file offset + row number), so a
  key deletes exactly the row it was taken from.
- Every equality-delete file also holds keys that match nothing, like a CDC stream's upserts of new keys
  and deletes of deleted keys: max(1, round(unmatched_key_ratio x matched keys)) of them (default ratio
  0.1), with v1 < 0 (data rows have v1 >= 0) and v2 uniform over all keys written so far, so each
  equality file's v2 bounds span the table's history and min/max pruning cannot skip it for any older
  data file.  With `equality_delete_bytes` set (deletes-massive: ~20 GB at scale 1.0) unmatched keys are
  added until each equality file reaches its share of that total (bytes per key measured once by
  writing a sample with the table's codec).

Scale rule (scale s; 1.0 = the published size):
    n = max(min_files, round(data_files x s))                     data files,
    p = round(n x position_delete_files / data_files)             position-delete files,
    e = round(n x equality_delete_files / data_files)             equality-delete files,
    R = max(100, round(rows_per_data_file x data_files x s / n))  rows per data file,
    equality_delete_bytes x s                                     equality-delete bytes (when set).
Above the floor (s >= min_files / data_files) files keep the published row count (50,000 by default:
our choice, the published row counts are unknown) and the count scales; below it the count stops at
`min_files` and the files shrink instead, which keeps tiny test scales meaningful (seconds, 8+ data files
with deletes).  The delete-file ratios hold at every scale.

Ground truth.  Each writer computes, for its own data file, the surviving rows (neither position- nor
equality-deleted) and their count and content checksum (`bench.core.checksum`: the verifier's SQL, sum of
DuckDB's hash over all columns) from the rows it generated - in parallel, one file at a time, never
reading the table back.  The per-file sums add up to the dataset's ground truth.

Files and commits.  Files are written on a pool of processes with pyiceberg's Parquet writer: data files
exactly as `datagen.writer.write_data_file`; position deletes = file_path (field id 2147483546, spelled
exactly as the manifest records the data file) + pos (2147483545), sorted by pos; equality deletes =
v1 (1), v2 (2) with equality_ids [1, 2].  Commits go through Iceberg's Java API (`RowDelta`, metrics from
Iceberg's own `ParquetUtil.fileMetrics`, `MetricsConfig.forPositionDelete` for position deletes so their
file_path bounds are exact) in a JVM over py4j (`bench.core.iceberg_java`): pyiceberg cannot commit
delete files, and adding the data files in the same RowDelta as their position deletes is what a
streaming writer does (one snapshot), which a pyiceberg append followed by a Java RowDelta could not
reproduce.  Commits are annotated with `bench.checkpoints` and `bench.commit` in the snapshot summary.  Each
file's metadata (Iceberg's Java DataFile/DeleteFile, metrics read from its footer) is built on a few threads as its
writer finishes, and the writers run a commit group ahead of the commits: what is committed, and in which order,
is the same as one file at a time.

Partitioned (`partitioning` set; layout, skew and scale rule in `datagen.partitions`): data file i is in
the partition the layout gives it, and checkpoint i's position- and equality-delete files are in that
partition too (their DataFiles carry its tuple).  Equality deletes are partition-scoped like a CDC
writer's: a row of data file j may only die in one of the next `equality_window` equality checkpoints at
or after j OF ITS PARTITION (unmatched keys still match nothing).  Ground truth per partition as well.
"""

from __future__ import annotations

import bisect
import collections
import math
import multiprocessing as mp
import os
import tempfile
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.manifest import DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from bench.core.catalog import CatalogSettings
from bench.core.checksum import exact_sum
from bench.core.children import pool_initializer
from bench.core.dataset import GroundTruth
from bench.core.errors import UserError
from bench.core.iceberg_java.commit import RowDeltaCommitter
from bench.core.iceberg_java.gateway import JavaIceberg
from bench.core.iceberg_java.runtime import s3_requirement
from bench.core.requirements import Requirement
from bench.core.table.deletes import POS_FILE_PATH_ID, POS_POS_ID
from datagen import partitions
from datagen.context import GenContext, Generated
from datagen.partitions import PartitionLayout, PartitionTally, partition_spec, spec_text
from datagen.recipes import DeletesRecipe
from datagen.schema import KEY_COLUMNS, PARTITIONED_SCHEMA, SCHEMA, bucket_members, make_rows, pools_for, row_hashes
from datagen.writer import FilePlan, data_file_path, partition_dir, write_properties, write_rows

MIN_ROWS_PER_FILE = 100
_SEEDS = {"rows": 0xDE1E7E, "assign": 0xA551, "unmatched": 0xE9E9}


@dataclass(frozen=True)
class DeletesPlan:
    n: int  # data files (= writer checkpoints)
    rows_per_file: int
    has_pos: tuple[bool, ...]
    has_eq: tuple[bool, ...]
    k_pos: int  # rows a position-delete file deletes from its data file
    k_eq: int  # rows of every data file deleted by later equality deletes
    window: int
    unmatched_ratio: float
    eq_bytes_per_file: float | None  # target size of each equality-delete file (deletes-massive)
    per_commit: int
    eq_checkpoints: tuple[int, ...] = field(default=())
    layout: PartitionLayout | None = None  # a partitioned table: data file i's partition (datagen.partitions)

    @property
    def position_files(self) -> int:
        return sum(self.has_pos)

    @property
    def equality_files(self) -> int:
        return sum(self.has_eq)

    def file_plan(self, i: int) -> FilePlan:
        """Data file i (checkpoint i); in a partitioned table placed in its partition.  The checkpoint's
        delete files are in the same partition."""
        fp = FilePlan(i, self.rows_per_file, i * self.rows_per_file)
        if self.layout is None:
            return fp
        return partitions.place([fp], self.layout, only=int(self.layout.file_partition[i]))[0]

    def eq_targets(self, j: int) -> list[int]:
        """The equality-delete checkpoints a row of data file j may die in: the next `window` at or
        after j (in a partitioned table, of j's partition: equality deletes are partition-scoped, as a
        CDC writer routes a key's delete to the key's partition)."""
        if self.layout is None:
            k = bisect.bisect_left(self.eq_checkpoints, j)
            return list(self.eq_checkpoints[k:k + self.window])
        ks = np.asarray(self.eq_checkpoints, dtype=np.int64)
        part = self.layout.file_partition
        return [int(t) for t in ks[(ks >= j) & (part[ks] == part[j])][:self.window]]


def _spread(count: int, n: int) -> tuple[bool, ...]:
    return tuple((i + 1) * count // n > i * count // n for i in range(n))


def plan(recipe: DeletesRecipe, scale: float, file_scale: float | None = None) -> DeletesPlan:
    """The plan of `recipe` at `scale` (the scale rule of the package docstring); with `file_scale` (other
    than `scale`) the file counts of that scale holding the rows of `scale` (the rule of the two scales)."""
    d1 = recipe.data_files
    decoupled = file_scale is not None and file_scale != scale
    n = max(recipe.min_files, round(d1 * (file_scale if decoupled else scale)))  # type: ignore[operator]
    p, e = round(n * recipe.position_delete_files / d1), round(n * recipe.equality_delete_files / d1)
    rows = round(recipe.rows_per_data_file * d1 * scale / n)
    if not decoupled:
        rows = max(MIN_ROWS_PER_FILE, rows)
    elif rows < 1:
        each = recipe.rows_per_data_file * d1 * scale / n
        raise UserError(f"--file-scale {file_scale:g}: {n} data files would hold {each:.2g} rows each at scale "
                        f"{scale:g} (less than one row per file); use a smaller --file-scale or a larger --scale")
    frac, share = recipe.deleted_fraction, recipe.position_delete_share
    k_pos = max(1, round(frac * share * rows)) if p else 0
    k_eq = round(frac * (1 - share) * rows) if e else 0
    if k_pos + k_eq >= rows:
        raise UserError(f"deleted_fraction {frac} leaves no row of a {rows}-row data file")
    eq_bytes = recipe.equality_delete_bytes
    has_eq = _spread(e, n)
    return DeletesPlan(n=n, rows_per_file=rows, has_pos=_spread(p, n), has_eq=has_eq, k_pos=k_pos,
                       k_eq=k_eq, window=recipe.equality_window, unmatched_ratio=recipe.unmatched_key_ratio,
                       eq_bytes_per_file=(eq_bytes * scale / e) if (eq_bytes and e) else None,
                       per_commit=recipe.files_per_commit,
                       eq_checkpoints=tuple(i for i in range(n) if has_eq[i]),
                       layout=partitions.layout(recipe.partitioning, n) if recipe.partitioning else None)


def position_path(location: str, i: int, partition_path: str | None = None) -> str:
    return f"{partition_dir(location, partition_path)}/gen-{i:06d}-pos-deletes.parquet"


def equality_path(location: str, i: int, partition_path: str | None = None) -> str:
    return f"{partition_dir(location, partition_path)}/gen-{i:06d}-eq-deletes.parquet"



def deleted_rows(seed: int, j: int, rows: int, k_pos: int, k_eq: int, targets: list[int]):
    """(positions deleted by file j's position deletes (sorted), rows deleted by equality deletes,
    the equality checkpoint of each of the latter).  Disjoint; deterministic in (seed, j)."""
    if not targets:
        k_eq = 0
    rng = np.random.default_rng([seed, j, _SEEDS["rows"]])
    picked = rng.choice(rows, k_pos + k_eq, replace=False) if k_pos + k_eq else np.empty(0, np.int64)
    pos = np.sort(picked[:k_pos])
    eq = picked[k_pos:]
    assign = np.random.default_rng([seed, j, _SEEDS["assign"]]).integers(0, len(targets), len(eq)) \
        if len(eq) else np.empty(0, np.int64)
    return pos, eq, (np.asarray(targets)[assign] if len(eq) else np.empty(0, np.int64))


POSITION_DELETE_SCHEMA = Schema(
    NestedField(POS_FILE_PATH_ID, "file_path", StringType(), required=True),
    NestedField(POS_POS_ID, "pos", LongType(), required=True),
)
# file_path as Arrow `string`, not pyiceberg's default `large_string`: the Arrow schema stored in the
# Parquet footer is honoured by arrow-rs, and iceberg-compaction (iceberg-rust) then rejects the file
# ("expected Utf8 but found LargeUtf8"); Java writers store no Arrow schema at all
POSITION_DELETE_ARROW = pa.schema([
    pa.field("file_path", pa.string(), nullable=False, metadata={"PARQUET:field_id": str(POS_FILE_PATH_ID)}),
    pa.field("pos", pa.int64(), nullable=False, metadata={"PARQUET:field_id": str(POS_POS_ID)}),
])
EQUALITY_DELETE_SCHEMA = SCHEMA.select(*KEY_COLUMNS)  # v1, v2 with the table's field ids
EQUALITY_DELETE_ARROW = schema_to_pyarrow(EQUALITY_DELETE_SCHEMA)
EQUALITY_IDS = [SCHEMA.find_field(c).field_id for c in KEY_COLUMNS]
CALIBRATION_INDEX = 2**31 - 1  # never a checkpoint index


@dataclass
class Written:
    """One file a writer closed."""

    path: str
    size: int
    records: int
    partition: tuple[int, ...] | None = None  # its partition tuple in a partitioned table


@dataclass
class CheckpointOut:
    index: int
    data: Written
    position: Written | None
    eq_keys: dict[int, tuple[np.ndarray, np.ndarray]]  # equality checkpoint -> (v1, v2) of its rows here
    survivors: int
    checksum: int
    position_deleted: int
    equality_deleted: int


def write_checkpoint(location: str, props: dict, seed: int, pl: DeletesPlan, j: int) -> CheckpointOut:
    """Write data file j (and its position-delete file) and compute its surviving rows' ground truth."""
    fp = pl.file_plan(j)
    pools = pools_for(seed)
    rows = make_rows(pools, seed, fp.index, fp.rows, fp.key_offset, fp.shape)
    data_path = data_file_path(location, j, fp.partition_path)
    df = write_rows(data_path, props, rows, fp.schema, partition=fp.partition)
    data = Written(data_path, df.file_size_in_bytes, df.record_count, fp.partition)
    pos, eq, assign = deleted_rows(seed, j, fp.rows, pl.k_pos if pl.has_pos[j] else 0, pl.k_eq,
                                   pl.eq_targets(j))
    position = None
    if len(pos):
        ppath = position_path(location, j, fp.partition_path)
        ptable = pa.Table.from_arrays([pa.array([data_path] * len(pos), pa.string()),
                                       pa.array(pos, pa.int64())], schema=POSITION_DELETE_ARROW)
        pf = write_rows(ppath, props, ptable, POSITION_DELETE_SCHEMA,
                        content=DataFileContent.POSITION_DELETES, partition=fp.partition)
        position = Written(ppath, pf.file_size_in_bytes, pf.record_count, fp.partition)
    eq_keys: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if len(eq):
        v1 = rows.column("v1").to_numpy()
        v2 = rows.column("v2").to_numpy()
        for target in np.unique(assign):
            idx = np.sort(eq[assign == target])
            eq_keys[int(target)] = (v1[idx], v2[idx])
    keep = np.ones(fp.rows, dtype=bool)
    keep[pos] = False
    keep[eq] = False
    hashes = row_hashes(pools, seed, fp.index, fp.rows, fp.key_offset, rows, fp.shape)
    survivors, checksum = int(keep.sum()), exact_sum(hashes[keep])
    return CheckpointOut(j, data, position, eq_keys, survivors, checksum, len(pos), len(eq))


def checkpoint_task(args) -> CheckpointOut:
    return write_checkpoint(*args)


def unmatched_keys(seed: int, i: int, count: int, v2_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys no row has: v1 < 0 (rows have 0 <= v1 < 2^20), v2 uniform over the keys written so far."""
    rng = np.random.default_rng([seed, i, _SEEDS["unmatched"]])
    v1 = (-1 - rng.integers(0, 2**31 - 1, count)).astype(np.int32)
    v2 = rng.integers(0, max(1, v2_max), count).astype(np.int64)
    return v1, v2


def write_equality(location: str, props: dict, seed: int, i: int, matched: list[tuple[np.ndarray, np.ndarray]],
                   n_unmatched: int, v2_max: int, partition: tuple[int, ...] | None = None,
                   partition_path: str | None = None) -> Written:
    """Equality-delete file of checkpoint i: the matched keys (in the order of the data files they
    come from) and `n_unmatched` keys matching nothing, shuffled together like a CDC stream.  In a
    partitioned table it is in checkpoint i's partition (`partition`, `partition_path`) and its matched
    keys are all of rows of that partition (`DeletesPlan.eq_targets`): partition-scoped."""
    u1, u2 = unmatched_keys(seed, i, n_unmatched, v2_max)
    v1 = np.concatenate([m[0] for m in matched] + [u1]).astype(np.int32)
    v2 = np.concatenate([m[1] for m in matched] + [u2]).astype(np.int64)
    order = np.random.default_rng([seed, i, _SEEDS["unmatched"], 1]).permutation(len(v1))
    table = pa.Table.from_arrays([pa.array(v1[order]), pa.array(v2[order])], schema=EQUALITY_DELETE_ARROW)
    path = equality_path(location, i, partition_path)
    f = write_rows(path, props, table, EQUALITY_DELETE_SCHEMA, content=DataFileContent.EQUALITY_DELETES,
                   partition=partition)
    return Written(path, f.file_size_in_bytes, f.record_count, partition)


def equality_task(args) -> Written:
    return write_equality(*args)


def equality_bytes_per_key(props: dict, seed: int, keys: int, v2_max: int) -> float:
    """Bytes per key of an equality-delete file of about `keys` unmatched keys with v2 below `v2_max`,
    measured by writing one (deterministic for a given pyarrow version)."""
    keys = int(min(max(keys, 1000), 2_000_000))
    v1, v2 = unmatched_keys(seed, CALIBRATION_INDEX, keys, v2_max)
    table = pa.Table.from_arrays([pa.array(v1), pa.array(v2)], schema=EQUALITY_DELETE_ARROW)
    with tempfile.TemporaryDirectory(prefix="bench-eqcal-") as tmp:
        f = write_rows(f"file://{tmp}/cal.parquet", props, table, EQUALITY_DELETE_SCHEMA)
    return f.file_size_in_bytes / keys


METADATA_THREADS = 4  # threads building the files' metadata in the committing JVM (py4j round trips overlap)
COMMIT_JVM_HEAP = "1g"  # the committing JVM only builds metadata: metrics come from Parquet footers
TABLE_PROPERTIES = {
    "format-version": "2",
    # hundreds of commits: keep only recent metadata.json files (snapshots are all kept)
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "20",
}


def storage_requirement(settings: CatalogSettings) -> Requirement | None:
    """Commits go through a JVM: on an S3 warehouse its Iceberg S3FileIO needs the AWS SDK bundle from the jar cache
    (`bench setup` fetches it).  None for a local warehouse."""
    if not settings.is_remote:
        return None
    r = s3_requirement()
    detail = r.detail if r.ok else f"the deletes generator commits through Iceberg's Java API (S3FileIO): {r.detail}"
    return Requirement("deletes datagen on an S3 warehouse (iceberg-aws-bundle)", r.ok, detail, r.fix)


@dataclass
class _Truth:
    """The ground truth, accumulated checkpoint by checkpoint."""

    rows: int = 0
    checksum: int = 0
    rows_written: int = 0
    position_deleted: int = 0
    equality_deleted: int = 0
    equality_keys: int = 0
    unmatched_keys: int = 0
    bytes: dict[str, int] = field(default_factory=lambda: {"data": 0, "position": 0, "equality": 0})

    def add(self, out: CheckpointOut) -> None:
        self.rows_written += out.data.records
        self.rows += out.survivors
        self.position_deleted += out.position_deleted
        self.equality_deleted += out.equality_deleted
        self.checksum += out.checksum

    def ground_truth(self, pl: DeletesPlan, commits: int) -> GroundTruth:
        return GroundTruth(
            rows=self.rows, checksum=str(self.checksum), rows_written=self.rows_written,
            position_deleted_rows=self.position_deleted, equality_deleted_rows=self.equality_deleted,
            data_files=pl.n, position_delete_files=pl.position_files, equality_delete_files=pl.equality_files,
            rows_per_data_file=pl.rows_per_file, equality_keys=self.equality_keys,
            unmatched_equality_keys=self.unmatched_keys, data_bytes=self.bytes["data"],
            position_delete_bytes=self.bytes["position"], equality_delete_bytes=self.bytes["equality"],
            commits=commits,
            computed_by="generator: per data file, bench.core.checksum over the rows it generated that "
                        "no delete removes")


class _Pipeline:
    """Writers run ahead on a process pool; the main process commits in checkpoint order."""

    def __init__(self, ctx: GenContext, pl: DeletesPlan, location: str, props: dict):
        self.ctx, self.pl, self.location, self.props = ctx, pl, location, props
        self.truth = _Truth()
        self.tally = PartitionTally(pl.layout) if pl.layout is not None else None
        self.buffers: dict[int, list[tuple[np.ndarray, np.ndarray]]] = collections.defaultdict(list)
        self.bytes_per_key: float | None = None
        if pl.eq_bytes_per_file:
            # keys range over the table's history: calibrate with v2 over half of it (the average file)
            self.bytes_per_key = equality_bytes_per_key(props, ctx.seed, int(pl.eq_bytes_per_file / 12),
                                                        max(1, pl.n * pl.rows_per_file // 2))
        self.pending: collections.deque[Future] = collections.deque()
        self.next = 0
        # writers run a commit group ahead: they keep writing while the main process commits the group before
        self.window = pl.per_commit + 2 * ctx.workers

    def fill(self, ex: ProcessPoolExecutor) -> None:
        while self.next < self.pl.n and len(self.pending) < self.window:
            self.pending.append(ex.submit(checkpoint_task, (self.location, self.props, self.ctx.seed, self.pl,
                                                            self.next)))
            self.next += 1

    def equality_job(self, ex: ProcessPoolExecutor, i: int) -> Future:
        """Submit checkpoint i's equality-delete file: the keys planned for it plus unmatched ones."""
        matched = self.buffers.pop(i, [])
        n_matched = sum(len(k[0]) for k in matched)
        n_unmatched = max(1, round(self.pl.unmatched_ratio * n_matched))
        if self.bytes_per_key and self.pl.eq_bytes_per_file:
            n_unmatched = max(n_unmatched, math.ceil(self.pl.eq_bytes_per_file / self.bytes_per_key) - n_matched)
        self.truth.equality_keys += n_matched + n_unmatched
        self.truth.unmatched_keys += n_unmatched
        v2_max = (i + 1) * self.pl.rows_per_file
        fp = self.pl.file_plan(i)
        if self.tally is not None:
            self.tally.add_deletes(i)
        return ex.submit(equality_task, (self.location, self.props, self.ctx.seed, i, matched, n_unmatched, v2_max,
                                         fp.partition, fp.partition_path))

    @staticmethod
    def file_metadata(committer: RowDeltaCommitter, o: CheckpointOut) -> tuple[Any, Any]:
        """A checkpoint's data file and position-delete file (None without one) as Iceberg's Java DataFile /
        DeleteFile, their metrics read from their Parquet footers by Iceberg's Java library."""
        data = committer.data_file(o.data.path, o.data.size, o.data.partition)
        p = o.position
        return data, (committer.position_file(p.path, p.size, p.partition) if p else None)

    def commit_group(self, committer: RowDeltaCommitter, group: list[CheckpointOut], metas: list[Future],
                     eqs: list[Written], meta: ThreadPoolExecutor) -> int:
        """One RowDelta of the group's data + position deletes, then one of its equality deletes.  Each file's
        metadata is built on `meta`'s threads (the checkpoints' as they arrived: `metas`), each file's round trips
        to the JVM beside the others'; the files are added in the group's order."""
        tag = f"{group[0].index}-{group[-1].index}"
        built = [f.result() for f in metas]
        rows, positions = [d for d, _ in built], [p for _, p in built if p is not None]
        committer.row_delta(rows, positions, {"bench.checkpoints": tag, "bench.commit": "data+position-deletes"})
        self.truth.bytes["data"] += sum(o.data.size for o in group)
        self.truth.bytes["position"] += sum(o.position.size for o in group if o.position)
        if eqs:
            committer.row_delta([], list(meta.map(lambda w: committer.equality_file(w.path, w.size, w.partition), eqs)),
                                {"bench.checkpoints": tag, "bench.commit": "equality-deletes"})
            self.truth.bytes["equality"] += sum(w.size for w in eqs)
        return len(rows) + len(positions) + len(eqs)

    def run(self, committer_factory) -> int:
        pl, ctx = self.pl, self.ctx
        # forked writers: the pool forks its workers at the first submit, before the JVM starts, and
        # they inherit the value pools (and a bucketed table's v1 members) built here once
        pools_for(ctx.seed).hashes()
        if pl.layout is not None and pl.layout.partitioning.buckets:
            bucket_members(pl.layout.partitioning.buckets)
        n_files = pl.n + pl.position_files + pl.equality_files
        with ProcessPoolExecutor(max_workers=ctx.workers, mp_context=mp.get_context("fork"),
                                 initializer=pool_initializer, initargs=(os.getpid(),)) as ex, \
                ThreadPoolExecutor(METADATA_THREADS, thread_name_prefix="datagen-metadata") as meta, \
                ctx.progress.task(f"datagen {ctx.ident}", total=n_files, unit="files") as task:
            self.fill(ex)  # writers start while the JVM starts
            try:
                with committer_factory() as committer:
                    group: list[CheckpointOut] = []
                    eq_jobs: list[Future] = []
                    metas: list[Future] = []
                    for i in range(pl.n):
                        out: CheckpointOut = self.pending.popleft().result()
                        self.fill(ex)
                        assert out.index == i
                        group.append(out)
                        metas.append(meta.submit(self.file_metadata, committer, out))
                        self.truth.add(out)
                        if self.tally is not None:
                            self.tally.add_data(i, out.survivors, out.checksum)
                            self.tally.add_deletes(i, 1 if out.position else 0)
                        for target, keys in out.eq_keys.items():
                            self.buffers[target].append(keys)
                        if pl.has_eq[i]:
                            eq_jobs.append(self.equality_job(ex, i))
                        if len(group) == pl.per_commit or i == pl.n - 1:
                            task.advance(self.commit_group(committer, group, metas, [f.result() for f in eq_jobs],
                                                           meta))
                            group, eq_jobs, metas = [], [], []
                    commits = committer.commits
            except BaseException:
                for f in self.pending:  # do not wait for writers nobody will commit
                    f.cancel()
                raise
        if any(self.buffers.values()):  # every key was planned for an existing equality checkpoint
            raise RuntimeError(f"equality keys planned for checkpoints never written: {sorted(self.buffers)}")
        return commits


class _JavaCommitter:
    """A JVM with the catalog open and a RowDeltaCommitter on the table, for the `with` block."""

    def __init__(self, settings: CatalogSettings, ident: str):
        self.settings, self.ident = settings, ident
        self.java: JavaIceberg | None = None

    def __enter__(self) -> RowDeltaCommitter:
        self.java = JavaIceberg(self.settings, heap=COMMIT_JVM_HEAP).__enter__()
        try:
            return RowDeltaCommitter(self.java.jvm, self.java.load_table(self.ident),
                                     self.java.int_array(EQUALITY_IDS))
        except BaseException:
            self.java.close()
            raise

    def __exit__(self, *exc) -> None:
        if self.java is not None:
            self.java.close()


def generate(ctx: GenContext) -> Generated:
    """Create the table and fill it as the package docstring describes."""
    recipe = ctx.recipe
    assert isinstance(recipe, DeletesRecipe)
    req = storage_requirement(ctx.settings)
    if req is not None and not req.ok:
        from bench.core.errors import UserError

        raise UserError(f"{req.detail}; {req.fix}")
    pl = plan(recipe, ctx.scale, ctx.file_scale)
    props = write_properties(recipe)
    ctx.progress.info(f"datagen {ctx.ident}: {pl.n} data + {pl.position_files} position-delete + "
                      f"{pl.equality_files} equality-delete files, {pl.rows_per_file} rows per data file, "
                      f"{pl.per_commit} checkpoints per commit pair")
    part = recipe.partitioning
    if part is None:
        tbl = ctx.catalog.create_table(ctx.ident, SCHEMA, properties={**props, **TABLE_PROPERTIES})
    else:
        tbl = ctx.catalog.create_table(ctx.ident, PARTITIONED_SCHEMA, partition_spec=partition_spec(part),
                                       properties={**props, **TABLE_PROPERTIES})
    pipeline = _Pipeline(ctx, pl, tbl.location(), props)
    commits = pipeline.run(lambda: _JavaCommitter(ctx.settings, ctx.ident))
    gt = pipeline.truth.ground_truth(pl, commits)
    if part is not None and pipeline.tally is not None:
        gt = gt.model_copy(update={"partition_spec": spec_text(part), "partitions": pipeline.tally.truth()})
    return Generated(files=pl.n + pl.position_files + pl.equality_files,
                     bytes=sum(pipeline.truth.bytes.values()), rows=gt.rows, ground_truth=gt)
