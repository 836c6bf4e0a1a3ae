"""The writers of a deletes table, run in worker processes: a checkpoint's data file and position-delete
file (with the ground truth of its surviving rows), and equality-delete files."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.manifest import DataFileContent
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from bench.core.checksum import exact_sum
from bench.core.table.deletes import POS_FILE_PATH_ID, POS_POS_ID
from datagen.deletes.plan import _SEEDS, DeletesPlan, deleted_rows, equality_path, position_path
from datagen.schema import KEY_COLUMNS, SCHEMA, make_rows, pools_for, row_hashes
from datagen.writer import data_file_path, write_rows

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
