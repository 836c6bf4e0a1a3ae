"""The records of a live source table's pin (bench.core.pin) that a result carries: its refs and others'
commits."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


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
