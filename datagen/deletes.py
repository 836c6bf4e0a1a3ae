"""The delete-heavy table of the copy-on-write scenarios (issue 3), shaped like a streaming CDC writer.

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
equality-deleted) and their count and content checksum (`datagen.checksum`: the verifier's SQL, sum of
DuckDB's hash over all columns) from the rows it generated - in parallel, one file at a time, never
reading the table back.  The per-file sums add up to the dataset's ground truth.

Files and commits.  Files are written on a pool of processes with pyiceberg's Parquet writer: data files
exactly as `datagen.dataset.write_data_file`; position deletes = file_path (field id 2147483546, spelled
exactly as the manifest records the data file) + pos (2147483545), sorted by pos; equality deletes =
v1 (1), v2 (2) with equality_ids [1, 2].  Commits go through Iceberg's Java API (`RowDelta`, metrics from
Iceberg's own `ParquetUtil.fileMetrics`, `MetricsConfig.forPositionDelete` for position deletes so their
file_path bounds are exact) in a Spark JVM over py4j: pyiceberg cannot commit delete files, and adding
the data files in the same RowDelta as their position deletes is what a streaming writer does (one
snapshot), which a pyiceberg append followed by a Java RowDelta could not reproduce.  Commits are
annotated with `bench.checkpoints` and `bench.commit` in the snapshot summary.
"""

from __future__ import annotations

import bisect
import collections
import math
import multiprocessing as mp
import tempfile
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pyarrow as pa
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.manifest import DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from datagen.checksum import arrow_checksum
from datagen.schema import KEY_COLUMNS, SCHEMA, make_rows, pools_for
from datagen.smallfiles import FilePlan

MIN_ROWS_PER_FILE = 100
POS_FILE_PATH_ID = 2147483546  # Iceberg spec: reserved field ids of position-delete files
POS_POS_ID = 2147483545
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
SPARK_HEAP = "1g"  # the committing JVM only builds metadata: metrics come from Parquet footers
TABLE_PROPERTIES = {
    "format-version": "2",
    # hundreds of commits: keep only recent metadata.json files (snapshots are all kept)
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "20",
}
_SEEDS = {"rows": 0xDE1E7E, "assign": 0xA551, "unmatched": 0xE9E9}
CALIBRATION_INDEX = 2**31 - 1  # never a checkpoint index


# --- the plan -----------------------------------------------------------------------------------
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

    @property
    def position_files(self) -> int:
        return sum(self.has_pos)

    @property
    def equality_files(self) -> int:
        return sum(self.has_eq)

    def file_plan(self, i: int) -> FilePlan:
        return FilePlan(i, self.rows_per_file, i * self.rows_per_file)

    def eq_targets(self, j: int) -> list[int]:
        """The equality-delete checkpoints a row of data file j may die in."""
        k = bisect.bisect_left(self.eq_checkpoints, j)
        return list(self.eq_checkpoints[k:k + self.window])


