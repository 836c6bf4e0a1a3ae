"""Verification: what a table holds before and after a compaction, measured the same way for every
engine, from the table's own metadata and data files — never from what an engine says it did.

- files, bytes, delete files: from the snapshot's manifests (pyiceberg);
- codecs, row groups: from the Parquet footers of the live data files;
- rows and an order-independent content checksum over all columns: DuckDB reads the live data files
  (sum of a 64-bit hash of every row, `datagen.checksum`); with live delete files, a delete-aware reader
  is used instead (`CONTENT_READERS`), so deleted rows never count:
    duckdb-iceberg        DuckDB's iceberg extension through the REST catalog (needs CatalogSettings
                          with rest_uri: the runner passes them);
    duckdb-merge-on-read  the Iceberg v2 delete rules applied by us in DuckDB SQL over the snapshot's
                          Parquet files (data, position and equality deletes with their sequence
                          numbers from the manifests): independent of the extension's own code;
- live delete files are classified as still applying or dangling (no live data file can be affected,
  by the sequence-number rules), position and equality separately.
"""

from __future__ import annotations

import statistics
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import pyarrow.parquet as pq
from pyiceberg.manifest import DataFileContent
from pyiceberg.table import Table

from bench.catalog.s3 import filesystem, is_s3
from bench.results import TableStats, Verification
from datagen.checksum import checksum_select
from datagen.dataset import live_manifest_entries

POS_FILE_PATH_ID = 2147483546  # Iceberg spec: position-delete file_path field id


def local_path(uri: str) -> str:
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("file:"):
        return uri[len("file:"):]
    return uri


def _footer(uri: str) -> tuple[list[str], int, int]:
    fs, path = filesystem(uri if "://" in uri else "file://" + local_path(uri))
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


def _duckdb_for(paths) -> "object":
    """A DuckDB connection that can read `paths` (httpfs + an S3 secret when any is on S3)."""
    from bench.catalog.duck import duckdb_connect

    return duckdb_connect(remote=any(is_s3(p) for p in paths))


def content_checksum_parquet(paths: list[str], columns: list[str]) -> tuple[int, str]:
    """Row count and order-independent checksum (sum of DuckDB's 64-bit row hashes) of Parquet files."""
    if not paths:
        return 0, "0"
    con = _duckdb_for(paths)
    n, s = con.execute(checksum_select(columns, "read_parquet(?)"),
                       [[local_path(p) for p in paths]]).fetchone()
    con.close()
    return int(n), str(s)


# --- delete-aware readers -------------------------------------------------------------------------
class ReaderUnavailable(RuntimeError):
    """This reader cannot read this table here (e.g. no REST catalog to read through)."""


def _split_ident(tbl: Table) -> tuple[str, str]:
    ident = tuple(tbl.name())
    if len(ident) < 2:
        raise ReaderUnavailable(f"table identifier {ident} has no namespace")
    return ident[-2], ident[-1]


# DuckDB 1.5.5's iceberg extension compares every data row with every applicable equality-delete row
# (duckdb/duckdb-iceberg#626: minutes for 2M rows x 220k keys here); above this many comparisons it is
# not used and the merge-on-read reader answers instead.
DUCKDB_ICEBERG_EQ_WORK_LIMIT = 2_000_000_000


def _is_global(delete_file, specs) -> bool:
    """An equality delete of an unpartitioned spec applies to every partition."""
    spec = specs.get(delete_file.spec_id)
    return spec is not None and spec.is_unpartitioned()


def equality_delete_work(entries, specs) -> int:
    """Sum over live data files of rows x equality-delete rows that apply to the file (by sequence
    number and partition): the work of a reader that compares row by row."""
    data = [e for e in entries if e.data_file.content == DataFileContent.DATA]
    eq = [e for e in entries if e.data_file.content == DataFileContent.EQUALITY_DELETES]
    work = 0
    for d in data if eq else []:
        keys = sum(e.data_file.record_count for e in eq if e.sequence_number > d.sequence_number
                   and (_is_global(e.data_file, specs) or _scope(e.data_file) == _scope(d.data_file)))
        work += d.data_file.record_count * keys
    return work


