"""Test-only engines for partitioned tables with a partition filter.  `ignorefilter` says it supports one,
then bin-packs every partition of the table (one file per partition, each in its own partition, committed
as a `replace`): everything it writes is right except where, and the verifier must fail exactly
`untouched_partitions`.  `losingfilter` compacts the selected partitions of a table with deletes and loses
rows there (below)."""

from __future__ import annotations

import shutil
import uuid
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io.pyarrow import parquet_file_to_data_file

from bench.core.catalog import load_catalog
from bench.core.iceberg_java.commit import RowDeltaCommitter
from bench.core.iceberg_java.gateway import JavaIceberg
from bench.core.partition_filter import selector
from bench.core.table.deletes import scope
from bench.core.table.entries import live_files
from bench.core.uri import local_path
from bench.engines.base import Capabilities, CompactionJob, Engine, EngineOutcome, PhaseClock
from bench.verify.partitions import rows_partition
from tests.fakes.corrupt import commit_rewrite
from tests.fakes.floors import LossyFloor


class IgnoreFilterEngine(Engine):
    name: ClassVar[str] = "ignorefilter"
    description: ClassVar[str] = "bin-packs every partition whatever the partition filter says (tests only)"
    capabilities: ClassVar[Capabilities] = Capabilities(supports=frozenset({"partition-filter"}))

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        with clock.phase("rewrite", "every partition, the filter ignored"):
            tbl = load_catalog(job.catalog).load_table(job.table)
            groups: dict[tuple, list] = defaultdict(list)
            for e in live_files(tbl).data:
                groups[scope(e.data_file)].append(e.data_file)
            removed, added = [], []
            for files in groups.values():
                data = pa.concat_tables([pq.read_table(local_path(df.file_path)) for df in files])
                path = f"{tbl.location()}/data/{self.name}-{uuid.uuid4().hex[:8]}.parquet"
                pq.write_table(data, local_path(path), compression=job.output_codec)
                removed += files
                added.append(parquet_file_to_data_file(tbl.io, tbl.metadata, path))
        with clock.phase("commit"):
            commit_rewrite(tbl, removed, added)
        return EngineOutcome(engine_result={"files_in": len(removed), "files_out": len(added)},
                             actions=[f"{self.name}: {len(removed)} files -> {len(added)}, filter "
                                      f"{job.partition_filter!r} ignored"])


class LosingFilterEngine(LossyFloor):
    """A partition filter on a table with deletes, compacted and committed, losing rows: the floor's rewrite of
    the data files of the selected partitions, deletes applied, except that the first row of every file it
    rewrites is lost (`LossyFloor`); moved under the table's location and committed as an engine commits, one
    Iceberg RewriteFiles through the Java API: those data files and every delete file of the selected
    partitions out, its files in.  Everything is right (placement, untouched partitions, no live delete file
    in the selected partitions, a `replace` commit) but the selected partitions' rows: the content checks
    must fail, content_pyiceberg_scan_selected among them."""

    name: ClassVar[str] = "losingfilter"
    capabilities: ClassVar[Capabilities] = replace(LossyFloor.capabilities, not_supported={},
                                                   supports=frozenset({"partition-filter", "partition-filter-deletes"}))

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        out = super().compact(job, clock)
        with clock.phase("commit", "RewriteFiles through Iceberg's Java API"):
            tbl = load_catalog(job.catalog).load_table(job.table)
            files = live_files(tbl)
            selected = selector(str(job.partition_filter), tbl.schema(), tbl.specs(),
                                {scope(e.data_file) for e in files.all})
            live = {e.data_file.file_path for e in files.data}
            rewritten = live - set(out.output_files)  # the floor lists the data files it kept and those it wrote
            deletes = {e.data_file.file_path for e in files.deletes if selected(scope(e.data_file))}
            added: list[tuple[str, int, tuple]] = []
            for written in (p for p in out.output_files if p not in live):
                local = local_path(f"{tbl.location()}/data/{self.name}-{uuid.uuid4().hex[:8]}.parquet")
                shutil.move(local_path(written), local)
                rec = rows_partition(pq.ParquetFile(local), tbl.spec(), tbl.schema())
                added.append((Path(local).as_uri(), Path(local).stat().st_size, tuple(rec[i] for i in range(len(rec)))))
            with JavaIceberg(job.catalog) as java:
                t = java.load_table(job.table)
                new = RowDeltaCommitter(java.jvm, t, java.int_array([]))
                rewrite, io, specs = t.newRewrite(), t.io(), t.specs()
                mf, snap = java.jvm.org.apache.iceberg.ManifestFiles, t.currentSnapshot()
                for manifests, read, paths in ((snap.dataManifests(io), mf.read, rewritten),
                                               (snap.deleteManifests(io), mf.readDeleteManifest, deletes)):
                    for m in manifests:
                        it = read(m, io, specs).iterator()
                        while it.hasNext():
                            f = it.next()
                            if str(f.location()) in paths:
                                rewrite.deleteFile(f.copyWithoutStats())
                for path, size, partition in added:
                    rewrite.addFile(new.data_file(path, size, partition))
                rewrite.validateFromSnapshot(t.currentSnapshot().snapshotId()).commit()
        out.commits, out.output_files = "table", []
        out.actions.append(f"{self.name}: RewriteFiles: {len(rewritten)} data and {len(deletes)} delete files of the "
                           f"selected partitions out, {len(added)} in (the first row of each lost)")
        return out
