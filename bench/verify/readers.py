"""Content readers: (rows, checksum) of a snapshot, each by its own code path.

    duckdb-read-parquet   DuckDB read_parquet over the live data files, columns by FIELD ID (its `schema`
                          map, bench.verify.columns; by name only for files without field ids, then
                          advisory where the schema history makes names ambiguous); only when no live
                          delete file applies
    pyiceberg-scan        pyiceberg's scan of the snapshot, columns by Parquet FIELD ID (a file whose
                          field ids are missing or wrong does not read back), streamed into DuckDB for
                          the checksum; applies position deletes, cannot apply equality deletes
    duckdb-iceberg        DuckDB's iceberg extension through the REST catalog (its own Iceberg reader,
                          applies every delete); quadratic on equality deletes (duckdb-iceberg#626), so
                          unavailable above a work limit
    duckdb-merge-on-read  the Iceberg v2 delete rules applied by us in DuckDB SQL over the snapshot's
                          Parquet files (data, position and equality deletes with their sequence
                          numbers from the manifests), columns by field id as duckdb-read-parquet
    pyiceberg-avro        Avro data files (which no reader above reads) by pyiceberg's own Avro decoder,
                          columns by field id; only when no delete file is live (bench.verify.avro)
The DuckDB readers read Parquet only and pyiceberg's scan Parquet and ORC: on a snapshot with other files they
are unavailable (and say which files); the verifier then asks the readers that can (pyiceberg-avro, and the
reference reader when no other can).
A reader that cannot read a table here raises ReaderUnavailable (with why); a reader that fails on a
table it should read raises its own error, which the verifier reports as a failed check.

Two of them also read only the partitions a partition filter selects (`read_selected`), each by its own
code path: pyiceberg-scan with the filter as its row filter (pyiceberg's own partition pruning plans only
those partitions' data and delete files, so the equality deletes that stay live outside the filter are out
of its way), duckdb-merge-on-read with the data files of the selected partitions (our selector), every
delete file still applied by its rules.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pyiceberg.expressions import AlwaysTrue
from pyiceberg.manifest import FileFormat
from pyiceberg.table import Table

from bench.core.catalog import CatalogSettings
from bench.core.catalog.duck import duckdb_config, duckdb_connect, duckdb_connect_iceberg
from bench.core.catalog.s3 import is_s3
from bench.core.checksum import checksum_select
from bench.core.records.verification import ReaderAnswer
from bench.core.sql import ident, idents
from bench.core.table.deletes import (
    DUCKDB_ICEBERG_EQ_WORK_LIMIT,
    classify,
    dv_rows,
    equality_delete_work,
    is_dv,
    is_global,
    scope,
)
from bench.core.table.entries import LiveFiles, live_files
from bench.core.uri import local_path
from bench.verify.avro import NAME as AVRO
from bench.verify.avro import AvroUnavailable, read_avro
from bench.verify.columns import Columns, columns_for
from bench.verify.reference import NAME as REFERENCE
from bench.verify.reference import RESOLVES, ReferenceUnavailable, read_reference


class ReaderUnavailable(RuntimeError):
    """This reader cannot read this table here (e.g. no REST catalog to read through)."""


@dataclass(frozen=True)
class Reader:
    name: str
    resolves: str  # "name" | "field id" | "catalog" (how columns are matched to the schema)
    deletes: str  # which deletes it applies
    read: Callable[..., tuple[int, str]]  # (table, snapshot id, settings[, seen]) -> (rows, checksum)
    parquet: bool = False  # reads the Parquet files itself (bench.verify.columns): takes `seen`


def not_parquet(files: LiveFiles, *, deletes: bool = True) -> str:
    """Why a reader of Parquet files alone cannot read these live files ("" when every data file, and with
    `deletes` every delete file that is not a deletion vector, is Parquet): e.g. "3 ORC data files"."""
    entries = files.data + (files.deletes if deletes else [])
    odd = Counter(str(e.data_file.file_format.value).upper() for e in entries
                  if e.data_file.file_format not in (FileFormat.PARQUET, FileFormat.PUFFIN))
    return ", ".join(f"{n} {fmt} files" for fmt, n in sorted(odd.items()))


def _parquet_only(files: LiveFiles, who: str) -> None:
    if odd := not_parquet(files):
        raise ReaderUnavailable(f"{who} reads Parquet data and delete files only; the snapshot has {odd}")


def _columns(tbl: Table) -> list[str]:
    return [f.name for f in tbl.schema().fields]


def _connect(paths: list[str]):
    return duckdb_connect(remote=any(is_s3(p) for p in paths))


def parquet_checksum(tbl: Table, paths: list[str], seen: list[Columns] | None = None) -> tuple[int, str]:
    """Rows and checksum of Parquet files of the table, its current columns by field id (DuckDB read_parquet)."""
    if not paths:
        return 0, "0"
    con = _connect(paths)
    try:
        cols = columns_for(tbl, con, paths)
        if seen is not None:
            seen.append(cols)
        n, s = con.execute(checksum_select(cols.names, cols.source(paths))).fetchone()
    finally:
        con.close()
    return int(n), str(s)


def read_parquet_files(tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None = None,
                       seen: list[Columns] | None = None) -> tuple[int, str]:
    files = live_files(tbl, snapshot_id)
    _parquet_only(files, "DuckDB's read_parquet")
    if files.deletes:
        cls = classify(files, tbl.specs())
        if cls.applying_position or cls.applying_equality:
            raise ReaderUnavailable(f"{cls.applying_position} position and {cls.applying_equality} equality "
                                    f"delete files still apply")
    return parquet_checksum(tbl, LiveFiles.paths(files.data), seen)


def read_pyiceberg_scan(tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None = None,
                        row_filter: str | None = None) -> tuple[int, str]:
    """pyiceberg resolves columns by field id; its batches stream into DuckDB's checksum.  It cannot apply
    equality deletes: a table where some still apply (e.g. outside a partition filter) is out of its reach.
    With `row_filter` (a partition filter, which selects whole partitions) it plans the partitions the filter
    selects only; an equality delete file live there fails it with pyiceberg's own error."""
    import duckdb

    if row_filter is None:
        files = live_files(tbl, snapshot_id)
        if avro := [e for e in files.all if e.data_file.file_format == FileFormat.AVRO]:
            raise ReaderUnavailable(f"pyiceberg 0.12 reads Parquet and ORC data files only; the snapshot has "
                                    f"{len(avro)} Avro files")
        # the equality deletes alone: classifying position deletes may read their files, not needed here
        applying = classify(LiveFiles(data=files.data, equality=files.equality), tbl.specs()).applying_equality \
            if files.equality else 0
        if applying:
            raise ReaderUnavailable(f"pyiceberg cannot apply equality deletes (its scan raises 'PyIceberg does not "
                                    f"yet support equality deletes'); {applying} equality delete files apply here")
    current = tbl.current_snapshot()
    if current is not None and snapshot_id == current.snapshot_id:
        snapshot_id = None  # the current snapshot in the current schema (a scan at a snapshot id uses the schema
        # that snapshot was written with: a column renamed since would not be found under its current name)
    reader = tbl.scan(snapshot_id=snapshot_id, row_filter=row_filter or AlwaysTrue()).to_arrow_batch_reader()
    con = duckdb.connect(config=duckdb_config())
    try:
        con.register("_scan", reader)
        row = con.execute(checksum_select(_columns(tbl), "_scan")).fetchone()
    finally:
        con.close()
    assert row is not None  # an aggregate: one row
    n, s = row
    return int(n), str(s)