def read_duckdb_iceberg(tbl: Table, snapshot_id: int | None, columns: list[str],
                        settings=None) -> tuple[int, str]:
    """Rows and checksum as DuckDB's iceberg extension reads the table through the REST catalog."""
    from bench.catalog.duck import duckdb_connect_iceberg

    if settings is None or not getattr(settings, "rest_uri", None):
        raise ReaderUnavailable("duckdb-iceberg reads through a REST catalog; no rest_uri given")
    work = equality_delete_work(live_manifest_entries(tbl, snapshot_id), tbl.specs())
    if work > DUCKDB_ICEBERG_EQ_WORK_LIMIT:
        raise ReaderUnavailable(f"{work:.3g} row x equality-key comparisons exceed its limit of "
                                f"{DUCKDB_ICEBERG_EQ_WORK_LIMIT:.3g} (duckdb-iceberg#626)")
    ns, name = _split_ident(tbl)
    source = f'ice."{ns}"."{name}"'
    if snapshot_id is not None:
        source += f" AT (VERSION => {int(snapshot_id)})"
    con = duckdb_connect_iceberg(settings)
    try:
        n, s = con.execute(checksum_select(columns, source)).fetchone()
    finally:
        con.close()
    return int(n), str(s)


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _scope(df) -> tuple:
    """The partition a file belongs to: (spec id, partition values)."""
    return (df.spec_id, tuple(df.partition) if df.partition is not None else ())


def _position_targets(df) -> list[str] | None:
    """The data file(s) a position-delete file points at, from its file_path bounds when they are
    equal (None when the bounds do not say: read the file)."""
    lo = (df.lower_bounds or {}).get(POS_FILE_PATH_ID)
    hi = (df.upper_bounds or {}).get(POS_FILE_PATH_ID)
    if lo is not None and lo == hi:
        return [bytes(lo).decode()]
    return None


def classify_deletes(tbl: Table, snapshot_id: int | None = None, entries=None) -> dict:
    """Live delete files of a snapshot, split into still applying and dangling by Iceberg v2's rules:
    a position delete of sequence number s applies to the data files it names with sequence number
    <= s; an equality delete of s to data files of its partition (all, if its spec is unpartitioned)
    with sequence number < s.  Column-bounds pruning is not considered (an "applying" file may still
    match no row)."""
    entries = live_manifest_entries(tbl, snapshot_id) if entries is None else entries
    data = [e for e in entries if e.data_file.content == DataFileContent.DATA]
    pos = [e for e in entries if e.data_file.content == DataFileContent.POSITION_DELETES]
    eq = [e for e in entries if e.data_file.content == DataFileContent.EQUALITY_DELETES]
    data_seq = {e.data_file.file_path: e.sequence_number for e in data}
    min_seq_by_scope: dict[tuple, int] = {}
    for e in data:
        k = _scope(e.data_file)
        min_seq_by_scope[k] = min(min_seq_by_scope.get(k, e.sequence_number), e.sequence_number)
    min_seq_all = min(data_seq.values()) if data_seq else None
    specs = tbl.specs()

    unknown = [e for e in pos if _position_targets(e.data_file) is None]
    read_targets: dict[str, list[str]] = {}
    if unknown:
        con = _duckdb_for([e.data_file.file_path for e in unknown])
        try:
            rows = con.execute("SELECT filename, list(DISTINCT file_path) FROM read_parquet(?, filename=true) "
                               "GROUP BY filename", [[local_path(e.data_file.file_path) for e in unknown]]).fetchall()
        finally:
            con.close()
        by_local = {fn: paths for fn, paths in rows}
        read_targets = {e.data_file.file_path: by_local.get(local_path(e.data_file.file_path), []) for e in unknown}

    dangling_pos = 0
    for e in pos:
        targets = _position_targets(e.data_file) or read_targets.get(e.data_file.file_path, [])
        if not any(t in data_seq and data_seq[t] <= e.sequence_number for t in targets):
            dangling_pos += 1
    dangling_eq = 0
    for e in eq:
        if _is_global(e.data_file, specs):
            lowest = min_seq_all
        else:
            lowest = min_seq_by_scope.get(_scope(e.data_file))
        if lowest is None or lowest >= e.sequence_number:
            dangling_eq += 1
    return {"position": len(pos), "equality": len(eq), "dangling_position": dangling_pos,
            "dangling_equality": dangling_eq, "applying_position": len(pos) - dangling_pos,
            "applying_equality": len(eq) - dangling_eq}


