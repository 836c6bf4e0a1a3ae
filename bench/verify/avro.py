"""pyiceberg-avro: a content reader for Iceberg tables whose data files are Avro (write.format.default avro), which
neither DuckDB (read_parquet, its iceberg extension) nor pyiceberg's scan (Parquet and ORC) reads.  pyiceberg's own
Avro decoder (the one it reads manifests with) reads each live data file with the table's current schema as its read
schema: columns are resolved by FIELD ID (the Avro schema's field-id attributes), a column added later reads NULL.
The rows go to DuckDB as Arrow for the same checksum as every other reader.  It applies no delete: a snapshot with a
live delete file is out of its reach, as is any snapshot with a data file that is not Avro."""

from __future__ import annotations

from typing import Any

from pyiceberg.manifest import FileFormat
from pyiceberg.table import Table

from bench.core.catalog import CatalogSettings
from bench.core.catalog.duck import duckdb_config
from bench.core.checksum import checksum_select
from bench.core.table.entries import live_files

NAME = "pyiceberg-avro"


class AvroUnavailable(RuntimeError):
    """Not a table this reader reads (bench.verify.readers turns it into ReaderUnavailable)."""


def _value(v: Any) -> Any:
    """A decoded Avro value as Arrow takes it (pyiceberg's Records are positional structs)."""
    if hasattr(v, "_data"):
        return [_value(x) for x in v._data]
    if isinstance(v, list):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _value(x) for k, x in v.items()}
    return v


def avro_rows(tbl: Table, snapshot_id: int | None) -> Any:
    """The snapshot's rows as an Arrow table in the current schema (AvroUnavailable: not a table it reads)."""
    import pyarrow as pa
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.typedef import Record

    files = live_files(tbl, snapshot_id)
    odd = [e for e in files.data if e.data_file.file_format != FileFormat.AVRO]
    if not files.data or odd:
        raise AvroUnavailable("it reads Avro data files only" + (f"; {len(odd)} data files are not Avro" if odd else
                                                                 "; the snapshot has no data file"))
    if files.deletes:
        raise AvroUnavailable(f"it applies no delete; {len(files.deletes)} delete files are live")
    schema = tbl.schema()
    if any(not f.field_type.is_primitive for f in schema.fields):
        raise AvroUnavailable("it converts primitive columns only")
    columns: list[list[Any]] = [[] for _ in schema.fields]
    for e in files.data:
        with AvroFile[Record](tbl.io.new_input(e.data_file.file_path), read_schema=schema) as af:
            for rec in af:
                for i, col in enumerate(columns):
                    col.append(_value(rec[i]))
    arrow = schema_to_pyarrow(schema, include_field_ids=False)
    return pa.Table.from_arrays([pa.array(col, type=f.type) for col, f in zip(columns, arrow, strict=True)],
                                schema=arrow)


def read_avro(tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None = None) -> tuple[int, str]:
    import duckdb

    data = avro_rows(tbl, snapshot_id)
    con = duckdb.connect(config=duckdb_config())
    try:
        con.register("_avro", data)
        row = con.execute(checksum_select(data.column_names, "_avro")).fetchone()
    finally:
        con.close()
    assert row is not None
    return int(row[0]), str(row[1])


__all__ = ["NAME", "AvroUnavailable", "avro_rows", "read_avro"]
