"""One engine run, one path: the steps every kind of run composes, never copies -- a benchmark repetition
(bench.runner.run), each maintenance step of a streaming run (bench.runner.streaming), and any later kind
(a conformance case).

    why_unsupported(ctx, slot)        why the engine cannot run this scenario (None: it can)
    record_unsupported(r, why)        ... then recorded as such, never run
    restore_input(ctx, r)             the dataset restored byte for byte, measured into the result
    build_job(ctx, slot, work, ...)   the CompactionJob: the scenario's work, codec, layout, filter, budget
    run_engine_process(...)           spawned, confined, sampled, classified (bench.runner.process)
    record_engine(ctx, r, er)         what the engine process said, into the run's result
    harness_failed(r, exc)            a harness-side failure, recorded (never a crash of the harness)
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pyiceberg.table.metadata import TableMetadata

from bench.core.catalog import CatalogSettings
from bench.core.rates import check_bound
from bench.core.results import RunResult
from bench.core.work import WorkIntent
from bench.engines import engine_class
from bench.engines.base import HARNESS_CANNOT, CompactionJob, MaintenanceOp
from bench.runner.context import RunContext, Slot, flush_dir
from bench.runner.inputs import reset_input
from bench.runner.process import LOG_TAIL_LINES, EngineRun, storage_record, tail
from bench.scenario import Scenario

__all__ = ["build_job", "harness_failed", "record_engine", "record_unsupported", "restore_input", "why_unsupported"]


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
    r.status, r.verified = "unsupported", False
    r.error = why if why.startswith(HARNESS_CANNOT) else f"unsupported: {why}"
    if r.live_writer is not None:
        r.live_writer.verdict, r.live_writer.reason = "unsupported", why
    return r


def restore_input(ctx: RunContext, r: RunResult) -> tuple[set[str], TableMetadata]:
    """The dataset restored byte for byte (bench.runner.inputs.reset_input), what the engine gets measured
    into `r`; returns the input's live file paths and its metadata (what verification compares with)."""
    r.input, r.before, before_paths, before_meta = reset_input(ctx)
    if ctx.work is None:  # the dataset's own state: the same for every engine run of this run
        ctx.work = ctx.scenario.work_intent(r.before.delete_files > 0)
    r.files_in = r.before.data_files + r.before.delete_files
    r.bytes_in = r.before.data_bytes + r.before.delete_bytes
    r.rows = r.before.rows
    return before_paths, before_meta


def scenario_job(sc: Scenario, table: str, catalog: CatalogSettings, options: dict[str, Any], target: int,
                 threshold: int, work: WorkIntent | None, **run: Any) -> CompactionJob:
    """The CompactionJob of `sc` on `table`: its target and threshold, codec, layout strategy and work, the
    engine's options; `run` the engine run's own fields (budget, cores, work dir, branch, filter, ...)."""
    return CompactionJob(table=table, catalog=catalog, scenario=sc.name, kind=sc.kind, target_file_size_bytes=target,
                         small_file_threshold_bytes=threshold, output_codec=sc.output.codec,
                         output_codec_level=sc.output.level, options=options, strategy=sc.rewrite.strategy,
                         zorder_columns=list(sc.rewrite.zorder_columns), work=work, **run)


def build_job(ctx: RunContext, slot: Slot, work: Path, branch: str | None = None,
              maintenance: Iterable[MaintenanceOp] = ()) -> CompactionJob:
    """The one CompactionJob of an engine run: the scenario's job (scenario_job) with the run's work (the same
    WorkIntent the verifier gets), the memory budget and cores, partition filter; a maintenance step when given."""
    ds = ctx.dataset
    assert ds is not None
    return scenario_job(ctx.scenario, ds.table, ctx.catalog_settings, ctx.engine_options[slot.engine], ctx.target,
                        ctx.threshold, ctx.work, memory_budget_bytes=ctx.budget, cores=ctx.cores,
                        work_dir=str(work), branch=branch or slot.branch or "main",
                        partition_filter=ctx.partition_filter, flush_dir=flush_dir(ctx),
                        maintenance=list(maintenance), shared_process=ctx.shared is not None)


def record_engine(ctx: RunContext, r: RunResult, er: EngineRun) -> None:
    """What the engine process said and what was measured around it, into the run's result."""
    r.status = er.status
    r.error = er.error
    r.process_wall_s = er.process_wall_s
    r.shared_process = er.shared_job
    r.memory_enforcement = er.enforcement
    r.storage_cap, r.core_limit = storage_record(er), er.core_limit
    r.telemetry = er.telemetry  # type: ignore[assignment]
    r.catalog_server = er.server
    r.samples_file = os.path.relpath(er.samples_file, ctx.run_dir)
    rec = er.record
    if rec is not None:
        r.setup_s, r.setup_phases, r.memory_caps = rec.setup_s, rec.setup_phases, rec.memory_caps
        r.error_causes = rec.causes
        r.phases = rec.phases
        r.duration_s = rec.duration_s if r.status == "ok" else None
        if rec.outcome is not None:
            r.engine_result, r.engine_settings = rec.outcome.engine_result, rec.outcome.settings
            r.physical_bound = rec.outcome.physical_bound
            check_bound(r.physical_bound, r.phases, r.duration_s)  # the bound's self-check: flagged when beaten
            if r.physical_bound is not None and r.physical_bound.beaten:
                ctx.progress.info(f"[{r.engine} rep{r.rep}] {r.physical_bound.beaten} (bench selfcheck rates)")
            r.engine_actions = rec.outcome.actions
            r.versions.update(rec.outcome.versions)
            r.deployment = rec.outcome.deployment
            r.nodes = rec.outcome.deployment.nodes
    if r.status != "ok":
        r.log_tail = tail(er.log)


def harness_failed(r: RunResult, exc: BaseException) -> None:
    """A failure on the harness's side of an engine run: recorded as the run's result, with its traceback."""
    r.status, r.verified = "failed", False
    r.error = f"{HARNESS_CANNOT}{type(exc).__name__}: {exc}"
    r.log_tail = traceback.format_exc().splitlines()[-LOG_TAIL_LINES:]