def read_merge_on_read(tbl: Table, snapshot_id: int | None, columns: list[str],
                       settings=None) -> tuple[int, str]:
    """Rows and checksum of a snapshot with Iceberg v2's merge-on-read rules applied in DuckDB SQL over
    its Parquet files: a row of data file F (sequence number f) is deleted by a position delete
    (file_path = F's manifest path, pos = its row number, sequence number >= f) or an equality delete
    (equal on its equality columns, null-safe; sequence number > f; same partition unless the delete's
    spec is unpartitioned).  Columns are matched by name."""
    entries = live_manifest_entries(tbl, snapshot_id)
    data = [e for e in entries if e.data_file.content == DataFileContent.DATA]
    pos = [e for e in entries if e.data_file.content == DataFileContent.POSITION_DELETES]
    eq = [e for e in entries if e.data_file.content == DataFileContent.EQUALITY_DELETES]
    if not data:
        return 0, "0"
    schema = tbl.schema()
    specs = tbl.specs()
    scopes: dict[tuple, int] = {}

    def scope_id(df) -> int:
        return scopes.setdefault(_scope(df), len(scopes))

    con = _duckdb_for([e.data_file.file_path for e in entries])
    try:
        con.execute("CREATE TEMP TABLE dfiles(local VARCHAR, path VARCHAR, seq BIGINT, scope INTEGER)")
        con.executemany("INSERT INTO dfiles VALUES (?, ?, ?, ?)",
                        [(local_path(e.data_file.file_path), e.data_file.file_path, e.sequence_number,
                          scope_id(e.data_file)) for e in data])
        cols = ", ".join('d."' + c.replace('"', '""') + '"' for c in columns)
        files = "[" + ", ".join(_sql_str(local_path(e.data_file.file_path)) for e in data) + "]"
        con.execute(f"CREATE TEMP VIEW rows_ AS SELECT {cols}, d.file_row_number AS _pos, f.path AS _path, "
                    f"f.seq AS _seq, f.scope AS _scope FROM read_parquet({files}, filename=true, "
                    f"file_row_number=true, union_by_name=true) d JOIN dfiles f ON d.filename = f.local")
        conditions = []
        if pos:
            con.execute("CREATE TEMP TABLE pfiles(local VARCHAR, seq BIGINT)")
            con.executemany("INSERT INTO pfiles VALUES (?, ?)",
                            [(local_path(e.data_file.file_path), e.sequence_number) for e in pos])
            con.execute("CREATE TEMP TABLE pdel AS SELECT p.file_path, p.pos, f.seq FROM read_parquet(?, "
                        "filename=true) p JOIN pfiles f ON p.filename = f.local",
                        [[local_path(e.data_file.file_path) for e in pos]])
            conditions.append("NOT EXISTS (SELECT 1 FROM pdel p WHERE p.file_path = r._path "
                              "AND p.pos = r._pos AND p.seq >= r._seq)")
        groups: dict[tuple[int, ...], list] = {}
        for e in eq:
            groups.setdefault(tuple(sorted(e.data_file.equality_ids or [])), []).append(e)
        for g, (ids, files) in enumerate(groups.items()):
            names = [schema.find_column_name(i) for i in ids]
            if not names or any(n is None for n in names):
                raise RuntimeError(f"equality delete ids {ids} are not columns of the table schema")
            con.execute(f"CREATE TEMP TABLE efiles{g}(local VARCHAR, seq BIGINT, scope INTEGER, global_ BOOLEAN)")
            con.executemany(f"INSERT INTO efiles{g} VALUES (?, ?, ?, ?)",
                            [(local_path(e.data_file.file_path), e.sequence_number, scope_id(e.data_file),
                              _is_global(e.data_file, specs)) for e in files])
            keys = ", ".join('q."' + n.replace('"', '""') + '"' for n in names)
            con.execute(f"CREATE TEMP TABLE edel{g} AS SELECT {keys}, f.seq, f.scope, f.global_ FROM "
                        f"read_parquet(?, filename=true, union_by_name=true) q JOIN efiles{g} f "
                        f"ON q.filename = f.local", [[local_path(e.data_file.file_path) for e in files]])
            match = " AND ".join(f'e."{n}" IS NOT DISTINCT FROM r."{n}"' for n in names)
            conditions.append(f"NOT EXISTS (SELECT 1 FROM edel{g} e WHERE {match} AND e.seq > r._seq "
                              f"AND (e.global_ OR e.scope = r._scope))")
        where = (" WHERE " + " AND ".join(conditions)) if conditions else ""
        n, s = con.execute(checksum_select(columns, f"(SELECT * FROM rows_ r{where}) AS live")).fetchone()
    finally:
        con.close()
    return int(n), str(s)


