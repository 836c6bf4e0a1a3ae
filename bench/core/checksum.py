"""The content checksum shared by the generator's ground truth and the verifier's readers.

A table's content is summarized as (row count, order-independent checksum), the checksum being the sum
over rows of DuckDB's 64-bit `hash()` of all columns, as a HUGEINT.  Sums of disjoint parts add up, so
the generator computes it file by file and the verifier over the whole table, with the same SQL.
"""

from __future__ import annotations

from typing import Any

from bench.core.sql import idents


def checksum_select(columns: list[str], source: str) -> str:
    """SELECT returning (rows, checksum) over `source` (a table expression) for `columns`."""
    return f"SELECT count(*), coalesce(sum(hash({idents(columns)})::HUGEINT), 0) FROM {source}"


def arrow_checksum(table: Any, threads: int = 1) -> tuple[int, int]:
    """(rows, checksum) of an Arrow table or RecordBatchReader, over all its columns."""
    import duckdb

    con = duckdb.connect(config={"threads": threads})
    try:
        con.register("_rows", table)
        columns = list(table.schema.names)
        row = con.execute(checksum_select(columns, "_rows")).fetchone()
        assert row is not None
        n, s = row
    finally:
        con.close()
    return int(n), int(s)