def _spread(count: int, n: int) -> tuple[bool, ...]:
    return tuple((i + 1) * count // n > i * count // n for i in range(n))


def plan(recipe: dict, scale: float) -> DeletesPlan:
    from bench.errors import UserError

    d1 = int(recipe.get("data_files") or 0)
    if d1 <= 0:
        raise UserError("a deletes table needs table.data_files > 0 in the scenario")
    p1, e1 = int(recipe.get("position_delete_files") or 0), int(recipe.get("equality_delete_files") or 0)
    if p1 > d1 or e1 > d1:
        raise UserError(f"a writer checkpoint closes at most one delete file of each kind: "
                        f"position_delete_files ({p1}) and equality_delete_files ({e1}) must be <= "
                        f"data_files ({d1})")
    n = max(int(recipe.get("min_files") or 1), round(d1 * scale))
    p, e = round(n * p1 / d1), round(n * e1 / d1)
    rows = max(MIN_ROWS_PER_FILE, round(int(recipe["rows_per_data_file"]) * d1 * scale / n))
    frac, share = float(recipe["deleted_fraction"]), float(recipe["position_delete_share"])
    k_pos = max(1, round(frac * share * rows)) if p else 0
    k_eq = round(frac * (1 - share) * rows) if e else 0
    if k_pos + k_eq >= rows:
        raise UserError(f"deleted_fraction {frac} leaves no row of a {rows}-row data file")
    eq_bytes = recipe.get("equality_delete_bytes")
    has_eq = _spread(e, n)
    return DeletesPlan(n=n, rows_per_file=rows, has_pos=_spread(p, n), has_eq=has_eq, k_pos=k_pos,
                       k_eq=k_eq, window=int(recipe["equality_window"]),
                       unmatched_ratio=float(recipe["unmatched_key_ratio"]),
                       eq_bytes_per_file=(eq_bytes * scale / e) if (eq_bytes and e) else None,
                       per_commit=max(1, int(recipe.get("files_per_commit") or 32)),
                       eq_checkpoints=tuple(i for i in range(n) if has_eq[i]))


def position_path(location: str, i: int) -> str:
    return f"{location}/data/gen-{i:06d}-pos-deletes.parquet"


def equality_path(location: str, i: int) -> str:
    return f"{location}/data/gen-{i:06d}-eq-deletes.parquet"


# --- the writers (run in worker processes) ----------------------------------------------------
@dataclass
class Written:
    """One file a writer closed."""

    path: str
    size: int
    records: int


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


def write_checkpoint(location: str, props: dict, seed: int, pl: DeletesPlan, j: int) -> CheckpointOut:
    """Write data file j (and its position-delete file) and compute its surviving rows' ground truth."""
    from datagen.dataset import data_file_path, write_rows

    fp = pl.file_plan(j)
    rows = make_rows(pools_for(seed), seed, fp.index, fp.rows, fp.key_offset)
    data_path = data_file_path(location, j)
    df = write_rows(data_path, props, rows)
    data = Written(data_path, df.file_size_in_bytes, df.record_count)
    pos, eq, assign = deleted_rows(seed, j, fp.rows, pl.k_pos if pl.has_pos[j] else 0, pl.k_eq,
                                   pl.eq_targets(j))
    position = None
    if len(pos):
        ppath = position_path(location, j)
        ptable = pa.Table.from_arrays([pa.array([data_path] * len(pos), pa.string()),
                                       pa.array(pos, pa.int64())], schema=POSITION_DELETE_ARROW)
        pf = write_rows(ppath, props, ptable, POSITION_DELETE_SCHEMA,
                        content=DataFileContent.POSITION_DELETES)
        position = Written(ppath, pf.file_size_in_bytes, pf.record_count)
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
    survivors, checksum = arrow_checksum(rows.filter(pa.array(keep)))
    return CheckpointOut(j, data, position, eq_keys, survivors, checksum, len(pos), len(eq))


def _checkpoint_task(args) -> CheckpointOut:
    return write_checkpoint(*args)


def unmatched_keys(seed: int, i: int, count: int, v2_max: int) -> tuple[np.ndarray, np.ndarray]:
    """Keys no row has: v1 < 0 (rows have 0 <= v1 < 2^20), v2 uniform over the keys written so far."""
    rng = np.random.default_rng([seed, i, _SEEDS["unmatched"]])
    v1 = (-1 - rng.integers(0, 2**31 - 1, count)).astype(np.int32)
    v2 = rng.integers(0, max(1, v2_max), count).astype(np.int64)
    return v1, v2


def write_equality(location: str, props: dict, seed: int, i: int, matched: list[tuple[np.ndarray, np.ndarray]],
                   n_unmatched: int, v2_max: int) -> Written:
    """Equality-delete file of checkpoint i: the matched keys (in the order of the data files they
    come from) and `n_unmatched` keys matching nothing, shuffled together like a CDC stream."""
    from datagen.dataset import write_rows

    u1, u2 = unmatched_keys(seed, i, n_unmatched, v2_max)
    v1 = np.concatenate([m[0] for m in matched] + [u1]).astype(np.int32)
    v2 = np.concatenate([m[1] for m in matched] + [u2]).astype(np.int64)
    order = np.random.default_rng([seed, i, _SEEDS["unmatched"], 1]).permutation(len(v1))
    table = pa.Table.from_arrays([pa.array(v1[order]), pa.array(v2[order])], schema=EQUALITY_DELETE_ARROW)
    path = equality_path(location, i)
    f = write_rows(path, props, table, EQUALITY_DELETE_SCHEMA, content=DataFileContent.EQUALITY_DELETES)
    return Written(path, f.file_size_in_bytes, f.record_count)


def _equality_task(args) -> Written:
    return write_equality(*args)


def equality_bytes_per_key(props: dict, seed: int, keys: int, v2_max: int) -> float:
    """Bytes per key of an equality-delete file of about `keys` unmatched keys with v2 below `v2_max`,
    measured by writing one (deterministic for a given pyarrow version)."""
    from datagen.dataset import write_rows

    keys = int(min(max(keys, 1000), 2_000_000))
    v1, v2 = unmatched_keys(seed, CALIBRATION_INDEX, keys, v2_max)
    table = pa.Table.from_arrays([pa.array(v1), pa.array(v2)], schema=EQUALITY_DELETE_ARROW)
    with tempfile.TemporaryDirectory(prefix="bench-eqcal-") as tmp:
        f = write_rows(f"file://{tmp}/cal.parquet", props, table, EQUALITY_DELETE_SCHEMA)
    return f.file_size_in_bytes / keys


# --- committing through Iceberg's Java API --------------------------------------------------------
class JavaCommitter:
    """RowDelta commits of data + delete files through Iceberg's Java API in a Spark JVM (py4j)."""

    def __init__(self, spark, table_ident: str):
        self.jvm = spark.sparkContext._jvm
        gateway = spark.sparkContext._gateway
        ice = self.jvm.org.apache.iceberg
        self.ice = ice
        self.table = ice.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, table_ident)
        self.spec = self.table.spec()
        self.io = self.table.io()
        self.parquet = ice.FileFormat.PARQUET
        self.data_metrics = ice.MetricsConfig.forTable(self.table)
        self.position_metrics = ice.MetricsConfig.forPositionDelete(self.table)
        self.eq_ids = gateway.new_array(self.jvm.int, len(EQUALITY_IDS))
        for k, fid in enumerate(EQUALITY_IDS):
            self.eq_ids[k] = fid
        self.commits = 0

    def _metrics(self, path: str, config):
        return self.ice.parquet.ParquetUtil.fileMetrics(self.io.newInputFile(path), config)

    def data_file(self, w: Written):
        return (self.ice.DataFiles.builder(self.spec).withPath(w.path).withFormat(self.parquet)
                .withFileSizeInBytes(w.size).withMetrics(self._metrics(w.path, self.data_metrics)).build())

    def position_file(self, w: Written):
        return (self.ice.FileMetadata.deleteFileBuilder(self.spec).ofPositionDeletes().withPath(w.path)
                .withFormat(self.parquet).withFileSizeInBytes(w.size)
                .withMetrics(self._metrics(w.path, self.position_metrics)).build())

    def equality_file(self, w: Written):
        return (self.ice.FileMetadata.deleteFileBuilder(self.spec).ofEqualityDeletes(self.eq_ids)
                .withPath(w.path).withFormat(self.parquet).withFileSizeInBytes(w.size)
                .withMetrics(self._metrics(w.path, self.data_metrics)).build())

    def row_delta(self, rows: list, deletes: list, summary: dict[str, str]) -> None:
        rd = self.table.newRowDelta()
        for f in rows:
            rd = rd.addRows(f)
        for f in deletes:
            rd = rd.addDeletes(f)
        for k, v in summary.items():
            rd = rd.set(k, v)
        rd.commit()
        self.commits += 1