def read_live_data_parquet(tbl: Table, snapshot_id: int | None, columns: list[str],
                           settings=None) -> tuple[int, str]:
    """DuckDB read_parquet over the live data files, ignoring delete files: only valid, and only
    available, when no live delete file applies (all are dangling)."""
    entries = live_manifest_entries(tbl, snapshot_id)
    cls = classify_deletes(tbl, snapshot_id, entries)
    if cls["applying_position"] or cls["applying_equality"]:
        raise ReaderUnavailable(f"{cls['applying_position']} position and {cls['applying_equality']} "
                                f"equality delete files still apply")
    n, s = content_checksum_parquet([e.data_file.file_path for e in entries
                                     if e.data_file.content == DataFileContent.DATA], columns)
    return n, s


# Readers for tables with live delete files, in order of preference:
# name -> fn(tbl, snapshot_id, columns, settings) -> (rows, checksum); raises ReaderUnavailable when it
# cannot read this table here, and the next one is tried.  The verifier of the deletes scenarios runs
# every available one and requires at least two to agree.
CONTENT_READERS: dict[str, Callable] = {
    "duckdb-iceberg": read_duckdb_iceberg,
    "duckdb-merge-on-read": read_merge_on_read,
    "duckdb-read-parquet-no-applying-deletes": read_live_data_parquet,
}


def read_with_deletes(tbl: Table, snapshot_id: int | None, columns: list[str], settings=None,
                      ) -> tuple[str, int, str]:
    """(reader name, rows, checksum) from the first CONTENT_READERS entry that can read the table."""
    reasons = []
    for name, reader in CONTENT_READERS.items():
        try:
            n, s = reader(tbl, snapshot_id, columns, settings)
            return name, n, s
        except ReaderUnavailable as e:
            reasons.append(f"{name}: {e}")
    raise RuntimeError("table has live delete files and no delete-aware reader can read it: " + "; ".join(reasons))


def table_stats(tbl: Table, snapshot_id: int | None = None, *, content: bool = True,
                footers: bool = True, settings=None) -> TableStats:
    """What the snapshot holds.  `settings` (bench.catalog.CatalogSettings with rest_uri) lets the
    delete-aware reader go through the REST catalog; without them the merge-on-read reader is used."""
    manifest_entries = live_manifest_entries(tbl, snapshot_id)
    entries = [e.data_file for e in manifest_entries]
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
    if pos or eq:
        cls = classify_deletes(tbl, snapshot_id, manifest_entries)
        st.dangling_position_delete_files = cls["dangling_position"]
        st.dangling_equality_delete_files = cls["dangling_equality"]
    if content:
        columns = [f.name for f in tbl.schema().fields]
        if pos or eq:
            st.content_reader, st.rows, st.checksum = read_with_deletes(tbl, snapshot_id, columns, settings)
        else:
            st.rows, st.checksum = content_checksum_parquet([e.file_path for e in data], columns)
            st.content_reader = "duckdb-read-parquet"
    return st


def verify_binpack(before: TableStats, after: TableStats, ground_truth: dict, **_context) -> Verification:
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


