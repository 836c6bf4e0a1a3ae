"""The one small protocol every engine implements.

An engine module lives in this folder, defines one class implementing `Engine`, and registers it in
`bench.engines.REGISTRY`.  Nothing outside this folder imports an engine module or branches on an
engine's name.

Life cycle (inside the engine's own subprocess, driven by `bench.engines.worker`):
    engine.open(job)      # start sessions, connect catalogs      -> timed as `setup_s`
    engine.compact(job)   # the compaction itself                  -> timed as `duration_s`
    engine.close()        # stop sessions
The worker times each phase with the same clock for every engine; the runner measures wall time of
the whole subprocess, memory, and verifies the table afterwards, the same way for every engine.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable


@dataclass
class Requirement:
    """One thing an engine needs.  `bench doctor` checks all of them and lists every failure."""

    name: str
    ok: bool
    detail: str = ""
    fix: str = ""


def module_requirement(module: str, fix: str) -> Requirement:
    found = importlib.util.find_spec(module) is not None
    return Requirement(f"python module {module}", found, "" if found else "not importable", fix)


def binary_requirement(binary: str, fix: str) -> Requirement:
    path = shutil.which(binary)
    return Requirement(f"binary {binary}", path is not None, path or "not on PATH", fix)


@dataclass
class CompactionJob:
    """Everything an engine needs to compact one table.  Serialized to JSON for the subprocess."""

    table: str  # "namespace.table"
    catalog: dict  # bench.catalog.CatalogSettings.to_dict()
    scenario: str
    kind: str  # "binpack" | "deletes"
    target_file_size_bytes: int
    options: dict[str, Any] = field(default_factory=dict)  # this engine's options from the scenario
    memory_budget_bytes: int | None = None  # the budget the engine must live within (None = node RAM)
    cores: int = 1  # cores the engine may use
    work_dir: str = ""  # scratch directory for this run (logs, spill)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "CompactionJob":
        return cls(**d)


@dataclass
class EngineOutcome:
    """What the engine itself reports.  Wall time, memory and verification are measured outside."""

    engine_result: dict[str, Any] = field(default_factory=dict)  # the engine's own result object
    settings: dict[str, Any] = field(default_factory=dict)  # effective settings (heap granted, ...)
    versions: dict[str, str] = field(default_factory=dict)  # engine-specific versions
    actions: list[str] = field(default_factory=list)  # what was run (SQL, procedure calls, configs)
    output_codec: str | None = None  # codec the engine was asked to write (checked from files later)


@runtime_checkable
class Engine(Protocol):
    name: ClassVar[str]
    description: ClassVar[str]

    def requirements(self) -> list[Requirement]:
        """Everything this engine needs on this machine; cheap, no side effects."""

    def open(self, job: CompactionJob) -> None:
        """Start sessions and connect to the catalog (not part of the timed compaction)."""

    def compact(self, job: CompactionJob) -> EngineOutcome:
        """Compact `job.table`.  Raise on failure; a MemoryError-like failure should raise
        `EngineOOM` so the runner records status `oom`."""

    def close(self) -> None:
        """Release sessions.  Must be safe to call after a failed open()."""


def storage_requirements(engine, settings) -> list[Requirement]:
    """What `engine` needs to reach the warehouse of `settings` (bench.catalog.CatalogSettings), e.g.
    an S3 warehouse.  Engines may define an optional method `storage_requirements(settings)`; one
    without it needs nothing beyond `requirements()`.  The runner refuses to start when one fails
    (exit 2), and `bench doctor` lists them for $BENCH_WAREHOUSE."""
    fn = getattr(engine, "storage_requirements", None)
    return list(fn(settings)) if fn is not None else []


class EngineOOM(RuntimeError):
    """The engine ran out of memory (e.g. java.lang.OutOfMemoryError)."""
