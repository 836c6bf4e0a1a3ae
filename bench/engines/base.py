"""The one small interface every engine implements: the abstract base class `Engine`.

An engine module lives in this folder, defines one subclass of `Engine`, and is named in the registry
(`bench.engines.REGISTRY`).  Nothing outside this folder imports an engine module or branches on an engine's
name: what the rest of the harness needs to know of an engine, the engine declares (its options model, colour,
packages, output codecs).

Life cycle, inside the engine's own subprocess (`bench.engines.worker`), every step timed with the
same clock for every engine:
    engine.open(job, clock)       # start sessions, connect and warm up the catalog  -> setup_s
    engine.memory_caps()          # engine-internal memory limits (e.g. the JVM heap), as granted
                                  # (the table is out of reach until here: the runner parks it; then it
                                  #  restores it and drops the page cache, and says go)
    engine.compact(job, clock)    # the compaction, step by step in `clock` phases    -> duration_s
    engine.close()                # stop sessions
The runner measures wall time, memory and CPU of the whole subprocess from outside and verifies the
table afterwards, the same way for every engine.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from bench.core.catalog import CatalogSettings
from bench.core.records.engine_run import Deployment, Phase, PhysicalBound
from bench.core.records.live import MaintenanceOpName, MaintenanceResult
from bench.core.records.telemetry import MemoryCap
from bench.core.requirements import Requirement
from bench.core.work import WorkIntent, default_intent
from bench.engines.environment import EngineEnvironment

Kind = Literal["binpack", "deletes"]
# What a run may need beyond a plain compaction of main; an engine lists those it can do (`supports`).
FEATURES = {
    "rewrite-data-files": "compaction: rewriting the table's data files (Engine.compact), what every compaction "
                          "scenario and a streaming scenario's compact operation ask",
    "branch": "compacting a branch other than main (job.branch)",
    "sort": "sorted output: the rewritten rows sorted by the table's sort order (job.strategy sort)",
    "zorder": "z-ordered output: rows clustered by a z-order curve of job.zorder_columns (job.strategy zorder)",
    "partition-filter": "compacting only the partitions a filter selects (job.partition_filter), leaving the others "
                        "untouched",
    "partition-filter-deletes": "a partition filter on a table with delete files: the delete files of the partitions "
                                "outside it stay live, the others' are gone",
    "maintenance": "continuous maintenance of a table that is being written: maintenance steps of operations "
                   "(job.maintenance) on a table another writer commits to, cycle after cycle (streaming scenarios)",
    "expire-snapshots": "snapshot expiration with the engine's own tool (maintenance operation expire_snapshots)",
    "expire-under-writer": "snapshot expiration while another writer commits (streaming modes concurrent and "
                           "branch): an expiry whose commit is refused must not have deleted any file",
    "rewrite-manifests": "manifest rewriting with the engine's own tool (maintenance operation rewrite_manifests)",
    "remove-orphan-files": "orphan file removal with the engine's own tool (maintenance operation "
                           "remove_orphan_files): files under the table's location that no snapshot, ref or metadata "
                           "file references and older than a cutoff are deleted",
    "rewrite-position-deletes": "position-delete rewriting with the engine's own tool (maintenance operation "
                                "rewrite_position_deletes): main's position-delete files rewritten, small ones "
                                "compacted and the dangling ones (whose data files are gone) dropped, no row changed",
    "rewrite-manifests-branch": "manifest rewriting on a branch other than main (maintenance operation "
                                "rewrite_manifests in streaming mode branch): reading the branch's manifests and "
                                "committing to it",
    "format-v3": "a table of Iceberg format v3 (deletion vectors, row lineage): reading it and committing v3 metadata",
}
# the FEATURES an engine has unless its not_supported names them: compaction is what nearly every engine is for, but a
# maintenance-only engine declares it refused (an engine written elsewhere, BENCH_EXTRA_ENGINES, keeps compacting)
ASSUMED = frozenset({"rewrite-data-files"})
# An untimed gap in compact() longer than this becomes a phase "other" (so the phases add up).
UNTIMED_MIN_S = 0.001
# a reason that is the harness's, not the engine's (Capabilities.harness_cannot; a run's error starting with it is the
# harness's failure: bench.runner.engine_run.harness_failed says it the same way)
HARNESS_CANNOT = "harness: "


class MaintenanceOp(BaseModel):
    """One operation of a maintenance step (streaming scenarios, conformance maintenance cases), each an engine
    method: `compact` (the engine's compaction of the table: for a deletes table, no live delete file after it),
    `expire_snapshots` (keep the newest `retain_last`; expire those older than the cutoff), `remove_orphan_files`
    (delete the unreferenced files older than the cutoff), `rewrite_manifests` or `rewrite_position_deletes`
    (main's position-delete files rewritten: compacted, the dangling ones dropped); in a streaming scenario every
    `every` cycles, from the first."""

    model_config = ConfigDict(extra="forbid")

    op: MaintenanceOpName
    # expire_snapshots: main's newest snapshots always kept; None: the engine's own rule (Iceberg Java's: the table's
    # history.expire.min-snapshots-to-keep), as a user's call that names none
    retain_last: int | None = Field(5, ge=1)
    older_than_s: float = Field(0.0, ge=0.0)  # expire_snapshots, remove_orphan_files: only what is older than this
    # the cutoff as a point in time (Unix ms) instead of an age: a conformance case's cutoff is a snapshot's own
    # timestamp, which an age measured when the engine starts would miss by the engine's start-up
    older_than_ms: int | None = None
    every: int = Field(1, ge=1)  # run in cycles 1, 1 + every, 1 + 2 x every, ... (streaming scenarios)

    def cutoff_unix(self) -> float:
        """The cutoff in Unix seconds: `older_than_ms`, else `older_than_s` before now."""
        return self.older_than_ms / 1000 if self.older_than_ms is not None else time.time() - self.older_than_s

    def cutoff_text(self, utc: bool = False) -> str:
        """The cutoff as a TIMESTAMP literal's text, to the millisecond, in local time (Spark SQL reads a TIMESTAMP
        literal in the session's time zone: the JVM's default, this process's local time) or in UTC (a session
        whose time zone is UTC)."""
        t = self.cutoff_unix()
        return (time.strftime("%Y-%m-%d %H:%M:%S", (time.gmtime if utc else time.localtime)(t))
                + f".{int(round(t * 1000)) % 1000:03d}")

    def retain_text(self) -> str:
        """retain_last as said in a phase or a log line."""
        return "the table's own" if self.retain_last is None else str(self.retain_last)

    def retain_argument(self) -> str:
        """The `, retain_last => N` argument of Iceberg's expire_snapshots procedure; none when the engine's own rule
        applies."""
        return "" if self.retain_last is None else f", retain_last => {int(self.retain_last)}"

    def describe(self) -> str:
        when = f" every {self.every} cycles" if self.every > 1 else ""
        older = (f"older_than={self.older_than_ms} ms (Unix)" if self.older_than_ms is not None
                 else f"older_than={self.older_than_s:g} s")
        if self.op == "expire_snapshots":
            return f"expire_snapshots(retain_last={self.retain_text()}, {older}){when}"
        if self.op == "remove_orphan_files":
            return f"remove_orphan_files({older}){when}"
        return self.op + when

    def due(self, cycle: int) -> bool:
        """Does it run in `cycle` (1-based)?"""
        return (cycle - 1) % self.every == 0


class CompactionJob(BaseModel):
    """Everything an engine needs to compact one table.  Serialized to JSON for the subprocess."""

    model_config = ConfigDict(extra="forbid")

    table: str  # "namespace.table"
    catalog: CatalogSettings
    scenario: str
    kind: Kind
    target_file_size_bytes: int
    small_file_threshold_bytes: int  # a data file below this is small: bin-packing rewrites it
    output_codec: str = "snappy"  # Parquet codec new files must have
    output_codec_level: int | None = None
    options: dict[str, Any] = Field(default_factory=dict)  # this engine's options (its Options model, dumped)
    memory_budget_bytes: int | None = None  # the budget the engine must live within (None = node RAM)
    cores: int = 1  # cores the engine may use
    work_dir: str = ""  # scratch directory for this run (logs, spill)
    branch: str = "main"  # the branch to compact: read from it and commit to it (engines that support 'branch')
    strategy: Literal["binpack", "sort", "zorder"] = "binpack"  # sort, zorder: engines that support them
    zorder_columns: list[str] = Field(default_factory=list)  # strategy zorder: the columns of the curve
    # an Iceberg expression (pyiceberg's syntax, also Spark SQL) selecting whole partitions: compact only those,
    # leave every file of the others as it is (engines that support 'partition-filter'); None: the whole table
    partition_filter: str | None = None
    # a directory (the table's, in a local warehouse) whose files modified during the compaction the worker fsyncs
    # inside the timed compaction (phase `flush`), the same for every engine (--storage-cap); None: no flush
    flush_dir: str | None = None
    # a maintenance step (engines that support 'maintenance'): these operations in order instead of compact()
    maintenance: list[MaintenanceOp] = Field(default_factory=list)
    # the engine's process serves other jobs before and after this one (bench.runner.session): nothing it
    # caches (a catalog's tables) may outlive the job
    shared_process: bool = False
    # the work asked (bench.core.work): the scenario's intent resolved against the input (Scenario.work_intent);
    # every engine derives its options from it; None: the default intent of `kind` (see intent())
    work: WorkIntent | None = None

    def intent(self) -> WorkIntent:
        """The work asked of the engine: `work`, or the default intent of the job's kind."""
        return self.work if self.work is not None else default_intent(self.kind)


class EngineOutcome(BaseModel):
    """What the engine itself reports.  Wall time, memory and verification are measured outside."""

    engine_result: dict[str, Any] = Field(default_factory=dict)  # the engine's own result object
    maintenance: list[MaintenanceResult] = Field(default_factory=list)  # a maintenance step: each operation
    physical_bound: PhysicalBound | None = None  # a floor: the least time this rewrite can take here
    settings: dict[str, Any] = Field(default_factory=dict)  # effective settings (heap granted, ...)
    versions: dict[str, str] = Field(default_factory=dict)  # engine-specific versions
    actions: list[str] = Field(default_factory=list)  # what was run (SQL, procedure calls, configs)
    # "none": an engine that writes files but commits nothing (a floor); then `output_files` lists the
    # data files of its end state (written and kept), and the runner verifies them instead of the table
    commits: Literal["table", "none"] = "table"
    output_files: list[str] = Field(default_factory=list)
    deployment: Deployment = Field(default_factory=lambda: Deployment(mode="embedded"))  # how it ran
    # the units of work that read the input, as the engine counts them (Spark: the tasks of its rewrite jobs);
    # None: it reports none.  The runner divides the delete files' opens it counted by them (bench.telemetry.opens)
    read_tasks: int | None = None


class PhaseClock:
    """The named steps of open() or compact(), timed with one clock (time.perf_counter)."""

    def __init__(self) -> None:
        self.phases: list[Phase] = []

    @contextmanager
    def phase(self, name: str, detail: str = "") -> Iterator[None]:
        t0, started = time.perf_counter(), time.time()
        try:
            yield
        finally:
            self.phases.append(Phase(name=name, seconds=time.perf_counter() - t0, detail=detail,
                                     started_unix=started))

    def complete(self, total_s: float) -> list[Phase]:
        """The phases, plus one "other" phase for time outside any named phase, so they add up to
        `total_s` (the wall time of the whole call)."""
        gap = total_s - sum(p.seconds for p in self.phases)
        out = list(self.phases)
        if gap > UNTIMED_MIN_S or not out:
            out.append(Phase(name="other", seconds=max(gap, 0.0),
                             detail="engine code outside its named steps"))
        return out


@dataclass(frozen=True)
class Knob:
    """A setting `bench tune` may vary: `path` into the engine's options (dots go into nested options,
    e.g. 'rewrite_options.max-concurrent-file-group-rewrites'), the values to try (multiplied by the
    cores the engine gets when `per_core`), and its value in the published configuration.  A knob
    with no values is listed as not searchable, `note` saying why."""

    name: str
    path: str
    values: tuple[Any, ...] = ()
    published: Any = None
    per_core: bool = False
    note: str = ""

    def resolved(self, cores: int) -> tuple[list[Any], Any]:
        """(values, published value) in this node's units."""
        if not self.per_core:
            return list(self.values), self.published
        scale = max(1, int(cores))
        return [v * scale for v in self.values], None if self.published is None else self.published * scale


class NoOptions(BaseModel):
    """An engine without scenario options."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do beyond a plain compaction of main, and how it reaches the table: one record per
    engine (`Engine.capabilities`)."""

    # FEATURES it can do (and those ASSUMED, unless not_supported names them); a run that needs a feature it lacks is
    # recorded `unsupported` with `why_not(feature)`, never run
    supports: frozenset[str] = frozenset()
    not_supported: Mapping[str, str] = field(default_factory=dict)  # feature -> why it cannot (its version, its API)
    # feature -> why the harness cannot serve this engine the feature (e.g. the catalog it serves the engine cannot
    # commit it): not the engine's refusal; why_not says it with HARNESS_CANNOT before it, and a conformance cell
    # on it is harness-cannot
    harness_cannot: Mapping[str, str] = field(default_factory=dict)
    # it commits through the job's REST catalog (so the harness's commit gate can hold its commit)
    commits_through_rest: bool = False
    # False: it writes files and commits nothing (a floor: EngineOutcome.commits "none"), so readers after it
    # would read the input unchanged, and the runner times no reads around it
    commits_table: bool = True


# Python source for a reproducer script (Engine.reproducer) whose engine reaches a local table only through a REST
# catalog: `rest_catalog(warehouse)`, a context manager serving the SQLite catalog under `warehouse` with the harness's
# loopback server (the catalog only: the operation stays the engine's own call) and yielding its URI
REPRODUCER_REST_CATALOG = r'''
import contextlib


@contextlib.contextmanager
def rest_catalog(warehouse):
    import os, subprocess, sys, tempfile, time
    from pathlib import Path

    ready = Path(tempfile.mkdtemp()) / "uri"
    server = subprocess.Popen([sys.executable, "-m", "bench.core.catalog.rest", "--warehouse", warehouse,
                               "--ready-file", str(ready), "--parent-pid", str(os.getpid())])
    try:
        while not ready.exists():
            if server.poll() is not None:
                raise RuntimeError("the REST catalog server exited")
            time.sleep(0.1)
        yield ready.read_text().strip()
    finally:
        server.terminate()
        server.wait()
'''


class Engine(ABC):
    """What every engine is: the attributes it declares (each with its default) and the steps of its life cycle
    (the module docstring); `compact` is the one step every engine must write."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    color: ClassVar[str] = "#7B8794"  # its colour in the report's charts
    packages: ClassVar[tuple[str, ...]] = ()  # distributions whose versions every result records
    # the table library it runs on, as the distributions a conformance writer names (Written.packages), where its
    # `packages` do not say it (e.g. an engine whose versions come from its own environment)
    library_packages: ClassVar[tuple[str, ...]] = ()
    Options: ClassVar[type[BaseModel]] = NoOptions  # what a scenario may put under `engines: <name>:`
    output_codecs: ClassVar[frozenset[str] | None] = None  # codecs it can write (None: any Parquet codec)
    min_budget_bytes: ClassVar[int] = 64 * 1024 * 1024  # the smallest budget it can start in (a frontier's floor)
    knobs: ClassVar[tuple[Knob, ...]] = ()  # what `bench tune` varies, in order (coordinate descent)
    capabilities: ClassVar[Capabilities] = Capabilities()  # what it can do, how it reaches the table
    # a regular expression matching its own errors that say it does not support what it met (a conformance cell
    # on such a failure is unsupported, any other failure of its own is failed); "" when it has none
    refusal_pattern: ClassVar[str] = ""
    # table properties its compaction sets (the integrity check `same_properties` does not compare them)
    sets_properties: ClassVar[frozenset[str]] = frozenset()
    # a regular expression matching the lines of its own log that report a commit conflict or a commit retry
    # (counted per maintenance step beside the catalog's 409 answers); "" when its log names none
    conflict_log_pattern: ClassVar[str] = ""
    # its own interpreter and pinned requirements (bench.engines.environment); None: the harness's environment
    environment: ClassVar[EngineEnvironment | None] = None
    # the engine this one is an earlier version of (e.g. spark-3.5 of spark), "" for none: a conformance matrix with
    # both shows, per case, how the verdict changed between them
    earlier_version_of: ClassVar[str] = ""
    # Python source defining `operate(table, metadata_file, warehouse, op) -> (its metadata file after, its own
    # result)`: the maintenance operation `op` (MaintenanceOp's fields, a dict) on the table whose metadata file is
    # `metadata_file` in the SQLite catalog under `warehouse`, through the engine's own API only; a conformance
    # reproducer's script runs it in the engine's interpreter (bench.campaigns.reproducers); "" when it offers none
    reproducer: ClassVar[str] = ""

    @abstractmethod
    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        """Compact `job.table` to the end state every engine must reach (for deletes: no live delete
        file); time each step in `clock`.  Raise on failure; an engine-internal memory limit
        (e.g. java.lang.OutOfMemoryError) raises `EngineOOM`."""

    def requirements(self) -> list[Requirement]:
        """Everything this engine needs on this machine; cheap, no side effects."""
        return []

    @classmethod
    def declared_runtime(cls) -> str:
        """Its runtime in a few words as it declares it (e.g. its Spark line), "" when it declares none: what a record
        says of an engine none of whose runs reported versions (every run refused)."""
        return ""

    @classmethod
    def why_not(cls, feature: str) -> str | None:
        """None when it supports `feature` (FEATURES), else why it cannot."""
        caps = cls.capabilities
        if feature in caps.harness_cannot:
            return HARNESS_CANNOT + caps.harness_cannot[feature]
        if feature in caps.supports or (feature in ASSUMED and feature not in caps.not_supported):
            return None
        return caps.not_supported.get(feature) or f"{cls.name} does not declare support for {FEATURES[feature]}"

    def storage_requirements(self, settings: CatalogSettings) -> list[Requirement]:
        """What it needs to reach the warehouse of `settings` (e.g. S3)."""
        return []

    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        """Start sessions and connect to (and warm up) the catalog; not part of the compaction's time.
        Must not load the table to compact (its metadata read belongs to the compaction).  Nothing by default."""
        return None

    def memory_caps(self) -> list[MemoryCap]:
        """Engine-internal memory limits as granted (called after open())."""
        return []

    def min_budget(self, options: dict[str, Any]) -> int:
        """The smallest memory budget it can start in with these options (a frontier's floor)."""
        return self.min_budget_bytes

    def option_problems(self, options: dict[str, Any], settings: CatalogSettings) -> list[str]:
        """Why these options cannot work with this warehouse (checked before anything runs), one line each."""
        return []

    def close(self) -> None:
        """Release sessions.  Must be safe to call after a failed open().  Nothing by default."""
        return None

    def asked(self, job: CompactionJob) -> dict[str, Any]:
        """What this engine is asked for `job`: the options it derives from the job's intent (job.intent()) and
        the scenario's explicit options over them, as plain data (`bench inspect`; each outcome's settings)."""
        return {"intent": job.intent().describe(), "stated_by": job.intent().stated_by,
                "note": f"{self.name} derives no options from the intent: it rewrites what its own rule selects"}

    def maintain(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        """Run `job.maintenance` in order (engines that support 'maintenance'): each operation an engine method
        (`compact`, `expire_snapshots`, `remove_orphan_files`, `rewrite_manifests`, `rewrite_position_deletes`), its
        own steps renamed "<op>: <step>" in `clock` (each phase's `op` naming its operation); the outcome of the last
        compaction with every operation's result in `maintenance`."""
        results: list[MaintenanceResult] = []
        outcome = EngineOutcome(versions=self.versions())
        for op in job.maintenance:
            sub = PhaseClock()
            t0 = time.perf_counter()
            try:
                if op.op == "compact":
                    outcome = self.compact(job, sub)
                    res: dict[str, Any] = dict(outcome.engine_result)
                elif op.op == "expire_snapshots":
                    res = self.expire_snapshots(job, op, sub)
                elif op.op == "remove_orphan_files":
                    res = self.remove_orphan_files(job, op, sub)
                elif op.op == "rewrite_position_deletes":
                    res = self.rewrite_position_deletes(job, sub)
                else:
                    res = self.rewrite_manifests(job, sub)
            finally:
                for p in sub.complete(time.perf_counter() - t0):
                    clock.phases.append(p.model_copy(update={"name": f"{op.op}: {p.name}", "op": op.op}))
            results.append(MaintenanceResult(op=op.op, describe=op.describe(), result=res))
        outcome.maintenance = results
        outcome.actions = list(outcome.actions) + [r.describe for r in results]
        return outcome

    def versions(self) -> dict[str, str]:
        """The engine's own versions, as every outcome records them (`EngineOutcome.versions`): an operation that is
        no compaction reports them too."""
        return {}

    def expire_snapshots(self, job: CompactionJob, op: MaintenanceOp, clock: PhaseClock) -> dict[str, Any]:
        """Expire snapshots with the engine's own tool (engines that support 'expire-snapshots')."""
        raise NotImplementedError(f"{self.name} declares no expire-snapshots")

    def rewrite_manifests(self, job: CompactionJob, clock: PhaseClock) -> dict[str, Any]:
        """Rewrite the manifests with the engine's own tool (engines that support 'rewrite-manifests')."""
        raise NotImplementedError(f"{self.name} declares no rewrite-manifests")

    def remove_orphan_files(self, job: CompactionJob, op: MaintenanceOp, clock: PhaseClock) -> dict[str, Any]:
        """Delete the table's orphan files older than the op's cutoff with the engine's own tool (engines that
        support 'remove-orphan-files')."""
        raise NotImplementedError(f"{self.name} declares no remove-orphan-files")

    def rewrite_position_deletes(self, job: CompactionJob, clock: PhaseClock) -> dict[str, Any]:
        """Rewrite main's position-delete files with the engine's own tool, every one of them (engines that support
        'rewrite-position-deletes'): compacted, the dangling ones dropped, one commit."""
        raise NotImplementedError(f"{self.name} declares no rewrite-position-deletes")

    def options(self, job: CompactionJob) -> Any:
        """The job's options as this engine's typed Options (UserError when they do not validate)."""
        from pydantic import ValidationError

        from bench.core.errors import UserError

        try:
            return self.Options.model_validate(job.options)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise UserError(f"{self.name} engine: option {where}: {err['msg']}") from None


class EngineOOM(RuntimeError):
    """The engine hit its own memory limit (e.g. java.lang.OutOfMemoryError): status heap-oom."""


class WorkerRecord(BaseModel):
    """What the engine subprocess writes when it ends (bench.engines.worker)."""

    engine: str
    status: Literal["ok", "failed", "heap-oom"] = "failed"
    step: str = "start"  # where it ended: start | open | wait | compact | close
    error: str | None = None
    causes: list[str] = Field(default_factory=list)  # the failure's chain, outermost first (worker.exception_causes)
    setup_s: float | None = None
    setup_phases: list[Phase] = Field(default_factory=list)
    duration_s: float | None = None
    phases: list[Phase] = Field(default_factory=list)
    memory_caps: list[MemoryCap] = Field(default_factory=list)
    outcome: EngineOutcome | None = None
    flushed: tuple[int, int] | None = None  # (files, bytes) the flush phase fsynced (job.flush_dir)
    # (file fsyncs, bytes, interval s) the write-back thread made durable while the engine compacted
    written_back: tuple[int, int, float] | None = None
