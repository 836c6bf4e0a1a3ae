"""`arrow-floor`: the physical floor of the same rewrite, not a compaction engine.

It rewrites exactly the files the engines rewrite (bin-packing: the data files below the small-file
threshold; deletes: the data files at least one delete file applies to), applying the table's deletes
the way the engines must (Iceberg v2: a position delete of sequence number s removes rows of the data
files it names with sequence number <= s; an equality delete of s removes matching rows of data files
with sequence number < s, in its partition or everywhere when its spec is unpartitioned; a null in a
delete column matches a null row value), and writes target-sized Parquet files per partition with the
scenario's codec, the input's column order and Parquet field ids, in row groups of DuckDB's default
122,880 rows (within Iceberg's default 128 MiB; smaller groups are encoded on more threads at once).

How, on every core it is given (`job.cores` DuckDB threads): per partition one DuckDB query reads the
data files (DuckDB's multi-threaded Parquet reader, each file's row positions alongside), anti-joins the
position deletes on (file, position) with their sequence numbers, and probes ONE hash table per
equality-delete scope and column set: each key once, with the greatest sequence number of the delete
files that hold it (a row goes when that number is above its file's); the keys compared with IS NOT
DISTINCT FROM (null matches null).  `COPY ... TO` writes the result, encoding row groups in parallel.
Compared once on deletes-high at scale 0.005 (2 cores, one run, a loaded machine), against DuckDB reading,
joining and writing (COPY), the fastest and used here: DuckDB reading and joining into Arrow then pyarrow
writing took 1.16 times as long, the former pyarrow floor (one anti-join per data file and equality-delete
set, one thread each) 6.7 times.  The floor's times are its reference runs' (docs/results.md).

No Iceberg planning is timed beyond listing the live files (the first phase), and nothing is committed:
the files go to a scratch directory under the run's work directory; the engine lists its end state
(files written and input files kept) and the runner verifies them like any engine's output (same rows,
same content, by name and by field id, codec, file count; bench.verify.uncommitted), then removes them.
Results say `commits: none`.  With the rates `bench selfcheck rates` measured on this table's files
(bench.core.rates), each result also carries the physical bound of its rewrite (`engine_result.bound`):
the least time these bytes and rows can take on these cores.

Sort (strategy sort, feature 'sort'): the same files are selected; per partition the query orders all
rows by the table's sort order (each key's direction and null order) into a DuckDB table (the ORDER BY's
order kept as it inserts, preserve_insertion_order: a row's rowid is its place in the sort), then each
output file's rows_per_file consecutive rows (a rowid range) are COPY'd to a file of its own, up to
`cores` files at a time, each COPY keeping its rows' order (a partition that fits one file: one COPY
straight from the ORDER BY): each output file is sorted and, within a partition, the files' key ranges
do not overlap, as a global sort (Spark's range partitioning of a file group) leaves them.  Not one COPY
with ROW_GROUPS_PER_FILE as for bin-packing: DuckDB (1.5) rotates files only in its unordered COPY (an
explicit PRESERVE_ORDER "is not supported with these parameters"; the global preserve_insertion_order is
dropped silently): the ORDER BY hands its output to its threads 122,880 rows at a time and each thread
writes the row groups of its run as soon as they are encoded, so past one run a file's row groups came
out of order (sorted-smallfiles at 0.005: keys 122,880-245,759 before 0-122,879 in one file; at tiny
scales there is one run, so no sign of it).  The price, sorted-smallfiles at 0.005 on 2 cores: the one
COPY 7.3 s (median of 3, its output not sorted), the table and one COPY per file 10.4 s, each on a quiet
machine (docs/reference/*-sorted-smallfiles-floorcheck, before and after); 9.6-9.7 s against 13.7-14.4 s
in runs interleaved on a lightly loaded one.  Of the other ways tried (process CPU on the same data): the one COPY
12.5-14 CPU-s, the table and COPYs per file 17-20, DuckDB's result as one Arrow table COPY'd per file 21,
streamed as Arrow batches 23, written by pyarrow 20.  Z-order is not supported: there is no
z-order (interleaved-bits) ordering in DuckDB or pyarrow, and a hand-written one would be a second
implementation, not a floor of Iceberg's.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

from bench.core.catalog import CatalogSettings
from bench.core.rates import TableRates, load_rates, physical_bound
from bench.core.records.engine_run import Deployment, PhysicalBound
from bench.core.requirements import Requirement, module_requirement
from bench.core.sql import ident, literal, string_list
from bench.engines.base import Capabilities, CompactionJob, Engine, EngineOutcome, PhaseClock

ROW_GROUP_BYTES = 128 * 1024 * 1024  # Iceberg's write.parquet.row-group-size-bytes default: the cap
# DuckDB's default row group (rows): its COPY encodes row groups in parallel, so smaller groups keep every thread
# busy (bin-packing-zstd's files at 0.005, 2 threads: 24.1-26.0 s against 29.4-29.5 s with 128 MiB groups)
ROW_GROUP_ROWS = 122_880
DUCKDB_CODEC = {"none": "uncompressed"}
OUTPUT_DIR = "floor-output"
# the phases that do the work the physical bound counts (read, decode, join, encode): its self-check's time
BOUND_PHASES = ("read deletes", "read, apply deletes, write")
SEQ = "__floor_seq"  # the sequence-number column of the delete tables (and of the data rows)


class ArrowFloorEngine(Engine):
    name: ClassVar[str] = "arrow-floor"
    description: ClassVar[str] = ("the physical floor: DuckDB rewrites the same files (deletes applied, one hash "
                                  "table per delete scope) on all cores, listing the live files timed, nothing "
                                  "committed (output verified, then removed)")
    color: ClassVar[str] = "#0F9D8A"
    packages: ClassVar[tuple[str, ...]] = ("pyarrow", "duckdb")
    # a partition filter: only data files of the partitions it selects are candidates; the others are kept
    capabilities: ClassVar[Capabilities] = Capabilities(commits_table=False, supports=frozenset({
        "sort", "partition-filter"}), not_supported={
        "zorder": ("arrow-floor: neither DuckDB nor pyarrow has a z-order (interleaved-bits) ordering; the floor "
                   "does not write one by hand"),
        "partition-filter-deletes": (
            "its end state is a list of data files, verified as a scratch table of data files alone "
            "(bench.verify.uncommitted); the delete files of the partitions outside the filter, which must stay "
            "live and keep applying, cannot be part of it"),
        **{feature: ("arrow-floor commits nothing (it writes the compacted files and lists them): continuous "
                     "maintenance of a table another writer commits to is a sequence of commits, so it has no end "
                     "state to verify after each cycle, and it has no snapshot or manifest operation")
           for feature in ("maintenance", "expire-snapshots", "rewrite-manifests", "remove-orphan-files",
                           "rewrite-position-deletes")}})

    def __init__(self) -> None:
        self.plan: dict[str, Any] = {}
        self.out_dir: Path | None = None
        self.con: Any = None
        self.catalog: Any = None
        self.rates: TableRates | None = None

    def requirements(self) -> list[Requirement]:
        return [module_requirement("pyarrow", "make setup"), module_requirement("duckdb", "make setup")]

    def storage_requirements(self, settings: CatalogSettings) -> list[Requirement]:
        return [Requirement("a local warehouse", not settings.is_remote,
                            "arrow-floor reads local files only", "run it on a local warehouse")]

    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        import duckdb
        import pyarrow.parquet  # noqa: F401 - imported here, not in the timed compaction

        self.out_dir = Path(job.work_dir or ".") / OUTPUT_DIR
        shutil.rmtree(self.out_dir, ignore_errors=True)
        config: dict[str, Any] = {"threads": max(1, int(job.cores)), "preserve_insertion_order": job.strategy == "sort"}
        if job.memory_budget_bytes:  # DuckDB's buffers within the budget (the process needs the rest)
            config["memory_limit"] = f"{max(64, int(job.memory_budget_bytes * 0.7) >> 20)}MB"
        if job.work_dir:
            config["temp_directory"] = str(Path(job.work_dir) / "floor-spill")
        self.con = duckdb.connect(config=config)
        self.rates = load_rates(job.catalog.state_path, job.table)
        # the catalog connected and pyiceberg imported here, as an engine starts its session (setup, untimed)
        from bench.core.catalog import load_catalog
        from bench.core.partition_filter import table_selector  # noqa: F401
        from bench.core.table.entries import live_files  # noqa: F401

        self.catalog = load_catalog(job.catalog)

    def _list(self, job: CompactionJob) -> None:
        """The snapshot's live files, from its manifests through pyiceberg: timed, as the first phase of the
        compaction (the table is out of reach while an engine sets up)."""
        from bench.core.partition_filter import table_selector
        from bench.core.table.deletes import is_global, scope
        from bench.core.table.entries import live_files
        from bench.core.table.fieldids import schema_map
        from bench.core.uri import local_path

        tbl = self.catalog.load_table(job.table)
        files = live_files(tbl)
        specs, schema = tbl.specs(), tbl.schema()
        order = tbl.sort_order()
        selected = table_selector(tbl, job.partition_filter, files) or (lambda _: True)
        self.plan = {
            "columns": [(f.name, f.field_id) for f in schema.fields],  # read and written by field id
            "schema_map": schema_map(schema),
            "sort": [(str(schema.find_column_name(f.source_id)), f.direction.value == "asc",
                      f.null_order.value == "nulls-first") for f in order.fields],
            "data": [{"local": local_path(e.data_file.file_path), "path": e.data_file.file_path,
                      "seq": int(e.sequence_number or 0), "scope": scope(e.data_file),
                      "bytes": e.data_file.file_size_in_bytes, "rows": e.data_file.record_count,
                      "selected": selected(scope(e.data_file))}
                     for e in files.data],
            "position": [(local_path(e.data_file.file_path), int(e.sequence_number or 0)) for e in files.position],
            "equality": [(local_path(e.data_file.file_path), int(e.sequence_number or 0), scope(e.data_file),
                          is_global(e.data_file, specs),
                          tuple(str(schema.find_column_name(i)) for i in (e.data_file.equality_ids or [])),
                          tuple(e.data_file.equality_ids or []))
                         for e in files.equality],
            "delete_bytes": sum(e.data_file.file_size_in_bytes for e in files.position + files.equality),
        }

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        try:
            return self._compact(job, clock)
        except BaseException:
            if self.out_dir is not None:  # nothing of a failed floor run stays behind
                shutil.rmtree(self.out_dir, ignore_errors=True)
            raise

    def _select(self, job: CompactionJob, deletes: Deletes) -> tuple[list[dict], list[str], dict[tuple, list[dict]]]:
        """(data files to rewrite, paths kept, the rewritten files by partition)."""
        data = self.plan["data"]
        candidates = [d for d in data if d["selected"]]
        work = job.intent()  # the same work the engines are asked (bench.core.work) and the verifier checks
        if work.files == "all":
            rewrite = candidates
        elif work.files == "small":
            small = [d for d in candidates if d["bytes"] < job.small_file_threshold_bytes]
            per_scope = Counter(d["scope"] for d in small)
            rewrite = [d for d in small if per_scope[d["scope"]] >= work.min_files]
        else:
            rewrite = [d for d in candidates if deletes.applies(d)]
        if work.applies_deletes:  # a delete file applies: its data files are rewritten with it applied
            rewrite += [d for d in candidates if deletes.applies(d) and d not in rewrite]
        chosen = {d["path"] for d in rewrite}
        groups: dict[tuple, list[dict]] = defaultdict(list)
        for d in rewrite:
            groups[d["scope"]].append(d)
        return rewrite, [d["path"] for d in data if d["path"] not in chosen], groups

    def _compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        import pyarrow.parquet as pq

        assert self.out_dir is not None and self.con is not None
        with clock.phase("list live files", "the snapshot's manifests through pyiceberg"):
            self._list(job)
        cores = max(1, int(job.cores))
        with clock.phase("read deletes", "position and equality delete files, with their sequence numbers"):
            deletes = Deletes.read(self.plan, cores)
        with clock.phase("select files", "bin-packing: files below the small-file threshold; deletes: files "
                                         "a delete file applies to (the engines' choice); of the partitions a "
                                         "partition filter selects"):
            rewrite, kept, groups = self._select(job, deletes)
        in_bytes, in_rows = sum(d["bytes"] for d in rewrite), sum(d["rows"] for d in rewrite)
        bytes_per_row = in_bytes / max(in_rows, 1)
        rows_per_file = max(1, int(job.target_file_size_bytes / bytes_per_row))
        rows_per_group = max(1, min(rows_per_file, int(ROW_GROUP_BYTES / bytes_per_row), ROW_GROUP_ROWS))
        if job.strategy == "sort":  # files of rows_per_file rows (one COPY each), in row groups of even size
            rows_per_group = -(-rows_per_file // -(-rows_per_file // rows_per_group))
        codec = DUCKDB_CODEC.get(job.output_codec, job.output_codec)
        copy = (f"FORMAT parquet, COMPRESSION {codec}"
                + (f", COMPRESSION_LEVEL {int(job.output_codec_level)}" if job.output_codec_level is not None else "")
                + f", ROW_GROUP_SIZE {rows_per_group}")
        if job.strategy != "sort":  # DuckDB rotates the files (in no set order: bin-packing keeps none)
            copy += (f", ROW_GROUPS_PER_FILE {max(1, round(rows_per_file / rows_per_group))}, "
                     "FILENAME_PATTERN 'floor-{i}'")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        written_how = ("sorted into a table, each file's rows COPY'd to Parquet" if job.strategy == "sort"
                       else "COPY'd to Parquet")
        with clock.phase("read, apply deletes, write", f"DuckDB on {cores} threads: per partition one query "
                                                       f"(read, anti-join the deletes) {written_how}, up to "
                                                       f"{cores} partitions at a time"), \
                ThreadPoolExecutor(max_workers=max(1, min(cores, len(groups)))) as pool:
            outs = [self.out_dir / f"part-{k}" for k in range(len(groups))]
            tasks = [pool.submit(self._rewrite_cursor, job, deletes, members, out, k, copy, rows_per_file)
                     for k, (members, out) in enumerate(zip(groups.values(), outs))]
            join_rows = sum(t.result() for t in tasks)
            written = [str(p) for out in outs for p in sorted(out.glob("*.parquet"))]
            rows_out = sum(pq.read_metadata(f).num_rows for f in written)
        return EngineOutcome(
            engine_result={"files_rewritten": len(rewrite), "files_kept": len(kept), "files_written": len(written),
                           "rows_in": in_rows, "rows_written": rows_out, "partitions": len(groups),
                           "position_delete_files_read": len(self.plan["position"]),
                           "equality_delete_files_read": len(self.plan["equality"])},
            physical_bound=self._bound(job, cores, in_bytes, rows_out, join_rows),
            settings={"rows_per_file": rows_per_file, "rows_per_row_group": rows_per_group,
                      "row_group_bytes": ROW_GROUP_BYTES, "codec": codec, "codec_level": job.output_codec_level,
                      "duckdb_threads": cores, "copy_options": copy,
                      "sizing": "rows per file = target / (input bytes per row), as the engines size their output "
                                "by input bytes", "output_dir": str(self.out_dir)},
            versions=self.versions(),
            actions=[self._action(job, rewrite, groups)],
            commits="table" if self.capabilities.commits_table else "none",
            deployment=Deployment(mode="embedded", cores=cores, writes_at_once={
                "partitions written at once (one COPY each, on DuckDB's shared threads)": min(cores, len(groups)),
                "partitions rewritten": len(groups),
                **({"files written at once per partition (strategy sort: one COPY each)": cores}
                   if job.strategy == "sort" else {})}),
            output_files=kept + [Path(os.path.abspath(p)).as_uri() for p in written])

    def _rewrite_cursor(self, job: CompactionJob, deletes: Deletes, members: list[dict], out: Path, k: int,
                        copy: str, rows_per_file: int) -> int:
        """_rewrite on a cursor of its own (partitions rewritten at once share DuckDB's threads)."""
        con = self.con.cursor()
        try:
            return self._rewrite(job, deletes, members, out, copy, con, f"_{k}", rows_per_file)
        finally:
            con.close()

    def _rewrite(self, job: CompactionJob, deletes: Deletes, members: list[dict], out: Path, copy: str,
                 con: Any = None, tag: str = "", rows_per_file: int = 0) -> int:
        """One partition's files, deletes applied, COPY'd to `out` (strategy sort: sorted, in files of
        `rows_per_file` rows): the rows its hash joins built and probed."""
        con = self.con if con is None else con
        columns = self.plan["columns"]  # the table's current columns: read and written by field id
        field_ids = "{" + ", ".join(f"{ident(n)}: {i}" for n, i in columns) + "}"
        by_seq: dict[int, list[str]] = defaultdict(list)
        for d in members:
            by_seq[d["seq"]].append(d["local"])
        how = self._how(con, [d["local"] for d in members])
        reads = " UNION ALL ".join(
            f"SELECT *, {seq} AS {SEQ} FROM read_parquet({string_list(paths)}, filename=true, "
            f"file_row_number=true, hive_partitioning=false, {how})" for seq, paths in sorted(by_seq.items()))
        where = list(self._extra_where())
        joins = []
        pos = deletes.position_table(members)
        if pos is not None:
            con.register(f"floor_pos{tag}", pos)
            joins.append(f"ANTI JOIN floor_pos{tag} p ON p.file_path = d.filename AND p.pos = d.file_row_number "
                         f"AND p.{SEQ} >= d.{SEQ}")
        eq = deletes.equality_tables(members[0]["scope"])
        for j, (cols, keys) in enumerate(eq):
            con.register(f"floor_eq{tag}_{j}", keys)
            on = " AND ".join(f"d.{ident(c)} IS NOT DISTINCT FROM e{j}.{ident(c)}" for c in cols)
            joins.append(f"LEFT JOIN floor_eq{tag}_{j} e{j} ON {on}")
            where.append(f"(e{j}.{SEQ} IS NULL OR e{j}.{SEQ} <= d.{SEQ})")
        query = (f"SELECT {', '.join('d.' + ident(n) for n, _ in columns)} FROM ({reads}) d " + " ".join(joins)
                 + (f" WHERE {' AND '.join(where)}" if where else "") + self._order_by(job))
        copy += f", FIELD_IDS {field_ids}"
        if job.strategy == "sort":
            self._write_sorted(job, con, query, out, copy, rows_per_file, tag, sum(d["rows"] for d in members))
        else:
            con.execute(f"COPY ({query}) TO {literal(str(out))} ({copy})")
        for name in [f"floor_pos{tag}"] * (pos is not None) + [f"floor_eq{tag}_{j}" for j in range(len(eq))]:
            con.unregister(name)
        probed = sum(d["rows"] for d in members) if (pos is not None or eq) else 0
        return probed + (pos.num_rows if pos is not None else 0) + sum(t.num_rows for _, t in eq)

    def _write_sorted(self, job: CompactionJob, con: Any, query: str, out: Path, copy: str, rows_per_file: int,
                      tag: str, rows_in: int) -> None:
        """Strategy sort: the partition's rows sorted into a table (in the ORDER BY's order: a row's rowid is
        its place), then each run of `rows_per_file` rows COPY'd to a file of its own (floor-0, floor-1, ...
        in key order), up to `job.cores` at a time, each on a cursor of its own; a partition of `rows_in`
        rows that fit one file is COPY'd to it straight from the ORDER BY.  One COPY with
        ROW_GROUPS_PER_FILE would not keep the order (see the module's docstring)."""
        out.mkdir(parents=True, exist_ok=True)
        if rows_in <= rows_per_file:  # one file: DuckDB's COPY to one file keeps the ORDER BY's order
            con.execute(f"COPY ({query}) TO {literal(str(out / 'floor-0.parquet'))} ({copy})")
            return
        table = f"floor_sorted{tag}"
        try:
            rows = con.execute(f"CREATE TABLE {table} AS {query}").fetchone()[0]  # the rows inserted
            starts = range(0, rows, max(1, rows_per_file))

            def write(i: int, start: int) -> None:
                cur = self.con.cursor()
                try:
                    cur.execute(f"COPY (SELECT * FROM {table} WHERE rowid >= {start} AND rowid < "
                                f"{start + rows_per_file}) TO {literal(str(out / f'floor-{i}.parquet'))} ({copy})")
                finally:
                    cur.close()

            with ThreadPoolExecutor(max_workers=max(1, min(int(job.cores), len(starts)))) as pool:
                for task in [pool.submit(write, i, start) for i, start in enumerate(starts)]:
                    task.result()
        finally:
            con.execute(f"DROP TABLE IF EXISTS {table}")

    def _how(self, con: Any, paths: list[str]) -> str:
        """read_parquet's column resolution for `paths`: by field id (the `schema` map of the table's current
        columns: a renamed column under its new name, an added one NULL in older files), or by name when a file
        carries no Parquet field id at all (added to the table by another tool)."""
        bare = con.execute("SELECT file_name FROM parquet_schema(?) GROUP BY file_name HAVING count(field_id) = 0",
                           [paths]).fetchall()
        return "union_by_name=true" if bare else f"schema={self.plan['schema_map']}"

    def _extra_where(self) -> list[str]:
        """More conditions on the data rows `d` (none: a hook for tests' wrong floors)."""
        return []

    def _order_by(self, job: CompactionJob) -> str:
        """ORDER BY the table's sort order (strategy sort; each key's direction and null order), else ''."""
        if job.strategy != "sort":
            return ""
        keys = self.plan["sort"]
        if not keys:
            raise ValueError("arrow-floor: strategy sort, but the table has no sort order")
        return " ORDER BY " + ", ".join(f"d.{ident(c)} {'ASC' if asc else 'DESC'} NULLS {'FIRST' if nf else 'LAST'}"
                                        for c, asc, nf in keys)

    def _bound(self, job: CompactionJob, cores: int, data_bytes: int, rows_out: int,
               join_rows: int) -> PhysicalBound:
        """The physical bound of this rewrite from the rates measured on this table (bench.core.rates)."""
        if self.rates is None:
            return PhysicalBound(missing=f"no rates measured for {job.table}: run `bench selfcheck rates`")
        try:
            return physical_bound(self.rates, cores, data_bytes + self.plan["delete_bytes"], data_bytes, rows_out,
                                  job.output_codec, join_rows, covers=list(BOUND_PHASES))
        except ValueError as e:
            return PhysicalBound(missing=str(e))

    def versions(self) -> dict[str, str]:
        import duckdb
        import pyarrow as pa

        return {"duckdb": duckdb.__version__, "pyarrow": pa.__version__}

    def _action(self, job: CompactionJob, rewrite: list[dict], groups: dict) -> str:
        data = self.plan["data"]
        return (f"DuckDB: rewrite {len(rewrite)} of {len(data)} data files in {len(groups)} partition(s)"
                + (f" sorted by {', '.join(c for c, _, _ in self.plan['sort'])}" if job.strategy == "sort" else "")
                + (f" (partition filter {job.partition_filter!r})" if job.partition_filter else "") + ", "
                f"applying {len(self.plan['position'])} position and {len(self.plan['equality'])} equality "
                f"delete files (one hash table per scope); "
                + ("sorted into a table, one COPY per output file" if job.strategy == "sort" else "COPY")
                + f" to {self.out_dir} (nothing committed)")

    def close(self) -> None:
        self.plan = {}
        if self.con is not None:
            self.con.close()
            self.con = None


class Deletes:
    """The table's delete files, read once: position deletes as one table (file path, position, sequence
    number); equality deletes grouped by scope (a partition, or global) and column set."""

    def __init__(self, position: Any, equality: dict[tuple, Any]) -> None:
        self.position = position  # pyarrow Table (file_path local, pos, SEQ) or None
        self.equality = equality  # (scope or None: global, cols) -> pyarrow Table (cols..., SEQ)
        self._pos_max: dict[str, int] = {}
        if position is not None:
            agg = position.group_by("file_path").aggregate([(SEQ, "max")])
            self._pos_max = dict(zip(agg.column("file_path").to_pylist(), agg.column(f"{SEQ}_max").to_pylist()))
        self._eq_max: dict[Any, int] = defaultdict(lambda: -1)
        for (sc, _), t in equality.items():
            self._eq_max[sc] = max(self._eq_max[sc], max(t.column(SEQ).to_pylist(), default=-1))

    @classmethod
    def read(cls, plan: dict, threads: int = 1) -> Deletes:
        """Every delete file of `plan`, `threads` read at a time."""
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        def load(item: tuple[str, int, list[str], tuple[int, ...]]) -> Any:
            local, seq, cols, ids = item
            if ids:  # an equality delete's columns by field id, under their current names
                named = {int(f.metadata[b"PARQUET:field_id"]): f.name for f in pq.read_schema(local)
                         if f.metadata and b"PARQUET:field_id" in f.metadata}
                t = pq.read_table(local, columns=[named.get(i, c) for c, i in zip(cols, ids)],
                                  use_threads=False).rename_columns(list(cols))
            else:
                t = pq.read_table(local, columns=cols, use_threads=False)
            return t.append_column(SEQ, pa.array([seq] * t.num_rows, pa.int64()))

        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            pos = list(pool.map(load, [(local, seq, ["file_path", "pos"], ()) for local, seq in plan["position"]]))
            eqs = list(pool.map(load, [(local, seq, list(cols), ids)
                                       for local, seq, _, _, cols, ids in plan["equality"]]))
        position = None
        if pos:
            position = pa.concat_tables(pos)  # the data files' URIs as local paths, as the query reads them
            position = position.set_column(0, "file_path", pc.replace_substring_regex(
                position.column("file_path").cast(pa.string()), "^file:(//)?", ""))
        eq: dict[tuple, list] = defaultdict(list)
        for (_, _, part, glob, cols, _), t in zip(plan["equality"], eqs):
            eq[(None if glob else part, cols)].append(t)
        return cls(position, {k: pa.concat_tables(v, promote_options="permissive") for k, v in eq.items()})

    def applies(self, d: dict) -> bool:
        """Does a delete file apply to data file `d`?"""
        return (self._pos_max.get(d["local"], -1) >= d["seq"]
                or self._eq_max.get(None, -1) > d["seq"] or self._eq_max.get(d["scope"], -1) > d["seq"])

    def position_table(self, members: list[dict]) -> Any:
        """The position deletes of these data files (None: none)."""
        if self.position is None or not any(d["local"] in self._pos_max for d in members):
            return None
        import pyarrow as pa
        import pyarrow.compute as pc

        return self.position.filter(pc.is_in(self.position.column("file_path"),
                                             value_set=pa.array([d["local"] for d in members], pa.string())))

    def equality_tables(self, scope: tuple) -> list[tuple[tuple[str, ...], Any]]:
        """Per column set, the keys of the equality deletes applying in partition `scope` (its own and the
        global ones), each key once with the greatest sequence number: one hash table per scope."""
        import pyarrow as pa

        by_cols: dict[tuple[str, ...], list] = defaultdict(list)
        for (sc, cols), t in self.equality.items():
            if sc is None or sc == scope:
                by_cols[cols].append(t)
        return [(cols, pa.concat_tables(ts, promote_options="permissive").group_by(list(cols), use_threads=False)
                 .aggregate([(SEQ, "max")]).select([*cols, f"{SEQ}_max"]).rename_columns([*cols, SEQ]))
                for cols, ts in by_cols.items()]
