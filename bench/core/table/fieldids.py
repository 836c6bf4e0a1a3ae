"""Reading a table's Parquet files by Iceberg FIELD ID with DuckDB: read_parquet's `schema` argument, a map from
field id to the column's current name, type and default (a renamed column reads under its new name, a dropped
one is not read, an added one reads NULL from the files written before it, a promoted one is cast).  One home
for the harness's readers (bench.verify.columns) and the floor (bench.engines.arrow_floor)."""

from __future__ import annotations

from pyiceberg.schema import Schema

from bench.core.sql import literal


def duckdb_types(schema: Schema) -> dict[int, str]:
    """{top-level field id: DuckDB type} of an Iceberg schema (through its Arrow form, as DuckDB sees it)."""
    import duckdb
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    empty = schema_to_pyarrow(schema, include_field_ids=False).empty_table()
    con = duckdb.connect()
    try:
        con.register("empty_", empty)
        described = con.execute("DESCRIBE SELECT * FROM empty_").fetchall()
    finally:
        con.close()
    return {f.field_id: row[1] for f, row in zip(schema.fields, described)}


def schema_map(schema: Schema) -> str:
    """DuckDB read_parquet's `schema` argument: field id -> {name, type, default NULL}, every current column."""
    types = duckdb_types(schema)
    entries = [f"{f.field_id}: {{name: {literal(f.name)}, type: {literal(types[f.field_id])}, default_value: NULL}}"
               for f in schema.fields]
    return "MAP {" + ", ".join(entries) + "}"


__all__ = ["duckdb_types", "schema_map"]
