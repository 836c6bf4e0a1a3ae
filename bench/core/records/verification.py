"""What the verifier found: the table's stats at a snapshot, each reader's answer, the checks, the commits a
run made, the rows that differ, and a partitioned table's outcome per partition."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from bench.core.spread import Spread


class FileFacts(BaseModel):
    """Parquet facts of one file, from its footer (an ORC or Avro data file: its format and codec)."""

    path: str
    size: int
    format: str = "parquet"  # parquet | orc | avro
    codecs: list[str] = Field(default_factory=list)  # lower case: snappy, zstd, uncompressed, ...
    row_groups: int = 0
    uncompressed_bytes: int = 0  # Parquet's uncompressed page bytes (the logical size)
    field_ids: bool = True  # every column carries a Parquet field id


class TableStats(BaseModel):
    """What a table looks like at one snapshot, measured by the harness (not by an engine)."""

    snapshot_id: int | None = None
    metadata_location: str | None = None
    rows: int = 0
    checksum: str = ""  # order-independent content checksum over all columns
    data_files: int = 0
    delete_files: int = 0
    position_delete_files: int = 0
    equality_delete_files: int = 0
    data_bytes: int = 0
    delete_bytes: int = 0
    uncompressed_bytes: int = 0  # logical size of the live data files (Parquet uncompressed bytes)
    codecs: list[str] = Field(default_factory=list)  # Parquet codecs found in live data files
    row_groups: int = 0
    avg_row_group_bytes: float = 0.0
    file_size_min: int = 0
    file_size_median: int = 0
    file_size_max: int = 0
    # live delete files no live data file can be affected by (Iceberg v2 sequence-number rules);
    # position_delete_files - dangling_position_delete_files still apply (likewise for equality)
    dangling_position_delete_files: int = 0
    dangling_equality_delete_files: int = 0
    content_reader: str = ""  # which reader produced rows/checksum


class ReaderAnswer(BaseModel):
    """One content reader's answer on a snapshot (bench.verify.readers): its rows and checksum, or why it could
    not read (`unavailable`: it does not apply to this table; `error`: it failed on it)."""

    reader: str
    resolves: str = ""  # how it finds columns: field id, name, catalog
    rows: int | None = None
    checksum: str | None = None
    unavailable: str | None = None
    error: str | None = None
    within: str | None = None  # read_selected: the partition filter it read under
    # why its answer is advisory (it resolved columns by name where the schema history makes names ambiguous)
    advisory: str | None = None

    @field_validator("checksum", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return None if v is None else str(v)

    @property
    def answered(self) -> bool:
        return self.rows is not None

    @property
    def why_not(self) -> str:
        return self.unavailable or self.error or ""

    @property
    def content(self) -> tuple[int | None, str | None]:
        return self.rows, self.checksum

    def got(self) -> tuple[int, str]:
        """(rows, checksum) of a reader that answered (ValueError otherwise)."""
        if self.rows is None or self.checksum is None:
            raise ValueError(f"{self.reader} did not answer: {self.why_not}")
        return self.rows, self.checksum


class ReaderFinding(BaseModel):
    """A reader that disagreed with the reference reader (Iceberg's Java library) on a snapshot: a fact about that
    reader (a limitation of a third-party reader), not a reason to refuse the table; the reference decided."""

    reader: str
    resolves: str = ""
    on: str  # "the source snapshot" | "the output"
    rows: int | None = None
    checksum: str | None = None
    error: str | None = None  # the reader failed on a table the reference read
    reference_rows: int
    reference_checksum: str
    # whom it disagreed with: the reference reader, or a conformance case's expected rows (its checksum then "")
    against: str = "the reference reader (Iceberg's Java library)"

    def text(self) -> str:
        got = (f"failed ({self.error})" if self.error is not None else
               f"reads {self.rows} rows" + (f" (checksum {self.checksum})" if self.reference_checksum else ""))
        return (f"{self.reader} ({self.resolves}) {got} on {self.on}; {self.against} "
                + (f"reads {self.reference_rows} rows (checksum {self.reference_checksum})" if self.reference_checksum
                   else f"state {self.reference_rows} rows"))


Whose = Literal["engine", "harness", "reader"]
About = Literal["rows", "metadata"]


class Check(BaseModel):
    """One verification check: required checks decide `verified`; advisory ones are only shown.  A check declares
    whose fault its failure is (`whose`: the engine's output, the harness's own work - its input, clone, catalog,
    setup rule -, or a reader's answer) and what it is about (`about`: the rows, or the rest of the output: snapshot
    summary, stats, types, refs, files), so a conformance verdict names the culprit without guessing from names."""

    name: str
    ok: bool
    message: str = ""  # what was compared; on failure, what differs
    required: bool = True
    whose: Whose = "engine"
    about: About = "metadata"


class CommitEvent(BaseModel):
    """One snapshot committed after the dataset's, in commit (sequence number) order."""

    who: Literal["writer", "engine"]
    snapshot_id: int
    parent_id: int | None = None
    sequence_number: int | None = None
    operation: str = ""
    timestamp_ms: int = 0
    added_files: int | None = None
    deleted_files: int | None = None
    step: str = ""  # the step that committed it, when its summary says (bench.step)


def difference(c: Check) -> str:
    """How a failed check is listed in `Verification.differences`."""
    return f"{c.name}: {c.message}" + ("" if c.required else " (advisory)")


def unverifies(checks: Iterable[Check]) -> bool:
    """Whether any of these checks is a failed required one (a run with it is not verified)."""
    return any(c.required and not c.ok for c in checks)


class RowDifference(BaseModel):
    """An output's rows against its input's (bench.verify.checks.row_difference): how many came back (deleted rows
    resurrected, or rows that were never there) and were lost, and a few of each."""

    came_back: int = 0
    lost: int = 0
    came_back_rows: list[dict[str, Any]] = Field(default_factory=list)
    lost_rows: list[dict[str, Any]] = Field(default_factory=list)


class Verification(BaseModel):
    verified: bool = False
    checks: list[Check] = Field(default_factory=list)
    differences: list[str] = Field(default_factory=list)  # "<check>: <message>" of every failed check
    rules: list[str] = Field(default_factory=list)  # the rules applied, in words (e.g. completeness)
    reader: str = ""  # how the content was read back
    readers: dict[str, Any] = Field(default_factory=dict)  # every reader's answer (or why it could not)
    committed: list[CommitEvent] = Field(default_factory=list)  # the snapshots the run committed, in order
    # the content differs from the input's: which rows came back and which were lost
    # (bench.verify.checks.row_difference)
    rows: RowDifference | None = None
    findings: list[ReaderFinding] = Field(default_factory=list)  # readers the reference reader overruled

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def with_checks(self, *checks: Check) -> Verification:
        """This verification with checks decided after the verifier's own (the setup rule, a live run's): each
        failed one noted in `differences` as the verifier notes them, a failed required one unverifies."""
        return self.model_copy(update={
            "checks": [*self.checks, *checks], "differences": [*self.differences,
                                                               *(difference(c) for c in checks if not c.ok)],
            "verified": self.verified and not unverifies(checks)})

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]


class PartitionOutcome(BaseModel):
    """A partitioned table's compaction, partition by partition (bench.verify.untouched): how many partitions the
    table has, how many the partition filter selects (all without one), how many the run rewrote (their live files
    changed) and left untouched, and the data and delete files per partition before and after."""

    spec: str = ""  # the partition spec, e.g. "[1000: event_date: identity(12)]"
    filter: str | None = None  # the resolved partition filter (None: the whole table)
    partitions: int = 0  # partitions with a live file before or after the run
    selected: int = 0
    rewritten: int = 0  # partitions whose live files changed
    untouched: int = 0  # partitions whose live files are the input's (paths)
    rewritten_outside_filter: int = 0  # rewritten partitions the filter does not select (must be 0)
    data_files_before: Spread = Field(default_factory=Spread)  # per partition
    data_files_after: Spread = Field(default_factory=Spread)
    delete_files_before: Spread = Field(default_factory=Spread)
    delete_files_after: Spread = Field(default_factory=Spread)
    most_files_left: str = ""  # the partition with the most live data files after the run (its path)
    most_files_left_count: int = 0
    most_files_left_selected: bool = True  # whether the filter selects it
