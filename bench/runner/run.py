"""The run: for each repetition (engine order rotated), for each engine: restore -> cache -> engine
process -> verify -> one result; `run.json` says whether the whole run completed.

Fairness, by construction:
- every engine run starts from the byte-identical table (the dataset's metadata file and exactly its
  files: bench.core.table.state), measured after the reset (input fingerprint in every result);
- the engines' order rotates from one repetition to the next (recorded per result);
- before each engine run the warehouse is synced to disk and the page cache dropped (`cold`, default
  where the harness may: root) or the input read once (`warm`); recorded per result;
- each engine runs in its own subprocess (own process group, memory cgroup, time limit) and is
  measured from outside the same way; the loopback REST catalog server's work during the run (it
  commits for REST clients, outside the engine's tree) is measured and recorded beside it;
- every run is verified by `bench.verify` against the generator's ground truth.
One `bench run` at a time per warehouse (bench.core.lock).  `results/<run-id>/run.json` says whether
the run completed; results are written atomically and never overwritten.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from bench.core.catalog import load_catalog
from bench.core.catalog.rest import serve
from bench.core.errors import RunFailed, UserError
from bench.core.fmt import fmt_bytes
from bench.core.iceberg_java.runtime import ICEBERG_VERSION
from bench.core.lock import WarehouseLock
from bench.core.machine import HARNESS_PACKAGES, environment, package_versions
from bench.core.pin import SourceWatch, pin_source
from bench.core.progress import Progress
from bench.core.records.engine_run import CacheState, Phase, SetupIO
from bench.core.records.telemetry import DeleteOpens
from bench.core.records.verification import Check, CommitEvent, PartitionOutcome, TableStats, Verification
from bench.core.results import RunResult, RunState, file_label, now_iso, write_run_state
from bench.core.settings import env_settings
from bench.core.source import load_source
from bench.core.table.entries import live_files
from bench.engines import engine_class
from bench.engines.base import EngineOutcome
from bench.runner.context import RunContext, RunOptions, Slot, resolve, resolve_filter, schedule
from bench.runner.engine_run import (
    Restored,
    build_job,
    engine_report,
    harness_failed,
    record_unsupported,
    restore_input,
    why_unsupported,
)
from bench.runner.inputs import SetupGuard
from bench.runner.live import INGEST_BRANCH, EngineHold, judge, live_writer
from bench.runner.maintenance import in_place, run_maintenance
from bench.runner.process import EngineRun, run_engine_process
from bench.runner.reads import reads_after, reads_before
from bench.runner.record import assemble, checked, finish, new_result
from bench.runner.session import SharedProcesses
from bench.runner.source import prepare_clone, source_record, source_shape
from bench.runner.source_watch import check_refs, check_source, finish_source, record_gone
from bench.runner.streaming import run_streaming
from bench.telemetry.confine import fmt_rate, stale_parents
from bench.telemetry.limits import remove_stale_cgroups
from bench.telemetry.opens import OpenWatch, not_counted
from bench.verify.checks import VerifyInput, verify
from bench.verify.integrity import IntegrityInput
from bench.verify.uncommitted import remove_output, stage_output
from bench.verify.untouched import outcome as partition_outcome
from datagen.dataset import prepare
from datagen.live import DECLARED, WriterCommit


def run_one(ctx: RunContext, slot: Slot) -> RunResult:
    """One engine run of a compaction scenario (bench.runner.engine_run's path): restore, the reads before,
    the engine's process with the table out of reach while it sets up, verification, the reads after."""
    ds = ctx.dataset
    assert ds is not None and ctx.catalog is not None
    label = f"[{slot.engine} {slot.tag}]"
    r = new_result(ctx, slot)
    why = why_unsupported(ctx, slot)
    if why:
        return finish(ctx, record_unsupported(r, why), label)
    if ctx.source_watch is not None and ctx.source_watch.gone and ctx.source and ctx.source_before:
        # the clone references files that went: not run
        r = assemble(r, source=source_record(ctx.source, ds, ctx.source_before, ctx.source_shape))
        return finish(ctx, record_gone(ctx, r), label)
    live: tuple[EngineHold, WriterCommit] | None = None
    try:
        ctx.progress.info(f"{label} restoring {ds.table} to its dataset state (position {slot.position + 1} of "
                          f"{len(slot.order)}: {' -> '.join(slot.order)})")
        restored = restore_input(ctx)
        r = assemble(r, restored)
        # the dataset snapshot, before the engine's own cache policy (a live-writer run changes the content, and
        # after an engine that commits nothing readers would read the input unchanged: no reads)
        reads = not slot.case and engine_class(slot.engine).capabilities.commits_table
        r = assemble(r, reads=reads_before(ctx) if reads else None)
        work = ctx.run_dir / "work" / f"{ctx.scenario.name}--{file_label(slot.engine)}--{slot.tag}"
        integrity = IntegrityInput(before=restored.metadata, branch=slot.branch or "main",
                                   declared_properties=frozenset(ctx.scenario.output.sets_properties)
                                   | engine_class(slot.engine).sets_properties)
        r, er, live = compact(ctx, slot, r, work, restored)
        if live is not None:
            with ctx.progress.task(f"{label} judging the live writer's case", unit="step"):
                r = judge(ctx, r, *live, integrity)
            r = checked(r, setup_check(r.setup_io))
            r = assemble(r, files_out=r.after.data_files + r.after.delete_files if r.after else None)
        elif r.status == "ok":
            on_branch = publish_branch(ctx, r, slot.branch) if slot.branch else None
            r = checked(check(ctx, r, er, restored, work, integrity, label), on_branch)
        r = reads_after(ctx, r, label)
    except Exception as exc:  # noqa: BLE001 - a harness-side failure is still a recorded result
        r = harness_failed(r, exc)
    if ctx.source is not None and ctx.source_before is not None:  # the original, after this engine run
        r = assemble(r, source=source_record(ctx.source, ds, ctx.source_before, ctx.source_shape))
        if r.status == "ok" and live is None:
            r = check_refs(ctx, r, committed=r.commits == "table", branch=slot.branch)
        r = check_source(ctx, r)
    return finish(ctx, r, label)


def publish_branch(ctx: RunContext, r: RunResult, branch: str) -> Check:
    """A source table's branch compacted (the source pinned at its head, so main starts there too): the engine
    must have committed to the branch and left main where it was (the returned check, the engine's); main is then
    moved to the branch's head (the harness's metadata-only step, as --cow-branch publishes), so that the output is
    verified as any run's.  Nothing is published when main moved: the check says where the commit went."""
    assert ctx.catalog is not None and ctx.dataset is not None
    tbl = ctx.catalog.load_table(ctx.dataset.table)
    pinned = r.before.snapshot_id
    main, head = tbl.metadata.refs.get("main"), tbl.metadata.refs.get(branch)
    main_id, head_id = (main.snapshot_id if main else None), (head.snapshot_id if head else None)
    ok = head_id is not None and main_id == pinned
    if ok and head_id != pinned:
        tbl.manage_snapshots().set_current_snapshot(snapshot_id=head_id).commit()
    said = (f"the engine committed to branch {branch} ({pinned} -> {head_id}) and left main at {pinned}; main "
            "published at the branch's head for verification" if ok and head_id != pinned else
            f"the engine left branch {branch} and main at {pinned} (nothing committed)" if ok else
            f"branch {branch} is gone" if head_id is None else
            f"main moved ({pinned} -> {main_id}) while the engine was asked to compact branch {branch} "
            f"({pinned} -> {head_id}): it committed to main")
    return Check(name="branch_compacted", ok=ok, message=said, about="metadata")


def compact(ctx: RunContext, slot: Slot, r: RunResult, work: Path,
            restored: Restored) -> tuple[RunResult, EngineRun, tuple[EngineHold, WriterCommit] | None]:
    """The engine's process on the `restored` input (a live writer beside it for a live-writer case), the table
    parked out of reach until its setup has ended.  Returns the record with what it said, the process's run and
    the live writer's hold (None without one)."""
    guard = SetupGuard(ctx, r.bytes_in or 0)
    job = build_job(ctx, slot, work, restored)
    ctx.progress.info(f"[{slot.engine} {slot.tag}] setting up with the table out of reach, then compacting (cache "
                      f"{ctx.cache_mode}, budget {fmt_bytes(ctx.budget)}, time limit {ctx.timeout_s} s)"
                      + (f", live writer: {slot.case}" if slot.case else "")
                      + (f", storage cap read {fmt_rate(ctx.storage_cap.read_bps)} write "
                         f"{fmt_rate(ctx.storage_cap.write_bps)} on {ctx.cap_device[0]}, written files flushed"
                         if ctx.storage_cap and ctx.cap_device else "")
                      + (f", {ctx.cores} core(s): CPUs {','.join(map(str, ctx.cpus))}" if ctx.cpus else ""))
    watch = open_watch(ctx, r)  # the delete files' opens, counted from the engine's go (bench.telemetry.opens)

    def go(read_bytes: int | None, read_chars: int | None) -> CacheState:
        cache = guard.release(read_bytes, read_chars)
        if watch is not None:
            watch.start()
        return cache
    with live_writer(ctx, slot) as live:
        guard.park()
        try:
            er = run_engine_process(ctx, slot, job, work, companion=live[0] if live else None, on_ready=go)
        finally:
            if watch is not None:
                watch.stop()
            if guard.cache is None:  # the engine never finished its setup: the table back all the same
                guard.release(None, None)
    r = assemble(r, engine_report(ctx, r, er), cache=guard.cache or CacheState(), setup_io=guard.io)
    r = assemble(r, delete_opens=opens_record(ctx, r, watch, er))
    if r.delete_opens is not None:
        ctx.progress.info(f"[{slot.engine} {slot.tag}] delete files opened while compacting: "
                          f"{r.delete_opens.describe()}")
    return r, er, live


def check(ctx: RunContext, r: RunResult, er: EngineRun, restored: Restored, work: Path,
          integrity: IntegrityInput, label: str) -> RunResult:
    """Verify a run that ended ok: the table (or a floor's staged output) against the dataset's ground truth."""
    outcome = er.record.outcome if er.record else None
    # said before verifying: a verification that fails still records where the output went
    r = assemble(r, commits="table" if outcome is None or outcome.commits == "table" else "none")
    t_verify = time.perf_counter()
    with ctx.progress.task(f"{label} verifying", unit="step"):
        after, verification, partitions = verify_run(ctx, r, restored, outcome, work, integrity)
    r = assemble(r, after=after, partitions=partitions, verify_s=time.perf_counter() - t_verify,
                 verification=placed(verification, r.phases))
    r = checked(r, setup_check(r.setup_io))
    return assemble(r, files_out=after.data_files + after.delete_files, bytes_out=after.data_bytes + after.delete_bytes,
                    verified=r.verification.verified)


def placed(v: Verification, phases: list[Phase]) -> Verification:
    """The verification with the phase each snapshot the run committed was made in named (from its timestamp),
    where its summary does not say."""
    def step(c: CommitEvent) -> str:
        t = c.timestamp_ms / 1000
        # the phase whose span holds the timestamp; else the nearest within 50 ms (clocks of two processes)
        near = sorted((max(p.started_unix - t, 0.0, t - p.started_unix - p.seconds), -i, p.name)
                      for i, p in enumerate(phases) if p.started_unix is not None)
        return near[0][2] if near and near[0][0] <= 0.05 else ""
    return v.model_copy(update={"committed": [c if c.step or not c.timestamp_ms else
                                              c.model_copy(update={"step": step(c)}) for c in v.committed]})


def setup_check(io: SetupIO | None) -> Check | None:
    """The setup rule as a required check (None: no setup was guarded): the table was out of reach while the
    engine set up, and where that is evidence, not construction (S3), its setup read less than the limit."""
    if io is None:
        return None
    judged = io.judged_on and io.share is not None
    ok = bool(io.parked) and not (judged and io.share >= io.max_share)  # type: ignore[operator]
    reads = (f"its process tree read {fmt_bytes(io.setup_read_bytes or 0)} from storage and "
             f"{fmt_bytes(io.setup_read_chars or 0)} through read() while it set up")
    if not io.parked:
        msg = f"the table was reachable while the engine set up; {reads}"
    elif judged:
        allowance = fmt_bytes(env_settings().setup_read_allowance)
        msg = (f"the table was {io.parked}; {reads}: beyond an allowance of {allowance} "
               f"for loading code, {io.share:.0%} of the input's {fmt_bytes(io.input_bytes)} (limit "
               f"{io.max_share:.0%})" + ("" if ok else ": work moved outside the clock, the run does not count"))
    else:
        msg = f"the table was {io.parked}, so nothing of it could be read; {reads}"
    return Check(name="setup_out_of_reach", ok=ok, message=msg, whose="harness")


def verify_run(ctx: RunContext, r: RunResult, restored: Restored, outcome: EngineOutcome | None,
               work: Path, integrity: IntegrityInput | None = None
               ) -> tuple[TableStats, Verification, PartitionOutcome | None]:
    """Verify the table after the run, and a partitioned table's outcome per partition (None: unpartitioned, or
    an output that could not be staged); for an engine that commits nothing, its listed output files staged as a
    scratch table (then its written files are removed); `restored`: the input and the work asked of the engine."""
    before_paths = restored.paths
    sc, ds = ctx.scenario, ctx.dataset
    assert ds is not None and ctx.catalog is not None
    settings = ctx.catalog_settings
    tbl = ctx.catalog.load_table(ds.table)
    partitioned, layout = not tbl.spec().is_unpartitioned(), sc.rewrite.strategy != "binpack"
    inputs = live_files(tbl, r.before.snapshot_id) if partitioned or layout else None  # one read of the input
    vi = VerifyInput(kind=sc.kind, table=tbl, before=r.before, before_paths=before_paths,
                     ground_truth=ds.ground_truth, target_file_size_bytes=ctx.target,
                     small_file_threshold_bytes=ctx.threshold, output_codec=sc.output.codec,
                     input_fingerprint=r.input.fingerprint, input_identical=r.input.identical_to_dataset,
                     input_compared=r.input.compared,
                     settings=settings, integrity=integrity, strategy=sc.rewrite.strategy,
                     zorder_columns=list(sc.rewrite.zorder_columns), sort_order=tbl.sort_order(),
                     before_data_files=[e.data_file for e in inputs.data] if inputs and layout else None,
                     partition_filter=ctx.partition_filter, input_files=inputs if partitioned else None,
                     work=restored.work, expected=ctx.expected)

    def verify_and_outcome() -> tuple[TableStats, Verification, PartitionOutcome | None]:
        """verify(), and a partitioned table's outcome per partition (read while a staged output exists)."""
        after, v = verify(vi)
        return after, v, (None if vi.input_files is None else
                          partition_outcome(vi.table, vi.input_files, live_files(vi.table), vi.partition_filter))

    if outcome is None or outcome.commits == "table":
        return verify_and_outcome()
    written = [p for p in outcome.output_files if p not in before_paths]
    try:
        try:
            vi.table = stage_output(tbl, outcome.output_files, work)
        except Exception as exc:  # noqa: BLE001 - output that cannot be staged is unverified, not a crash
            check = Check(name="output_staged", ok=False, message=f"its {len(outcome.output_files)} output files "
                          f"cannot form a table like the input: {type(exc).__name__}: {exc}"[:1000])
            return TableStats(), Verification(verified=False, checks=[check],
                                              differences=[f"{check.name}: {check.message}"]), None
        vi.settings, vi.committed, vi.source_metadata_location = None, False, tbl.metadata_location
        return verify_and_outcome()
    finally:
        remove_output(written, work)


def plan_slots(ctx: RunContext, opts: RunOptions) -> list[Slot]:
    """The run's engine slots (engine x repetition x live-writer case, each with its branch), the options that
    shape them checked first (UserError before anything runs)."""
    live = ctx.scenario.live_writer
    for flag, asked in (("--cow-branch", opts.cow_branch), ("--cases", opts.cases)):
        if asked and not live:
            raise UserError(f"{flag}: {ctx.scenario.name} has no live writer; use a live-writer-* scenario")
    # a conformance case's concurrent commit: every engine run is one live-writer run of it
    cases = list(live.cases) if live else [DECLARED] if opts.during else None
    if live and opts.cases:
        unknown = [c for c in opts.cases if c not in live.cases]
        if unknown:
            raise UserError(f"--cases: {', '.join(unknown)} not among {ctx.scenario.name}'s cases "
                            f"({', '.join(live.cases)})")
        cases = [c for c in live.cases if c in opts.cases]
    if (live or opts.during) and ctx.settings.is_remote:
        raise UserError(f"{ctx.scenario.name}: the live writer watches the table's directory while the engine "
                        "runs: it needs a local warehouse, not S3")
    if ctx.scenario.streaming is not None and (opts.reps != 1 or opts.warmup):
        raise UserError(f"{ctx.scenario.name}: a streaming run is one long run per engine: no --reps or --warmup")
    slots = schedule(ctx.engines, opts.reps, opts.warmup, cases) if ctx.engines else []
    if opts.cow_branch:
        slots = [replace(s, branch=INGEST_BRANCH) for s in slots]
    if opts.branch:
        if opts.source is None or live:
            raise UserError(f"a branch to compact ({opts.branch}) is a source table's, without a live writer")
        slots = [replace(s, branch=opts.branch) for s in slots]
    return slots


def run_scenario(opts: RunOptions, progress: Progress) -> list[RunResult]:
    ctx = resolve(opts, progress)
    slots = plan_slots(ctx, opts)
    ctx = described(ctx)
    state = RunState(run_id=ctx.run_id, pid=os.getpid(), started_at=now_iso(), scenario=ctx.scenario.name,
                     scale=ctx.scale, file_scale=ctx.counts_scale, engines=ctx.engines, reps=opts.reps,
                     expected_results=len(slots) + (ctx.scenario.streaming is not None),
                     command=" ".join(sys.argv)[:500])
    out: list[RunResult] = []
    failed = ""
    with ExitStack() as stack:
        stack.enter_context(WarehouseLock(ctx.settings.lock_path, wait=opts.wait, say=progress.info))
        stale = remove_stale_cgroups(stale_parents())
        if stale:
            progress.info(f"removed {len(stale)} cgroup(s) left by a killed run")
        write_run_state(ctx.run_dir, state)
        try:
            if ctx.scenario.live_writer is not None and ctx.shared is None:
                # a live writer's cases are judged, never timed: one process per engine serves them all
                ctx = replace(ctx, shared=stack.enter_context(SharedProcesses(log_dir=ctx.run_dir / "work")))
            ctx = prepare_run(ctx, stack)
            if ctx.scenario.streaming is not None:
                out += run_streaming(ctx)
            else:
                for slot in slots:
                    out.append(run_maintenance(ctx, slot, setup_check) if ctx.maintenance else run_one(ctx, slot))
            failed = finish_source(ctx)
            state.state, state.note = "complete", failed
        except BaseException as exc:
            state.state, state.note = "interrupted", f"{type(exc).__name__}: {exc}"[:500]
            raise
        finally:
            state.ended_at = now_iso()
            write_run_state(ctx.run_dir, state)
    progress.block(summary_table(out, ctx.engines))
    progress.info(f"results: {ctx.run_dir}")
    if failed:
        raise RunFailed(failed)
    return out


def described(ctx: RunContext) -> RunContext:
    """The context with the environment every result records: the machine, the warehouse's storage, the versions
    of the harness's and the engines' packages."""
    packages = HARNESS_PACKAGES + tuple(p for e in ctx.engines for p in engine_class(e).packages)
    env = environment(ctx.settings.state_path if ctx.settings.is_remote else ctx.settings.warehouse_path,
                      packages=packages, iceberg_java=ICEBERG_VERSION)
    return replace(ctx, environment=env.model_copy(update={"warehouse": ctx.settings.storage_description()}),
                   versions=package_versions(packages))


def prepare_run(ctx: RunContext, stack: ExitStack) -> RunContext:
    """What the run prepares once, before its first engine run, as a new context: the served catalog (served while
    `stack` is open), the catalog, the dataset (generated; a source's clone, with its pin, watch and shape; or a
    maintenance case's table in place, put back when `stack` closes) and the partition filter resolved on it."""
    progress = ctx.progress
    log = ctx.run_dir / "work" / "catalog-server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    served = None
    if ctx.serves_catalog:
        served = (ctx.shared.serve(ctx.settings, log) if ctx.shared is not None
                  else stack.enter_context(serve(ctx.settings, log_file=log)))
    catalog = load_catalog(ctx.settings)
    ctx = replace(ctx, served=served, catalog=catalog)
    if ctx.source is not None and ctx.maintenance is None:
        ctx = use_source(ctx)
    elif ctx.source is not None:  # a maintenance case's, the suite's own, in place: it deletes files
        ctx = replace(ctx, dataset=in_place(ctx, stack))
    else:
        ds = prepare(catalog, ctx.settings, ctx.scenario.table, ctx.scale, ctx.seed, progress=progress,
                     file_scale=ctx.file_scale)
        progress.info(f"dataset {ds.table}: {ds.files} files, {ds.bytes / 1e6:.1f} MB, {ds.rows} rows "
                      + (f"(file counts of scale {ds.file_scale:g}, bytes of scale {ds.scale:g}) "
                         if ds.file_scale is not None else "")
                      + f"({'reused' if ds.reused else f'generated in {ds.generation_s:.1f} s'})")
        ctx = replace(ctx, dataset=ds)
    assert ctx.dataset is not None
    where = resolve_filter(ctx.scenario, catalog, ctx.dataset)
    if where:
        progress.info(f"partition filter: {where} (only the partitions it selects are compacted)")
    return replace(ctx, partition_filter=where)


def use_source(ctx: RunContext) -> RunContext:
    """--source-table: the context with the source fingerprinted (its pin, and the watch over it from then on),
    its clone as the dataset, and its shape (the conformance cases it touches, recorded with every result)."""
    assert ctx.source is not None and ctx.catalog is not None
    progress = ctx.progress
    src = load_source(ctx.source)  # loaded once: pinned and cloned from the same metadata, whoever commits after
    pin = pin_source(src, ctx.source.snapshot_id)
    ds = prepare_clone(ctx.catalog, ctx.settings, ctx.source, ctx.scenario, progress,
                       read_settings=ctx.catalog_settings, src=src)
    shaped = source_shape(src, ds.snapshot_id)
    progress.info(f"source {ctx.source.table}: its shape touches {len(shaped.touches)} conformance case(s)"
                  + (f": {', '.join(t.case for t in shaped.touches)}" if shaped.touches else "")
                  + (f" (shape unknown: {shaped.shape_error})" if shaped.shape_error else ""))
    progress.info(f"source {ctx.source.table} pinned at snapshot {ds.snapshot_id} (fingerprint {pin.digest} over "
                  f"{len(pin.files)} files, taken in {pin.seconds:.2f} s"
                  + (f"; refs carried: {', '.join(pin.carried)}" if pin.carried else "") + f"): clone "
                  f"{ds.table}, {ds.files} files, {ds.bytes / 1e6:.1f} MB, {ds.rows} rows "
                  f"({'reused' if ds.reused else f'cloned and read in {ds.generation_s:.1f} s'})")
    return replace(ctx, dataset=ds, source_before=pin, source_shape=shaped,
                   source_watch=SourceWatch(seen_unix=pin.taken_unix))


def summary_table(results: list[RunResult], engines: list[str]) -> str:
    from bench.core.stats import floor_multiples, floors, paired_speedup

    width = max([12, *(len(e) for e in engines)])
    rows = [f"{'engine':<{width}} {'rep':<7} {'order':<6} {'status':<9} {'duration':>10} {'files in -> out':>18} "
            f"{'verified':>9}"]
    for r in results:
        dur = f"{r.duration_s:.2f} s" if r.duration_s is not None else "-"
        files = f"{r.files_in} -> {r.files_out if r.files_out is not None else '-'}"
        rows.append(f"{r.engine:<{width}} {'warmup' if r.warmup else r.rep:<7} {r.order_position + 1:<6} {r.status:<9} "
                    f"{dur:>10} {files:>18} {str(r.verified):>9}")
    if results and all(r.shared_process for r in results):
        rows.append("no speedup: the engines ran in shared processes (bench conformance judges correctness; a "
                    "warm process's time is no measurement)")
        return "\n".join(rows)
    no_commit = set(floors(results))
    compared = [e for e in engines if e not in no_commit]
    base = compared[0] if compared else ""
    for e in compared[1:]:
        sp = paired_speedup(results, base, e)
        if sp.pairs:
            rng = (f" (min {sp.ratio.min:.2f}x, max {sp.ratio.max:.2f}x over {len(sp.pairs)} paired reps)"
                   if len(sp.pairs) > 1 else "")
            rows.append(f"speedup: {sp.faster} is {sp.ratio.median:.2f}x faster than {sp.slower}"
                        f" (compaction wall time, verified runs){rng}")
        else:
            rows.append(f"speedup: {e} vs {base}: not available (needs verified runs of both)")
    for fm in floor_multiples(results):
        if fm.ratio.median is None:
            rows.append(f"floor: {fm.engine} vs {fm.floor}: not available (needs verified runs of both)")
            continue
        rng = f" (min {fm.ratio.min:.2f}x, max {fm.ratio.max:.2f}x)" if fm.ratio.n > 1 else ""
        rows.append(f"floor: {fm.engine} takes {fm.ratio.median:.2f}x the time of {fm.floor}, which reads, applies "
                    f"deletes and writes the same data, with no planning beyond listing the live files and no "
                    f"commit{rng}")
    return "\n".join(rows)


REMOTE = "the warehouse is not on this machine's file system: the harness counts opens of local files only"


def open_watch(ctx: RunContext, r: RunResult) -> OpenWatch | None:
    """A watch over the input's files for this run (started by the caller when the engine is told to go)."""
    ds = ctx.dataset
    if ds is None or ctx.catalog is None or not r.before.delete_files or ctx.settings.is_remote:
        return None
    return OpenWatch.of(ds.location, live_files(ctx.catalog.load_table(ds.table)))


def opens_record(ctx: RunContext, r: RunResult, watch: OpenWatch | None, er: EngineRun) -> DeleteOpens | None:
    """The record of the delete files' opens this run gets: none when its input has no delete file; on a
    warehouse the harness cannot watch (S3) one that says it was not counted, and why."""
    if watch is None:
        return not_counted(REMOTE) if r.before.delete_files and ctx.settings.is_remote else None
    if not watch.started:
        return not_counted("the engine never reached its compaction (its setup did not end)")
    tasks = er.record.outcome.read_tasks if er.record is not None and er.record.outcome is not None else None
    return watch.record(tasks)
