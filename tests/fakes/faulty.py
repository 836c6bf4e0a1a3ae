"""Test-only engines that fail in the ways real engines do: crash, hang, exhaust memory."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import ClassVar

from bench.engines.base import Capabilities, CompactionJob, Engine, EngineOutcome, PhaseClock
from tests.fakes.corrupt import RewriteEngine


class _Base(Engine):
    description: ClassVar[str] = "test engine"


class CrashEngine(_Base):
    name: ClassVar[str] = "crash"

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        print("crash engine: about to die without a word", flush=True)
        os._exit(3)  # like a segfaulting native engine: no outcome file, no exception


class HangEngine(_Base):
    name: ClassVar[str] = "hang"

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        print("hang engine: sleeping forever", flush=True)
        time.sleep(3600)
        return EngineOutcome()


class HogEngine(_Base):
    """Allocates (and touches) memory in 64 MiB steps until it holds 4 GiB or is stopped."""

    name: ClassVar[str] = "hog"

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        held = []
        for i in range(64):
            held.append(bytearray(os.urandom(1)) * (64 * 1024 * 1024))
            print(f"hog engine: holding {(i + 1) * 64} MiB", flush=True)
            time.sleep(0.02)
        return EngineOutcome(engine_result={"held_mib": 64 * len(held)})


class HeapEngine(_Base):
    """Hits an engine-internal memory limit (like a JVM heap) far below the budget."""

    name: ClassVar[str] = "heap"

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        from bench.engines.base import EngineOOM

        with clock.phase("allocate"):
            raise EngineOOM("java.lang.OutOfMemoryError: Java heap space (simulated: a 64 MiB 'heap')")


class RestRewriteEngine(RewriteEngine):
    """The rewrite engine, through the run's loopback REST catalog (as RisingWave's engine does), with a
    pause between reading the table and committing: a fault can strike mid-compaction."""

    name: ClassVar[str] = "restrewrite"
    capabilities: ClassVar[Capabilities] = replace(RewriteEngine.capabilities, commits_through_rest=True)
    PAUSE_S: ClassVar[float] = 3.0

    def rewrite(self, job: CompactionJob):
        assert job.catalog.rest_uri, "no REST catalog served for this run"
        rest = job.model_copy(update={"catalog": job.catalog.with_rest(job.catalog.rest_uri, external=True)})
        out = super().rewrite(rest)
        print(f"restrewrite engine: rewritten, committing through {job.catalog.rest_uri} in {self.PAUSE_S} s",
              flush=True)
        time.sleep(self.PAUSE_S)
        return out
