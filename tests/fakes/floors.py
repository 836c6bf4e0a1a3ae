"""Test-only variants of the `arrow-floor` engine, each wrong in one way the verifier must catch."""

from __future__ import annotations

from typing import ClassVar

from bench.core.catalog import load_catalog
from bench.engines.arrow_floor import ArrowFloorEngine
from bench.engines.base import CompactionJob, EngineOutcome, PhaseClock


class LossyFloor(ArrowFloorEngine):
    """Drops the first row of every file it rewrites."""

    name: ClassVar[str] = "lossyfloor"

    def _extra_where(self) -> list[str]:
        return ["d.file_row_number <> 0"]


class CommittingFloor(ArrowFloorEngine):
    """Says it commits nothing, but changes the table (a property commit)."""

    name: ClassVar[str] = "committingfloor"

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        out = super().compact(job, clock)
        tbl = load_catalog(job.catalog).load_table(job.table)
        with tbl.transaction() as tx:
            tx.set_properties({"bench.test": "touched"})
        return out


class GhostFloor(ArrowFloorEngine):
    """Lists an output file that does not exist."""

    name: ClassVar[str] = "ghostfloor"

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        out = super().compact(job, clock)
        out.output_files.append(f"file://{job.work_dir}/floor-output/missing.parquet")
        return out


class UnsortedFloor(ArrowFloorEngine):
    """Says it sorts (strategy sort), but writes each partition's rows in the reverse of the sort order."""

    name: ClassVar[str] = "unsortedfloor"

    def _order_by(self, job: CompactionJob) -> str:
        order = ArrowFloorEngine._order_by(self, job)
        return order.replace(" ASC ", " __A ").replace(" DESC ", " ASC ").replace(" __A ", " DESC ")
