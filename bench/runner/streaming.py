"""A streaming run (scenarios with `streaming:`): for the baseline `none` and each engine, the table reset to
its dataset state, then `cycles` cycles of: the writer commits `commits_per_cycle` micro-batches
(datagen.streaming, the same for every engine), the engine runs one maintenance step (its operations in the
scenario's order, in its own process: bench.runner.process, setup excluded from the maintenance time), and
the table is measured and verified against the generator (bench.verify.streaming).  One result per engine
with a `streaming` record: a CycleRecord per cycle and the totals.

Modes (the scenario's `streaming.mode`, or `bench run --stream-mode`):
    sequential   the writer pauses while maintenance runs
    concurrent   the writer keeps committing at its cadence while the maintenance step runs (from the moment
                 the engine has set up until its process ends): conflicts, retries, commits that never land and
                 the writer's commit latency are recorded, and each cycle gets a verdict (safe / unsafe)
    branch       concurrent, with the writer on the branch `ingest`; maintenance works on `ingest` and the
                 harness publishes main := the head of `ingest` when that head is a maintenance snapshot (it
                 has the writer's commits up to the one it was made on); main's lag behind ingest is measured
                 every cycle (an engine that cannot work on a branch is recorded unsupported)
The baseline `none` runs no maintenance at all: what maintenance buys is measured against it.
A local warehouse only (the files maintenance wrote are found by listing the table's directories).
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyiceberg.table.snapshots import ancestors_of

from bench.core.catalog.rest import request_log
from bench.core.cost import run_cost
from bench.core.errors import UserError
from bench.core.records.live import CycleRecord, StreamingRecord, StreamingTotals
from bench.core.records.telemetry import CoreLimit, StorageCap
from bench.core.records.verification import Check, Verification, difference
from bench.core.results import RunResult, file_label
from bench.core.table.entries import live_files
from bench.core.uri import local_path
from bench.engines import engine_class
from bench.reads import duck
from bench.reads.queries import query_sql
from bench.runner.context import RunContext, Slot
from bench.runner.engine_run import (
    Restored,
    build_job,
    harness_failed,
    record_unsupported,
    restore_input,
    why_unsupported,
)
from bench.runner.inputs import SetupGuard
from bench.runner.live import INGEST_BRANCH
from bench.runner.process import EngineRun, run_engine_process, storage_record, tail
from bench.runner.record import assemble, finish, new_result
from bench.verify.readers import merge_on_read
from bench.verify.streaming import (
    CYCLE_LINEAGE_RULE,
    RULES,
    check_content,
    cycle_integrity,
    cycle_lineage,
    measure_table,
)
from datagen.queries import reads_plan
from datagen.sink import AppendWriter
from datagen.streaming import StreamCommit, StreamShape, StreamWriter

STREAM_PREFIX = "stream-"  # the writer's data files (datagen.streaming): not what maintenance wrote
BASELINE = "none"  # the label of the run without maintenance
BASELINE_COLOR = "#7B8794"
GB = 1e9
Writer = StreamWriter | AppendWriter  # the CDC writer or the append sink: the same interface


class Cadence:
    """The writer committing on a thread at its cadence, from `start()` (the engine has set up) until
    `detach()` (the engine's process ended): the companion of the maintenance process."""

    def __init__(self, writer: Writer, first_index: int, cadence_s: float):
        self.writer, self.index, self.cadence_s = writer, first_index, cadence_s
        self.landed: list[StreamCommit] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self, pid: int) -> None:
        pass

    def start(self, *_: Any) -> None:
        self._thread = threading.Thread(target=self._loop, name="stream-writer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.landed.append(self.writer.commit(self.index))
            except Exception as e:  # noqa: BLE001 - recorded; the maintenance goes on
                self.error = f"{type(e).__name__}: {e}"[:500]
                return
            self.index += 1
            self._stop.wait(self.cadence_s)

    def detach(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=120)


def _listing(root: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            try:
                out[os.path.join(dirpath, n)] = os.path.getsize(os.path.join(dirpath, n))
            except OSError:
                pass
    return out


def _live_sizes(tbl, ref: str) -> dict[str, int]:
    head = tbl.metadata.refs.get(ref)
    if head is None:
        return {}
    files = live_files(tbl, head.snapshot_id)
    return {e.data_file.file_path: e.data_file.file_size_in_bytes for e in files.all}


def conflicts(ctx: RunContext, slot: Slot, log: Path, unix0: float, unix1: float) -> tuple[int, list[str]]:
    """Commit conflicts of one maintenance step: the REST catalog's 409 answers to commits between unix
    times unix0 and unix1 (the writer commits through JDBC, so these are the engine's), and the lines of
    the engine's log that name a retry or a conflict (the engine's own `conflict_log_pattern`)."""
    n, evidence = 0, []
    for e in request_log.requests(ctx.served.log_file if ctx.served else None, unix0, unix1):
        if e.get("method") == "POST" and e.get("status") == 409:
            n += 1
            evidence.append(f"REST catalog: 409 to POST {e.get('path')}")
    pattern = engine_class(slot.engine).conflict_log_pattern
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines()
                 if pattern and re.search(pattern, ln)]
    except OSError:
        lines = []
    n += len(lines)
    return n, (evidence + [ln[:300] for ln in lines])[:5]


def _writer_stats(rec: CycleRecord, commits: list[StreamCommit]) -> None:
    landed = [c for c in commits if c.landed]
    rec.commits += len(landed)
    rec.commits_failed += len(commits) - len(landed)
    rec.writer_retries += sum(max(0, c.attempts - 1) for c in commits)
    rec.writer_conflicts += [x for c in commits for x in c.conflicts][:5]
    rec.writer_conflict_count += sum(len(c.conflicts) for c in commits)
    rec.files_ingested += sum(c.files for c in landed)
    rec.rows_ingested += sum(c.rows_inserted for c in landed)
    rec.bytes_ingested += sum(c.bytes for c in landed)
    times = [c.commit_s for c in landed if c.commit_s is not None]
    if times:
        rec.writer_commit_s_mean, rec.writer_commit_s_max = round(sum(times) / len(times), 4), max(times)


def _branch_lag(rec: CycleRecord, tbl, writer: Writer, published_from: int | None) -> int:
    """main's lag behind ingest, in writer commits and seconds; returns the index of main's newest writer commit."""
    landed = [c for c in writer.commits if c.landed]
    last = landed[-1] if landed else None
    main_index = published_from if published_from is not None else -1
    rec.main_lag_commits = sum(1 for c in landed if c.index > main_index)
    main_commit = next((c for c in landed if c.index == main_index), None)
    if last is not None:
        main_t = main_commit.started_unix if main_commit is not None else writer.commits[0].started_unix
        rec.main_lag_s = round(max(0.0, last.started_unix - main_t), 3) if rec.main_lag_commits else 0.0
    return main_index


def _newest_writer_commit(tbl, snapshot_id: int, writer: Writer) -> int | None:
    """The index of the newest writer commit in the ancestry of `snapshot_id`."""
    by_id = {c.snapshot_id: c.index for c in writer.commits if c.landed}
    return next((by_id[s.snapshot_id] for s in ancestors_of(tbl.metadata.snapshot_by_id(snapshot_id), tbl.metadata)
                 if s.snapshot_id in by_id), None)


def run_streaming(ctx: RunContext) -> list[RunResult]:
    """The baseline and every engine of the run, one after the other."""
    if ctx.settings.is_remote:
        raise UserError(f"{ctx.scenario.name}: a streaming run lists the table's directories to find what "
                        "maintenance wrote: it needs a local warehouse, not S3")
    labels = [BASELINE, *[e for e in ctx.engines if e != BASELINE]]
    baseline: RunResult | None = None
    out = []
    for label in labels:
        slot = Slot(engine=label, rep=1, warmup=False, order=tuple(labels))
        r = stream_one(ctx, slot, baseline)
        if label == BASELINE:
            baseline = r
        out.append(r)
    return out


@dataclass
class Ran:
    """What a streaming run's cycles leave for its record, recorded as each cycle ends (a harness failure keeps the
    cycles before it): the cycles, the first --storage-cap and --cores records of its maintenance processes, and
    the log of the last that failed."""

    cycles: list[CycleRecord] = field(default_factory=list)
    storage_cap: StorageCap | None = None
    core_limit: CoreLimit | None = None
    log_tail: list[str] = field(default_factory=list)

    def process(self, er: EngineRun) -> None:
        """A maintenance step's process ended."""
        if er.record is not None:
            self.storage_cap, self.core_limit = self.storage_cap or er.storage_cap, self.core_limit or er.core_limit
        if er.status != "ok":
            self.log_tail = tail(er.log)

    def record_fields(self) -> dict[str, Any]:
        return {"storage_cap": self.storage_cap, "core_limit": self.core_limit, "log_tail": self.log_tail}


def stream_one(ctx: RunContext, slot: Slot, baseline: RunResult | None) -> RunResult:
    sc, ds = ctx.scenario, ctx.dataset
    st = sc.streaming
    assert ds is not None and ctx.catalog is not None and st is not None
    is_base = slot.engine == BASELINE
    label = f"[{slot.engine} streaming {st.mode}]"
    r = new_result(ctx, slot, BASELINE_COLOR if is_base else None, runs_engine=not is_base)
    rows, per_cycle = st.rows_at(ctx.scale, sc.local_scale), st.commits_at(ctx.scale)
    rec = StreamingRecord(mode=st.mode, baseline=is_base, cycles_planned=st.cycles,
                          commits_per_cycle=per_cycle, rows_per_commit=rows, cadence_s=st.cadence_at(ctx.scale),
                          maintenance=[] if is_base else [op.describe() for op in st.maintenance],
                          sink=st.sink.record(ctx.scale, _spec_text(ctx)) if st.sink is not None else None)
    r = assemble(r, streaming=rec)
    why = None if is_base else why_unsupported(ctx, slot)
    if why:
        return finish(ctx, record_unsupported(r, why), label)
    work = ctx.run_dir / "work" / f"{sc.name}--{file_label(slot.engine)}--streaming"
    work.mkdir(parents=True, exist_ok=True)
    ran = Ran()
    try:
        ctx.progress.info(f"{label} restoring {ds.table} to its dataset state, then {st.cycles} cycles of "
                          f"{per_cycle} commits x {rows} rows"
                          + ("" if is_base else f" and maintenance ({', '.join(rec.maintenance)})"))
        restored = restore_input(ctx)
        r = assemble(r, restored)
        branch = INGEST_BRANCH if st.mode == "branch" else "main"
        if branch != "main":
            assert ds.snapshot_id is not None  # a generated dataset always has one
            ctx.catalog.load_table(ds.table).manage_snapshots().create_branch(ds.snapshot_id, branch).commit()
        writer = make_writer(ctx, slot, rows, branch, work)
        with writer:
            cycles(ctx, ran, slot, writer, branch, work, restored)
        # a maintenance step that failed with the writer committing beside it is a finding of the mode (counted
        # in maintenance_not_landed, its error kept); alone, or out of memory or time, it fails the run
        tolerated = ("ok", "none") + (("failed",) if st.mode != "sequential" else ())
        bad = [c.maintenance_status for c in ran.cycles if c.maintenance_status not in tolerated]
        r = assemble(r, ran, status=bad[0] if bad else "ok",
                     error=next((f"cycle {c.cycle}: {c.maintenance_error}" for c in ran.cycles
                                 if c.maintenance_error), None))
    except Exception as exc:  # noqa: BLE001 - a harness-side failure is still a recorded result
        r = harness_failed(assemble(r, ran), exc)
    r = finish(ctx, streamed(r, rec, ran.cycles, baseline), label)
    t = r.streaming.totals if r.streaming else StreamingTotals()
    ctx.progress.info(f"{label} {t.cycles} cycles, {t.commits} commits, {t.bytes_ingested / 1e6:.1f} MB ingested, "
                      f"maintenance {t.maintenance_s:.1f} s"
                      + (f" ({t.maintenance_s_per_gb:.0f} s/GB, write amplification {t.write_amplification:.2f})"
                         if t.maintenance_s_per_gb is not None and t.write_amplification is not None else "")
                      + f", unsafe cycles {t.unsafe_cycles}")
    return r


def streamed(r: RunResult, rec: StreamingRecord, ran: list[CycleRecord], baseline: RunResult | None) -> RunResult:
    """The record with the cycles that ran, their totals, and the verification over them (each cycle's content and
    integrity, and all of them having run); the table after the last cycle is the run's output."""
    rec = rec.model_copy(update={"cycles": ran})
    rec = rec.model_copy(update={"totals": totals(rec, baseline)})
    checks = [Check(name=f"cycle_{c.cycle}_content", ok=c.content_ok, message=f"{c.verdict}: {c.reason}",
                    about="rows")
              for c in ran] + [integrity_check(c) for c in ran]
    if len(ran) != rec.cycles_planned:
        checks.append(Check(name="all_cycles_ran", ok=False, message=f"{len(ran)} of {rec.cycles_planned} cycles ran"))
    lineage = any(x.name == "row_lineage_kept" for c in ran for x in c.integrity)
    v = Verification(checks=checks, rules=list(RULES) + ([CYCLE_LINEAGE_RULE] if lineage else []),
                     differences=[difference(c) for c in checks if not c.ok],
                     verified=bool(checks) and all(c.ok for c in checks))
    last = ran[-1].table if ran else None
    output = {} if last is None else {"after": last, "files_out": last.data_files + last.delete_files,
                                      "bytes_out": last.data_bytes + last.delete_bytes}
    return assemble(r, streaming=rec, verification=v, verified=v.verified,
                    duration_s=rec.totals.maintenance_s if r.status == "ok" else None, **output)


def make_writer(ctx: RunContext, slot: Slot, rows: int, branch: str, work: Path) -> Writer:
    """The scenario's writer: its append sink (datagen.sink) or the CDC writer (datagen.streaming)."""
    ds, st = ctx.dataset, ctx.scenario.streaming
    assert ds is not None and st is not None
    _, truth = reads_plan(ds)
    if st.sink is not None:
        return AppendWriter(ds, ctx.catalog_settings, st.sink.at(ctx.scale), file_label(slot.engine), truth,
                            branch=branch)
    shape = StreamShape(rows, st.update_share, st.delete_share, st.in_batch_delete_share, st.append_only_share)
    return StreamWriter(ds, ctx.catalog_settings, shape, file_label(slot.engine), truth, branch=branch,
                        log_file=str(work / "writer-jvm.log"))


def _spec_text(ctx: RunContext) -> str:
    """The table's partition spec in one line, e.g. `identity(event_date)` (`unpartitioned` without one)."""
    ds = ctx.dataset
    assert ds is not None and ctx.catalog is not None
    tbl = ctx.catalog.load_table(ds.table)
    spec, schema = tbl.spec(), tbl.schema()
    return ", ".join(f"{f.transform}({schema.find_column_name(f.source_id)})" for f in spec.fields) or "unpartitioned"


def _manifests(root: str) -> set[str]:
    """The manifest files under a table's metadata/ (Avro files that are not manifest lists)."""
    return {p for p in _listing(root) if p.endswith(".avro") and not os.path.basename(p).startswith("snap-")}


@dataclass
class Before:
    """The table before a cycle's maintenance: what its I/O is measured against."""

    snapshots: set[int]
    live: dict[str, int]  # the branch's live data and delete files -> size
    data: dict[str, int]  # every file under data/ -> size
    metadata: dict[str, int]  # every file under metadata/ -> size
    table: Any = None  # the table's metadata (TableMetadata): the cycle's integrity is checked against it


def integrity_check(c: CycleRecord) -> Check:
    """One check per cycle: its integrity checks (bench.verify.streaming.cycle_integrity), the required ones held."""
    failed = [x for x in c.integrity if x.required and not x.ok]
    return Check(name=f"cycle_{c.cycle}_integrity", ok=bool(c.integrity) and not failed,
                 message=("; ".join(f"{x.name}: {x.message}" for x in failed) if failed else
                          f"{len(c.integrity)} integrity checks held" if c.integrity else "not checked"))


def cycles(ctx: RunContext, ran: Ran, slot: Slot, writer: Writer, branch: str, work: Path,
           restored: Restored) -> None:
    """The run's cycles from the `restored` input: the writer's commits, the maintenance step (not for the
    baseline), what it read and wrote, the table verified against the generator, the reader queries; one
    CycleRecord each, into `ran`."""
    st = ctx.scenario.streaming
    assert st is not None
    published_from: int | None = None
    index = 0
    assert ctx.dataset is not None
    metadata = f"{local_path(ctx.dataset.location)}/metadata"
    for n in range(1, st.cycles + 1):
        cyc = CycleRecord(cycle=n)
        first, manifests = len(writer.commits), _manifests(metadata)
        for _ in range(st.commits_at(ctx.scale)):
            writer.commit(index)
            index += 1
            if st.mode != "sequential":
                time.sleep(st.cadence_at(ctx.scale))
        before = before_state(ctx, branch)
        if slot.engine != BASELINE:
            index = maintain(ctx, ran, slot, cyc, writer, index, branch, work / f"cycle{n:03d}", restored)
        this = writer.commits[first:]
        _writer_stats(cyc, this)
        tbl, snaps = io_delta(ctx, cyc, writer, before, branch, measured=slot.engine != BASELINE)
        cyc.manifests_created = len(_manifests(metadata) - manifests)
        cyc.integrity = cycle_integrity(before.table, tbl, branch, snaps,
                                        any(op.op == "expire_snapshots" for op in cyc.op_results),
                                        frozenset(ctx.scenario.output.sets_properties)
                                        | (frozenset() if slot.engine == BASELINE
                                           else engine_class(slot.engine).sets_properties))
        if slot.engine != BASELINE:  # format v3: the rows the maintenance moved keep their lineage
            cyc.integrity += cycle_lineage(tbl, branch, before.live, STREAM_PREFIX)
        deleted = [k for c in this if c.landed for k in c.deleted_keys]
        published_from = verify_cycle(ctx, cyc, tbl, writer, branch, snaps, deleted, published_from)
        reads(ctx, cyc, writer, writer.expected().answers if branch == "main" else None)
        ran.cycles.append(cyc)
        describe(ctx, slot, cyc, branch)


def before_state(ctx: RunContext, branch: str) -> Before:
    ds = ctx.dataset
    assert ds is not None and ctx.catalog is not None
    tbl, location = ctx.catalog.load_table(ds.table), local_path(ds.location)
    return Before(snapshots={s.snapshot_id for s in tbl.metadata.snapshots}, live=_live_sizes(tbl, branch),
                  data=_listing(f"{location}/data"), metadata=_listing(f"{location}/metadata"), table=tbl.metadata)


def maintain(ctx: RunContext, ran: Ran, slot: Slot, cyc: CycleRecord, writer: Writer, index: int,
             branch: str, work: Path, restored: Restored) -> int:
    """One maintenance step in the engine's own process (bench.runner.engine_run's path), the writer committing
    beside it unless sequential; returns the writer's next commit index."""
    st = ctx.scenario.streaming
    assert st is not None
    paced = st.mode != "sequential"
    ctx.progress.info(f"[{slot.engine} cycle {cyc.cycle}/{st.cycles}] maintenance"
                      + (" with the writer committing" if paced else ""))
    cadence = Cadence(writer, index, st.cadence_at(ctx.scale)) if paced else None
    job = build_job(ctx, slot, work, restored, branch=branch,
                    maintenance=[op for op in st.maintenance if op.due(cyc.cycle)])
    unix0 = time.time()
    guard = SetupGuard(ctx, 0, apply_cache=False)  # out of reach while the engine sets up, as a single run

    def ready(read_bytes: int | None, read_chars: int | None) -> None:
        guard.release(read_bytes, read_chars)
        if cadence is not None:  # the writer commits from the moment the table is back
            cadence.start()
    guard.park()
    try:
        er = run_engine_process(ctx, slot, job, work, companion=cadence, on_ready=ready)
    finally:
        if guard.cache is None:  # the engine never finished its setup: the table back all the same
            guard.release(None, None)
    cyc.setup_parked = guard.io.parked
    cyc.maintenance_conflicts, cyc.conflict_evidence = conflicts(ctx, slot, er.log, unix0, time.time())
    if cadence is not None:
        index = cadence.index
        cyc.commits_during_maintenance = sum(1 for c in cadence.landed if c.landed)
        if cadence.error:
            cyc.evidence["writer_error"] = cadence.error
    record_cycle(ctx, cyc, er)
    ran.process(er)
    return index


def record_cycle(ctx: RunContext, cyc: CycleRecord, er: EngineRun) -> None:
    """What the maintenance step's process said and what was measured around it, into the cycle's record."""
    cyc.maintenance_status, cyc.maintenance_error = er.status, er.error
    if er.record is not None:
        cyc.setup_s = er.record.setup_s
        cyc.phases = er.record.phases
        # a step that failed (e.g. its commit lost every retry) still spent its time: it counts
        cyc.maintenance_s = er.record.duration_s
        cyc.storage_cap = storage_record(er)
        for p in er.record.phases:
            if p.op:  # not the worker's own steps around them (e.g. --storage-cap's flush)
                cyc.op_seconds[p.op] = round(cyc.op_seconds.get(p.op, 0.0) + p.seconds, 4)
        if er.record.outcome is not None:
            cyc.op_results = list(er.record.outcome.maintenance)
    tel = er.telemetry
    cyc.peak_rss_bytes = getattr(tel, "peak_rss_bytes", None)
    cyc.mean_cores = getattr(tel, "mean_cores", None)
    cyc.process_read_bytes = getattr(tel, "read_bytes", None)
    cyc.process_write_bytes = getattr(tel, "write_bytes", None)
    cyc.cost_usd = run_cost(cyc.maintenance_s, ctx.instance_type, ran_on=ctx.environment.instance_type).total_usd


def io_delta(ctx: RunContext, cyc: CycleRecord, writer: Writer, before: Before, branch: str,
             measured: bool) -> tuple[Any, list[dict[str, Any]]]:
    """What the maintenance committed, read and wrote (when `measured`: not for the baseline); returns the
    table after it and the cycle's new snapshots, oldest first, each with who made it."""
    ds = ctx.dataset
    assert ds is not None and ctx.catalog is not None
    tbl = ctx.catalog.load_table(ds.table)
    writer_ids = {c.snapshot_id for c in writer.commits if c.landed}
    new = [s for s in tbl.metadata.snapshots if s.snapshot_id not in before.snapshots | writer_ids]
    cyc.maintenance_snapshots = len(new)
    location = local_path(ds.location)
    data, metadata = _listing(f"{location}/data"), _listing(f"{location}/metadata")
    cyc.stored_files = len(data) + len(metadata)
    cyc.stored_bytes = sum(data.values()) + sum(metadata.values())
    if measured:
        compacted = any(op.op == "compact" for op in cyc.op_results)
        cyc.maintenance_not_landed = int(cyc.maintenance_status != "ok" or (compacted and not new))
        after_live = _live_sizes(tbl, branch)
        cyc.bytes_read = sum(size for p, size in before.live.items() if p not in after_live)
        cyc.bytes_written = sum(size for p, size in data.items()
                                if p not in before.data and not os.path.basename(p).startswith(STREAM_PREFIX))
        cyc.metadata_bytes_written = sum(size for p, size in metadata.items() if p not in before.metadata)
    snaps = [{"snapshot_id": s.snapshot_id, "parent_id": s.parent_snapshot_id,
              "operation": s.summary.operation.value if s.summary else "",
              "who": "writer" if s.snapshot_id in writer_ids else "maintenance"}
             for s in sorted(tbl.metadata.snapshots, key=lambda s: s.sequence_number or 0)
             if s.snapshot_id not in before.snapshots]
    return tbl, snaps


def verify_cycle(ctx: RunContext, cyc: CycleRecord, tbl: Any, writer: Writer, branch: str,
                 snaps: list[dict[str, Any]], deleted: list, published_from: int | None) -> int | None:
    """The table after the cycle against the generator's (main; in branch mode after publishing, and the
    writer's branch too), `deleted` the keys the cycle's commits deleted; returns the index of main's newest
    writer commit (branch mode)."""
    ds = ctx.dataset
    assert ds is not None and ctx.catalog is not None
    if branch != "main":
        published_from = publish(ctx, cyc, tbl, writer, branch, published_from)
        tbl = ctx.catalog.load_table(ds.table)
    expected = writer.expected()
    main_ref = tbl.metadata.refs.get("main")
    main_id = main_ref.snapshot_id if main_ref is not None else None
    if branch != "main":
        _branch_lag(cyc, tbl, writer, published_from)
        at = next((c for c in writer.commits if c.landed and c.index == published_from), None)
        cyc.expected_rows = at.expected_rows if at else ds.ground_truth.rows
        cyc.expected_checksum = at.expected_checksum if at else ds.ground_truth.checksum
    else:
        cyc.expected_rows, cyc.expected_checksum = expected.rows, expected.checksum
    measure_table(cyc, tbl, main_id)
    check_content(cyc, tbl, main_id, ctx.catalog_settings, deleted, snaps)
    if branch != "main":
        ingest = CycleRecord(cycle=cyc.cycle, expected_rows=expected.rows, expected_checksum=expected.checksum)
        head = tbl.metadata.refs.get(branch)
        cyc.ingest_snapshot_id = head.snapshot_id if head is not None else None
        check_content(ingest, tbl, cyc.ingest_snapshot_id, ctx.catalog_settings, deleted, snaps)
        cyc.evidence["ingest"] = {"verdict": ingest.verdict, "reason": ingest.reason, **ingest.evidence}
        if ingest.verdict == "unsafe":
            cyc.content_ok, cyc.verdict = False, "unsafe"
            cyc.reason = f"main: {cyc.reason}; ingest: {ingest.reason}"
    return published_from


def describe(ctx: RunContext, slot: Slot, cyc: CycleRecord, branch: str) -> None:
    st = ctx.scenario.streaming
    assert st is not None
    is_base = slot.engine == BASELINE
    ctx.progress.info(f"[{slot.engine} cycle {cyc.cycle}/{st.cycles}] {cyc.commits} commits"
                      + (f" ({cyc.commits_during_maintenance} during maintenance)"
                         if st.mode != "sequential" and not is_base else "")
                      + (f", maintenance {cyc.maintenance_status} {cyc.maintenance_s or 0:.2f} s" if not is_base
                         else "")
                      + f"; {cyc.table.data_files} data + {cyc.table.delete_files} delete files, "
                      f"{cyc.manifests} manifests, {cyc.snapshots} snapshots; "
                      f"full scan {cyc.reads.get('full-scan', 0) * 1000:.0f} ms; "
                      f"{cyc.verdict}" + (f" (main lags {cyc.main_lag_commits} commits)" if branch != "main"
                                          else ""))


def publish(ctx: RunContext, cyc: CycleRecord, tbl, writer: Writer, branch: str,
            published_from: int | None) -> int | None:
    """Branch mode: main := the newest maintenance snapshot in the ancestry of `branch`'s head that has no live
    delete file (a clean snapshot; the harness's metadata-only step after the maintenance); returns the index of
    main's newest writer commit.  Records whether the head itself was a maintenance snapshot (a fast-forward-only
    promotion would have won the race)."""
    head = tbl.metadata.refs.get(branch)
    writer_ids = {c.snapshot_id for c in writer.commits if c.landed}
    main = tbl.metadata.refs.get("main")
    if head is None or cyc.maintenance_status == "none":
        return published_from
    cyc.evidence["head_was_maintenance"] = head.snapshot_id not in writer_ids
    snap = None
    for s in ancestors_of(tbl.metadata.snapshot_by_id(head.snapshot_id), tbl.metadata):
        if main is not None and s.snapshot_id == main.snapshot_id:
            return published_from  # main has it already: nothing newer is clean
        if s.snapshot_id not in writer_ids and not live_files(tbl, s.snapshot_id).deletes:
            snap = s
            break
    if snap is None or snap.snapshot_id == ctx.dataset.snapshot_id:  # type: ignore[union-attr]
        return published_from
    included = _newest_writer_commit(tbl, snap.snapshot_id, writer)
    tbl.manage_snapshots().set_current_snapshot(snapshot_id=snap.snapshot_id).commit()
    cyc.published = True
    cyc.evidence["published_snapshot_id"] = snap.snapshot_id
    return included if included is not None else published_from


def timed_queries(tbl, queries) -> dict[str, tuple[list[str], float]]:
    """Each reader query over the current snapshot with our merge-on-read reader (bench.verify.readers: the
    snapshot's files and delete files, DuckDB SQL): one untimed run, then the timed one, each from reading
    the manifests and the delete files to the answer (what a reader of the table does)."""
    out = {}
    for q in queries:
        for _ in range(2):
            t0 = time.perf_counter()
            with merge_on_read(tbl, None) as (con, live):
                raw = duck.execute(con, q, query_sql(q, live)) if con is not None else None
            seconds = time.perf_counter() - t0
        out[q.name] = (duck.answer(q, raw) if raw is not None else ["0", "0"], seconds)
    return out


def reads(ctx: RunContext, cyc: CycleRecord, writer: Writer, answers: dict[str, list[str]] | None) -> None:
    """The reader queries on main (our merge-on-read reader: DuckDB's iceberg extension compares every row
    with every equality key, duckdb-iceberg#626, minutes on the baseline's tables), their answers checked
    against the generator's (not in branch mode: main is behind the writer there)."""
    ds = ctx.dataset
    assert ds is not None and ctx.catalog is not None
    try:
        got = timed_queries(ctx.catalog.load_table(ds.table), writer.queries)
    except Exception as e:  # noqa: BLE001 - recorded, never a failed run
        cyc.reads_ok, cyc.reads_message = False, f"{type(e).__name__}: {e}"[:500]
        return
    cyc.reads = {name: round(s, 5) for name, (_, s) in got.items()}
    if answers is None:
        cyc.reads_ok, cyc.reads_message = True, "answers not checked: main lags the writer's branch"
        return
    wrong = [f"{name}: {a} != {answers[name]}" for name, (a, _) in got.items() if a != answers[name]]
    cyc.reads_ok = not wrong
    cyc.reads_message = "; ".join(wrong) if wrong else "every answer as the generator says"


def totals(rec: StreamingRecord, baseline: RunResult | None) -> StreamingTotals:
    """The totals of a streaming run's cycles (`rec.cycles`), its reads against the baseline's."""
    cs = rec.cycles
    t = StreamingTotals(cycles=len(cs))
    t.commits, t.commits_failed = sum(c.commits for c in cs), sum(c.commits_failed for c in cs)
    t.writer_retries = sum(c.writer_retries for c in cs)
    means = [(c.writer_commit_s_mean, c.commits) for c in cs if c.writer_commit_s_mean is not None]
    if means:
        t.writer_commit_s_mean = round(sum(m * k for m, k in means) / max(1, sum(k for _, k in means)), 4)
    t.rows_ingested, t.bytes_ingested = sum(c.rows_ingested for c in cs), sum(c.bytes_ingested for c in cs)
    t.files_ingested, t.manifests_created = sum(c.files_ingested for c in cs), sum(c.manifests_created for c in cs)
    t.writer_conflicts = sum(c.writer_conflict_count for c in cs)
    t.maintenance_commits = sum(c.maintenance_snapshots for c in cs)
    if t.bytes_ingested:
        t.files_per_gb = round(t.files_ingested / (t.bytes_ingested / GB), 3)
        t.manifests_per_gb = round(t.manifests_created / (t.bytes_ingested / GB), 3)
    t.maintenance_s = round(sum(c.maintenance_s or 0.0 for c in cs), 4)
    t.cost_usd = sum(c.cost_usd or 0.0 for c in cs)
    t.bytes_read, t.bytes_written = sum(c.bytes_read for c in cs), sum(c.bytes_written for c in cs)
    t.maintenance_not_landed = sum(c.maintenance_not_landed for c in cs)
    t.maintenance_conflicts = sum(c.maintenance_conflicts for c in cs)
    unsafe = [c.cycle for c in cs if c.verdict == "unsafe"]
    t.unsafe_cycles, t.first_unsafe_cycle = len(unsafe), (unsafe[0] if unsafe else None)
    t.all_cycles_safe = bool(cs) and len(cs) == rec.cycles_planned and all(c.verdict == "safe" for c in cs)
    if t.bytes_ingested and not rec.baseline:
        gb = t.bytes_ingested / GB
        t.maintenance_s_per_gb, t.cost_usd_per_gb = t.maintenance_s / gb, t.cost_usd / gb
        t.write_amplification = t.bytes_written / t.bytes_ingested
    if cs:
        t.final_reads, t.final_planning_s = dict(cs[-1].reads), cs[-1].planning_s
        t.final_stored_bytes = cs[-1].stored_bytes
    lags = [c.main_lag_commits for c in cs if c.main_lag_commits is not None]
    t.max_main_lag_commits = max(lags) if lags else None
    base = baseline.streaming.totals.final_reads if baseline is not None and baseline.streaming else {}
    t.final_reads_vs_baseline = {q: round(base[q] / s, 3) for q, s in t.final_reads.items() if s and base.get(q)}
    return t
