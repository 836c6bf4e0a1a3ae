"""One engine run, one path: the steps every kind of run composes, never copies -- a benchmark repetition
(bench.runner.run), each maintenance step of a streaming run (bench.runner.streaming), and any later kind
(a conformance case).

    why_unsupported(ctx, slot)            why the engine cannot run this scenario (None: it can)
    record_unsupported(r, why)            ... then recorded as such, never run
    restore_input(ctx)                    the dataset restored byte for byte, measured (Restored)
    build_job(ctx, slot, work, restored)  the CompactionJob: the input's work, codec, layout, filter, budget
    run_engine_process(...)               spawned, confined, sampled, classified (bench.runner.process)
    engine_report(ctx, r, er)             what the engine process said (EngineReport)
    harness_failed(r, exc)                a harness-side failure, recorded (never a crash of the harness)
Each step returns what it found; the run assembles the record from them (bench.runner.record.assemble).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from pyiceberg.table.metadata import TableMetadata

from bench.core.catalog import CatalogSettings
from bench.core.rates import check_bound
from bench.core.records.engine_run import Deployment, InputState, Phase, PhysicalBound, Status
from bench.core.records.telemetry import CatalogServerUsage, CoreLimit, MemoryCap, StorageCap
from bench.core.records.verification import TableStats
from bench.core.results import RunResult
from bench.core.work import WorkIntent
from bench.engines import engine_class
from bench.engines.base import HARNESS_CANNOT, CompactionJob, MaintenanceOp
from bench.runner.context import RunContext, Slot, flush_dir
from bench.runner.inputs import reset_input
from bench.runner.process import LOG_TAIL_LINES, EngineRun, storage_record, tail
from bench.runner.record import assemble
from bench.scenario import Scenario

__all__ = ["EngineReport", "Restored", "build_job", "engine_report", "harness_failed", "record_unsupported",
           "restore_input", "why_unsupported"]


def why_unsupported(ctx: RunContext, slot: Slot, operation: str | None = None) -> str | None:
    """Why `slot.engine` cannot run this scenario (the features it needs, a branch), or None; `operation`: the feature
    of the one operation the run asks instead of the scenario's compaction (a maintenance case's)."""
    needs = ctx.scenario.needs()
    if operation:
        needs = (needs - {"rewrite-data-files"}) | {operation}
    features = sorted(needs | ({"branch"} if slot.branch else set()))
    why = [w for w in (engine_class(slot.engine).why_not(f) for f in features) if w]
    # the harness's reasons first: a run the harness cannot serve is its failure, whatever the engine lacks too
    return "; ".join(sorted(why, key=lambda w: not w.startswith(HARNESS_CANNOT))) or None


def record_unsupported(r: RunResult, why: str) -> RunResult:
    """A run the engine cannot do (e.g. compact a branch), or the harness cannot serve it (`why` starts with
    HARNESS_CANNOT, and so does the recorded error): recorded, not run."""
    lw = r.live_writer
    return assemble(r, status="unsupported", verified=False,
                    error=why if why.startswith(HARNESS_CANNOT) else f"unsupported: {why}",
                    live_writer=lw.model_copy(update={"verdict": "unsupported", "reason": why}) if lw else None)


@dataclass(frozen=True)
class Restored:
    """The dataset restored byte for byte and measured: what the engine gets, as the record says it, and what
    verification compares the output with (its live file paths and metadata)."""

    input: InputState
    before: TableStats
    paths: set[str]
    metadata: TableMetadata
    # the work asked of the engine and checked by the verifier (bench.core.work): the scenario's intent resolved
    # against the input (whether it has delete files), one object for the job and the verification, so they cannot
    # disagree; the same for every engine run of a run, whose inputs are byte for byte the dataset
    work: WorkIntent

    def record_fields(self) -> dict[str, Any]:
        b = self.before
        return {"input": self.input, "before": b, "files_in": b.data_files + b.delete_files,
                "bytes_in": b.data_bytes + b.delete_bytes, "rows": b.rows}


def restore_input(ctx: RunContext) -> Restored:
    """The dataset restored byte for byte (bench.runner.inputs.reset_input) and measured."""
    state, before, paths, metadata = reset_input(ctx)
    return Restored(input=state, before=before, paths=paths, metadata=metadata,
                    work=ctx.scenario.work_intent(before.delete_files > 0))


def scenario_job(sc: Scenario, table: str, catalog: CatalogSettings, options: dict[str, Any], target: int,
                 threshold: int, work: WorkIntent | None, **run: Any) -> CompactionJob:
    """The CompactionJob of `sc` on `table`: its target and threshold, codec, layout strategy and work, the
    engine's options; `run` the engine run's own fields (budget, cores, work dir, branch, filter, ...)."""
    return CompactionJob(table=table, catalog=catalog, scenario=sc.name, kind=sc.kind, target_file_size_bytes=target,
                         small_file_threshold_bytes=threshold, output_codec=sc.output.codec,
                         output_codec_level=sc.output.level, options=options, strategy=sc.rewrite.strategy,
                         zorder_columns=list(sc.rewrite.zorder_columns), work=work, **run)


def build_job(ctx: RunContext, slot: Slot, work: Path, restored: Restored, branch: str | None = None,
              maintenance: Iterable[MaintenanceOp] = ()) -> CompactionJob:
    """The one CompactionJob of an engine run in `work` on the `restored` input: the scenario's job (scenario_job)
    with the input's work (the same WorkIntent the verifier gets), the memory budget and cores, partition filter; a
    maintenance step when given."""
    ds = ctx.dataset
    assert ds is not None
    return scenario_job(ctx.scenario, ds.table, ctx.catalog_settings, ctx.engine_options[slot.engine], ctx.target,
                        ctx.threshold, restored.work, memory_budget_bytes=ctx.budget, cores=ctx.cores,
                        work_dir=str(work), branch=branch or slot.branch or "main",
                        partition_filter=ctx.partition_filter, flush_dir=flush_dir(ctx),
                        maintenance=list(maintenance), shared_process=ctx.shared is not None)


@dataclass(frozen=True)
class EngineReport:
    """What the engine process said and what was measured around it, as the record's fields of the same names
    (the record's defaults for what an engine that reported nothing, or no outcome, left unsaid)."""

    status: Status
    error: str | None
    process_wall_s: float | None
    shared_process: int
    memory_enforcement: str
    storage_cap: StorageCap | None
    core_limit: CoreLimit | None
    telemetry: Any
    catalog_server: CatalogServerUsage | None
    samples_file: str | None
    versions: dict[str, str | None]
    setup_s: float | None = None
    setup_phases: list[Phase] = field(default_factory=list)
    memory_caps: list[MemoryCap] = field(default_factory=list)
    error_causes: list[str] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    duration_s: float | None = None
    engine_result: dict[str, Any] = field(default_factory=dict)
    engine_settings: dict[str, Any] = field(default_factory=dict)
    physical_bound: PhysicalBound | None = None
    engine_actions: list[str] = field(default_factory=list)
    deployment: Deployment | None = None
    nodes: int = 1
    log_tail: list[str] = field(default_factory=list)

    def record_fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def engine_report(ctx: RunContext, r: RunResult, er: EngineRun) -> EngineReport:
    """What the engine process of run `r` said and what was measured around it."""
    measured = EngineReport(status=er.status, error=er.error, process_wall_s=er.process_wall_s,
                            shared_process=er.shared_job, memory_enforcement=er.enforcement,
                            storage_cap=storage_record(er), core_limit=er.core_limit, telemetry=er.telemetry,
                            catalog_server=er.server, samples_file=os.path.relpath(er.samples_file, ctx.run_dir),
                            versions=r.versions, log_tail=tail(er.log) if er.status != "ok" else [])
    rec = er.record
    if rec is None:
        return measured
    said = replace(measured, setup_s=rec.setup_s, setup_phases=rec.setup_phases, memory_caps=rec.memory_caps,
                   error_causes=rec.causes, phases=rec.phases,
                   duration_s=rec.duration_s if er.status == "ok" else None)
    out = rec.outcome
    if out is None:
        return said
    check_bound(out.physical_bound, said.phases, said.duration_s)  # the bound's self-check: flagged when beaten
    if out.physical_bound is not None and out.physical_bound.beaten:
        ctx.progress.info(f"[{r.engine} rep{r.rep}] {out.physical_bound.beaten} (bench selfcheck rates)")
    return replace(said, engine_result=out.engine_result, engine_settings=out.settings,
                   physical_bound=out.physical_bound, engine_actions=out.actions,
                   versions={**r.versions, **out.versions}, deployment=out.deployment, nodes=out.deployment.nodes)


def harness_failed(r: RunResult, exc: BaseException) -> RunResult:
    """A failure on the harness's side of an engine run: recorded as the run's result, with its traceback."""
    return assemble(r, status="failed", verified=False, error=f"{HARNESS_CANNOT}{type(exc).__name__}: {exc}",
                    log_tail=traceback.format_exc().splitlines()[-LOG_TAIL_LINES:])
