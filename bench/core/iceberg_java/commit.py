"""Commits through Iceberg's Java API: files written elsewhere (RowDelta), and metadata-only
removals of delete files.  Work on any JVM that has Iceberg (`jvm`, a loaded `table`)."""

from __future__ import annotations

import uuid
from typing import Any

COMMIT_TOKEN = "bench.commit-token"  # a RowDelta's own mark in its snapshot's summary: how it finds its snapshot


class RowDeltaCommitter:
    """RowDelta commits of data and delete files written by another writer (metrics from Iceberg's
    own `ParquetUtil.fileMetrics`; `MetricsConfig.forPositionDelete` for position deletes so their
    file_path bounds are exact)."""

    def __init__(self, jvm: Any, table: Any, equality_ids: Any):
        """`equality_ids`: a Java int[] of the equality-delete field ids.  The Java classes' static methods are
        looked up once: each py4j lookup is a round trip to the JVM, and a table of 60,000 files builds 60,000
        files' metadata (the same objects either way).  The methods building one file's metadata may be called
        from several threads at once (py4j gives each thread its own connection)."""
        self.ice = jvm.org.apache.iceberg
        self.table = table
        self.spec = table.spec()
        self.io = table.io()
        self.parquet = self.ice.FileFormat.PARQUET
        self.data_metrics = self.ice.MetricsConfig.forTable(table)
        # every harness JVM runs the harness's Iceberg line (1.12: the position-delete metrics config no longer
        # takes the table, full metrics for file_path and pos whatever its properties)
        self.position_metrics = self.ice.MetricsConfig.forPositionDelete()
        self.eq_ids = equality_ids
        self.commits = 0
        self._file_metrics = self.ice.parquet.ParquetUtil.fileMetrics
        self._data_builder = self.ice.DataFiles.builder
        self._delete_builder = self.ice.FileMetadata.deleteFileBuilder

    def _metrics(self, path: str, config: Any) -> Any:
        return self._file_metrics(self.io.newInputFile(path), config)

    def _in_partition(self, builder: Any, partition: tuple[int, ...] | list[int] | None) -> Any:
        """The file's partition tuple (Iceberg's representation: ints here, e.g. days, hours, buckets)
        on a builder; unchanged for an unpartitioned file."""
        if partition is None:
            return builder
        data = self.ice.PartitionData(self.spec.partitionType())
        for i, value in enumerate(partition):
            data.set(i, value)
        return builder.withPartition(data)

    def data_file(self, path: str, size: int, partition: tuple[int, ...] | None = None) -> Any:
        builder = (self._data_builder(self.spec).withPath(path).withFormat(self.parquet)
                   .withFileSizeInBytes(size).withMetrics(self._metrics(path, self.data_metrics)))
        return self._in_partition(builder, partition).build()

    def position_file(self, path: str, size: int, partition: tuple[int, ...] | None = None) -> Any:
        builder = (self._delete_builder(self.spec).ofPositionDeletes().withPath(path)
                   .withFormat(self.parquet).withFileSizeInBytes(size)
                   .withMetrics(self._metrics(path, self.position_metrics)))
        return self._in_partition(builder, partition).build()

    def equality_file(self, path: str, size: int, partition: tuple[int, ...] | None = None) -> Any:
        builder = (self._delete_builder(self.spec).ofEqualityDeletes(self.eq_ids)
                   .withPath(path).withFormat(self.parquet).withFileSizeInBytes(size)
                   .withMetrics(self._metrics(path, self.data_metrics)))
        return self._in_partition(builder, partition).build()

    def row_delta(self, rows: list, deletes: list, summary: dict[str, str], branch: str = "main") -> None:
        rd = self.table.newRowDelta()
        if branch != "main":
            rd = rd.toBranch(branch)
        for f in rows:
            rd = rd.addRows(f)
        for f in deletes:
            rd = rd.addDeletes(f)
        for k, v in summary.items():
            rd = rd.set(k, v)
        rd.commit()
        self.commits += 1

    def row_delta_snapshot(self, rows: list, deletes: list, summary: dict[str, str], branch: str = "main") -> int:
        """`row_delta`, and the id of the snapshot it committed: found by a token in its summary among the branch's
        ancestors, not as the branch's head, which another committer (an engine compacting beside this writer)
        may have moved by the time it is read.  One table refresh more than `row_delta`: for a writer that needs
        its snapshot, not for a generator's many commits."""
        token = uuid.uuid4().hex
        self.row_delta(rows, deletes, {**summary, COMMIT_TOKEN: token}, branch)
        self.table.refresh()
        snap = self.table.snapshot(branch)
        while snap is not None:
            if snap.summary().get(COMMIT_TOKEN) == token:
                return int(snap.snapshotId())
            parent = snap.parentId()
            snap = self.table.snapshot(parent) if parent is not None else None
        raise RuntimeError(f"the commit landed but its snapshot is no longer in the history of {branch}")


def remove_delete_files(jvm: Any, table: Any, paths: set[str], summary: dict[str, str] | None = None,
                        branch: str = "main") -> dict:
    """Remove the live delete files named in `paths` from `branch` of `table` in one RewriteFiles commit (no row
    changes; the caller decides which files, e.g. the dangling ones by bench.core.table.deletes).
    Returns {"position": n, "equality": m} removed."""
    snap = table.currentSnapshot() if branch == "main" else table.snapshot(branch)
    removed = {"position": 0, "equality": 0}
    if snap is None or not paths:
        return removed
    io, specs, mf = table.io(), table.specs(), jvm.org.apache.iceberg.ManifestFiles
    rewrite = table.newRewrite() if branch == "main" else table.newRewrite().toBranch(branch)
    for m in snap.deleteManifests(io):
        it = mf.readDeleteManifest(m, io, specs).iterator()
        while it.hasNext():
            f = it.next()
            if str(f.location()) in paths:
                kind = "equality" if f.content().toString() == "EQUALITY_DELETES" else "position"
                rewrite.deleteFile(f.copyWithoutStats())
                removed[kind] += 1
    for k, v in (summary or {}).items():
        rewrite.set(k, v)
    if removed["position"] or removed["equality"]:
        rewrite.commit()
    return removed
