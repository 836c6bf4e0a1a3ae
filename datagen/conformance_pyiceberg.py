"""The conformance cases pyiceberg writes (`writer: pyiceberg` in scenarios/conformance/cases.yaml): an independent
writer, so that Spark (Iceberg's Java library) is not judged only on tables its own library wrote.

The case's definition is the same as Spark's: its columns in Spark SQL's type names, an identity partitioning,
properties, and steps, which this writer runs with pyiceberg's own API on the harness's SQLite catalog (pyiceberg's
SqlCatalog, the same file Spark's JdbcCatalog reads):

    INSERT INTO {t} VALUES (...)              the rows evaluated by DuckDB, cast to the table's Arrow schema and
                                              appended by pyiceberg (its Parquet files through pyarrow, with field ids)
    add_files: "(...), (...)"                 the rows written by pyarrow as a plain Parquet file (no field ids,
                                              columns by their current names) and added with `add_files` (which
                                              sets `schema.name-mapping.default` when the table has none)
    ALTER TABLE {t} ADD COLUMN a[.b] T | RENAME COLUMN a TO b | DROP COLUMN a | ALTER COLUMN a TYPE T |
    ADD PARTITION FIELD a | SET TBLPROPERTIES ('k'='v', ...)
                                              pyiceberg's schema, spec and property updates

Anything else is refused with its statement (the case is recorded as not written, with why).  pyiceberg 0.12 writes
no delete file and no format-v3 metadata, and partitions by transforms other than identity only with its Rust
extension (pyiceberg-core, not installed here): such cases stay Spark's.

`python -m datagen.conformance_pyiceberg TODO ROOT`: a process of its own, like Spark's writer; no JVM.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

from bench.core.catalog import CatalogSettings, load_catalog
from datagen.conformance import NAMESPACE, Case, write_all, write_orphan

PRIMITIVES = {"BIGINT": "long", "LONG": "long", "INT": "int", "INTEGER": "int", "STRING": "string",
              "DOUBLE": "double", "FLOAT": "float", "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamptz",
              "TIMESTAMP_NTZ": "timestamp", "BINARY": "binary", "TIME": "time", "UUID": "uuid",
              "TIMESTAMP_NS": "timestamp_ns", "TIMESTAMPTZ_NS": "timestamptz_ns"}  # the last two: v3, java-api
INSERT = re.compile(r"^\s*INSERT INTO \{t\} VALUES (.*)$", re.S | re.I)
ALTERS: list[tuple[str, re.Pattern[str]]] = [(k, re.compile(v, re.I)) for k, v in (
    ("add", r"^\s*ALTER TABLE \{t\} ADD COLUMN ([\w.`]+) (.+?)\s*$"),
    ("rename", r"^\s*ALTER TABLE \{t\} RENAME COLUMN ([\w`]+) TO ([\w`]+)\s*$"),
    ("drop", r"^\s*ALTER TABLE \{t\} DROP COLUMN ([\w`]+)\s*$"),
    ("type", r"^\s*ALTER TABLE \{t\} ALTER COLUMN ([\w`]+) TYPE (.+?)\s*$"),
    ("partition", r"^\s*ALTER TABLE \{t\} ADD PARTITION FIELD ([\w`]+)\s*$"),
    ("properties", r"^\s*ALTER TABLE \{t\} SET TBLPROPERTIES \((.*)\)\s*$"))]


def iceberg_type(spark_type: str) -> Any:
    """An Iceberg type from a Spark SQL type name (primitives, DECIMAL(p,s), FIXED(n))."""
    from pyiceberg import types as it

    primitives = {"long": it.LongType, "int": it.IntegerType, "string": it.StringType, "double": it.DoubleType,
                  "float": it.FloatType, "boolean": it.BooleanType, "date": it.DateType,
                  "timestamptz": it.TimestamptzType, "timestamp": it.TimestampType, "binary": it.BinaryType,
                  "time": it.TimeType, "uuid": it.UUIDType, "timestamp_ns": it.TimestampNanoType,
                  "timestamptz_ns": it.TimestamptzNanoType}
    t = spark_type.strip().upper()
    if m := re.fullmatch(r"DECIMAL\((\d+),\s*(\d+)\)", t):
        return it.DecimalType(int(m[1]), int(m[2]))
    if m := re.fullmatch(r"FIXED\((\d+)\)", t):
        return it.FixedType(int(m[1]))
    if t not in PRIMITIVES:
        raise ValueError(f"the pyiceberg writer has no type for {spark_type!r}")
    return primitives[PRIMITIVES[t]]()


def split_columns(columns: str) -> list[tuple[str, str]]:
    """[(name, type)] of Spark SQL column definitions ("id BIGINT, `a b` DECIMAL(10,2)")."""
    out, depth, cur = [], 0, ""
    for ch in columns + ",":
        if ch == "," and depth == 0:
            m = re.fullmatch(r"\s*(`[^`]+`|\w+)\s+(.+?)\s*", cur)
            if not m:
                raise ValueError(f"cannot read the column definition {cur!r}")
            out.append((m[1].strip("`"), m[2]))
            cur = ""
            continue
        depth += ch in "(<"
        depth -= ch in ")>"
        cur += ch
    return out


def schema_of(case: Case) -> Any:
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField

    cols = split_columns(case.all_columns)
    return Schema(*(NestedField(i, name, iceberg_type(t), required=False) for i, (name, t) in enumerate(cols, 1)))


def spec_of(case: Case, schema: Any) -> Any:
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    if not case.partitioned_by:
        return PartitionSpec()
    fields = []
    for i, col in enumerate(c.strip().strip("`") for c in case.partitioned_by.split(",")):
        if not re.fullmatch(r"\w+", col):
            raise ValueError(f"the pyiceberg writer partitions by identity only (pyiceberg-core is not installed): "
                             f"{case.partitioned_by!r}")
        fields.append(PartitionField(schema.find_field(col).field_id, 1000 + i, IdentityTransform(), col))
    return PartitionSpec(*fields)


def rows(values: str, tbl: Any) -> Any:
    """A VALUES list as an Arrow table in the table's current schema (DuckDB evaluates the SQL literals; each column
    is cast to the table's type by position)."""
    import duckdb
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.types import UUIDType

    sql = re.sub(r"TIMESTAMP_NTZ\s+'", "TIMESTAMP '", values)
    sql = re.sub(r"\bX'([0-9A-Fa-f]*)'", r"from_hex('\1')", sql)
    sql = re.sub(r"\b(float|double)\('([^']*)'\)", r"CAST('\2' AS \1)", sql, flags=re.I)  # Spark's float('NaN')
    con = duckdb.connect()
    try:
        got = con.execute(f"SELECT * FROM (VALUES {sql})").fetch_arrow_table()
    finally:
        con.close()
    schema = schema_to_pyarrow(tbl.schema(), include_field_ids=False)
    if got.num_columns != len(schema):
        raise ValueError(f"{got.num_columns} values for {len(schema)} columns in VALUES {values[:80]}")
    arrays = []
    for col, field, ice in zip(got.columns, schema, tbl.schema().fields, strict=True):
        if isinstance(ice.field_type, UUIDType):
            py = [None if v is None else uuid.UUID(str(v)).bytes for v in col.to_pylist()]
            arrays.append(pa.array(py, type=field.type))
        else:
            arrays.append(col.cast(field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _alter(tbl: Any, kind: str, m: re.Match[str]) -> None:
    name = lambda s: s.strip("`")  # noqa: E731
    if kind == "properties":
        props = dict(re.findall(r"'([^']*)'\s*=\s*'([^']*)'", m[1]))
        with tbl.transaction() as tx:
            tx.set_properties(**props)
    elif kind == "partition":
        with tbl.update_spec() as s:
            s.add_identity(name(m[1]))
    else:
        with tbl.update_schema() as u:
            if kind == "add":
                u.add_column(tuple(name(x) for x in m[1].split(".")), iceberg_type(m[2]))
            elif kind == "rename":
                u.rename_column(name(m[1]), name(m[2]))
            elif kind == "drop":
                u.delete_column(name(m[1]))
            else:
                u.update_column(name(m[1]), field_type=iceberg_type(m[2]))


def _add_files(tbl: Any, values: str, n: int) -> None:
    import pyarrow.parquet as pq

    data = rows(values.replace("{n}", str(n)), tbl)
    location = tbl.location().removeprefix("file://").removeprefix("file:")
    path = Path(location) / "data" / f"plain-{uuid.uuid4().hex[:12]}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, path)  # plain Parquet: no field ids
    tbl.add_files([f"file://{path}"])


def write_case(catalog: Any, case: Case) -> None:
    from pyiceberg.exceptions import NoSuchTableError

    try:
        catalog.purge_table(case.table)  # a case defined anew
    except NoSuchTableError:
        pass
    schema = schema_of(case)
    tbl = catalog.create_table(case.table, schema, partition_spec=spec_of(case, schema),
                               properties={"format-version": str(case.format_version), **case.properties})
    for step in case.steps:
        for n in range(step.repeat):
            case.pace()
            tbl = catalog.load_table(case.table)
            if step.add_files is not None:
                _add_files(tbl, step.add_files, n)
            if step.orphan is not None:
                write_orphan(case, tbl.location(), step.orphan)
            if step.sql is None:
                continue
            sql = case.statement(step.sql, "{t}", n)  # {n} and {fill} filled in, {t} kept for the patterns
            if m := INSERT.match(sql):
                tbl.append(rows(m[1], tbl))
                continue
            for kind, pattern in ALTERS:
                if m := pattern.match(sql):
                    _alter(tbl, kind, m)
                    break
            else:
                raise ValueError(f"the pyiceberg writer cannot run {sql[:120]!r}")


def writers(case: Case) -> dict[str, Any]:
    """Written.written_by and .packages: pyiceberg, and pyarrow's Parquet files."""
    import pyarrow
    import pyiceberg

    out = f"pyiceberg {pyiceberg.__version__} (Parquet by pyarrow {pyarrow.__version__})"
    if any(s.add_files for s in case.steps):
        out += f"; plain Parquet files without field ids by pyarrow {pyarrow.__version__}, added with add_files"
    return {"written_by": out, "packages": ["pyiceberg", "pyarrow"]}


def main(spec: str, root: str) -> int:
    cases = [Case.model_validate(c) for c in json.loads(Path(spec).read_text())]
    catalog = load_catalog(CatalogSettings.for_warehouse(Path(root) / "lake"))
    catalog.create_namespace_if_not_exists(NAMESPACE)
    return write_all(cases, lambda c: write_case(catalog, c), writers, root, "datagen.conformance_pyiceberg")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
