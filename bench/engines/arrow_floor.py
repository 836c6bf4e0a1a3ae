"""`arrow-floor`: the physical floor of the same rewrite, not a compaction engine.

It rewrites exactly the files the engines rewrite (bin-packing: the data files below the small-file
threshold; deletes: the data files at least one delete file applies to), applying the table's deletes
the way the engines must (Iceberg v2: a position delete of sequence number s removes rows of the data
files it names with sequence number <= s; an equality delete of s removes matching rows of data files
with sequence number < s, in its partition or everywhere when its spec is unpartitioned), and writes
target-sized Parquet files per partition with the scenario's codec, the input's column order and
Parquet field ids and Iceberg's default row-group size (128 MiB), with pyarrow's own thread pools
(`pyarrow.dataset.write_dataset`, files read and filtered `cores` at a time).
No Iceberg planning is timed (the live files are listed in open()), and nothing is committed: the
files go to a scratch directory under the run's work directory; the engine lists its end state (files
written and input files kept) and the runner verifies them like any engine's output (same rows, same
content, by name and by field id, codec, file count; bench.verify.uncommitted), then removes them.
Results say `commits: none`.

What it shows: how long reading, filtering and writing these bytes takes here with a bare columnar
library, so each engine's time reads as a multiple of that floor (the rest is the framework: planning,
task scheduling, commits, the JVM, ...).  It reads a local warehouse only.

Sort (strategy sort, feature 'sort'): the same files are selected; per partition all their rows are read
into memory, sorted by the table's sort order (pyarrow's sort_indices, each key's direction and null
order) and written in that order
(write_dataset with preserve_order): each output file is sorted and, within a partition, the files'
key ranges do not overlap, as a global sort (Spark's range partitioning of a file group) leaves them.
Z-order is not supported: pyarrow has no z-order (interleaved-bits) ordering, and a hand-written one
would be a second implementation, not a floor of Iceberg's.
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict, deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

from bench.core.catalog import CatalogSettings
from bench.core.requirements import Requirement, module_requirement
from bench.core.results import Deployment
from bench.engines.base import CompactionJob, EngineBase, EngineOutcome, PhaseClock

ROW_GROUP_BYTES = 128 * 1024 * 1024  # Iceberg's write.parquet.row-group-size-bytes default
PYARROW_CODEC = {"uncompressed": "none"}
OUTPUT_DIR = "floor-output"


class ArrowFloorEngine(EngineBase):
    name: ClassVar[str] = "arrow-floor"
    description: ClassVar[str] = ("the physical floor: pyarrow rewrites the same files (deletes applied) on all "
                                  "cores, listing the live files timed, nothing committed (output verified, then "
                                  "removed)")
    color: ClassVar[str] = "#0F9D8A"
    packages: ClassVar[tuple[str, ...]] = ("pyarrow",)
    # a partition filter: only data files of the partitions it selects are candidates; the others are kept
    supports: ClassVar[frozenset[str]] = frozenset({"sort", "partition-filter"})
    not_supported: ClassVar[dict[str, str]] = {
        "zorder": ("arrow-floor: pyarrow has no z-order (interleaved-bits) ordering; the floor does not write one "
                   "by hand"),
        "partition-filter-deletes": (
            "its end state is a list of data files, verified as a scratch table of data files alone "
            "(bench.verify.uncommitted); the delete files of the partitions outside the filter, which must stay "
            "live and keep applying, cannot be part of it"),
        **{feature: ("arrow-floor commits nothing (it writes the compacted files and lists them): continuous "
                     "maintenance of a table another writer commits to is a sequence of commits, so it has no end "
                     "state to verify after each cycle, and it has no snapshot or manifest operation")
           for feature in ("maintenance", "expire-snapshots", "rewrite-manifests")}}

    def __init__(self) -> None:
        self.plan: dict[str, Any] = {}
        self.out_dir: Path | None = None

    def requirements(self) -> list[Requirement]:
        return [module_requirement("pyarrow", "make setup")]

    def storage_requirements(self, settings: CatalogSettings) -> list[Requirement]:
        return [Requirement("a local warehouse", not settings.is_remote,
                            "arrow-floor reads local files only", "run it on a local warehouse")]

    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        import pyarrow.dataset  # noqa: F401 - imported here, not in the timed compaction

        self.out_dir = Path(job.work_dir or ".") / OUTPUT_DIR
        shutil.rmtree(self.out_dir, ignore_errors=True)

    def _list(self, job: CompactionJob) -> None:
        """The snapshot's live files, from its manifests through pyiceberg: timed, as the first phase of the
        compaction (the table is out of reach while an engine sets up)."""
        from bench.core.catalog import load_catalog
        from bench.core.partition_filter import table_selector
        from bench.core.table import live_files, local_path
        from bench.core.table.deletes import is_global, scope

        tbl = load_catalog(job.catalog).load_table(job.table)
        files = live_files(tbl)
        specs, schema = tbl.specs(), tbl.schema()
        order = tbl.sort_order()
        selected = table_selector(tbl, job.partition_filter, files) or (lambda _: True)
        self.plan = {
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
                          tuple(str(schema.find_column_name(i)) for i in (e.data_file.equality_ids or [])))
                         for e in files.equality],
        }

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        try:
            return self._compact(job, clock)
        except BaseException:
            if self.out_dir is not None:  # nothing of a failed floor run stays behind
                shutil.rmtree(self.out_dir, ignore_errors=True)
            raise

    def _compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        import pyarrow as pa
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        assert self.out_dir is not None
        with clock.phase("list live files", "the snapshot's manifests through pyiceberg"):
            self._list(job)
        cores = max(1, int(job.cores))
        pa.set_cpu_count(cores)
        pa.set_io_thread_count(max(2, 2 * cores))
        with clock.phase("read deletes", "position and equality delete files"):
            positions = self._positions()
            equality = self._equality()
        with clock.phase("select files", "bin-packing: files below the small-file threshold; deletes: files "
                                         "a delete file applies to (the engines' choice); of the partitions a "
                                         "partition filter selects"):
            data = self.plan["data"]
            candidates = [d for d in data if d["selected"]]
            if job.kind == "binpack":
                rewrite = [d for d in candidates if d["bytes"] < job.small_file_threshold_bytes]
            else:
                rewrite = [d for d in candidates if self._has_deletes(d, positions, equality)]
            chosen = {d["path"] for d in rewrite}
            kept = [d["path"] for d in data if d["path"] not in chosen]
            groups: dict[tuple, list[dict]] = defaultdict(list)
            for d in rewrite:
                groups[d["scope"]].append(d)
        in_bytes, in_rows = sum(d["bytes"] for d in rewrite), sum(d["rows"] for d in rewrite)
        bytes_per_row = in_bytes / max(in_rows, 1)
        rows_per_file = max(1, int(job.target_file_size_bytes / bytes_per_row))
        rows_per_group = max(1, min(rows_per_file, int(ROW_GROUP_BYTES / bytes_per_row)))
        codec = PYARROW_CODEC.get(job.output_codec, job.output_codec)
        options = ds.ParquetFileFormat().make_write_options(compression=codec, compression_level=job.output_codec_level)
        written: list[str] = []
        rows_out = 0
        with clock.phase("read, apply deletes, write", f"pyarrow: {cores} files read and filtered at a time, "
                                                       "write_dataset per partition"), \
                ThreadPoolExecutor(max_workers=cores) as pool:
            for k, (_, members) in enumerate(groups.items()):
                schema = pq.read_schema(members[0]["local"])  # the input's columns and field ids

                def load(d: dict, schema: Any = schema) -> Any:
                    t = pq.read_table(d["local"], use_threads=False)
                    return self._apply(t, d, positions, equality).cast(schema)

                def batches(members: list[dict] = members, load: Any = load) -> Iterator[Any]:
                    tables = _bounded_map(pool, load, members, 2 * cores)
                    if job.strategy == "sort":  # every row of the partition, sorted: see the module docstring
                        yield from self._sorted(pa.concat_tables(list(tables))).to_batches()
                        return
                    yield from (b for t in tables for b in t.to_batches())

                ds.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), self.out_dir / f"part-{k}",
                                 format="parquet", file_options=options, max_rows_per_file=rows_per_file,
                                 max_rows_per_group=rows_per_group, min_rows_per_group=rows_per_group,
                                 basename_template="floor-{i}.parquet", existing_data_behavior="error",
                                 use_threads=True, preserve_order=job.strategy == "sort",
                                 file_visitor=lambda f: written.append(f.path))
            for f in written:
                rows_out += pq.ParquetFile(f).metadata.num_rows
        return EngineOutcome(
            engine_result={"files_rewritten": len(rewrite), "files_kept": len(kept), "files_written": len(written),
                           "rows_in": in_rows, "rows_written": rows_out, "partitions": len(groups),
                           "position_delete_files_read": len(self.plan["position"]),
                           "equality_delete_files_read": len(self.plan["equality"])},
            settings={"rows_per_file": rows_per_file, "rows_per_row_group": rows_per_group,
                      "row_group_bytes": ROW_GROUP_BYTES, "codec": codec, "codec_level": job.output_codec_level,
                      "cpu_threads": pa.cpu_count(), "io_threads": pa.io_thread_count(), "files_in_flight": 2 * cores,
                      "sizing": "rows per file = target / (input bytes per row), as the engines size their output "
                                "by input bytes", "output_dir": str(self.out_dir)},
            versions={"pyarrow": pa.__version__},
            actions=[f"pyarrow: rewrite {len(rewrite)} of {len(data)} data files in {len(groups)} partition(s)"
                     + (f" sorted by {', '.join(c for c, _, _ in self.plan['sort'])}" if job.strategy == "sort" else "")
                     + (f" (partition filter {job.partition_filter!r}: {len(candidates)} candidates)"
                        if job.partition_filter else "") + ", "
                     f"applying {len(self.plan['position'])} position and {len(self.plan['equality'])} equality "
                     f"delete files; write_dataset to {self.out_dir} (nothing committed)"],
            commits="none", deployment=Deployment(mode="embedded", cores=cores, writes_at_once={
                "partitions written at once (one write_dataset after another)": 1,
                "partitions rewritten": len(groups)}),
            output_files=kept + [Path(os.path.abspath(p)).as_uri() for p in written])

    def _sorted(self, t: Any) -> Any:
        """`t` sorted by the table's sort order (identity fields, each key's direction and null order)."""
        import pyarrow.compute as pc

        keys = self.plan["sort"]
        if not keys:
            raise ValueError("arrow-floor: strategy sort, but the table has no sort order")
        return t.take(pc.sort_indices(t, sort_keys=[(c, "ascending" if asc else "descending",
                                                     "at_start" if nulls_first else "at_end")
                                                    for c, asc, nulls_first in keys]))

    # -- Iceberg v2 deletes, in pyarrow ---------------------------------------------------------
    def _positions(self) -> dict[str, list[tuple[int, Any]]]:
        """data file path -> [(sequence number of the delete file, positions)]."""
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        out: dict[str, list[tuple[int, Any]]] = defaultdict(list)
        for local, seq in self.plan["position"]:
            t = pq.read_table(local, columns=["file_path", "pos"])
            paths = t.column("file_path")
            for target in pc.unique(paths).to_pylist():
                out[target].append((seq, t.column("pos").filter(pc.equal(paths, target))))
        return out

    def _equality(self) -> list[tuple[int, tuple, bool, tuple[str, ...], Any]]:
        import pyarrow.parquet as pq

        return [(seq, part, glob, cols, pq.read_table(local, columns=list(cols)))
                for local, seq, part, glob, cols in self.plan["equality"]]

    @staticmethod
    def _has_deletes(d: dict, positions: dict, equality: list) -> bool:
        return (any(s >= d["seq"] for s, _ in positions.get(d["path"], ()))
                or any(s > d["seq"] and (glob or part == d["scope"]) for s, part, glob, _, _ in equality))

    @staticmethod
    def _apply(t: Any, d: dict, positions: dict, equality: list) -> Any:
        import numpy as np
        import pyarrow as pa

        dead = [p for s, p in positions.get(d["path"], ()) if s >= d["seq"]]
        if dead:
            keep = np.ones(t.num_rows, dtype=bool)
            for p in dead:
                keep[np.asarray(p.to_numpy(zero_copy_only=False), dtype=np.int64)] = False
            t = t.filter(pa.array(keep))
        by_cols: dict[tuple[str, ...], list] = defaultdict(list)
        for s, part, glob, cols, keys in equality:
            if s > d["seq"] and (glob or part == d["scope"]):
                by_cols[cols].append(keys)
        for cols, tables in by_cols.items():
            keys = pa.concat_tables(tables).group_by(list(cols)).aggregate([])
            if any(keys.column(c).null_count for c in cols):
                # Iceberg's equality matches null to null; an Arrow join never does
                raise NotImplementedError("arrow-floor: equality deletes with null keys are not supported")
            t = t.join(keys, keys=list(cols), join_type="left anti", use_threads=False)
        return t

    def close(self) -> None:
        self.plan = {}


def _bounded_map(pool: ThreadPoolExecutor, fn: Any, items: list, in_flight: int) -> Iterator[Any]:
    """pool.map in order with at most `in_flight` items read ahead (bounded memory)."""
    pending: deque[Future] = deque()
    it = iter(items)
    for item in it:
        pending.append(pool.submit(fn, item))
        if len(pending) >= in_flight:
            break
    while pending:
        yield pending.popleft().result()
        nxt = next(it, None)
        if nxt is not None:
            pending.append(pool.submit(fn, nxt))
