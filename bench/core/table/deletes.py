"""Iceberg v2 delete rules: which live delete files still apply to a live data file.

A position delete of data sequence number s applies to the data files it names whose sequence number
is <= s; an equality delete of s applies to the data files of its partition (every partition, if its
spec is unpartitioned) whose sequence number is < s.  A live delete file that applies to no live data
file is dangling: it changes no row and can be removed by a metadata-only commit.  Column-bounds
pruning is not considered (an "applying" file may still match no row).  The one implementation used
by the verifier and by every engine that removes dangling deletes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyiceberg.manifest import DataFile, ManifestEntry

from bench.core.table.entries import LiveFiles
from bench.core.uri import local_path

# DuckDB 1.5.5's iceberg extension compares every data row with every applicable equality-delete row
# (duckdb/duckdb-iceberg#626: minutes for 2M rows x 220k keys here); above this many comparisons
# (`equality_delete_work`) it is not used and says so (the verifier's reader and bench.reads).
DUCKDB_ICEBERG_EQ_WORK_LIMIT = 2_000_000_000

POS_FILE_PATH_ID = 2147483546  # Iceberg spec: reserved field ids of position-delete files
POS_POS_ID = 2147483545


def scope(df: DataFile) -> tuple:
    """The partition a file belongs to: (spec id, partition values)."""
    part = df.partition  # a pyiceberg Record
    values = tuple(part[i] for i in range(len(part))) if part is not None else ()
    return (df.spec_id, values)


def seq(e: ManifestEntry) -> int:
    """An entry's data sequence number (live entries of a v2 table always have one)."""
    return int(e.sequence_number or 0)


def is_global(df: DataFile, specs: dict[int, Any]) -> bool:
    """An equality delete of an unpartitioned spec applies to every partition."""
    spec = specs.get(df.spec_id)
    return spec is not None and spec.is_unpartitioned()


def is_dv(df: DataFile) -> bool:
    """A deletion vector (format v3): a blob in a Puffin file, its entry naming the one data file it applies to."""
    fmt = df.file_format
    return str(getattr(fmt, "value", fmt)).upper() == "PUFFIN"


def puffin_dvs(path: str) -> list[Any]:
    """The deletion vectors of a Puffin file (pyiceberg's DeletionVector: referenced_data_file, to_vector())."""
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    from bench.core.catalog.s3 import filesystem

    fs, local = filesystem(path if "://" in path else "file://" + local_path(path))
    with fs.open_input_stream(local) as f:
        return deletion_vectors_from_puffin_file(PuffinFile(f.read()))


def dv_rows(entries: list[ManifestEntry]) -> list[tuple[str, int, int]]:
    """(data file, row position, sequence number) of every row the deletion vectors of these live entries delete.
    pyiceberg reads a manifest entry without its v3 fields (referenced_data_file, content_offset), so each Puffin
    file's blobs are taken whole: a blob superseded by a later deletion vector of the same data file holds a subset
    of its rows (Iceberg merges a file's deletes into its new vector), so the union is the same."""
    seqs = {e.data_file.file_path: seq(e) for e in entries}
    return [(dv.referenced_data_file, int(pos), s) for path, s in seqs.items() for dv in puffin_dvs(path)
            for pos in dv.to_vector().to_pylist()]


def position_targets(df: DataFile) -> list[str] | None:
    """The data file(s) a position-delete file points at, from its file_path bounds when they are
    equal (None when the bounds do not say: the file must be read)."""
    lo = (df.lower_bounds or {}).get(POS_FILE_PATH_ID)
    hi = (df.upper_bounds or {}).get(POS_FILE_PATH_ID)
    if lo is not None and lo == hi:
        return [bytes(lo).decode()]
    return None


def read_position_targets(paths: list[str]) -> dict[str, list[str]]:
    """The data files each position-delete file names, by reading the files (DuckDB)."""
    if not paths:
        return {}
    from bench.core.catalog.duck import duckdb_connect
    from bench.core.catalog.s3 import is_s3

    con = duckdb_connect(remote=any(is_s3(p) for p in paths))
    try:
        rows = con.execute("SELECT filename, list(DISTINCT file_path) FROM read_parquet(?, filename=true) "
                           "GROUP BY filename", [[local_path(p) for p in paths]]).fetchall()
    finally:
        con.close()
    by_local = {fn: targets for fn, targets in rows}
    return {p: by_local.get(local_path(p), []) for p in paths}


@dataclass
class DeleteClassification:
    position: int = 0
    equality: int = 0
    dangling_position: list[str] = field(default_factory=list)  # paths
    dangling_equality: list[str] = field(default_factory=list)

    @property
    def applying_position(self) -> int:
        return self.position - len(self.dangling_position)

    @property
    def applying_equality(self) -> int:
        return self.equality - len(self.dangling_equality)

    @property
    def dangling(self) -> list[str]:
        return self.dangling_position + self.dangling_equality


def classify(files: LiveFiles, specs: dict[int, Any]) -> DeleteClassification:
    """Split a snapshot's live delete files into still applying and dangling."""
    data_seq = {e.data_file.file_path: seq(e) for e in files.data}
    min_seq_by_scope: dict[tuple, int] = {}
    for e in files.data:
        k = scope(e.data_file)
        min_seq_by_scope[k] = min(min_seq_by_scope.get(k, seq(e)), seq(e))
    min_seq_all = min(data_seq.values()) if data_seq else None
    unknown = [e.data_file.file_path for e in files.position
               if position_targets(e.data_file) is None and not is_dv(e.data_file)]
    read = read_position_targets(unknown)
    # deletion vectors: pyiceberg's entry lacks referenced_data_file, so a Puffin file's entries are taken together
    # (targets: every blob's data file): dangling only when none of them is live, as removing by path removes all
    read |= {p: [dv.referenced_data_file for dv in puffin_dvs(p)]
             for p in {e.data_file.file_path for e in files.position if is_dv(e.data_file)}}
    out = DeleteClassification(position=len(files.position), equality=len(files.equality))
    for e in files.position:
        targets = position_targets(e.data_file) or read.get(e.data_file.file_path, [])
        if not any(t in data_seq and data_seq[t] <= seq(e) for t in targets):
            out.dangling_position.append(e.data_file.file_path)
    for e in files.equality:
        lowest = min_seq_all if is_global(e.data_file, specs) else min_seq_by_scope.get(scope(e.data_file))
        if lowest is None or lowest >= seq(e):
            out.dangling_equality.append(e.data_file.file_path)
    return out


def equality_delete_work(files: LiveFiles, specs: dict[int, Any]) -> int:
    """Sum over live data files of rows x equality-delete rows that apply to the file (by sequence
    number and partition): the work of a reader that compares row by row."""
    work = 0
    for d in files.data if files.equality else []:
        keys = sum(e.data_file.record_count for e in files.equality if seq(e) > seq(d)
                   and (is_global(e.data_file, specs) or scope(e.data_file) == scope(d.data_file)))
        work += d.data_file.record_count * keys
    return work