def storage_requirement(settings):
    """Commits go through a Spark JVM: on an S3 warehouse that needs Iceberg's S3FileIO and the AWS SDK
    (iceberg-aws-bundle), online only (BENCH_SPARK_MAVEN=1).  None for a local warehouse."""
    if not settings.is_remote:
        return None
    from bench.engines.base import Requirement
    from bench.spark_runtime import s3_requirement

    r = s3_requirement()
    detail = r.detail if r.ok else ("the deletes scenarios cannot be generated on an S3 warehouse offline: "
                                    "their generator commits delete files through Iceberg's Java API in a "
                                    "Spark JVM, whose S3FileIO needs iceberg-aws-bundle (AWS SDK v2, only on "
                                    "Maven Central)")
    return Requirement("deletes datagen on an S3 warehouse (Spark + iceberg-aws-bundle)", r.ok, detail,
                       "" if r.ok else "on a node with internet access (e.g. AWS) set BENCH_SPARK_MAVEN=1, "
                                       "or use a local --warehouse")


def _settings_for(catalog, ident: str):
    """The CatalogSettings behind the harness's SQLite catalog (Spark needs its JDBC URI)."""
    from bench.catalog import CatalogSettings
    from bench.errors import UserError

    props = getattr(catalog, "properties", {}) or {}
    uri, warehouse = props.get("uri", ""), props.get("warehouse", "")
    remote = warehouse.startswith("s3://")
    if not (uri.startswith("sqlite:///") and (warehouse.startswith("file:") or remote)):
        raise UserError("the deletes generator commits delete files through Spark's JDBC catalog, so it "
                        "needs the embedded SQLite catalog (not an external REST catalog)")
    from pathlib import Path
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    if remote:  # the SQLite file lives in the warehouse's local state directory
        settings = CatalogSettings(warehouse=warehouse.rstrip("/"), name=catalog.name,
                                   namespace=ident.split(".")[0],
                                   state_dir=str(Path(uri[len("sqlite:///"):]).parent))
        req = storage_requirement(settings)
        if req is not None and not req.ok:
            raise UserError(f"{req.detail}; {req.fix}")
    else:
        settings = CatalogSettings(warehouse=url2pathname(urlparse(warehouse).path), name=catalog.name,
                                   namespace=ident.split(".")[0])
    if settings.sqlalchemy_uri != uri:
        raise UserError(f"catalog database {uri} is not the warehouse's {settings.sqlalchemy_uri}")
    return settings


