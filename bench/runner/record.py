"""The record of one engine run: made before it runs (`new_result`), assembled from what each step of the run
returns (`assemble`, `checked`), priced, saved and reported when it ends (`finish`); shared by compaction runs
(bench.runner.run), maintenance runs (bench.runner.maintenance) and streaming runs (bench.runner.streaming)."""

from __future__ import annotations

from typing import Any, Protocol

from bench.core.cost import run_cost
from bench.core.records.live import LiveWriterRecord
from bench.core.records.verification import Check, unverifies
from bench.core.results import RunResult, now_iso, save
from bench.engines import base_name, engine_class, engine_color, split_label
from bench.runner.context import RunContext, Slot


def new_result(ctx: RunContext, slot: Slot, color: str | None = None, runs_engine: bool = True) -> RunResult:
    """The result record of one engine run, before it runs; `runs_engine` is false for a slot no engine fills (a
    streaming baseline), which declares no runtime."""
    sc, ds = ctx.scenario, ctx.dataset
    assert ds is not None
    runtime = engine_class(slot.engine).declared_runtime() if runs_engine else ""
    return RunResult(run_id=ctx.run_id, scenario=sc.name, engine=slot.engine, engine_name=base_name(slot.engine),
                     profile=split_label(slot.engine)[1], engine_options=ctx.engine_options.get(slot.engine, {}),
                     cores=ctx.cores, rep=slot.rep, warmup=slot.warmup,
                     scale=ctx.scale, file_scale=ctx.counts_scale, seed=ctx.seed, dataset=ds.table,
                     dataset_recipe_hash=ds.recipe_hash,
                     scenario_record=sc.record(), status="failed", started_at=now_iso(),
                     engine_order=list(slot.order), order_position=slot.position,
                     engine_color=color or engine_color(slot.engine),
                     target_file_size_bytes=ctx.target, small_file_threshold_bytes=ctx.threshold,
                     output_codec=sc.output.codec, memory_budget_bytes=ctx.budget, environment=ctx.environment,
                     versions=dict(ctx.versions), engine_runtime=runtime,
                     live_writer=LiveWriterRecord(case=slot.case, branch=slot.branch) if slot.case else None)


class Part(Protocol):
    """A step's output that the record says: the fields it gives the record."""

    def record_fields(self) -> dict[str, Any]: ...


def assemble(r: RunResult, *parts: Part, **fields: Any) -> RunResult:
    """The record with the steps' outputs over it (`parts`, then `fields`, later ones winning): the one place a
    record gets fields after it is made.  A new record: `r` stays as it was, so a step that fails leaves the
    record of the steps before it."""
    update = {k: v for p in parts for k, v in p.record_fields().items()} | fields
    return r.model_copy(update=update)


def checked(r: RunResult, *checks: Check | None) -> RunResult:
    """The record with checks decided after the verifier's (Verification.with_checks): a failed required one
    leaves the run not verified."""
    given = [c for c in checks if c is not None]
    if not given:
        return r
    return assemble(r, verification=r.verification.with_checks(*given), verified=r.verified and not unverifies(given))


def finish(ctx: RunContext, r: RunResult, label: str) -> RunResult:
    """Price, save and report one engine run."""
    r = assemble(r, cost=run_cost(r.duration_s if r.status == "ok" else None, ctx.instance_type,
                                  ran_on=ctx.environment.instance_type, nodes=r.nodes))
    path = save(ctx.results_dir, r)
    dur = f"{r.duration_s:.2f} s" if r.duration_s is not None else "-"
    phases = ", ".join(f"{p.name} {p.seconds:.2f} s" for p in r.phases) if r.status == "ok" else ""
    ctx.progress.info(f"{label} {r.status}, {dur}{f' ({phases})' if phases else ''}, files {r.files_in} -> "
                      f"{r.files_out if r.files_out is not None else '-'}, verified={r.verified}"
                      + (f", error: {r.error}" if r.error else "") + f" ({path.name})")
    if r.live_writer is not None:
        lw = r.live_writer
        ctx.progress.info(f"{label}   live writer ({lw.case}): {lw.verdict}: {lw.reason}")
    for d in r.verification.differences[:5] if r.status == "ok" and r.live_writer is None else []:
        ctx.progress.info(f"{label}   {d}")
    return r
