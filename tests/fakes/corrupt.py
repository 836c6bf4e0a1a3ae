"""Test-only engines that compact a table and get it wrong in one way each: the verifier must catch
every one (`verified: false`, the failed check named).  They rewrite with pyarrow and commit with
pyiceberg a file-level rewrite (the chosen input files out, one new file in) as a `replace` snapshot,
as Iceberg's RewriteFiles does; the integrity engines break the table's identity, history or the kind of
its commit instead."""

from __future__ import annotations

import uuid
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.io.pyarrow import parquet_file_to_data_file
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation, Summary
from pyiceberg.table.update.snapshot import _OverwriteFiles

from bench.core.catalog import load_catalog
from bench.core.table.entries import live_files
from bench.core.uri import local_path
from bench.engines.base import CompactionJob, Engine, EngineOutcome, PhaseClock
from bench.engines.risingwave import RisingWaveEngine


class _ReplaceFiles(_OverwriteFiles):
    """pyiceberg 0.12 commits append, overwrite and delete only: an overwrite whose snapshot says
    `replace` (no row changes), what Iceberg's RewriteFiles commits.  `tamper` edits the summary."""

    tamper: dict[str, str] = {}

    def _summary(self, snapshot_properties: dict[str, str] | None = None) -> Summary:
        s = super()._summary(snapshot_properties or {})
        return Summary(Operation.REPLACE, **{**s.additional_properties, **self.tamper})


def commit_rewrite(tbl: Table, removed: list, added: list, operation: str = "replace",
                   tamper: dict[str, str] | None = None) -> None:
    """One snapshot: `removed` data files out, `added` in; a `replace` (or pyiceberg's own `overwrite`)."""
    with tbl.transaction() as tx:
        if operation == "replace":
            producer = _ReplaceFiles(operation=Operation.OVERWRITE, transaction=tx, io=tbl.io)
            producer.tamper = tamper or {}
        else:
            producer = tx.update_snapshot().overwrite()
        with producer as ow:
            for df in removed:
                ow.delete_data_file(df)
            for df in added:
                ow.append_data_file(df)


