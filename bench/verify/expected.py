"""A table's content against the rows a conformance case states (bench.core.expected.Expected): the row count and
the key column's values, read by the harness's merge-on-read reader (the Iceberg delete rules applied in DuckDB SQL,
columns by field id, bench.verify.readers.merge_on_read: the same reader the row evidence uses, not a new one; for
ORC or Avro data files, which it does not read, pyiceberg's scan or pyiceberg-avro); and
each reader's answer as a witness against the expected count (a reader that disagrees is a finding about it)."""

from __future__ import annotations

from typing import Literal

from pyiceberg.table import Table

from bench.core.expected import Expected, difference, stated
from bench.core.records.verification import Check, ReaderAnswer, ReaderFinding
from bench.core.sql import ident
from bench.verify.avro import NAME as AVRO
from bench.verify.avro import AvroUnavailable, avro_rows
from bench.verify.readers import ReaderUnavailable, merge_on_read
from bench.verify.referee import finding

READER = "duckdb-merge-on-read"
RULE = ("expected rows (a conformance case): the output holds the rows the case states by the Iceberg spec's rules "
        "(count and key values, read by duckdb-merge-on-read); a reader whose count differs while it does is a finding")


def read_keys(tbl: Table, snapshot_id: int | None, key: str | None) -> tuple[int, list | None, str]:
    """(rows, values of `key` or None, the reader) of the snapshot's live rows: duckdb-merge-on-read; a snapshot
    whose files are not all Parquet (it says so: ReaderUnavailable) by the readers that read them, pyiceberg's scan
    (ORC, position deletes) or pyiceberg-avro (Avro data files)."""
    try:
        with merge_on_read(tbl, snapshot_id) as (con, live):
            if con is None:
                return 0, [] if key else None, READER
            if key is None:
                return int(con.execute(f"SELECT count(*) FROM {live}").fetchone()[0]), None, READER
            values = [r[0] for r in con.execute(f"SELECT {ident(key)} FROM {live}").fetchall()]
            return len(values), values, READER
    except ReaderUnavailable:
        pass
    try:
        rows, reader = avro_rows(tbl, snapshot_id), AVRO
    except AvroUnavailable:
        rows, reader = tbl.scan(snapshot_id=snapshot_id).to_arrow(), "pyiceberg-scan"
    return rows.num_rows, rows.column(key).to_pylist() if key else None, reader


def expected_check(tbl: Table, snapshot_id: int | None, expected: Expected, name: str,
                   whose: Literal["engine", "harness"], on: str) -> Check:
    """A required check: the snapshot (None: the current one) holds the rows `expected` states."""
    try:
        rows, keys, reader = read_keys(tbl, snapshot_id, expected.key)
    except Exception as e:  # noqa: BLE001 - a table the harness cannot read is the harness's to answer for
        return Check(name=name, ok=False, whose="harness", about="rows",
                     message=f"{READER} could not read {on}: {type(e).__name__}: {e}"[:1000])
    diff = difference(expected, rows, keys)
    return Check(name=name, ok=not diff, whose=whose, about="rows",
                 message=(f"{on} ({reader}): {stated(expected)}" if not diff else
                          f"{on} ({reader}) does not hold the case's expected rows: {diff}"))


def witnesses(answers: dict[str, ReaderAnswer], expected: Expected, on: str) -> list[ReaderFinding]:
    """Each reader that answered a row count other than the expected one: a finding about that reader."""
    return [finding(a, on, expected.rows, "", against="the case's expected rows (by the Iceberg spec)")
            for a in answers.values() if a.rows is not None and a.rows != expected.rows]
