"""A maintenance case's engine run (bench conformance, a case whose operation is expire-snapshots, remove-orphan-files,
rewrite-manifests or rewrite-position-deletes): bench.runner.engine_run's path with one maintenance operation instead
of a compaction, verified against what the case states by the spec (bench.verify.maintenance), not against a
compaction's checks.

Expiry and orphan removal delete files, so they never run on a zero-copy clone (whose files are its source's): the
case's own table, which the suite wrote, is the dataset in place (`in_place`): registered in the run's catalog at its
own metadata file and sealed in a vault beside the warehouse, so that every engine starts from it byte for byte (the
reset puts back what an engine deleted, deletes what it added) and the table is left as written after the case
(`put_back`).  A user's table is never a maintenance case's table.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, replace

from pyiceberg.exceptions import NoSuchTableError

from bench.core.dataset import GeneratedTable, GroundTruth, manifest_path, parked_dir, save_manifest, spare_dir
from bench.core.records.engine_run import CacheState, SetupIO
from bench.core.records.verification import Check, Verification
from bench.core.results import RunResult, file_label
from bench.core.source import load_source
from bench.core.table.entries import LiveFiles, live_files
from bench.core.table.state import restore
from bench.engines.base import MaintenanceOp
from bench.runner.context import RunContext, Slot
from bench.runner.engine_run import (
    build_job,
    engine_report,
    harness_failed,
    record_unsupported,
    restore_input,
    why_unsupported,
)
from bench.runner.inputs import SetupGuard
from bench.runner.process import run_engine_process
from bench.runner.record import assemble, checked, finish, new_result
from bench.verify.maintenance import Resolved, outcome
from datagen.dataset import seal

# the feature (bench.engines.base.FEATURES) an engine needs for each maintenance operation
FEATURE = {"expire_snapshots": "expire-snapshots", "remove_orphan_files": "remove-orphan-files",
           "rewrite_manifests": "rewrite-manifests", "rewrite_position_deletes": "rewrite-position-deletes"}


@dataclass
class MaintenanceRun:
    """What a maintenance case asks of every engine: the operation, and what it must leave (resolved on the table as
    written)."""

    op: MaintenanceOp
    expected: Resolved


def in_place(ctx: RunContext, stack: ExitStack) -> GeneratedTable:
    """The case's table (ctx.source, the suite's own) as the run's dataset in place: registered in the run's catalog
    at the metadata file it was written with (a new one when the case is written again), its files sealed in a
    vault; put back as written when `stack` closes (after the run's last engine)."""
    ds = _in_place(ctx)
    stack.callback(put_back, ctx, ds)
    return ds


def _in_place(ctx: RunContext) -> GeneratedTable:
    assert ctx.source is not None and ctx.catalog is not None
    src = load_source(ctx.source)
    key = hashlib.sha256(f"{'.'.join(src.name())}|{src.metadata_location}".encode()).hexdigest()[:12]
    name = f"case_{key}"
    ident = f"{ctx.settings.namespace}.{name}"
    # sealed afresh for every campaign, never reused: the case's files were aged again before it (their mtimes:
    # datagen.conformance.age_orphans), which a kept vault would read as files changed in place
    shutil.rmtree(spare_dir(ctx.settings.state_path, name), ignore_errors=True)
    manifest_path(ctx.settings.state_path, name).unlink(missing_ok=True)
    try:
        ctx.catalog.drop_table(ident)  # the catalog's entry only: no file is deleted
    except NoSuchTableError:
        pass
    ctx.catalog.create_namespace_if_not_exists(ctx.settings.namespace)
    t0 = time.perf_counter()
    tbl = ctx.catalog.register_table(ident, src.metadata_location)
    table_files, hashes = seal(tbl.location(), ctx.settings, name)
    entries = live_files(tbl).all
    snap = tbl.current_snapshot()
    ds = GeneratedTable(
        table=ident, kind=ctx.scenario.kind, recipe_hash=key, scale=0.0, seed=0,
        recipe={"source": ctx.source.model_dump(mode="json") | {"metadata_location": src.metadata_location},
                "in_place": True},
        snapshot_id=snap.snapshot_id if snap else None, metadata_location=tbl.metadata_location,
        location=tbl.location(), files=len(entries), bytes=sum(e.data_file.file_size_in_bytes for e in entries),
        rows=ctx.expected.rows if ctx.expected else 0, live_files=sorted(LiveFiles.paths(entries)),
        table_files=table_files, table_hashes=hashes,
        # the rows are the case's to state (bench.verify.maintenance reads them per ref), not a generator's
        ground_truth=GroundTruth(rows=ctx.expected.rows if ctx.expected else 0, checksum="",
                                 computed_by="the case's expected rows"),
        created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), generation_s=time.perf_counter() - t0,
        generator_version="in-place")
    save_manifest(ctx.settings.state_path, ds)
    return ds


def put_back(ctx: RunContext, ds: GeneratedTable) -> None:
    """The case's table `ds` as written again, after its last engine (what that engine deleted put back, what it
    added deleted): the next campaign reuses it."""
    if ctx.catalog is None:
        return
    name = ds.table.split(".")[-1]
    restore(ctx.catalog, ds.table, ds.metadata_location, ds.location, ds.table_files,
            spare_dir(ctx.settings.state_path, name), parked_dir(ctx.settings.state_path, name))


def run_maintenance(ctx: RunContext, slot: Slot, setup_check: Callable[[SetupIO | None], Check | None]) -> RunResult:
    """One engine's maintenance operation (ctx.maintenance) on the case's table: restored, the table out of reach
    while the engine sets up, the operation in the engine's own process, then the table against the case's
    expectation, and the setup rule (`setup_check`: the run module's, which calls this one, so it is handed down, not
    imported)."""
    run: MaintenanceRun = ctx.maintenance
    label = f"[{slot.engine} {slot.tag}]"
    r = new_result(ctx, slot)
    why = why_unsupported(ctx, slot, operation=FEATURE[run.op.op])
    if why:
        return finish(ctx, record_unsupported(r, why), label)
    try:
        ctx.progress.info(f"{label} restoring the case's table, then {run.op.describe()}")
        restored = restore_input(ctx)
        r = assemble(r, restored)
        work = ctx.run_dir / "work" / f"{ctx.scenario.name}--{file_label(slot.engine)}--{slot.tag}"
        guard = SetupGuard(ctx, r.bytes_in or 0)
        job = build_job(ctx, slot, work, restored, maintenance=[run.op])
        guard.park()
        try:
            er = run_engine_process(ctx, slot, job, work, on_ready=guard.release)
        finally:
            if guard.cache is None:  # the engine never finished its setup: the table back all the same
                guard.release(None, None)
        report = engine_report(ctx, r, er)
        if er.record is not None and er.record.outcome is not None:  # what the engine's own tool reported
            report = replace(report, engine_result={m.describe: m.result for m in er.record.outcome.maintenance})
        r = assemble(r, report, cache=guard.cache or CacheState(), setup_io=guard.io)
        if r.status == "ok":
            assert ctx.catalog is not None and ctx.dataset is not None
            checks = outcome(ctx.catalog.load_table(ctx.dataset.table), run.expected)
            r = checked(assemble(r, verification=Verification(verified=True), verified=True), *checks)
            r = checked(r, setup_check(r.setup_io))
    except Exception as exc:  # noqa: BLE001 - a harness-side failure is still a recorded result
        r = harness_failed(r, exc)
    return finish(ctx, r, label)