# --- the generator --------------------------------------------------------------------------------
def generate_deletes(catalog, ident: str, recipe: dict, scale: float, seed: int, workers: int,
                     echo: Callable[[str], None]) -> dict:
    """Create `ident` and fill it as the module docstring describes; return files, bytes, rows (the
    surviving rows) and the ground truth."""
    from tqdm import tqdm

    from bench.spark_runtime import spark_session
    from datagen.dataset import write_properties

    pl = plan(recipe, scale)
    settings = _settings_for(catalog, ident)
    props = write_properties(recipe)
    n_files = pl.n + pl.position_files + pl.equality_files
    echo(f"datagen {ident}: {pl.n} data + {pl.position_files} position-delete + {pl.equality_files} "
         f"equality-delete files, {pl.rows_per_file} rows per data file, {pl.per_commit} checkpoints "
         f"per commit pair")
    bytes_per_key = None
    if pl.eq_bytes_per_file:
        # keys range over the table's history: calibrate with v2 over half of it (the average file)
        bytes_per_key = equality_bytes_per_key(props, seed, int(pl.eq_bytes_per_file / 12),
                                               max(1, pl.n * pl.rows_per_file // 2))
    tbl = catalog.create_table(ident, SCHEMA, properties={**props, **TABLE_PROPERTIES})
    location = tbl.location()

    gt = collections.Counter()
    checksum = 0
    total_bytes = {"data": 0, "position": 0, "equality": 0}
    buffers: dict[int, list] = collections.defaultdict(list)
    # forked writers, like smallfiles: a fork-context pool forks all its workers at the first submit,
    # before the JVM starts, and they inherit the value pools built here once
    pools_for(seed)
    ctx = mp.get_context("fork")
    workers = max(1, workers)
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as ex, \
            tqdm(total=n_files, unit="file", desc=f"datagen {ident}", disable=None, leave=False) as bar:
        pending: collections.deque[Future] = collections.deque()
        nxt = 0

        def fill():
            nonlocal nxt
            while nxt < pl.n and len(pending) < 2 * workers:
                pending.append(ex.submit(_checkpoint_task, (location, props, seed, pl, nxt)))
                nxt += 1

        fill()  # writers start while the JVM starts
        try:
            with spark_session(settings, cores=1, heap=SPARK_HEAP, app_name="bench-datagen") as spark:
                committer = JavaCommitter(spark, f"{settings.name}.{ident}")
                group: list[CheckpointOut] = []
                eq_futures: list[tuple[int, Future]] = []
                for i in range(pl.n):
                    out: CheckpointOut = pending.popleft().result()
                    fill()
                    assert out.index == i
                    group.append(out)
                    gt["rows_written"] += out.data.records
                    gt["rows"] += out.survivors
                    gt["position_deleted_rows"] += out.position_deleted
                    gt["equality_deleted_rows"] += out.equality_deleted
                    checksum += out.checksum
                    for target, keys in out.eq_keys.items():
                        buffers[target].append(keys)
                    if pl.has_eq[i]:
                        matched = buffers.pop(i, [])
                        n_matched = sum(len(k[0]) for k in matched)
                        n_unmatched = max(1, round(pl.unmatched_ratio * n_matched))
                        if bytes_per_key:
                            n_unmatched = max(n_unmatched, math.ceil(pl.eq_bytes_per_file / bytes_per_key) - n_matched)
                        gt["equality_keys"] += n_matched + n_unmatched
                        gt["unmatched_keys"] += n_unmatched
                        v2_max = (i + 1) * pl.rows_per_file
                        eq_futures.append((i, ex.submit(_equality_task, (location, props, seed, i, matched,
                                                                         n_unmatched, v2_max))))
                    if len(group) == pl.per_commit or i == pl.n - 1:
                        first, last = group[0].index, group[-1].index
                        tag = f"{first}-{last}"
                        rows = [committer.data_file(o.data) for o in group]
                        positions = [committer.position_file(o.position) for o in group if o.position]
                        committer.row_delta(rows, positions, {"bench.checkpoints": tag,
                                                              "bench.commit": "data+position-deletes"})
                        total_bytes["data"] += sum(o.data.size for o in group)
                        total_bytes["position"] += sum(o.position.size for o in group if o.position)
                        bar.update(len(group) + len(positions))
                        if eq_futures:
                            eqs = [f.result() for _, f in eq_futures]
                            committer.row_delta([], [committer.equality_file(w) for w in eqs],
                                                {"bench.checkpoints": tag, "bench.commit": "equality-deletes"})
                            total_bytes["equality"] += sum(w.size for w in eqs)
                            bar.update(len(eqs))
                        group, eq_futures = [], []
                commits = committer.commits
        except BaseException:
            for f in pending:  # do not wait for writers nobody will commit
                f.cancel()
            raise
    if any(buffers.values()):  # every key was planned for an existing equality checkpoint
        raise RuntimeError(f"equality keys planned for checkpoints that were never written: {sorted(buffers)}")
    ground_truth = {
        "rows": gt["rows"], "checksum": str(checksum), "rows_written": gt["rows_written"],
        "position_deleted_rows": gt["position_deleted_rows"],
        "equality_deleted_rows": gt["equality_deleted_rows"],
        "data_files": pl.n, "position_delete_files": pl.position_files,
        "equality_delete_files": pl.equality_files, "rows_per_data_file": pl.rows_per_file,
        "equality_keys": gt["equality_keys"], "unmatched_equality_keys": gt["unmatched_keys"],
        "data_bytes": total_bytes["data"], "position_delete_bytes": total_bytes["position"],
        "equality_delete_bytes": total_bytes["equality"], "commits": commits,
        "computed_by": "generator (per data file, from the generated rows; datagen.checksum)",
    }
    return {"files": n_files, "bytes": sum(total_bytes.values()), "rows": gt["rows"],
            "ground_truth": ground_truth}
