"""The table schema: the key columns of the generator iceberg-compaction is tested with
(v1 int, v2 bigint, v3 varchar(20); key (v1, v2)) plus typed payload columns that make bytes realistic
(timestamps, numbers, low-cardinality strings that dictionary-encode, free text that compresses)."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform
from pyiceberg.types import (
    BooleanType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
)

from bench.core.checksum import arrow_checksum, column_hashes, combine, exact_sum, int_hashes

KEY_COLUMNS = ("v1", "v2")

SCHEMA = Schema(
    NestedField(1, "v1", IntegerType(), required=False),
    NestedField(2, "v2", LongType(), required=False),
    NestedField(3, "v3", StringType(), required=False),
    NestedField(4, "event_ts", TimestampType(), required=False),
    NestedField(5, "user_id", LongType(), required=False),
    NestedField(6, "amount", DoubleType(), required=False),
    NestedField(7, "quantity", IntegerType(), required=False),
    NestedField(8, "status", StringType(), required=False),
    NestedField(9, "region", StringType(), required=False),
    NestedField(10, "is_test", BooleanType(), required=False),
    NestedField(11, "payload", StringType(), required=False),
)
ARROW_SCHEMA = schema_to_pyarrow(SCHEMA)  # carries the Iceberg field ids as Parquet field ids
COLUMNS = [f.name for f in SCHEMA.fields]
# partitioned tables (datagen.partitions) add the day column of production daily tables: event_date is
# the UTC day of event_ts; an unpartitioned table keeps SCHEMA (and its bytes)
PARTITIONED_SCHEMA = Schema(*SCHEMA.fields, NestedField(12, "event_date", DateType(), required=False))
PARTITIONED_ARROW_SCHEMA = schema_to_pyarrow(PARTITIONED_SCHEMA)
DAY_US = 86_400_000_000


@dataclass(frozen=True)
class RowShape:
    """Confines one partitioned file's generated rows to its partition: event_ts runs through
    [ts_start_us, ts_start_us + ts_span_us) and, with `buckets`, v1 is drawn only from the values
    pyiceberg's bucket(buckets) transform puts in `bucket` (`datagen.partitions.bucket_members`).
    Rows made with a shape have the column event_date (PARTITIONED_SCHEMA)."""

    ts_start_us: int
    ts_span_us: int
    buckets: int = 0  # 0: v1 is not constrained
    bucket: int = 0

@dataclass(frozen=True)
class KeyOrder:
    """The order keys arrive in a table with a sort order (datagen/smallfiles.py): row id i (the i-th row
    written, files in order) gets key v2 = (a x i + b) mod n, a bijection on [0, n) (gcd(a, n) = 1), so
    keys stay unique and 0 .. n-1, but consecutive rows (one file's) are scattered over the whole range
    and every file's [min, max] of v2 spans nearly all of it: unsorted across files."""

    n: int
    a: int
    b: int

    def keys(self, ids: np.ndarray) -> np.ndarray:
        return (self.a * ids.astype(np.int64) + self.b) % self.n

    def ids(self, keys: np.ndarray) -> np.ndarray:
        """The row ids of `keys` (the inverse)."""
        inv = pow(self.a, -1, self.n)
        return (inv * ((keys.astype(np.int64) - self.b) % self.n)) % self.n


_STATUSES = pa.array(["created", "paid", "shipped", "delivered", "cancelled", "refunded", "returned"],
                     type=pa.large_string())
_REGIONS = pa.array([f"region-{i:02d}" for i in range(40)], type=pa.large_string())
_ALPHABET = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", dtype=np.uint8)
_WORDS = np.array("""lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut
labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip
ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse cillum fugiat nulla pariatur
excepteur sint occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est laborum
order item customer cart checkout payment refund shipment warehouse carrier tracking invoice""".split())  # noqa: SIM905
_EPOCH_US = 1_735_689_600_000_000  # 2025-01-01T00:00:00Z


POOL_ROWS = 1 << 20  # rows of the per-process value pool (~40 MB)


class ValuePools:
    """Column values generated once per process from the seed.  A file's non-key columns are windows
    (zero-copy slices at random offsets) into these pools, so generating a file costs a few
    milliseconds and datagen is bound by the Parquet write, not by random-number generation (see
    `bench selfcheck datagen`).  The pools are large (2^20 rows, 65,536 payload texts) so a file's
    values do not repeat within it more than real data would."""

    def __init__(self, seed: int, size: int = 8192, payload_size: int = 65536, rows: int = POOL_ROWS):
        rng = np.random.default_rng([seed, 0xC0FFEE])
        lengths = rng.integers(8, 21, size)
        chars = _ALPHABET[rng.integers(0, len(_ALPHABET), (size, 20))]
        v3 = pa.array([chars[i, : lengths[i]].tobytes().decode() for i in range(size)], type=pa.large_string())
        # free text: pooled words plus a number; the pool is large enough that a file's payloads do not
        # dictionary-encode (like real high-cardinality payloads) yet compress as text does
        nwords = rng.integers(8, 25, payload_size)
        offsets = pa.array(np.concatenate([[0], np.cumsum(nwords)]).astype(np.int32))
        words = pa.array(_WORDS).take(pa.array(rng.integers(0, len(_WORDS), int(nwords.sum()))))
        text = pc.binary_join(pa.ListArray.from_arrays(offsets, words), " ")
        tags = pc.cast(pa.array(rng.integers(0, 1 << 40, payload_size)), pa.string())
        self.payload = pc.cast(pc.binary_join_element_wise(text, tags, " #"), pa.large_string())
        self.columns = {
            "v3": v3.take(pa.array(rng.integers(0, size, rows))),
            "user_id": pa.array(rng.integers(0, 5_000_000, rows, dtype=np.int64)),
            "amount": pa.array(rng.integers(1, 50_000, rows) / 100.0),
            "quantity": pa.array(rng.integers(1, 20, rows, dtype=np.int32)),
            "status": _STATUSES.take(pa.array(rng.integers(0, len(_STATUSES), rows))),
            "region": _REGIONS.take(pa.array(rng.integers(0, len(_REGIONS), rows))),
            "is_test": pa.array(rng.random(rows) < 0.01),
        }
        self._hashes: dict[str, np.ndarray] | None = None

    def hashes(self) -> dict[str, np.ndarray]:
        """DuckDB's hash of every pooled value, per column (computed once per process, ~0.1 s)."""
        if self._hashes is None:
            hashes = dict(zip(self.columns, column_hashes(pa.table(self.columns))))
            hashes["payload"] = column_hashes(pa.table({"payload": self.payload}))[0]
            self._hashes = hashes
        return self._hashes


@functools.lru_cache(maxsize=4)
def pools_for(seed: int) -> ValuePools:
    return ValuePools(seed)


def _plan(pools: ValuePools, seed: int, file_index: int, rows: int, key_offset: int, shape: RowShape | None = None,
          keys: KeyOrder | None = None):
    """A file's generated columns (v1, v2, event_ts) and its window start in each pool (the pools'
    windows do not depend on `shape` or `keys`)."""
    rng = np.random.default_rng([seed, file_index])
    starts = rng.integers(0, POOL_ROWS, len(pools.columns) + 1)
    if shape is None:
        ts = _EPOCH_US + file_index * 60_000_000 + (np.arange(rows, dtype=np.int64) * 60_000_000) // rows
        v1 = rng.integers(0, 1 << 20, rows, dtype=np.int32)
    else:
        ts = shape.ts_start_us + (np.arange(rows, dtype=np.int64) * shape.ts_span_us) // rows
        if shape.buckets:
            members = bucket_members(shape.buckets)[shape.bucket]
            v1 = members[rng.integers(0, len(members), rows)]
        else:
            v1 = rng.integers(0, 1 << 20, rows, dtype=np.int32)
    v2 = np.arange(key_offset, key_offset + rows, dtype=np.int64)
    if keys is not None:
        v2 = keys.keys(v2)
    pool_starts = {name: int(st) for name, st in zip(pools.columns, starts)}
    pool_starts["payload"] = int(starts[-1]) % len(pools.payload)
    return v1, v2, ts, pool_starts


BUCKET_MEMBERS = 4096  # v1 values per bucket a bucketed file's rows draw from (~ the first 4096 x N integers)


@functools.lru_cache(maxsize=8)
def bucket_members(buckets: int) -> tuple[np.ndarray, ...]:
    """For each bucket b of bucket(`buckets`) on v1 (an int column), the v1 values in [0, 4096 x buckets)
    that pyiceberg's own BucketTransform puts in b (Iceberg's murmur3 bucket; ~0.2 s for 16 buckets, once
    per process: generators build it before forking their writers)."""
    to_bucket = BucketTransform(buckets).transform(IntegerType())
    values = np.arange(BUCKET_MEMBERS * buckets, dtype=np.int32)
    of = np.fromiter((to_bucket(int(v)) for v in values), dtype=np.int32, count=len(values))
    return tuple(values[of == b] for b in range(buckets))


def _event_date(ts: np.ndarray) -> np.ndarray:
    return (ts // DAY_US).astype(np.int32)


def make_rows(pools: ValuePools, seed: int, file_index: int, rows: int, key_offset: int,
              shape: RowShape | None = None, keys: KeyOrder | None = None) -> pa.Table:
    """Rows of one data file.  Deterministic in (seed, file_index, shape); keys (v1, v2) are unique
    across the table because v2 = key_offset + row number, with key_offset unique per file.  Event
    times rise through the file's minute like a stream's (with a `shape`: through its window of the
    file's partition, and the rows get event_date; with `keys`, v2 is scattered: `KeyOrder`)."""
    v1, v2, ts, starts = _plan(pools, seed, file_index, rows, key_offset, shape, keys)
    win = {name: _window(col, starts[name], rows) for name, col in pools.columns.items()}
    cols = [
        pa.array(v1), pa.array(v2), win["v3"], pa.array(ts, type=pa.timestamp("us")),
        win["user_id"], win["amount"], win["quantity"], win["status"], win["region"], win["is_test"],
        _window(pools.payload, starts["payload"], rows),
    ]
    if shape is None:
        return pa.Table.from_arrays(cols, schema=ARROW_SCHEMA)
    cols.append(pa.array(_event_date(ts), type=pa.date32()))
    return pa.Table.from_arrays(cols, schema=PARTITIONED_ARROW_SCHEMA)


# (pid, partitioned) -> the pooled hashing matched DuckDB's on the first such file of the process
_FAST_HASH_CHECKED: dict[tuple[int, bool], bool] = {}


def row_hashes(pools: ValuePools, seed: int, file_index: int, rows: int, key_offset: int,
               table: pa.Table | None = None, shape: RowShape | None = None,
               keys: KeyOrder | None = None) -> np.ndarray:
    """DuckDB's hash(v1, ..., payload[, event_date]) of each row of `make_rows(...)`, from the pools'
    hashes (each value hashed once per process) combined in numpy.  The first file of every process
    (and of each schema) is also hashed by DuckDB itself and must match, otherwise DuckDB hashes every
    file (`table`: the rows, if made)."""
    v1, v2, ts, starts = _plan(pools, seed, file_index, rows, key_offset, shape, keys)
    key = (os.getpid(), shape is not None)
    if _FAST_HASH_CHECKED.get(key) is False:
        rows_table = table if table is not None else make_rows(pools, seed, file_index, rows, key_offset, shape, keys)
        return combine(column_hashes(rows_table))
    pooled = pools.hashes()
    win = {name: _np_window(h, starts[name], rows) for name, h in pooled.items()}
    cols = [int_hashes(v1), int_hashes(v2), win["v3"], int_hashes(ts), win["user_id"], win["amount"],
            win["quantity"], win["status"], win["region"], win["is_test"], win["payload"]]
    if shape is not None:
        cols.append(int_hashes(_event_date(ts)))
    out = combine(cols)
    if key not in _FAST_HASH_CHECKED:
        rows_table = table if table is not None else make_rows(pools, seed, file_index, rows, key_offset, shape, keys)
        _FAST_HASH_CHECKED[key] = exact_sum(out) == arrow_checksum(rows_table)[1]
        if not _FAST_HASH_CHECKED[key]:
            return combine(column_hashes(rows_table))
    return out


def _np_window(values: np.ndarray, start: int, rows: int) -> np.ndarray:
    """`rows` consecutive values from `start`, wrapping around (like `_window`)."""
    if start + rows <= len(values):
        return values[start:start + rows]
    return np.take(values, np.arange(start, start + rows) % len(values))


def _window(pool: pa.Array, start: int, rows: int) -> pa.ChunkedArray:
    """`rows` consecutive values of `pool` from `start`, wrapping around: zero-copy slices."""
    chunks, pos, left = [], start, rows
    while left:
        take = min(left, len(pool) - pos)
        chunks.append(pool.slice(pos, take))
        left -= take
        pos = 0
    return pa.chunked_array(chunks, type=pool.type)
