"""The deletes-table pipeline: writers on a process pool -> RowDelta commits through Iceberg's Java
API -> the ground truth, summed from what each writer computed for its own file."""

from __future__ import annotations

import collections
import math
import multiprocessing as mp
import os
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.core.catalog import CatalogSettings
from bench.core.children import pool_initializer
from bench.core.dataset import GroundTruth
from bench.core.iceberg_java.commit import RowDeltaCommitter
from bench.core.iceberg_java.gateway import JavaIceberg
from bench.core.iceberg_java.runtime import s3_requirement
from bench.core.requirements import Requirement
from datagen.context import GenContext, Generated
from datagen.deletes.plan import DeletesPlan, plan
from datagen.deletes.write import (
    EQUALITY_IDS,
    CheckpointOut,
    Written,
    checkpoint_task,
    equality_bytes_per_key,
    equality_task,
)
from datagen.partitions import PartitionTally, partition_spec, spec_text
from datagen.recipes import DeletesRecipe
from datagen.schema import PARTITIONED_SCHEMA, SCHEMA, bucket_members, pools_for
from datagen.writer import write_properties

METADATA_THREADS = 4  # threads building the files' metadata in the committing JVM (py4j round trips overlap)
COMMIT_JVM_HEAP = "1g"  # the committing JVM only builds metadata: metrics come from Parquet footers
TABLE_PROPERTIES = {
    "format-version": "2",
    # hundreds of commits: keep only recent metadata.json files (snapshots are all kept)
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "20",
}


def storage_requirement(settings: CatalogSettings) -> Requirement | None:
    """Commits go through a JVM: on an S3 warehouse its Iceberg S3FileIO needs the AWS SDK bundle from the jar cache
    (`bench setup` fetches it).  None for a local warehouse."""
    if not settings.is_remote:
        return None
    r = s3_requirement()
    detail = r.detail if r.ok else f"the deletes generator commits through Iceberg's Java API (S3FileIO): {r.detail}"
    return Requirement("deletes datagen on an S3 warehouse (iceberg-aws-bundle)", r.ok, detail, r.fix)


@dataclass
class _Truth:
    """The ground truth, accumulated checkpoint by checkpoint."""

    rows: int = 0
    checksum: int = 0
    rows_written: int = 0
    position_deleted: int = 0
    equality_deleted: int = 0
    equality_keys: int = 0
    unmatched_keys: int = 0
    bytes: dict[str, int] = field(default_factory=lambda: {"data": 0, "position": 0, "equality": 0})

    def add(self, out: CheckpointOut) -> None:
        self.rows_written += out.data.records
        self.rows += out.survivors
        self.position_deleted += out.position_deleted
        self.equality_deleted += out.equality_deleted
        self.checksum += out.checksum

    def ground_truth(self, pl: DeletesPlan, commits: int) -> GroundTruth:
        return GroundTruth(
            rows=self.rows, checksum=str(self.checksum), rows_written=self.rows_written,
            position_deleted_rows=self.position_deleted, equality_deleted_rows=self.equality_deleted,
            data_files=pl.n, position_delete_files=pl.position_files, equality_delete_files=pl.equality_files,
            rows_per_data_file=pl.rows_per_file, equality_keys=self.equality_keys,
            unmatched_equality_keys=self.unmatched_keys, data_bytes=self.bytes["data"],
            position_delete_bytes=self.bytes["position"], equality_delete_bytes=self.bytes["equality"],
            commits=commits,
            computed_by="generator: per data file, bench.core.checksum over the rows it generated that "
                        "no delete removes")


