"""How the harness's own Parquet readers (duckdb-read-parquet, duckdb-merge-on-read) find a table's columns in
its files: by Parquet FIELD ID, Iceberg's rule, through DuckDB read_parquet's `schema` argument (a map from field
id to the column's current name, type and default: a renamed column reads under its new name, a dropped one is
not read, an added one reads NULL from the files written before it, a promoted one is cast, and a name Iceberg's
writer sanitized in the file (`a/b` -> `a_x2Fb`) does not matter).  Only a file set where some file carries no
field id at all (written by another tool and added to the table) is read by NAME, and such an answer is advisory
wherever the table's schema history makes names ambiguous (a column renamed, dropped, or a name reused): name
resolution is a limitation of the reader there, not evidence about the table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyiceberg.schema import index_name_by_id
from pyiceberg.table import Table

from bench.core.sql import ident, string_list
from bench.core.table.fieldids import schema_map
from bench.core.uri import local_path


@dataclass(frozen=True)
class Columns:
    """The table's current columns as a set of Parquet files is read: by field id (`schema_sql`, DuckDB's
    read_parquet schema map) or by name, and why name resolution is unsafe here ("" when it is not)."""

    names: list[str]
    schema_sql: str  # "" when read by name
    unsafe: str = ""

    @property
    def by_id(self) -> bool:
        return bool(self.schema_sql)

    @property
    def resolves(self) -> str:
        return "field id" if self.by_id else "name"

    def source(self, paths: list[str], *extra: str) -> str:
        """A read_parquet(...) table expression over `paths` (local paths or URIs), with `extra` options."""
        how = f"schema={self.schema_sql}" if self.by_id else "union_by_name=true"
        files = string_list([local_path(p) for p in paths])
        # hive_partitioning off: a column's values from the file, never from a Hive-style directory name (Iceberg's
        # identity partitions are laid out as col=value/, which DuckDB would otherwise read back as text)
        return f"read_parquet({', '.join([files, 'hive_partitioning=false', *extra, how])})"


def without_field_ids(con: Any, paths: list[str]) -> list[str]:
    """The files among `paths` that carry no Parquet field id at all."""
    if not paths:
        return []
    rows = con.execute("SELECT file_name, count(field_id) FROM parquet_schema(?) GROUP BY file_name",
                       [[local_path(p) for p in paths]]).fetchall()
    return [str(name) for name, n in rows if not n]


def name_hazards(tbl: Table) -> str:
    """Why resolving this table's columns by name is unsafe ("" when it is not): across its schema history a
    field id went by more than one name (a rename), or a name meant more than one field id (a drop and re-add),
    or a column of an older schema is gone (a drop)."""
    names: dict[int, set[str]] = {}
    ids: dict[str, set[int]] = {}
    for s in tbl.metadata.schemas:
        for fid, name in index_name_by_id(s).items():
            names.setdefault(fid, set()).add(name)
            ids.setdefault(name, set()).add(fid)
    current = set(index_name_by_id(tbl.schema()))
    renamed = sorted(" / ".join(sorted(v)) for v in names.values() if len(v) > 1)
    reused = sorted(n for n, v in ids.items() if len(v) > 1)
    dropped = sorted(next(iter(v)) for fid, v in names.items() if fid not in current and len(v) == 1)
    parts = [f"{what} {', '.join(ident(x) for x in xs[:3])}" for what, xs in
             (("renamed", renamed), ("names reused", reused), ("dropped", dropped)) if xs]
    return ("the schema history makes names ambiguous (" + "; ".join(parts) + ")") if parts else ""


def columns_for(tbl: Table, con: Any, paths: list[str]) -> Columns:
    """How to read the table's current columns from `paths`: by field id unless a file carries none."""
    names = [f.name for f in tbl.schema().fields]
    bare = without_field_ids(con, paths)
    if not bare:
        return Columns(names=names, schema_sql=schema_map(tbl.schema()))
    hazard = name_hazards(tbl)
    why = (f"{len(bare)} file(s) carry no Parquet field id (e.g. {bare[0].rsplit('/', 1)[-1]}), so they are read "
           f"by name, and {hazard}") if hazard else ""
    return Columns(names=names, schema_sql="", unsafe=why)


__all__ = ["Columns", "columns_for", "name_hazards", "without_field_ids"]
