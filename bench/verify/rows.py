"""Which rows: when an output's content differs from its input's, the rows that came back (in the output,
not in the input: deleted rows resurrected) and the rows that were lost (in the input, not in the output),
each as a multiset difference over every column, read by the harness's merge-on-read reader (the Iceberg v2
and v3 delete rules applied in DuckDB SQL), a few of each as evidence."""

from __future__ import annotations

from typing import Any

import duckdb
from pyiceberg.table import Table

from bench.core.results import RowDifference
from bench.verify.readers import merge_on_read

EVIDENCE_ROWS = 5


def _rows(tbl: Table, snapshot_id: int | None) -> Any:
    """The snapshot's live rows as an Arrow table (None without a data file)."""
    with merge_on_read(tbl, snapshot_id) as (con, live):
        if con is None:
            return None
        return con.execute(f"SELECT * FROM {live}").to_arrow_table()


def row_difference(tbl: Table, before_id: int | None, after_id: int | None,
                   limit: int = EVIDENCE_ROWS) -> RowDifference:
    """The rows of snapshot `after_id` against `before_id` of the same table (None: the current snapshot)."""
    before, after = _rows(tbl, before_id), _rows(tbl, after_id)
    con = duckdb.connect()
    try:
        for name, rows in (("before_", before), ("after_", after)):
            if rows is None:
                con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM (SELECT 1) WHERE false")
            else:
                con.register(f"{name}_arrow", rows)
                con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM {name}_arrow")
        if before is None or after is None:
            return RowDifference(came_back=int(after.num_rows if after is not None else 0),
                                 lost=int(before.num_rows if before is not None else 0))
        back = "SELECT * FROM after_ EXCEPT ALL SELECT * FROM before_"
        lost = "SELECT * FROM before_ EXCEPT ALL SELECT * FROM after_"
        out = RowDifference(came_back=con.execute(f"SELECT count(*) FROM ({back})").fetchone()[0],  # type: ignore[index]
                            lost=con.execute(f"SELECT count(*) FROM ({lost})").fetchone()[0])  # type: ignore[index]
        for field, sql in (("came_back_rows", back), ("lost_rows", lost)):
            got = con.execute(f"{sql} ORDER BY ALL LIMIT {limit}").to_arrow_table().to_pylist()
            setattr(out, field, [_plain(r) for r in got])
        return out
    finally:
        con.close()


def _plain(row: dict) -> dict[str, Any]:
    """A row as JSON can hold it (bytes as hex, other values as their text where JSON has no type)."""
    return {k: v.hex() if isinstance(v, bytes) else v if isinstance(v, (int, float, str, bool, type(None)))
            else str(v) for k, v in row.items()}