class RewriteEngine(Engine):
    """Rewrites the chosen data files into one file; subclasses add one flaw."""

    name: ClassVar[str] = "rewrite"
    description: ClassVar[str] = "rewrites the table into one file with pyarrow + pyiceberg (tests only)"

    def choose(self, entries: list) -> list:
        return entries

    def transform(self, table: pa.Table) -> pa.Table:
        return table

    def codec(self, job: CompactionJob) -> str:
        return job.output_codec

    def rewrite(self, job: CompactionJob) -> tuple[Table, list, object, int]:
        """(table, chosen input entries, the new data file, rows written): the physical work."""
        tbl = load_catalog(job.catalog).load_table(job.table)
        chosen = self.choose(sorted(live_files(tbl).data, key=lambda e: e.data_file.file_path))
        data = pa.concat_tables([pq.read_table(local_path(e.data_file.file_path)) for e in chosen])
        data = self.transform(data)
        path = f"{tbl.location()}/data/{self.name}-{uuid.uuid4().hex[:8]}.parquet"
        pq.write_table(data, local_path(path), compression=self.codec(job))
        return tbl, chosen, parquet_file_to_data_file(tbl.io, tbl.metadata, path), data.num_rows

    def commit(self, tbl: Table, chosen: list, new: object) -> None:
        commit_rewrite(tbl, [e.data_file for e in chosen], [new])

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        with clock.phase("rewrite"):
            tbl, chosen, new, rows = self.rewrite(job)
        with clock.phase("commit"):
            self.commit(tbl, chosen, new)
        return EngineOutcome(engine_result={"files_in": len(chosen), "rows_written": rows},
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


# -- integrity: the physical work right, the table broken -------------------------------------------------


class OverwriteEngine(RewriteEngine):
    """Commits the rewrite as an `overwrite` (pyiceberg's own producer): incremental readers read it all again."""

    name: ClassVar[str] = "overwrite"

    def commit(self, tbl: Table, chosen: list, new: object) -> None:
        commit_rewrite(tbl, [e.data_file for e in chosen], [new], operation="overwrite")


class RecreateEngine(RewriteEngine):
    """Drops the table and creates it again under the same name with the compacted rows: same content,
    one file, the right codec; a new UUID, the history gone."""

    name: ClassVar[str] = "recreate"

    def commit(self, tbl: Table, chosen: list, new: object) -> None:
        catalog = load_catalog(self._job.catalog)
        schema, location, props = tbl.schema(), tbl.location(), dict(tbl.properties)
        catalog.drop_table(self._job.table)
        fresh = catalog.create_table(self._job.table, schema=schema, location=location, properties=props)
        with fresh.transaction() as tx, tx.update_snapshot().fast_append() as app:
            app.append_data_file(new)

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        self._job = job
        return super().compact(job, clock)


class ExpireEngine(RewriteEngine):
    """A right `replace`, then expires the input snapshot: time travel to the input is gone."""

    name: ClassVar[str] = "expire"

    def commit(self, tbl: Table, chosen: list, new: object) -> None:
        base = tbl.current_snapshot().snapshot_id
        super().commit(tbl, chosen, new)
        tbl.refresh()
        tbl.maintenance.expire_snapshots().by_id(base).commit()


class MisstateEngine(RewriteEngine):
    """A `replace` whose summary states a wrong total record count."""

    name: ClassVar[str] = "misstate"

    def commit(self, tbl: Table, chosen: list, new: object) -> None:
        commit_rewrite(tbl, [e.data_file for e in chosen], [new], tamper={"total-records": "1"})


class EvolveEngine(RewriteEngine):
    """A right `replace`, then changes one part of the table's identity (`evolve`)."""

    name: ClassVar[str] = "evolve-props"

    def evolve(self, tbl: Table) -> None:
        with tbl.transaction() as tx:
            tx.set_properties({"write.target-file-size-bytes": "1"})

    def commit(self, tbl: Table, chosen: list, new: object) -> None:
        super().commit(tbl, chosen, new)
        tbl.refresh()
        self.evolve(tbl)


class EvolveSchemaEngine(EvolveEngine):
    name: ClassVar[str] = "evolve-schema"

    def evolve(self, tbl: Table) -> None:
        from pyiceberg.types import StringType

        with tbl.update_schema() as up:
            up.add_column("compacted_by", StringType())


class EvolveSpecEngine(EvolveEngine):
    name: ClassVar[str] = "evolve-spec"

    def evolve(self, tbl: Table) -> None:
        with tbl.update_spec() as up:
            up.add_identity("region")


class EvolveSortEngine(EvolveEngine):
    name: ClassVar[str] = "evolve-sort"

    def evolve(self, tbl: Table) -> None:
        from pyiceberg.transforms import IdentityTransform

        with tbl.update_sort_order() as up:
            up.asc("v2", IdentityTransform())


class SetupWorkEngine(RewriteEngine):
    """Does the whole rewrite in open() (untimed setup) and only commits in compact(): work outside the
    clock.  The table is out of reach while an engine sets up, so its open() fails."""

    name: ClassVar[str] = "setupwork"

    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        with clock.phase("prepare"):
            self._prepared = self.rewrite(job)

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        tbl, chosen, new, rows = self._prepared
        with clock.phase("commit"):
            self.commit(tbl, chosen, new)
        return EngineOutcome(engine_result={"files_in": len(chosen), "rows_written": rows},
                             actions=[f"{self.name}: {len(chosen)} files -> 1, rewritten in open()"])


class SetupPeekEngine(RewriteEngine):
    """Reads every Parquet file under the warehouse directory in open(), bypassing the catalog (what
    the catalog cannot stop); then compacts in compact().  Its setup reads are the evidence."""

    name: ClassVar[str] = "setuppeek"

    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        import pyarrow.fs as pafs

        from bench.core.catalog.s3 import filesystem

        with clock.phase("peek"):  # where a table's files live: <warehouse>/<namespace>/<table>/data
            ns, table = job.table.rsplit(".", 1)
            fs, root = filesystem(f"{job.catalog.warehouse_uri.rstrip('/')}/{ns}/{table}/data")
            infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
            self.peeked = 0
            for i in infos:
                if i.type == pafs.FileType.File and i.path.endswith(".parquet"):
                    with fs.open_input_stream(i.path) as f:
                        self.peeked += len(f.read())
            print(f"setuppeek: read {self.peeked} bytes of the table's Parquet files in open()", flush=True)
