"""The streaming CDC writer of the `streaming-*` scenarios: micro-batch commits on top of a generated
dataset, the same for every engine, and the table every commit must leave (from the generator, never
read from the table).

Each commit is one RowDelta (the CDC shape of the deletes generator: a writer checkpoint closes one data
file, one position-delete file and one equality-delete file):
    data file             new rows (fresh keys v2 >= STREAM_KEY_BASE) and the new versions of updated rows
                          (their old keys (v1, v2), new values)
    position-delete file  rows of this commit's own data file deleted again in the same micro-batch
                          (`in_batch_delete_share` of its new rows: the insert-then-delete churn of a checkpoint)
    equality-delete file  (v1, v2) of the rows updated and deleted: rows committed earlier by the writer
An append-only commit (`append_only_share` of the commits, chosen by the seeded generator) has new rows only.
Equality deletes apply to data files of earlier sequence numbers only, so a new version written in the
same commit as its key's equality delete stays live (Iceberg v2's upsert).

Everything is deterministic from (dataset seed, commit index): the rows from `datagen.schema.make_rows`,
the choice of rows updated and deleted from a seeded generator over the writer's own live keys.  The
expected content after every commit (rows, checksum, and the reader queries' answers) follows from the
writer's state.  Commits go through Iceberg's Java API in one JVM kept for the whole run (the catalog is
built for each commit and closed after it: an open JdbcCatalog keeps a read lock on the SQLite catalog).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import TypeAdapter
from pyiceberg.manifest import DataFileContent

from bench.core.catalog import CatalogSettings
from bench.core.checksum import column_hashes, combine, exact_sum
from bench.core.dataset import GeneratedTable
from bench.core.iceberg_java.commit import RowDeltaCommitter
from bench.core.iceberg_java.gateway import JavaIceberg, catalog_properties
from bench.core.records.reads import ReadQuery
from datagen.deletes import (
    EQUALITY_DELETE_ARROW,
    EQUALITY_DELETE_SCHEMA,
    EQUALITY_IDS,
    POSITION_DELETE_ARROW,
    POSITION_DELETE_SCHEMA,
)
from datagen.recipes import TableRecipe
from datagen.schema import make_rows, pools_for
from datagen.writer import write_properties, write_rows

STREAM_KEY_BASE = 2 * 10**12  # the writer's keys (the dataset's and the live writer's are below)
STREAM_FILE_BASE = 2**29  # the generator's file index of commit c's new rows: STREAM_FILE_BASE + 2c (+1: updates)
SUMMARY_KEY = "bench.stream-commit"
COMMIT_JVM_HEAP = "384m"
RETRIES = 5  # the writer's own retries of a commit that failed on a conflict (Iceberg retries inside it too)


@dataclass(frozen=True)
class StreamShape:
    """What each commit holds (the scenario's `streaming:` block, resolved at the run's scale)."""

    rows_per_commit: int
    update_share: float
    delete_share: float
    in_batch_delete_share: float
    append_only_share: float


@dataclass
class CommitPlan:
    index: int
    append_only: bool
    data: pa.Table
    data_hashes: np.ndarray
    position_rows: np.ndarray  # rows of `data` deleted in the same commit
    equality_keys: list[tuple[int, int]]  # (v1, v2) deleted (updated or deleted) from earlier commits
    new_rows: int
    updated: int
    deleted: int
    deleted_keys: list[int]  # v2 of the rows deleted for good (not updated): by equality and by position


@dataclass
class StreamCommit:
    """One commit as it landed (or did not)."""

    index: int
    append_only: bool
    rows_inserted: int  # rows of its data file (new and new versions)
    rows_updated: int
    rows_deleted: int  # by equality delete (earlier rows) and by position delete (its own rows)
    bytes: int  # data and delete files it wrote
    files: int
    snapshot_id: int | None = None
    commit_s: float | None = None
    started_unix: float = 0.0
    attempts: int = 0
    conflicts: list[str] = field(default_factory=list)
    error: str | None = None
    deleted_keys: list[int] = field(default_factory=list)  # v2 of the rows it deleted for good
    expected_rows: int = 0  # the table after it (when it landed)
    expected_checksum: str = ""

    @property
    def landed(self) -> bool:
        return self.snapshot_id is not None


@dataclass
class Expected:
    rows: int
    checksum: str
    answers: dict[str, list[str]]


class StreamWriter:
    """The writer's state and commits (one per `commit()`); `expected()` is the table after the last one
    that landed."""

    def __init__(self, ds: GeneratedTable, settings: CatalogSettings, shape: StreamShape, prefix: str,
                 base_answers: dict[str, list[str]], branch: str = "main", log_file: str | None = None):
        """`base_answers`: the dataset's own full-scan answer ([count, sum(quantity)]) under 'full-scan'."""
        self.ds, self.settings, self.shape, self.prefix, self.branch = ds, settings, shape, prefix, branch
        self.props = write_properties(TypeAdapter(TableRecipe).validate_python(ds.recipe))
        self.pools = pools_for(ds.seed)
        # v2 -> (v1, row hash, quantity) of the writer's live rows, in insertion order (deterministic)
        self.live: dict[int, tuple[int, int, int]] = {}
        self.checksum = 0
        self.next_key = STREAM_KEY_BASE
        self.base_rows, self.base_sum = ds.ground_truth.rows, int(ds.ground_truth.checksum)
        self.base_quantity = int(base_answers["full-scan"][1])
        self.queries = [ReadQuery(name="full-scan"),
                        ReadQuery(name="key-range", lo=STREAM_KEY_BASE, hi=STREAM_KEY_BASE + shape.rows_per_commit - 1),
                        ReadQuery(name="point-lookup", lo=STREAM_KEY_BASE + shape.rows_per_commit // 2,
                                  hi=STREAM_KEY_BASE + shape.rows_per_commit // 2)]
        self.commits: list[StreamCommit] = []
        self.log_file = log_file
        self._java: JavaIceberg | None = None
        self._eq_ids: Any = None

    # -- the JVM ---------------------------------------------------------------------------------
    def __enter__(self) -> StreamWriter:
        self._java = JavaIceberg(self.settings, heap=COMMIT_JVM_HEAP, log_file=self.log_file).__enter__()
        self._java.catalog.close()  # built again for each commit (see the module's docstring)
        self._eq_ids = self._java.int_array(EQUALITY_IDS)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._java is not None:
            self._java.close()
            self._java = None

    # -- planning ----------------------------------------------------------------------------------
    def plan(self, index: int) -> CommitPlan:
        s = self.shape
        rng = np.random.default_rng([self.ds.seed, 7919, index])
        append_only = bool(rng.random() < s.append_only_share) or not self.live
        n = s.rows_per_commit
        keys = np.fromiter(self.live.keys(), dtype=np.int64, count=len(self.live))
        n_upd = 0 if append_only else min(len(keys), int(round(n * s.update_share)))
        n_del = 0 if append_only else min(len(keys) - n_upd, int(round(n * s.delete_share)))
        picked = rng.choice(len(keys), n_upd + n_del, replace=False) if n_upd + n_del else np.zeros(0, np.int64)
        upd_keys, del_keys = keys[picked[:n_upd]], keys[picked[n_upd:]]
        n_new = n - n_upd
        new = make_rows(self.pools, self.ds.seed, STREAM_FILE_BASE + 2 * index, n_new, self.next_key)
        parts = [new]
        if n_upd:
            fresh = make_rows(self.pools, self.ds.seed, STREAM_FILE_BASE + 2 * index + 1, n_upd, 0)
            v1 = pa.array([self.live[int(k)][0] for k in upd_keys], pa.int32())
            fresh = fresh.set_column(0, fresh.schema.field(0), v1).set_column(
                1, fresh.schema.field(1), pa.array(upd_keys, pa.int64()))
            parts.append(fresh)
        data = pa.concat_tables(parts).combine_chunks()
        hashes = combine(column_hashes(data))
        in_batch = 0 if append_only else int(round(n_new * s.in_batch_delete_share))
        position_rows = np.sort(rng.choice(n_new, in_batch, replace=False)) if in_batch else np.zeros(0, np.int64)
        eq = [(self.live[int(k)][0], int(k)) for k in np.concatenate([upd_keys, del_keys])]
        gone = [int(k) for k in del_keys] + [int(k) for k in data.column("v2").to_numpy()[position_rows]]
        return CommitPlan(index, append_only, data, hashes, position_rows, eq, n_new, n_upd, n_del, gone)

    def _apply(self, p: CommitPlan) -> None:
        """The writer's state after `p` landed."""
        for _, k in p.equality_keys:
            _, h, _ = self.live.pop(k)
            self.checksum -= h
        dropped = set(p.position_rows.tolist())
        v1, v2 = p.data.column("v1").to_numpy(), p.data.column("v2").to_numpy()
        qty = p.data.column("quantity").to_numpy(zero_copy_only=False)
        for i in range(p.data.num_rows):
            if i in dropped:
                continue
            h = int(p.data_hashes[i])
            self.live[int(v2[i])] = (int(v1[i]), h, int(qty[i]))
            self.checksum += h
        self.next_key += p.new_rows

    # -- writing and committing --------------------------------------------------------------------
    def _write(self, p: CommitPlan) -> tuple[list[tuple[str, int]], list[tuple[str, int]], list[tuple[str, int]]]:
        base = f"{self.ds.location}/data/stream-{self.prefix}-{p.index:06d}"
        data_path = f"{base}.parquet"
        df = write_rows(data_path, self.props, p.data)
        data = [(data_path, df.file_size_in_bytes)]
        pos, eq = [], []
        if len(p.position_rows):
            path = f"{base}-pos.parquet"
            t = pa.Table.from_arrays([pa.array([data_path] * len(p.position_rows), pa.string()),
                                      pa.array(p.position_rows, pa.int64())], schema=POSITION_DELETE_ARROW)
            f = write_rows(path, self.props, t, POSITION_DELETE_SCHEMA, content=DataFileContent.POSITION_DELETES)
            pos.append((path, f.file_size_in_bytes))
        if p.equality_keys:
            path = f"{base}-eq.parquet"
            t = pa.Table.from_arrays([pa.array([k[0] for k in p.equality_keys], pa.int32()),
                                      pa.array([k[1] for k in p.equality_keys], pa.int64())],
                                     schema=EQUALITY_DELETE_ARROW)
            f = write_rows(path, self.props, t, EQUALITY_DELETE_SCHEMA, content=DataFileContent.EQUALITY_DELETES)
            eq.append((path, f.file_size_in_bytes))
        return data, pos, eq

    def commit(self, index: int) -> StreamCommit:
        """Plan, write and commit micro-batch `index`; the state moves on only when it landed."""
        assert self._java is not None, "use the writer in a `with` block"
        p = self.plan(index)
        data, pos, eq = self._write(p)
        rec = StreamCommit(index=index, append_only=p.append_only, rows_inserted=p.data.num_rows,
                           rows_updated=p.updated, rows_deleted=p.deleted + len(p.position_rows),
                           bytes=sum(s for _, s in data + pos + eq), files=len(data + pos + eq),
                           started_unix=time.time())
        t0 = time.perf_counter()
        java = self._java
        while rec.attempts < RETRIES and rec.snapshot_id is None:
            rec.attempts += 1
            catalog = None
            try:
                props = java.jvm.java.util.HashMap()
                for k, v in catalog_properties(self.settings).items():
                    props.put(k, v)
                catalog = java.jvm.org.apache.iceberg.CatalogUtil.buildIcebergCatalog(
                    self.settings.name, props, java.jvm.org.apache.hadoop.conf.Configuration())
                table = catalog.loadTable(java.jvm.org.apache.iceberg.catalog.TableIdentifier.parse(self.ds.table))
                c = RowDeltaCommitter(java.jvm, table, self._eq_ids)
                rows = [c.data_file(path, size) for path, size in data]
                deletes = [c.position_file(path, size) for path, size in pos] + \
                          [c.equality_file(path, size) for path, size in eq]
                rec.snapshot_id = c.row_delta_snapshot(rows, deletes, {SUMMARY_KEY: str(index)}, branch=self.branch)
            except Exception as e:  # noqa: BLE001 - a conflict is retried, then recorded
                java_exc = getattr(e, "java_exception", None)
                rec.conflicts.append((str(java_exc.toString()) if java_exc is not None else f"{type(e).__name__}: {e}")
                                     [:300])
                time.sleep(0.05 * rec.attempts)
            finally:
                if catalog is not None:
                    try:
                        catalog.close()
                    except Exception:  # noqa: BLE001
                        pass
        rec.commit_s = round(time.perf_counter() - t0, 4)
        if rec.snapshot_id is not None:
            self._apply(p)
            rec.deleted_keys = p.deleted_keys
            rec.expected_rows = self.base_rows + len(self.live)
            rec.expected_checksum = str(self.base_sum + self.checksum)
        else:
            rec.error = rec.conflicts[-1] if rec.conflicts else "not committed"
        self.commits.append(rec)
        return rec

    # -- what the table must hold ------------------------------------------------------------------
    def expected(self) -> Expected:
        """The table after the writer's last landed commit, and the reader queries' answers."""
        qty = sum(q for _, _, q in self.live.values())
        answers = {"full-scan": [str(self.base_rows + len(self.live)), str(self.base_quantity + qty)]}
        q = self.queries[1]
        assert q.lo is not None and q.hi is not None
        in_range = [v for k, v in self.live.items() if q.lo <= k <= q.hi]
        answers["key-range"] = [str(len(in_range)), str(sum(v[2] for v in in_range))]
        point = self.live.get(int(self.queries[2].lo or 0))
        answers["point-lookup"] = ["1", str(exact_sum(np.array([point[1]], np.uint64)))] if point else ["0", "0"]
        return Expected(rows=self.base_rows + len(self.live), checksum=str(self.base_sum + self.checksum),
                        answers=answers)