class _Pipeline:
    """Writers run ahead on a process pool; the main process commits in checkpoint order."""

    def __init__(self, ctx: GenContext, pl: DeletesPlan, location: str, props: dict):
        self.ctx, self.pl, self.location, self.props = ctx, pl, location, props
        self.truth = _Truth()
        self.tally = PartitionTally(pl.layout) if pl.layout is not None else None
        self.buffers: dict[int, list[tuple[np.ndarray, np.ndarray]]] = collections.defaultdict(list)
        self.bytes_per_key: float | None = None
        if pl.eq_bytes_per_file:
            # keys range over the table's history: calibrate with v2 over half of it (the average file)
            self.bytes_per_key = equality_bytes_per_key(props, ctx.seed, int(pl.eq_bytes_per_file / 12),
                                                        max(1, pl.n * pl.rows_per_file // 2))
        self.pending: collections.deque[Future] = collections.deque()
        self.next = 0
        # writers run a commit group ahead: they keep writing while the main process commits the group before
        self.window = pl.per_commit + 2 * ctx.workers

    def fill(self, ex: ProcessPoolExecutor) -> None:
        while self.next < self.pl.n and len(self.pending) < self.window:
            self.pending.append(ex.submit(checkpoint_task, (self.location, self.props, self.ctx.seed, self.pl,
                                                            self.next)))
            self.next += 1

    def equality_job(self, ex: ProcessPoolExecutor, i: int) -> Future:
        """Submit checkpoint i's equality-delete file: the keys planned for it plus unmatched ones."""
        matched = self.buffers.pop(i, [])
        n_matched = sum(len(k[0]) for k in matched)
        n_unmatched = max(1, round(self.pl.unmatched_ratio * n_matched))
        if self.bytes_per_key and self.pl.eq_bytes_per_file:
            n_unmatched = max(n_unmatched, math.ceil(self.pl.eq_bytes_per_file / self.bytes_per_key) - n_matched)
        self.truth.equality_keys += n_matched + n_unmatched
        self.truth.unmatched_keys += n_unmatched
        v2_max = (i + 1) * self.pl.rows_per_file
        fp = self.pl.file_plan(i)
        if self.tally is not None:
            self.tally.add_deletes(i)
        return ex.submit(equality_task, (self.location, self.props, self.ctx.seed, i, matched, n_unmatched, v2_max,
                                         fp.partition, fp.partition_path))

    @staticmethod
    def file_metadata(committer: RowDeltaCommitter, o: CheckpointOut) -> tuple[Any, Any]:
        """A checkpoint's data file and position-delete file (None without one) as Iceberg's Java DataFile /
        DeleteFile, their metrics read from their Parquet footers by Iceberg's Java library."""
        data = committer.data_file(o.data.path, o.data.size, o.data.partition)
        p = o.position
        return data, (committer.position_file(p.path, p.size, p.partition) if p else None)

    def commit_group(self, committer: RowDeltaCommitter, group: list[CheckpointOut], metas: list[Future],
                     eqs: list[Written], meta: ThreadPoolExecutor) -> int:
        """One RowDelta of the group's data + position deletes, then one of its equality deletes.  Each file's
        metadata is built on `meta`'s threads (the checkpoints' as they arrived: `metas`), each file's round trips
        to the JVM beside the others'; the files are added in the group's order."""
        tag = f"{group[0].index}-{group[-1].index}"
        built = [f.result() for f in metas]
        rows, positions = [d for d, _ in built], [p for _, p in built if p is not None]
        committer.row_delta(rows, positions, {"bench.checkpoints": tag, "bench.commit": "data+position-deletes"})
        self.truth.bytes["data"] += sum(o.data.size for o in group)
        self.truth.bytes["position"] += sum(o.position.size for o in group if o.position)
        if eqs:
            committer.row_delta([], list(meta.map(lambda w: committer.equality_file(w.path, w.size, w.partition), eqs)),
                                {"bench.checkpoints": tag, "bench.commit": "equality-deletes"})
            self.truth.bytes["equality"] += sum(w.size for w in eqs)
        return len(rows) + len(positions) + len(eqs)

    def run(self, committer_factory) -> int:
        pl, ctx = self.pl, self.ctx
        # forked writers: the pool forks its workers at the first submit, before the JVM starts, and
        # they inherit the value pools (and a bucketed table's v1 members) built here once
        pools_for(ctx.seed).hashes()
        if pl.layout is not None and pl.layout.partitioning.buckets:
            bucket_members(pl.layout.partitioning.buckets)
        n_files = pl.n + pl.position_files + pl.equality_files
        with ProcessPoolExecutor(max_workers=ctx.workers, mp_context=mp.get_context("fork"),
                                 initializer=pool_initializer, initargs=(os.getpid(),)) as ex, \
                ThreadPoolExecutor(METADATA_THREADS, thread_name_prefix="datagen-metadata") as meta, \
                ctx.progress.task(f"datagen {ctx.ident}", total=n_files, unit="files") as task:
            self.fill(ex)  # writers start while the JVM starts
            try:
                with committer_factory() as committer:
                    group: list[CheckpointOut] = []
                    eq_jobs: list[Future] = []
                    metas: list[Future] = []
                    for i in range(pl.n):
                        out: CheckpointOut = self.pending.popleft().result()
                        self.fill(ex)
                        assert out.index == i
                        group.append(out)
                        metas.append(meta.submit(self.file_metadata, committer, out))
                        self.truth.add(out)
                        if self.tally is not None:
                            self.tally.add_data(i, out.survivors, out.checksum)
                            self.tally.add_deletes(i, 1 if out.position else 0)
                        for target, keys in out.eq_keys.items():
                            self.buffers[target].append(keys)
                        if pl.has_eq[i]:
                            eq_jobs.append(self.equality_job(ex, i))
                        if len(group) == pl.per_commit or i == pl.n - 1:
                            task.advance(self.commit_group(committer, group, metas, [f.result() for f in eq_jobs],
                                                           meta))
                            group, eq_jobs, metas = [], [], []
                    commits = committer.commits
            except BaseException:
                for f in self.pending:  # do not wait for writers nobody will commit
                    f.cancel()
                raise
        if any(self.buffers.values()):  # every key was planned for an existing equality checkpoint
            raise RuntimeError(f"equality keys planned for checkpoints never written: {sorted(self.buffers)}")
        return commits


class _JavaCommitter:
    """A JVM with the catalog open and a RowDeltaCommitter on the table, for the `with` block."""

    def __init__(self, settings: CatalogSettings, ident: str):
        self.settings, self.ident = settings, ident
        self.java: JavaIceberg | None = None

    def __enter__(self) -> RowDeltaCommitter:
        self.java = JavaIceberg(self.settings, heap=COMMIT_JVM_HEAP).__enter__()
        try:
            return RowDeltaCommitter(self.java.jvm, self.java.load_table(self.ident),
                                     self.java.int_array(EQUALITY_IDS))
        except BaseException:
            self.java.close()
            raise

    def __exit__(self, *exc) -> None:
        if self.java is not None:
            self.java.close()


def generate(ctx: GenContext) -> Generated:
    """Create the table and fill it as the package docstring describes."""
    recipe = ctx.recipe
    assert isinstance(recipe, DeletesRecipe)
    req = storage_requirement(ctx.settings)
    if req is not None and not req.ok:
        from bench.core.errors import UserError

        raise UserError(f"{req.detail}; {req.fix}")
    pl = plan(recipe, ctx.scale, ctx.file_scale)
    props = write_properties(recipe)
    ctx.progress.info(f"datagen {ctx.ident}: {pl.n} data + {pl.position_files} position-delete + "
                      f"{pl.equality_files} equality-delete files, {pl.rows_per_file} rows per data file, "
                      f"{pl.per_commit} checkpoints per commit pair")
    part = recipe.partitioning
    if part is None:
        tbl = ctx.catalog.create_table(ctx.ident, SCHEMA, properties={**props, **TABLE_PROPERTIES})
    else:
        tbl = ctx.catalog.create_table(ctx.ident, PARTITIONED_SCHEMA, partition_spec=partition_spec(part),
                                       properties={**props, **TABLE_PROPERTIES})
    pipeline = _Pipeline(ctx, pl, tbl.location(), props)
    commits = pipeline.run(lambda: _JavaCommitter(ctx.settings, ctx.ident))
    gt = pipeline.truth.ground_truth(pl, commits)
    if part is not None and pipeline.tally is not None:
        gt = gt.model_copy(update={"partition_spec": spec_text(part), "partitions": pipeline.tally.truth()})
    return Generated(files=pl.n + pl.position_files + pl.equality_files,
                     bytes=sum(pipeline.truth.bytes.values()), rows=gt.rows, ground_truth=gt)
