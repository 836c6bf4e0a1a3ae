"""Verification: what a table holds before and after a compaction, measured the same way for every
engine, from the table's own metadata and data files — never from what an engine says it did.

- files, bytes, delete files: from the snapshot's manifests (pyiceberg);
- codecs, row groups: from the Parquet footers of the live data files;
- rows and an order-independent content checksum over all columns: DuckDB reads the live data files
  (sum of a 64-bit hash of every row); with live delete files, a delete-aware reader is used instead
  (`CONTENT_READERS`), so deleted rows never count.
"""

from __future__ import annotations

import statistics
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyiceberg.manifest import DataFileContent
from pyiceberg.table import Table

from bench.results import TableStats, Verification


def live_entries(tbl: Table, snapshot_id: int | None = None):
    snap = tbl.snapshot_by_id(snapshot_id) if snapshot_id else tbl.current_snapshot()
    if snap is None:
        return []
    entries = []
    for m in snap.manifests(tbl.io):
        entries.extend(e.data_file for e in m.fetch_manifest_entry(tbl.io, discard_deleted=True))
    return entries


def local_path(uri: str) -> str:
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("file:"):
        return uri[len("file:"):]
    return uri


def _footer(uri: str) -> tuple[list[str], int, int]:
    fs, path = pafs.FileSystem.from_uri(uri if "://" in uri else "file://" + local_path(uri))
    with fs.open_input_file(path) as f:
        md = pq.ParquetFile(f).metadata
    codecs = set()
    total = 0
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        total += rg.total_byte_size
        for c in range(rg.num_columns):
            codecs.add(rg.column(c).compression)
    return sorted(codecs), md.num_row_groups, total


def content_checksum_parquet(paths: list[str], columns: list[str]) -> tuple[int, str]:
    """Row count and order-independent checksum (sum of DuckDB's 64-bit row hashes) of Parquet files."""
    import duckdb

    if not paths:
        return 0, "0"
    con = duckdb.connect()
    cols = ", ".join(f'"{c}"' for c in columns)
    n, s = con.execute(
        f"SELECT count(*), coalesce(sum(hash({cols})::HUGEINT), 0) FROM read_parquet(?)",
        [[local_path(p) for p in paths]]).fetchone()
    con.close()
    return int(n), str(s)


# Readers for tables with live delete files: name -> fn(tbl, snapshot_id, columns) -> (rows, checksum).
# The delete-aware reader (DuckDB's iceberg extension through the REST catalog) registers itself here.
CONTENT_READERS: dict[str, Callable] = {}


def table_stats(tbl: Table, snapshot_id: int | None = None, *, content: bool = True,
                footers: bool = True) -> TableStats:
    entries = live_entries(tbl, snapshot_id)
    data = [e for e in entries if e.content == DataFileContent.DATA]
    pos = [e for e in entries if e.content == DataFileContent.POSITION_DELETES]
    eq = [e for e in entries if e.content == DataFileContent.EQUALITY_DELETES]
    sizes = sorted(e.file_size_in_bytes for e in data)
    snap = tbl.snapshot_by_id(snapshot_id) if snapshot_id else tbl.current_snapshot()
    st = TableStats(
        snapshot_id=snap.snapshot_id if snap else None,
        data_files=len(data), delete_files=len(pos) + len(eq), position_delete_files=len(pos),
        equality_delete_files=len(eq), data_bytes=sum(sizes),
        delete_bytes=sum(e.file_size_in_bytes for e in pos + eq),
        file_size_min=sizes[0] if sizes else 0, file_size_max=sizes[-1] if sizes else 0,
        file_size_median=int(statistics.median(sizes)) if sizes else 0,
        rows=sum(e.record_count for e in data) if not (pos or eq) else 0,
    )
    if footers and data:
        with ThreadPoolExecutor(8) as ex:
            results = list(ex.map(_footer, [e.file_path for e in data]))
        st.codecs = sorted({c for r in results for c in r[0]})
        st.row_groups = sum(r[1] for r in results)
        st.avg_row_group_bytes = sum(r[2] for r in results) / max(st.row_groups, 1)
    if content:
        columns = [f.name for f in tbl.schema().fields]
        if pos or eq:
            if not CONTENT_READERS:
                raise RuntimeError("table has live delete files and no delete-aware reader is registered")
            reader = next(iter(CONTENT_READERS.values()))
            st.rows, st.checksum = reader(tbl, snapshot_id, columns)
        else:
            st.rows, st.checksum = content_checksum_parquet([e.file_path for e in data], columns)
    return st


def verify_binpack(before: TableStats, after: TableStats, ground_truth: dict) -> Verification:
    """Bin-packing keeps every row and every value, and leaves fewer, larger files."""
    checks = {
        "input_matches_generator": before.rows == ground_truth.get("rows", before.rows),
        "same_row_count": after.rows == before.rows,
        "same_content_checksum": after.checksum == before.checksum,
        "fewer_data_files": after.data_files < before.data_files,
        "no_live_delete_files": after.delete_files == 0,
        "new_snapshot": after.snapshot_id != before.snapshot_id,
    }
    diffs = []
    if not checks["input_matches_generator"]:
        diffs.append(f"input has {before.rows} rows, the generator wrote {ground_truth.get('rows')}")
    if not checks["same_row_count"]:
        diffs.append(f"rows {before.rows} -> {after.rows} ({after.rows - before.rows:+d})")
    if not checks["same_content_checksum"]:
        diffs.append(f"content checksum {before.checksum} -> {after.checksum}")
    if not checks["fewer_data_files"]:
        diffs.append(f"data files {before.data_files} -> {after.data_files} (nothing was compacted)")
    if not checks["no_live_delete_files"]:
        diffs.append(f"{after.delete_files} delete files live after compaction")
    if not checks["new_snapshot"]:
        diffs.append("no new snapshot was committed")
    return Verification(verified=all(checks.values()), checks=checks, differences=diffs,
                        reader="duckdb read_parquet over the snapshot's live data files")


VERIFIERS = {"binpack": verify_binpack}
