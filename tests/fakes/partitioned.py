"""A test-only engine for partitioned tables that ignores the partition filter: it says it supports one,
then bin-packs every partition of the table (one file per partition, each in its own partition, committed
as a `replace`).  Everything it writes is right except where: the verifier must fail exactly
`untouched_partitions`."""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.io.pyarrow import parquet_file_to_data_file

from bench.core.catalog import load_catalog
from bench.core.table import live_files, local_path
from bench.core.table.deletes import scope
from bench.engines.base import CompactionJob, EngineBase, EngineOutcome, PhaseClock
from tests.fakes.corrupt import commit_rewrite


class IgnoreFilterEngine(EngineBase):
    name: ClassVar[str] = "ignorefilter"
    description: ClassVar[str] = "bin-packs every partition whatever the partition filter says (tests only)"
    supports: ClassVar[frozenset[str]] = frozenset({"partition-filter"})

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
