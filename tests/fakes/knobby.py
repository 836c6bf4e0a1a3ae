"""A test engine with knobs, for `bench tune`: one knob makes it faster and correct, one makes it faster
and wrong (the search must not keep it), one is declared not searchable."""

from __future__ import annotations

import time
from typing import ClassVar

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from bench.engines.base import CompactionJob, EngineOutcome, Knob, PhaseClock
from tests.fakes.corrupt import RewriteEngine


class KnobbyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sleep_s: float = 1.5
    lose_row: bool = False


class KnobbyEngine(RewriteEngine):
    name: ClassVar[str] = "knobby"
    Options: ClassVar[type[BaseModel]] = KnobbyOptions
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("lose_row", "lose_row", (False, True), published=False, note="faster and wrong"),
        Knob("sleep_s", "sleep_s", (1.5, 0.6, 0.1), published=1.5, note="seconds of idling"),
        Knob("batch_size", "batch_size", (), note="only a table property sets it"),
    )

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        self._opts = self.options(job)
        with clock.phase("idle"):
            time.sleep(0.0 if self._opts.lose_row else self._opts.sleep_s)
        return super().compact(job, clock)

    def transform(self, table: pa.Table) -> pa.Table:
        return table.slice(1) if self._opts.lose_row else table


class RevisitEngine(KnobbyEngine):
    """The published value comes last in its knob's list: once another value is kept, the search comes
    back to the published configuration."""

    name: ClassVar[str] = "revisit"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("sleep_s", "sleep_s", (0.6, 1.5), published=1.5, note="seconds of idling"),
    )
