"""The content checksum shared by the generator's ground truth and the verifier's readers.

A table's content is summarized as (row count, order-independent checksum), the checksum being the sum
over rows of DuckDB's 64-bit `hash()` of all columns, as a HUGEINT.  Sums of disjoint parts add up, so
the generator computes it file by file and the verifier over the whole table, with the same SQL.

DuckDB's hash of several columns is a left fold of the columns' own hashes with its CombineHash
(`combine`): a generator that builds rows from pooled values can hash each pool once and combine the
hashes of a file's rows in numpy instead of hashing every row's bytes again (`datagen.schema`); it
checks its result against DuckDB's own `hash()` (`arrow_checksum`) on its first file.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

from bench.core.sql import idents

_LOCAL = threading.local()  # one DuckDB connection per thread and process (a connect costs ~10 ms)


def checksum_select(columns: list[str], source: str) -> str:
    """SELECT returning (rows, checksum) over `source` (a table expression) for `columns`."""
    return f"SELECT count(*), coalesce(sum(hash({idents(columns)})::HUGEINT), 0) FROM {source}"


def _connection(threads: int) -> Any:
    import duckdb

    key = (os.getpid(), threads)  # a forked writer makes its own
    con = getattr(_LOCAL, "connections", {}).get(key)
    if con is None:
        con = duckdb.connect(config={"threads": threads})
        _LOCAL.connections = {**getattr(_LOCAL, "connections", {}), key: con}
    return con


def arrow_checksum(table: Any, threads: int = 1) -> tuple[int, int]:
    """(rows, checksum) of an Arrow table or RecordBatchReader, over all its columns."""
    con = _connection(threads)
    con.register("_rows", table)
    try:
        row = con.execute(checksum_select(list(table.schema.names), "_rows")).fetchone()
    finally:
        con.unregister("_rows")
    assert row is not None
    n, s = row
    return int(n), int(s)


# DuckDB's CombineHash and MurmurHash64 (src/include/duckdb/common/types/hash.hpp, DuckDB 1.x) share
# this multiplier: combine: a ^= a >> 32; a *= M; return a ^ b.
COMBINE_MULTIPLIER = np.uint64(0xD6E8FEB86659FD93)


def column_hashes(table: Any, threads: int = 1) -> list[np.ndarray]:
    """DuckDB's `hash()` of each column of an Arrow table, as uint64 arrays."""
    con = _connection(threads)
    con.register("_cols", table)
    try:
        names = list(table.schema.names)
        select = ", ".join(f"hash({idents([n])})::UBIGINT AS h{i}" for i, n in enumerate(names))
        out = con.execute(f"SELECT {select} FROM _cols").fetchnumpy()
    finally:
        con.unregister("_cols")
    return [np.asarray(out[f"h{i}"], dtype=np.uint64) for i in range(len(names))]


def int_hashes(values: np.ndarray) -> np.ndarray:
    """DuckDB's hash of integer (and timestamp) values, in numpy: its MurmurHash64 finalizer of the
    value as an unsigned 64-bit integer (an INTEGER is zero-extended, a BIGINT/TIMESTAMP taken as is)."""
    if values.dtype.itemsize == 4:
        x = values.view(np.uint32).astype(np.uint64)
    else:
        x = values.view(np.uint64).copy()
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(32)
        x *= COMBINE_MULTIPLIER
        x ^= x >> np.uint64(32)
        x *= COMBINE_MULTIPLIER
        x ^= x >> np.uint64(32)
    return x


def combine(hashes: list[np.ndarray]) -> np.ndarray:
    """The row hashes DuckDB's `hash(c1, c2, ...)` gives, from the columns' own hashes."""
    acc = hashes[0].astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        for h in hashes[1:]:
            acc ^= acc >> np.uint64(32)
            acc *= COMBINE_MULTIPLIER
            acc ^= h
    return acc


def exact_sum(row_hashes: np.ndarray) -> int:
    """The exact sum of uint64 row hashes (what `sum(hash(...)::HUGEINT)` gives)."""
    h = row_hashes.astype(np.uint64, copy=False)
    low = int((h & np.uint64(0xFFFFFFFF)).sum(dtype=np.uint64))
    high = int((h >> np.uint64(32)).sum(dtype=np.uint64))
    return (high << 32) + low