def read_duckdb_iceberg(tbl: Table, snapshot_id: int | None,
                        settings: CatalogSettings | None = None) -> tuple[int, str]:
    if settings is None or not settings.rest_uri:
        raise ReaderUnavailable("duckdb-iceberg reads through a REST catalog; none is served")
    files = live_files(tbl, snapshot_id)
    _parquet_only(files, "DuckDB's iceberg extension")
    work = equality_delete_work(files, tbl.specs())
    if work > DUCKDB_ICEBERG_EQ_WORK_LIMIT:
        raise ReaderUnavailable(f"{work:.3g} row x equality-key comparisons exceed its limit of "
                                f"{DUCKDB_ICEBERG_EQ_WORK_LIMIT:.3g} (duckdb-iceberg#626)")
    ns, name = tuple(tbl.name())[-2:]
    source = f"ice.{ident(ns)}.{ident(name)}"
    if snapshot_id is not None:
        source += f" AT (VERSION => {int(snapshot_id)})"
    con = duckdb_connect_iceberg(settings)
    try:
        n, s = con.execute(checksum_select(_columns(tbl), source)).fetchone()
    finally:
        con.close()
    return int(n), str(s)


def read_merge_on_read(tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None = None,
                       seen: list[Columns] | None = None, only: Callable[[tuple], bool] | None = None
                       ) -> tuple[int, str]:
    """A row of data file F (sequence number f) is deleted by a position delete (file_path = F's
    manifest path, pos = its row number, sequence number >= f) or an equality delete (equal on its
    equality columns, null-safe; sequence number > f; same partition unless the delete's spec is
    unpartitioned).  Columns are matched by field id (bench.verify.columns).  `only`: the rows of the data
    files of the partitions it selects (a partition key: bench.core.table.deletes.scope), every live delete
    file that may apply to them applied (position deletes all, equality deletes of those partitions and of an
    unpartitioned spec)."""
    with merge_on_read(tbl, snapshot_id, only, seen) as (con, live):
        if con is None:
            return 0, "0"
        n, s = con.execute(checksum_select(_columns(tbl), live)).fetchone()
    return int(n), str(s)


