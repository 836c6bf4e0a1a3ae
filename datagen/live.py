"""The live writer of the `live-writer-*` scenarios: one commit that lands on the table WHILE an engine
compacts it (the runner decides when: after the engine planned, before its commit).

Cases (`CASES`), each touching rows the compaction is rewriting:
    append            a new data file of `rows` rows with fresh keys (v2 >= APPEND_KEY_BASE)
    position-delete   a position-delete file deleting `rows` live rows of an input data file
    equality-delete   an equality-delete file (v1, v2) deleting the same kind of rows by key

A conformance case may declare its own concurrent commit of these kinds on its own table (`Case.during`,
`prepare_declared`): the same commit, of the rows it names, its expected end state stated by the case.

Everything is deterministic from the dataset (recipe, scale, seed): the rows come from the generator
(`datagen.schema.make_rows`), never from reading the table, and so does the expected end state: the
dataset's ground truth plus the appended rows' checksum, minus the deleted rows'.  The files are
written BEFORE the engine starts (only the commit is timed against it), under the table's location
with a `live-writer-` prefix; the commit is a RowDelta through Iceberg's Java API on the catalog's
JDBC side (not through the REST catalog the commit gate sits in), tagged `bench.live-writer=<case>` in
its snapshot summary.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from pydantic import TypeAdapter
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.manifest import DataFileContent
from pyiceberg.table import Table

from bench.core.catalog import CatalogSettings
from bench.core.checksum import exact_sum
from bench.core.dataset import GeneratedTable, GroundTruth
from bench.core.iceberg_java.commit import RowDeltaCommitter
from bench.core.iceberg_java.gateway import JavaIceberg
from bench.core.table.entries import live_files
from bench.core.uri import local_path
from datagen.conformance import During, equality_rows
from datagen.deletes import (
    EQUALITY_DELETE_ARROW,
    EQUALITY_DELETE_SCHEMA,
    EQUALITY_IDS,
    POSITION_DELETE_ARROW,
    POSITION_DELETE_SCHEMA,
    Written,
)
from datagen.queries import layout
from datagen.recipes import TableRecipe
from datagen.schema import make_rows, pools_for, row_hashes
from datagen.writer import FilePlan, data_file_path, write_properties, write_rows

CASES = ("append", "position-delete", "equality-delete")
DECLARED = "during"  # the case of a commit a conformance case declares (`prepare_declared`)
SUMMARY_KEY = "bench.live-writer"
APPEND_KEY_BASE = 10**12  # appended rows' v2 (the dataset's keys are far below)
APPEND_FILE_INDEX = 2**30  # the generator's file index of the appended rows (no dataset file has it)
COMMIT_JVM_HEAP = "256m"


@dataclass
class WriterCommit:
    """What the writer commits in one case, and what the table must hold afterwards."""

    case: str
    rows: int  # rows appended or deleted
    target_file: str | None  # the input data file whose rows are deleted (delete cases)
    data: list[Written] = field(default_factory=list)
    position: list[Written] = field(default_factory=list)
    equality: list[Written] = field(default_factory=list)
    appended_keys: list[int] = field(default_factory=list)  # v2 of appended rows
    deleted_keys: list[int] = field(default_factory=list)  # v2 of deleted rows
    expected: GroundTruth | None = None  # None: a declared commit, whose case states its end state
    equality_ids: list[int] = field(default_factory=lambda: list(EQUALITY_IDS))  # the equality files' field ids
    said: str = ""  # a declared commit's description

    @property
    def paths(self) -> list[str]:
        return [w.path for w in (*self.data, *self.position, *self.equality)]

    def describe(self) -> str:
        if self.said:
            return self.said
        if self.case == "append":
            return f"appends {self.rows} rows (a new data file, keys v2 >= {APPEND_KEY_BASE})"
        kind = "position" if self.case == "position-delete" else "equality (v1, v2)"
        assert self.target_file is not None  # a delete case has its target
        return f"deletes {self.rows} live rows of input file {self.target_file.rsplit('/', 1)[-1]} by {kind} delete"


def _target(ds: GeneratedTable) -> tuple[FilePlan, np.ndarray]:
    """The input data file the delete cases hit (one every engine rewrites: in a deletes table, the
    first with a position-delete file) and its live row numbers (the generator's layout)."""
    lay = layout(ds)
    j = 0 if lay.deletes is None else next((i for i, has in enumerate(lay.deletes_plan.has_pos) if has), 0)
    fp = lay.files[j]
    return fp, np.flatnonzero(lay.live(fp))


def prepare_commit(ds: GeneratedTable, case: str, rows: int) -> WriterCommit:
    """Write the case's files under the table's location and compute the expected end state."""
    if case not in CASES:
        raise ValueError(f"unknown live-writer case {case!r} (known: {', '.join(CASES)})")
    recipe = TypeAdapter(TableRecipe).validate_python(ds.recipe)
    props = write_properties(recipe)
    pools = pools_for(ds.seed)
    base_rows, base_sum = ds.ground_truth.rows, int(ds.ground_truth.checksum)
    data_dir = f"{ds.location}/data"
    if case == "append":
        table = make_rows(pools, ds.seed, APPEND_FILE_INDEX, rows, APPEND_KEY_BASE)
        path = f"{data_dir}/live-writer-append.parquet"
        df = write_rows(path, props, table)
        hashes = row_hashes(pools, ds.seed, APPEND_FILE_INDEX, rows, APPEND_KEY_BASE, table)
        out = WriterCommit(case, rows, None, data=[Written(path, df.file_size_in_bytes, df.record_count)],
                           appended_keys=table.column("v2").to_pylist())
        out.expected = GroundTruth(rows=base_rows + rows, checksum=str(base_sum + exact_sum(hashes)),
                                   computed_by="generator: dataset ground truth + the appended rows")
        return out
    fp, live = _target(ds)
    n = min(rows, max(1, len(live) // 2))
    picked = np.sort(live[np.linspace(0, len(live) - 1, n).astype(np.int64)])
    table = make_rows(pools, ds.seed, fp.index, fp.rows, fp.key_offset)
    hashes = row_hashes(pools, ds.seed, fp.index, fp.rows, fp.key_offset, table)
    target = data_file_path(ds.location, fp.index)
    if target not in ds.live_files:
        raise RuntimeError(f"the live writer's target {target} is not a live file of the dataset")
    out = WriterCommit(case, n, target, deleted_keys=table.column("v2").take(pa.array(picked)).to_pylist())
    if case == "position-delete":
        path = f"{data_dir}/live-writer-pos-deletes.parquet"
        ptable = pa.Table.from_arrays([pa.array([target] * n, pa.string()), pa.array(picked, pa.int64())],
                                      schema=POSITION_DELETE_ARROW)
        f = write_rows(path, props, ptable, POSITION_DELETE_SCHEMA, content=DataFileContent.POSITION_DELETES)
        out.position = [Written(path, f.file_size_in_bytes, f.record_count)]
    else:
        path = f"{data_dir}/live-writer-eq-deletes.parquet"
        keys = table.select(["v1", "v2"]).take(pa.array(picked))
        etable = pa.Table.from_arrays([keys.column(0), keys.column(1)], schema=EQUALITY_DELETE_ARROW)
        f = write_rows(path, props, etable, EQUALITY_DELETE_SCHEMA, content=DataFileContent.EQUALITY_DELETES)
        out.equality = [Written(path, f.file_size_in_bytes, f.record_count)]
    out.expected = GroundTruth(rows=base_rows - n, checksum=str(base_sum - exact_sum(hashes[picked])),
                               computed_by="generator: dataset ground truth - the deleted rows")
    return out


def prepare_declared(tbl: Table, steps: list[During]) -> WriterCommit:
    """A conformance case's concurrent commit (`Case.during`) on `tbl` as written: each step's file written under the
    table's data directory (`live-writer-during-` names), one RowDelta's worth; position deletes located in the live
    data files (every row whose column holds one of the values)."""
    out = WriterCommit(DECLARED, 0, None)
    said = []
    data_dir = f"{tbl.location()}/data"
    for i, step in enumerate(steps):
        path = f"{data_dir}/live-writer-during-{i}.parquet"
        if step.append is not None:
            schema = tbl.schema()
            arrow = schema_to_pyarrow(schema)
            rows = pa.Table.from_pylist([dict(zip(step.append.columns, r)) for r in step.append.rows], schema=arrow)
            f = write_rows(path, {}, rows, schema)
            out.data.append(Written(path, f.file_size_in_bytes, f.record_count))
            out.rows += rows.num_rows
            said.append(f"appends {rows.num_rows} row(s)")
        elif step.equality_delete is not None:
            d = step.equality_delete
            schema, rows = equality_rows(tbl.schema(), d)
            f = write_rows(path, {}, rows, schema, content=DataFileContent.EQUALITY_DELETES)
            out.equality.append(Written(path, f.file_size_in_bytes, f.record_count))
            out.equality_ids = [x.field_id for x in schema.fields]
            said.append(f"equality-deletes ({', '.join(d.columns)}) = {', '.join(map(str, d.rows))}")
        elif step.position_delete is not None:
            pd = step.position_delete
            hits = locate(tbl, pd.column, pd.values)
            if not hits:
                raise RuntimeError(f"the concurrent position delete finds no row whose {pd.column} is among "
                                   f"{pd.values} in the table's live data files")
            rows = pa.Table.from_arrays([pa.array([h[0] for h in hits], pa.string()),
                                         pa.array([h[1] for h in hits], pa.int64())], schema=POSITION_DELETE_ARROW)
            f = write_rows(path, {}, rows, POSITION_DELETE_SCHEMA, content=DataFileContent.POSITION_DELETES)
            out.position.append(Written(path, f.file_size_in_bytes, f.record_count))
            out.target_file = hits[0][0]
            out.rows += len(hits)
            said.append(f"position-deletes {len(hits)} row(s) ({pd.column} in {pd.values}) of "
                        + ", ".join(sorted({h[0].rsplit('/', 1)[-1] for h in hits})))
    out.said = "; ".join(said)
    return out


def locate(tbl: Table, column: str, values: list) -> list[tuple[str, int]]:
    """(data file path, row position) of every row of the live data files whose `column` is one of `values`."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out = []
    for e in live_files(tbl).data:
        path = e.data_file.file_path
        col = pq.read_table(local_path(path), columns=[column]).column(column)
        out += [(path, int(i)) for i in np.flatnonzero(pc.is_in(col, pa.array(values)).to_numpy(zero_copy_only=False))]
    return out


class LiveWriter:
    """Commits `commit` in one RowDelta.  Its JVM starts at the commit and ends right after it: an open
    Iceberg JdbcCatalog keeps a read lock on the SQLite catalog (measured here), which would block the
    engine's own commit after it."""

    def __init__(self, settings: CatalogSettings, table: str, commit: WriterCommit, branch: str = "main"):
        self.settings, self.table, self.commit_plan, self.branch = settings, table, commit, branch
        self.snapshot_id: int | None = None
        self.commit_s: float | None = None

    def commit(self) -> int:
        """Commit the case's files now; returns the writer's snapshot id."""
        p = self.commit_plan
        t0 = time.perf_counter()
        with JavaIceberg(self.settings, heap=COMMIT_JVM_HEAP) as java:
            try:
                c = RowDeltaCommitter(java.jvm, java.load_table(self.table), java.int_array(p.equality_ids))
                rows = [c.data_file(w.path, w.size) for w in p.data]
                deletes = [c.position_file(w.path, w.size) for w in p.position] + \
                          [c.equality_file(w.path, w.size) for w in p.equality]
                self.snapshot_id = c.row_delta_snapshot(rows, deletes, {SUMMARY_KEY: p.case}, branch=self.branch)
            except Exception as e:  # a Java exception's text is gone with its JVM: take it now
                java_exc = getattr(e, "java_exception", None)
                raise RuntimeError(str(java_exc.toString()) if java_exc is not None else str(e)) from None
        self.commit_s = time.perf_counter() - t0
        return self.snapshot_id
