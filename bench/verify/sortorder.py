"""Sorted and clustered output, read from the files themselves and the manifests.

sorted_output (required when the scenario asks for strategy sort): every data file the run wrote holds
its rows in the table's sort order.  The sort columns are read by Iceberg field id; each key is ranked
with its own direction and null order (pyarrow's rank: equal values share a rank, nulls first or last as
the order says), and the rows are in order when the tuple of ranks never decreases from one row to the
next, compared key by key as a lexicographic order does.

Overlap (advisory): how many data files a point lookup on the first sort key (or on each z-order
column) must open, from the files' [lower, upper] bounds in the manifests: the mean, over 64 probe keys
spread evenly over the key range of the files before and after (numbers: evenly spaced values; other
types: evenly spaced among the bounds), of the live data files whose range holds the probe; before
(the input snapshot) and after.  A global sort leaves ~1 file per probe; a
bin-pack of scattered keys leaves every file.  It measures the layout, it does not judge it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.conversions import from_bytes
from pyiceberg.manifest import DataFile
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortOrder

from bench.verify.partitions import _column_by_id, _open_parquet

PROBES = 64


def order_text(order: SortOrder, schema: Schema) -> str:
    return ", ".join(f"{schema.find_column_name(f.source_id)} {f.direction.value} {f.null_order.value}"
                     for f in order.fields)


def _ranks(values: pa.ChunkedArray | pa.Array, ascending: bool, nulls_first: bool) -> np.ndarray:
    key = ("", "ascending" if ascending else "descending", "at_start" if nulls_first else "at_end")
    return pc.rank(values, sort_keys=[key], tiebreaker="dense").to_numpy()


def rows_out_of_order(columns: Sequence[tuple[Any, bool, bool]]) -> int:
    """How many adjacent row pairs break the lexicographic order of `columns` ((values, ascending,
    nulls_first) per key, in key order): 0 when sorted."""
    n = len(columns[0][0]) if columns else 0
    if n < 2:
        return 0
    undecided = np.ones(n - 1, dtype=bool)
    bad = np.zeros(n - 1, dtype=bool)
    for values, ascending, nulls_first in columns:
        r = _ranks(values, ascending, nulls_first).astype(np.int64)
        step = r[1:] - r[:-1]
        bad |= undecided & (step < 0)
        undecided &= step == 0
    return int(bad.sum())


def file_sort_problem(path: str, order: SortOrder, schema: Schema,
                      open_file: Callable[[str], pq.ParquetFile] = _open_parquet) -> str | None:
    """Why one data file is not sorted by `order` (None when it is)."""
    pf = open_file(path)
    cols = []
    for f in order.fields:
        name = _column_by_id(pf, f.source_id)
        if name is None:
            return f"{path}: no column with field id {f.source_id} ({schema.find_column_name(f.source_id)})"
        cols.append((pf.read(columns=[name]).column(0), f.direction == SortDirection.ASC,
                     f.null_order == NullOrder.NULLS_FIRST))
    bad = rows_out_of_order(cols)
    if bad:
        return f"{path.rsplit('/', 1)[-1]}: {bad} of {pf.metadata.num_rows - 1} adjacent row pairs out of order"
    return None


def key_ranges(files: Sequence[DataFile], field_id: int, field_type: Any) -> list[tuple[Any, Any] | None]:
    """Each file's [lower, upper] bound of a column from its manifest entry (None: no bounds recorded)."""
    out: list[tuple[Any, Any] | None] = []
    for df in files:
        low, high = (df.lower_bounds or {}).get(field_id), (df.upper_bounds or {}).get(field_id)
        out.append(None if low is None or high is None else (from_bytes(field_type, low), from_bytes(field_type, high)))
    return out


def probes(*range_sets: list[tuple[Any, Any] | None], k: int = PROBES) -> list[Any]:
    """k keys spread evenly over the key range of every range given (the same probes for before and after):
    for a numeric key evenly spaced values from the smallest bound to the largest, otherwise evenly
    spaced among the sorted bounds themselves."""
    bounds = sorted({v for rs in range_sets for r in rs if r is not None for v in r})
    if not bounds:
        return []
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in bounds):
        values = np.linspace(bounds[0], bounds[-1], num=k)
        return [int(round(v)) for v in values] if all(isinstance(v, int) for v in bounds) else list(values)
    idx = np.linspace(0, len(bounds) - 1, num=min(k, len(bounds))).round().astype(int)
    return [bounds[i] for i in idx]


def files_per_probe(ranges: list[tuple[Any, Any] | None], keys: list[Any]) -> float | None:
    """Mean number of files a lookup of each key must open (a file without bounds is always opened)."""
    if not keys or not ranges:
        return None
    return sum(sum(1 for r in ranges if r is None or r[0] <= key <= r[1]) for key in keys) / len(keys)
