"""The output of an engine that commits nothing (`commits: none`, e.g. arrow-floor), as a table the
verifier can read like any other.

The engine lists the data files of its end state (the files it wrote and the input files it kept).
They are registered, without copying, in a scratch Iceberg table with the input table's schema (the
same field ids), partition spec and properties, in a SQLite catalog of its own under the run's work
directory, by one append of DataFiles built from the files' own Parquet footers (pyiceberg's
`parquet_file_to_data_file`).  No name mapping is set, so the field-id reader still reads only files
whose Parquet field ids are right.  The real table is not touched; the verifier checks that the
engine did not commit to it either.  Afterwards the written files and the scratch catalog are removed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pyiceberg.manifest import DataFile
from pyiceberg.table import Table

from bench.core.uri import local_path
from bench.verify.partitions import rows_partition

STAGED = "staged-output"
NAME_MAPPING = "schema.name-mapping.default"


def stage_output(source: Table, output_files: list[str], work_dir: Path) -> Table:
    """A scratch table holding exactly `output_files` (one append), shaped like `source`."""
    from pyiceberg.catalog.sql import SqlCatalog

    d = Path(work_dir) / STAGED
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    cat = SqlCatalog("staged", uri=f"sqlite:///{d / 'catalog.db'}", warehouse=d.as_uri())
    cat.create_namespace("staged")
    props = {k: v for k, v in source.properties.items() if k != NAME_MAPPING}
    tbl = cat.create_table("staged.output", schema=source.schema(), partition_spec=source.spec(), properties=props)
    if tbl.schema().as_struct() != source.schema().as_struct():
        raise RuntimeError("the scratch table's schema (field ids) differs from the input table's")
    missing = [p for p in output_files if not os.path.exists(local_path(p))]
    if missing:
        raise RuntimeError(f"{len(missing)} output file(s) the engine listed do not exist, e.g. {missing[0]}")
    files = [_data_file(tbl, p) for p in output_files]
    with tbl.transaction() as tx, tx.update_snapshot().fast_append() as append:
        for df in files:
            append.append_data_file(df)
    return cat.load_table("staged.output")


def _data_file(tbl: Table, path: str) -> DataFile:
    """pyiceberg's DataFile of an output file; for a spec with a bucket or truncate field, whose partition
    pyiceberg cannot infer from column bounds, the same built with the partition of the file's rows (one
    partition, else ValueError: bench.verify.partitions)."""
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_file_to_data_file,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.manifest import DataFileContent, FileFormat

    try:
        return parquet_file_to_data_file(tbl.io, tbl.metadata, path)
    except ValueError as exc:
        if "non-linear" not in str(exc) and not _optional_for_required(tbl, pq.ParquetFile(local_path(path))):
            raise
    meta, schema = tbl.metadata, tbl.metadata.schema()
    pf = pq.ParquetFile(local_path(path))
    stats = data_file_statistics_from_parquet_metadata(
        parquet_metadata=pf.metadata, stats_columns=compute_statistics_plan(schema, meta.properties),
        parquet_column_mapping=parquet_path_to_id_mapping(schema))
    return DataFile.from_args(
        content=DataFileContent.DATA, file_path=path, file_format=FileFormat.PARQUET,
        partition=rows_partition(pf, meta.spec(), schema), file_size_in_bytes=os.path.getsize(local_path(path)),
        sort_order_id=None, spec_id=meta.default_spec_id, equality_ids=None, key_metadata=None,
        **stats.to_serialized_dict())


def _optional_for_required(tbl: Table, pf) -> bool:
    """True when the file's schema is the table's but for top-level columns written optional for required fields
    that hold no null in any row group (a writer that marks every column optional, e.g. DuckDB's COPY): every
    reader reads it as the table says.  Any other difference stays a mismatch."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import _check_pyarrow_schema_compatible

    schema, arrow = tbl.metadata.schema(), pf.schema_arrow
    required = {f.name for f in schema.fields if f.required}
    md = pf.metadata
    names = [md.schema.column(i).path for i in range(md.num_columns)]

    def no_nulls(name: str) -> bool:
        cols = [i for i, p in enumerate(names) if p == name]
        return bool(cols) and all(
            (st := md.row_group(g).column(i).statistics) is not None and st.has_null_count and st.null_count == 0
            for g in range(md.num_row_groups) for i in cols)

    fields = [f.with_nullable(False) if f.name in required and f.nullable and no_nulls(f.name) else f for f in arrow]
    try:
        _check_pyarrow_schema_compatible(schema, pa.schema(fields, metadata=arrow.metadata),
                                         format_version=tbl.metadata.format_version)
    except ValueError:
        return False
    return True


def remove_output(written: list[str], work_dir: Path) -> int:
    """Remove the files an uncommitted run wrote (only under its work directory) and the scratch
    catalog; returns how many files were removed."""
    root = Path(work_dir).resolve()
    n = 0
    for p in written:
        path = Path(local_path(p)).resolve()
        if root in path.parents and path.exists():
            path.unlink()
            n += 1
            for parent in path.parents:  # the directories it emptied, up to the work directory
                if parent == root:
                    break
                try:
                    parent.rmdir()
                except OSError:
                    break
    shutil.rmtree(root / STAGED, ignore_errors=True)
    return n