def _position_deletes(con: Any, entries: list) -> None:
    """The temporary table pdel(file_path, pos, seq): the rows these position-delete entries delete, from
    Parquet position-delete files and from deletion vectors (format v3: Puffin blobs, bench.core.table.deletes)."""
    con.execute("CREATE TEMP TABLE pdel(file_path VARCHAR, pos BIGINT, seq BIGINT)")
    parquet = [e for e in entries if not is_dv(e.data_file)]
    if parquet:
        con.execute("CREATE TEMP TABLE pfiles(local VARCHAR, seq BIGINT)")
        con.executemany("INSERT INTO pfiles VALUES (?, ?)",
                        [(local_path(e.data_file.file_path), e.sequence_number) for e in parquet])
        con.execute("INSERT INTO pdel SELECT p.file_path, p.pos, f.seq FROM read_parquet(?, hive_partitioning=false, "
                    "filename=true) p JOIN pfiles f ON p.filename = f.local",
                    [[local_path(p) for p in LiveFiles.paths(parquet)]])
    rows = dv_rows([e for e in entries if is_dv(e.data_file)])
    if rows:
        import pyarrow as pa

        dvs = pa.table({"file_path": [r[0] for r in rows], "pos": [r[1] for r in rows], "seq": [r[2] for r in rows]})
        con.register("dvs_", dvs)
        con.execute("INSERT INTO pdel SELECT file_path, pos, seq FROM dvs_")
        con.unregister("dvs_")


