"""`conformance.json`: a `bench conformance` run, one cell per case and engine."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from bench.core.expected import Expected
from bench.core.records.verification import Check, ReaderFinding

HARNESS_RUNTIME = "harness"  # ConformanceRecord.runtimes' key of the reference reader's and the writer's runtime

# deleted-live, resurrected and kept-garbage: a maintenance case's; refused (and resurrected): a case's with a
# concurrent commit (bench.campaigns.conformance.verdict)
Verdict = Literal["correct", "wrong-rows", "wrong-metadata", "failed", "unsupported", "harness-cannot", "deleted-live",
                  "resurrected", "kept-garbage", "refused"]
WRONG = ("wrong-rows", "wrong-metadata")


class ConformanceCell(BaseModel):
    """One engine on one conformance case (bench.campaigns.conformance.verdict says how the verdict is reached)."""

    case: str
    covers: list[str] = Field(default_factory=list)  # the table shapes the case touches
    engine: str
    verdict: Verdict
    # wrong-*: the failed checks (rows: examples; metadata: the fields); failed: the engine's error; unsupported: its
    # reason; harness-cannot: what the harness could not do
    evidence: str = ""
    run: str = ""  # the run's directory, relative to the conformance run's
    findings: list[ReaderFinding] = Field(default_factory=list)  # readers overruled by the reference or the case
    # the table was written by this engine's own library (e.g. Spark on a Spark-written case): the case's expected
    # rows, not that library, decide the cell
    self_written: bool = False


class Reproducer(BaseModel):
    """A cell's reproducer (bench.campaigns.reproducers): where it is and what its script showed when run once."""

    case: str
    engine: str
    dir: str  # relative to the conformance run's directory
    shown: bool | None = None  # its script showed the failure (exit 1); None: not run or the script's own error
    output: str = ""  # the end of what the script printed
    why: str = ""  # why it was not run, or the script's error

    def said(self) -> str:
        """Where it is and what it showed, in a few words."""
        return f"{self.dir}/run.py: " + ("shows the failure" if self.shown else self.why or "does not show it")


class ConformanceCase(BaseModel):
    """A case as the run judged it: what it stands for, what it states it leaves, who wrote its table, and whether
    the table as written holds what it states (checked before any engine runs)."""

    name: str
    covers: list[str] = Field(default_factory=list)
    expected: Expected | None = None
    written_by: str = ""  # library and version that wrote the table
    branch: str | None = None  # the branch the engines compacted (None: main)
    table_check: Check | None = None  # the table as written against `expected` (a harness check)
    # a maintenance case's operation as every engine was asked it (MaintenanceOp.describe), "" for a compaction
    operation: str = ""


class VersionPair(BaseModel):
    """Two engines of a run that are one engine on two versions (the earlier one declares it:
    Engine.earlier_version_of): the matrix shows, per case, how the verdict changed from `earlier` to `engine`."""

    engine: str
    earlier: str


class VerdictChange(BaseModel):
    """One case whose verdict differs between the two versions of a pair."""

    case: str
    earlier: str  # the earlier version's verdict ("absent": no cell)
    verdict: str


class ConformanceRecord(BaseModel):
    """`conformance.json`: a `bench conformance` run, one cell per case and engine."""

    run_id: str
    started_at: str = ""
    ended_at: str = ""
    seconds: float | None = None  # the whole campaign: the cases' tables written (or reused), then the runs
    tables_s: float | None = None  # of it, writing the cases' tables (near 0 when they were reused)
    engines: list[str] = Field(default_factory=list)
    # the versions the verdicts come from: per engine its own, "readers" the harness's readers (pyiceberg, DuckDB,
    # its iceberg extension, Iceberg's Java library through Spark: the reference reader), "writer" the cases' writer
    versions: dict[str, dict[str, str | None]] = Field(default_factory=dict)
    # per engine its runtime in a few words, from its results' versions (e.g. "Spark 4.1.4 + Iceberg 1.12.0"), and
    # under HARNESS_RUNTIME the one of the harness's own JVMs (the reference reader, the cases' Spark writer)
    runtimes: dict[str, str] = Field(default_factory=dict)
    version_pairs: list[VersionPair] = Field(default_factory=list)
    cases: list[ConformanceCase] = Field(default_factory=list)
    cells: list[ConformanceCell] = Field(default_factory=list)
    reproducers: list[Reproducer] = Field(default_factory=list)  # one per maintenance cell that is not correct

    @property
    def case_names(self) -> list[str]:
        return [c.name for c in self.cases]

    def case(self, name: str) -> ConformanceCase | None:
        return next((c for c in self.cases if c.name == name), None)

    def reproducer(self, case: str, engine: str) -> Reproducer | None:
        return next((r for r in self.reproducers if r.case == case and r.engine == engine), None)

    def verdict_of(self, case: str, engine: str) -> str:
        """A cell's verdict, "absent" when the record has none."""
        return next((c.verdict for c in self.cells if c.case == case and c.engine == engine), "absent")

    def changes(self, pair: VersionPair) -> list[VerdictChange]:
        """The cases, in order, whose verdict differs between the pair's two engines."""
        out = []
        for case in self.case_names:
            before, now = self.verdict_of(case, pair.earlier), self.verdict_of(case, pair.engine)
            if before != now:
                out.append(VerdictChange(case=case, earlier=before, verdict=now))
        return out

    def change(self, pair: VersionPair, case: str) -> VerdictChange | None:
        return next((c for c in self.changes(pair) if c.case == case), None)

    def pair_label(self, pair: VersionPair, arrow: str = "->") -> str:
        """E.g. "spark-3.5 -> spark (Spark 3.5.9 + Iceberg 1.10.2 -> Spark 4.1.4 + Iceberg 1.12.0)"."""
        before, now = self.runtimes.get(pair.earlier), self.runtimes.get(pair.engine)
        return f"{pair.earlier} {arrow} {pair.engine}" + (f" ({before} {arrow} {now})" if before and now else "")
