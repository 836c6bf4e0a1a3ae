"""Test-only engines that compact a table and get it wrong in one way each: the verifier must catch
every one (`verified: false`, the failed check named).  They rewrite with pyarrow and commit with
pyiceberg (a file-level overwrite: the chosen input files out, one new file in)."""

from __future__ import annotations

import uuid
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.io.pyarrow import parquet_file_to_data_file

from bench.core.catalog import load_catalog
from bench.core.table import live_files, local_path
from bench.engines.base import CompactionJob, EngineBase, EngineOutcome, PhaseClock
from bench.engines.risingwave import RisingWaveEngine


class RewriteEngine(EngineBase):
    """Rewrites the chosen data files into one file; subclasses add one flaw."""

    name: ClassVar[str] = "rewrite"
    description: ClassVar[str] = "rewrites the table into one file with pyarrow + pyiceberg (tests only)"

    def choose(self, entries: list) -> list:
        return entries

    def transform(self, table: pa.Table) -> pa.Table:
        return table

    def codec(self, job: CompactionJob) -> str:
        return job.output_codec

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        with clock.phase("rewrite"):
            tbl = load_catalog(job.catalog).load_table(job.table)
            chosen = self.choose(sorted(live_files(tbl).data, key=lambda e: e.data_file.file_path))
            data = pa.concat_tables([pq.read_table(local_path(e.data_file.file_path)) for e in chosen])
            data = self.transform(data)
            path = f"{tbl.location()}/data/{self.name}-{uuid.uuid4().hex[:8]}.parquet"
            pq.write_table(data, local_path(path), compression=self.codec(job))
            new = parquet_file_to_data_file(tbl.io, tbl.metadata, path)
        with clock.phase("commit"), tbl.transaction() as tx, tx.update_snapshot().overwrite() as ow:
            for e in chosen:
                ow.delete_data_file(e.data_file)
            ow.append_data_file(new)
        return EngineOutcome(engine_result={"files_in": len(chosen), "rows_written": data.num_rows},
                             actions=[f"{self.name}: {len(chosen)} files -> 1"])


class CorruptEngine(RewriteEngine):
    """Loses the last row."""

    name: ClassVar[str] = "corrupt"

    def transform(self, table: pa.Table) -> pa.Table:
        return table.slice(0, table.num_rows - 1)


class PartialEngine(RewriteEngine):
    """Compacts only half of the input files."""

    name: ClassVar[str] = "partial"

    def choose(self, entries: list) -> list:
        return entries[: len(entries) // 2]


class WrongCodecEngine(RewriteEngine):
    """Writes ZSTD whatever the scenario asks."""

    name: ClassVar[str] = "wrongcodec"

    def codec(self, job: CompactionJob) -> str:
        return "zstd"


class AlteredEngine(RewriteEngine):
    """Changes one value; the row count stays."""

    name: ClassVar[str] = "altered"

    def transform(self, table: pa.Table) -> pa.Table:
        i = table.schema.get_field_index("amount")
        col = table.column(i).combine_chunks()
        changed = pa.concat_arrays([pc.add(col.slice(0, 1), 0.01), col.slice(1)])
        return table.set_column(i, table.schema.field(i), changed)


class NoFieldIdsEngine(RewriteEngine):
    """Writes the right values without Parquet field ids (readers that resolve by id see nothing)."""

    name: ClassVar[str] = "noids"

    def transform(self, table: pa.Table) -> pa.Table:
        return table.cast(pa.schema([pa.field(f.name, f.type, f.nullable) for f in table.schema]))


class LeakyEngine(RisingWaveEngine):
    """RisingWave's engine without its second pass: the dangling delete files stay live."""

    name: ClassVar[str] = "leaky"

    def finish_deletes(self, *args, **kwargs) -> None:
        pass