@contextmanager
def merge_on_read(tbl: Table, snapshot_id: int | None, only: Callable[[tuple], bool] | None = None,
                  seen: list[Columns] | None = None):
    """A DuckDB connection and the table expression of the snapshot's live rows by the rules of
    `read_merge_on_read` (its delete files read into temporary tables); (None, "") without a data file."""
    files = live_files(tbl, snapshot_id)
    _parquet_only(files, "duckdb-merge-on-read (DuckDB's read_parquet)")
    if only is not None:
        files = LiveFiles(data=[e for e in files.data if only(scope(e.data_file))], position=files.position,
                          equality=[e for e in files.equality
                                    if only(scope(e.data_file)) or is_global(e.data_file, tbl.specs())])
    if not files.data:
        yield None, ""
        return
    columns = _columns(tbl)
    schema, specs = tbl.schema(), tbl.specs()
    scopes: dict[tuple, int] = {}

    def scope_id(df) -> int:
        return scopes.setdefault(scope(df), len(scopes))

    con = _connect(LiveFiles.paths(files.all))
    try:
        con.execute("CREATE TEMP TABLE dfiles(local VARCHAR, path VARCHAR, seq BIGINT, scope INTEGER)")
        con.executemany("INSERT INTO dfiles VALUES (?, ?, ?, ?)",
                        [(local_path(e.data_file.file_path), e.data_file.file_path, e.sequence_number,
                          scope_id(e.data_file)) for e in files.data])
        cols = columns_for(tbl, con, LiveFiles.paths(files.data))
        if seen is not None:
            seen.append(cols)
        data = cols.source(LiveFiles.paths(files.data), "filename=true", "file_row_number=true")
        con.execute(f"CREATE TEMP VIEW rows_ AS SELECT {idents(columns, 'd')}, d.file_row_number AS _pos, "
                    f"f.path AS _path, f.seq AS _seq, f.scope AS _scope FROM {data} d "
                    "JOIN dfiles f ON d.filename = f.local")
        conditions = []
        if files.position:
            _position_deletes(con, files.position)
            conditions.append("NOT EXISTS (SELECT 1 FROM pdel p WHERE p.file_path = r._path "
                              "AND p.pos = r._pos AND p.seq >= r._seq)")
        groups: dict[tuple[int, ...], list] = {}
        for e in files.equality:
            groups.setdefault(tuple(sorted(e.data_file.equality_ids or [])), []).append(e)
        for g, (ids, entries) in enumerate(groups.items()):
            found = [schema.find_column_name(i) for i in ids]
            names = [n for n in found if n is not None]
            if not names or len(names) < len(found):
                raise RuntimeError(f"equality delete ids {ids} are not columns of the table schema")
            con.execute(f"CREATE TEMP TABLE efiles{g}(local VARCHAR, seq BIGINT, scope INTEGER, global_ BOOLEAN)")
            con.executemany(f"INSERT INTO efiles{g} VALUES (?, ?, ?, ?)",
                            [(local_path(e.data_file.file_path), e.sequence_number, scope_id(e.data_file),
                              is_global(e.data_file, specs)) for e in entries])
            epaths = [e.data_file.file_path for e in entries]
            ecols = columns_for(tbl, con, epaths)
            if seen is not None:
                seen.append(ecols)
            con.execute(f"CREATE TEMP TABLE edel{g} AS SELECT {idents(names, 'q')}, f.seq, f.scope, f.global_ "
                        f"FROM {ecols.source(epaths, 'filename=true')} q JOIN efiles{g} f ON q.filename = f.local")
            match = " AND ".join(f"e.{ident(n)} IS NOT DISTINCT FROM r.{ident(n)}" for n in names)
            conditions.append(f"NOT EXISTS (SELECT 1 FROM edel{g} e WHERE {match} AND e.seq > r._seq "
                              f"AND (e.global_ OR e.scope = r._scope))")
        where = (" WHERE " + " AND ".join(conditions)) if conditions else ""
        yield con, f"(SELECT {idents(columns, 'r')} FROM rows_ r{where}) AS live"
    finally:
        con.close()


def read_pyiceberg_avro(tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None = None
                       ) -> tuple[int, str]:
    """Avro data files by pyiceberg's own Avro decoder (bench.verify.avro)."""
    try:
        return read_avro(tbl, snapshot_id, settings)
    except AvroUnavailable as e:
        raise ReaderUnavailable(str(e)) from e


