"""A test-only engine that compacts with pyiceberg and silently loses one row: the verifier must catch it."""

from __future__ import annotations

from typing import ClassVar

from bench.catalog import CatalogSettings, load_catalog
from bench.engines.base import CompactionJob, EngineOutcome, Requirement


class CorruptEngine:
    name: ClassVar[str] = "corrupt"
    description: ClassVar[str] = "rewrites the table into one file, dropping its last row (tests only)"

    def requirements(self) -> list[Requirement]:
        return []

    def open(self, job: CompactionJob) -> None:
        self.catalog = load_catalog(CatalogSettings.from_dict(job.catalog))

    def compact(self, job: CompactionJob) -> EngineOutcome:
        tbl = self.catalog.load_table(job.table)
        data = tbl.scan().to_arrow()
        tbl.overwrite(data.slice(0, data.num_rows - 1))
        return EngineOutcome(engine_result={"rows_written": data.num_rows - 1}, actions=["overwrite"])

    def close(self) -> None:
        pass
