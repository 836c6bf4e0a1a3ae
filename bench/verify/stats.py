"""What a table holds at one snapshot, measured the same way for every engine from the table's own
metadata and files: files and bytes from the manifests, codecs, row groups and logical bytes from the
Parquet footers, rows and content checksum from a content reader, live delete files classified as
still applying or dangling."""

from __future__ import annotations

import statistics

from pyiceberg.table import Table

from bench.core.catalog import CatalogSettings
from bench.core.records.verification import FileFacts, TableStats
from bench.core.table.deletes import classify
from bench.core.table.entries import LiveFiles, live_files, snapshot_of
from bench.core.table.files import footers
from bench.verify.readers import first_available

# content readers for a snapshot, in order of preference: the fast by-name read when no delete file
# applies, else the delete-aware readers
# the last three for tables the DuckDB readers cannot read (ORC, Avro data files): the reference reader (a JVM) last
CONTENT_READERS = ["duckdb-read-parquet", "duckdb-iceberg", "duckdb-merge-on-read", "pyiceberg-scan", "pyiceberg-avro",
                   "iceberg-java"]


def table_stats(tbl: Table, snapshot_id: int | None = None, *, content: bool = True, footers_too: bool = True,
                settings: CatalogSettings | None = None, files: LiveFiles | None = None,
                facts: list[FileFacts] | None = None, avoid: frozenset[str] = frozenset()) -> TableStats:
    """What the snapshot holds.  `settings` with a rest_uri lets the delete-aware reader go through the
    REST catalog.  `facts`: footer facts of the live data files when already read.  `avoid`: content readers
    not to ask (the reference reader overruled them on this table: bench.runner.source)."""
    files = files or live_files(tbl, snapshot_id)
    data = [e.data_file for e in files.data]
    sizes = sorted(df.file_size_in_bytes for df in data)
    snap = snapshot_of(tbl, snapshot_id)
    st = TableStats(
        snapshot_id=snap.snapshot_id if snap else None,
        metadata_location=tbl.metadata_location if snapshot_id is None or snap is tbl.current_snapshot() else None,
        data_files=len(data), delete_files=len(files.deletes), position_delete_files=len(files.position),
        equality_delete_files=len(files.equality), data_bytes=sum(sizes),
        delete_bytes=sum(e.data_file.file_size_in_bytes for e in files.deletes),
        file_size_min=sizes[0] if sizes else 0, file_size_max=sizes[-1] if sizes else 0,
        file_size_median=int(statistics.median(sizes)) if sizes else 0,
        rows=sum(df.record_count for df in data) if not files.deletes else 0,
    )
    if footers_too and data:
        facts = facts if facts is not None else footers([(df.file_path, df.file_size_in_bytes) for df in data])
        st.codecs = sorted({c for f in facts for c in f.codecs})
        st.row_groups = sum(f.row_groups for f in facts)
        st.uncompressed_bytes = sum(f.uncompressed_bytes for f in facts)
        st.avg_row_group_bytes = st.uncompressed_bytes / max(st.row_groups, 1)
    if files.deletes:
        cls = classify(files, tbl.specs())
        st.dangling_position_delete_files = len(cls.dangling_position)
        st.dangling_equality_delete_files = len(cls.dangling_equality)
    if content:
        answer = first_available([r for r in CONTENT_READERS if r not in avoid], tbl, snapshot_id, settings)
        st.content_reader, (st.rows, st.checksum) = answer.reader, answer.got()
    return st