def read_iceberg_java(tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None = None) -> tuple[int, str]:
    """The reference reader (bench.verify.reference): Iceberg's Java library through Spark SQL."""
    try:
        return read_reference(tbl, snapshot_id, settings)
    except ReferenceUnavailable as e:
        raise ReaderUnavailable(str(e)) from e


READERS: dict[str, Reader] = {r.name: r for r in (
    Reader("duckdb-read-parquet", "field id", "none (only when no delete file applies)", read_parquet_files,
           parquet=True),
    Reader("pyiceberg-scan", "field id", "position (equality: refuses)", read_pyiceberg_scan),
    Reader("duckdb-iceberg", "catalog", "position and equality (through the REST catalog)", read_duckdb_iceberg),
    Reader("duckdb-merge-on-read", "field id", "position and equality (our SQL)", read_merge_on_read,
           parquet=True),
    Reader(AVRO, "field id", "none (Avro data files only, when no delete file is live)", read_pyiceberg_avro),
    Reader(REFERENCE, RESOLVES, "every delete, by Iceberg's own rules (the reference)", read_iceberg_java),
)}


def read(name: str, tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None) -> ReaderAnswer:
    """One reader's answer: its rows and checksum, or why it could not read."""
    reader, seen = READERS[name], []  # type: ignore[var-annotated]
    if not reader.parquet:
        return _answer(name, lambda: reader.read(tbl, snapshot_id, settings))
    return _answer(name, lambda: reader.read(tbl, snapshot_id, settings, seen), seen)


SELECTIVE = ("pyiceberg-scan", "duckdb-merge-on-read")  # the readers that read the selected partitions alone


def read_selected(name: str, tbl: Table, where: str, selected: Callable[[tuple], bool]) -> ReaderAnswer:
    """One reader's answer over the partitions the partition filter `where` selects (`selected` says which,
    by partition key), at the table's current snapshot: pyiceberg-scan by its row filter, duckdb-merge-on-read
    by the data files of those partitions.  The record of `read`, with `within: where`."""
    seen: list[Columns] = []
    how: dict[str, Callable[[], tuple[int, str]]] = {
        "pyiceberg-scan": lambda: read_pyiceberg_scan(tbl, None, row_filter=where),
        "duckdb-merge-on-read": lambda: read_merge_on_read(tbl, None, seen=seen, only=selected)}
    return _answer(name, how[name], seen).model_copy(update={"within": where})


def _answer(name: str, reading: Callable[[], tuple[int, str]], seen: list[Columns] | None = None) -> ReaderAnswer:
    """`seen`: how a Parquet reader resolved the columns (bench.verify.columns): by name where names are
    ambiguous, its answer is advisory (`advisory`: why)."""
    out = ReaderAnswer(reader=name, resolves=READERS[name].resolves)
    try:
        out.rows, out.checksum = reading()
        out.checksum = str(out.checksum)
        if seen:
            out.resolves = "name" if any(not c.by_id for c in seen) else "field id"
            out.advisory = next((c.unsafe for c in seen if c.unsafe), None)
    except ReaderUnavailable as e:
        out.unavailable = str(e)
    except Exception as e:  # noqa: BLE001 - a reader failing on this table is a finding, not a crash
        out.error = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:500]
    return out


def first_available(names: list[str], tbl: Table, snapshot_id: int | None,
                    settings: CatalogSettings | None) -> ReaderAnswer:
    """The answer of the first reader in `names` that can read the table."""
    answers = []
    for name in names:
        a = read(name, tbl, snapshot_id, settings)
        if a.answered:
            return a
        answers.append(a)
    reasons = "; ".join(f"{a.reader}: {a.why_not}" for a in answers)
    raise RuntimeError(f"no reader could read the table: {reasons}")


FALLBACK = (AVRO,)  # readers asked when none of a scenario's readers can read a table (its data files' format)

__all__ = ["FALLBACK", "READERS", "SELECTIVE", "Reader", "ReaderUnavailable", "first_available", "merge_on_read",
           "not_parquet", "parquet_checksum", "read", "read_selected"]
