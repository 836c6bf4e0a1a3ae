"""What a run compacted: the scenario as it was run (its published figures, its table's shape), or the user's
own table (`--source-table`), the refs and others' commits of its pin (bench.core.pin), and the conformance cases its
shape touches."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bench.core.published import PUBLISHED_INSTANCE, PUBLISHED_MACHINE


class RefPin(BaseModel):
    """A branch or tag of the source, as it was pinned (and, in a result, where the clone's copy of it is after
    the engine run)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    type: str  # branch | tag
    snapshot_id: int
    after_snapshot_id: int | None = None  # the clone's ref after the engine run (None: not checked, or gone)


class OtherCommit(BaseModel):
    """A snapshot someone else committed to the source after it was pinned."""

    model_config = ConfigDict(extra="forbid")

    snapshot_id: int
    operation: str = ""
    timestamp_ms: int = 0
    parent_id: int | None = None


class Published(BaseModel):
    """The published figures of a scenario, shown beside the measured ones in the report."""

    model_config = ConfigDict(extra="forbid")

    source: str = ""
    scale: float = 1.0
    machine: str = PUBLISHED_MACHINE
    instance_type: str = PUBLISHED_INSTANCE
    logical_bytes: int | None = None  # the input's uncompressed size the published time is for
    duration_s: dict[str, float | None] = Field(default_factory=dict)  # engine -> seconds (None = OOM)
    status: dict[str, str] = Field(default_factory=dict)
    notes: str = ""


class TableShape(BaseModel):
    """The parts of a scenario's table that readers use: how many files the full-size table has."""

    files: int | None = None  # small-files tables
    data_files: int | None = None  # tables with deletes: data and delete files
    position_delete_files: int | None = None
    equality_delete_files: int | None = None

    @property
    def total_files(self) -> int | None:
        if self.files is not None:
            return self.files
        parts = [self.data_files, self.position_delete_files, self.equality_delete_files]
        return sum(p or 0 for p in parts) if any(parts) else None


class ScenarioRecord(BaseModel):
    """The scenario exactly as it was run."""

    name: str = ""
    sha256: str = ""  # of the validated content (canonical JSON)
    content: dict[str, Any] = Field(default_factory=dict)

    def published(self) -> Published | None:
        raw = self.content.get("published")
        return Published.model_validate(raw) if raw else None

    @property
    def description(self) -> str:
        return str(self.content.get("description") or "").strip()

    def table(self) -> TableShape:
        return TableShape.model_validate(self.content.get("table") or {})


class TouchedCase(BaseModel):
    """A conformance case the shape of a user's table touches (datagen.conformance.touched)."""

    case: str
    covers: list[str] = Field(default_factory=list)  # the case's shapes, in words
    because: list[str] = Field(default_factory=list)  # the table's facts that touch it: "FACT: detail"


class SourceRecord(BaseModel):
    """A run on a table the harness did not generate (`--source-table`): what was cloned, and the proof
    that the original did not change (its fingerprint before the run and after this engine run)."""

    catalog_file: str = ""
    table: str = ""  # the source's NAMESPACE.TABLE in its own catalog
    snapshot_id: int | None = None  # the snapshot cloned
    metadata_location: str = ""  # the source's metadata file when it was cloned
    clone: str = ""  # the clone's identifier in the harness's catalog (what engines got)
    fingerprint_before: str = ""  # bench.core.source.SourceFingerprint.digest before the run
    fingerprint_after: str = ""  # ... after this engine run
    files: int = 0  # files the fingerprint covers
    unchanged: bool | None = None  # None: not checked (the run ended before)
    differences: list[str] = Field(default_factory=list)
    # its shape (bench.core.table.shape: fact -> detail) and the conformance cases that shape touches
    # (scenarios/conformance/cases.yaml `touches`); empty in results written before they were recorded
    shape: dict[str, str] = Field(default_factory=dict)
    touches: list[TouchedCase] = Field(default_factory=list)
    untested: list[str] = Field(default_factory=list)  # shape facts of the table no conformance case stands for
    shape_error: str = ""  # why the shape could not be read ("" = it was, or it was not asked)
    # pinned, not frozen (bench.core.pin): others' commits since the pin are facts, never a failure
    commits_by_others: list[OtherCommit] = Field(default_factory=list)
    source_refs_moved: list[str] = Field(default_factory=list)  # the source's own refs others moved since the pin
    refs: list[RefPin] = Field(default_factory=list)  # the refs the clone carries (main first), after this run
    gone: list[str] = Field(default_factory=list)  # pinned files gone from the source (the owner's maintenance)
    gone_between: list[str] = Field(default_factory=list)  # [last seen all there, first seen gone] (ISO times)
    pin_s: float | None = None  # seconds taking the pin took (before the run)
    observe_s: float | None = None  # seconds checking the source against it after this engine run