def verify_deletes(before: TableStats, after: TableStats, ground_truth: dict, *, table: Table | None = None,
                   settings=None, **_context) -> Verification:
    """Copy-on-write compaction of a table with deletes: the surviving rows equal the generator's
    ground truth (count and checksum) before and after; two independent readers agree on the compacted
    table (DuckDB's iceberg extension through the REST catalog, and our merge-on-read over its Parquet
    files); no live delete file still applies.  Live delete files left behind are reported (position
    and equality, applying or dangling); dangling ones are an advisory difference, not a failure."""
    gt_rows, gt_sum = ground_truth.get("rows"), ground_truth.get("checksum")
    applying_pos = after.position_delete_files - after.dangling_position_delete_files
    applying_eq = after.equality_delete_files - after.dangling_equality_delete_files
    readers: dict = {"ground_truth": {"rows": gt_rows, "checksum": gt_sum},
                     "before": {"reader": before.content_reader, "rows": before.rows, "checksum": before.checksum},
                     "after": {"reader": after.content_reader, "rows": after.rows, "checksum": after.checksum}}
    answers: dict[str, tuple[int, str]] = {}
    if table is not None:
        columns = [f.name for f in table.schema().fields]
        for name, reader in CONTENT_READERS.items():
            try:
                answers[name] = reader(table, after.snapshot_id, columns, settings)
                readers[name] = {"rows": answers[name][0], "checksum": answers[name][1]}
            except ReaderUnavailable as e:
                readers[name] = {"unavailable": str(e)}
    readers["live_delete_files_after"] = {
        "position": after.position_delete_files, "equality": after.equality_delete_files,
        "position_applying": applying_pos, "equality_applying": applying_eq,
        "position_dangling": after.dangling_position_delete_files,
        "equality_dangling": after.dangling_equality_delete_files}
    checks = {
        "input_matches_generator": before.rows == gt_rows and before.checksum == gt_sum,
        "rows_match_ground_truth": after.rows == gt_rows,
        "checksum_matches_ground_truth": after.checksum == gt_sum,
        "independent_readers_agree": len(answers) >= 2 and len(set(answers.values())) == 1
                                     and next(iter(answers.values())) == (after.rows, after.checksum),
        "no_applying_delete_files": applying_pos == 0 and applying_eq == 0,
        "no_live_delete_files": after.delete_files == 0,
        "new_snapshot": after.snapshot_id != before.snapshot_id,
    }
    advisory = ["no_live_delete_files"]
    diffs = []
    if not checks["input_matches_generator"]:
        diffs.append(f"input reads {before.rows} rows / checksum {before.checksum}, the generator's ground "
                     f"truth is {gt_rows} / {gt_sum}")
    if not checks["rows_match_ground_truth"]:
        diffs.append(f"rows after compaction {after.rows}, ground truth {gt_rows} "
                     f"({after.rows - (gt_rows or 0):+d})")
    if not checks["checksum_matches_ground_truth"]:
        diffs.append(f"content checksum after compaction {after.checksum}, ground truth {gt_sum}")
    if not checks["independent_readers_agree"]:
        got = {k: v for k, v in readers.items() if k in CONTENT_READERS}
        diffs.append(f"independent readers disagree, or fewer than two could read: {got}")
    if not checks["no_applying_delete_files"]:
        diffs.append(f"{applying_pos} position and {applying_eq} equality delete files still apply after "
                     f"compaction (data files with deletes were left unrewritten)")
    dangling = after.dangling_position_delete_files + after.dangling_equality_delete_files
    if dangling:
        diffs.append(f"{after.dangling_position_delete_files} position and "
                     f"{after.dangling_equality_delete_files} equality delete files left live but dangling "
                     f"(they affect no live data file; advisory)")
    if not checks["new_snapshot"]:
        diffs.append("no new snapshot was committed")
    required = [k for k in checks if k not in advisory]
    return Verification(verified=all(checks[k] for k in required), checks=checks, differences=diffs,
                        reader=f"{after.content_reader}; also read by: "
                               + (", ".join(k for k in answers if k != after.content_reader) or "none"),
                        independent_reader=readers, advisory_checks=advisory)


VERIFIERS = {"binpack": verify_binpack, "deletes": verify_deletes}
