"""The live writer's timing: hold the engine between its planning and its commit, commit the writer's
files then, let the engine go on.  Deterministic, not a race, and the same for every engine:

- an engine that commits through the loopback REST catalog (it says so: `capabilities.commits_through_rest`) is
  held by the catalog's commit gate (`bench.core.catalog.rest.gate`): its commit request waits;
- an engine that commits elsewhere (Spark's JDBC catalog on the SQLite file) is held when its first
  output file appears under the table's location (it has planned and is rewriting): its process group
  is stopped (SIGSTOP) and continued (SIGCONT) after the writer's commit.

The writer commits (`datagen.live.LiveWriter`) and the engine is let go.  The verdict is
`bench.verify.live`.  A local warehouse only (the file watch reads the directory).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from bench.core.catalog.rest import gate
from bench.core.records.live import LiveWriterRecord
from bench.core.records.verification import Check, unverifies
from bench.core.results import RunResult
from bench.core.table.entries import live_files
from bench.core.uri import local_path
from bench.engines import engine_class
from bench.runner.context import RunContext, Slot
from bench.runner.record import assemble
from bench.verify.integrity import RULE as INTEGRITY_RULE
from bench.verify.integrity import IntegrityInput, integrity_checks
from bench.verify.live import Stated, live_verdict
from bench.verify.stats import table_stats
from datagen.live import LiveWriter, WriterCommit, prepare_commit, prepare_declared

# how often the hold looks: an engine stopped at its first output file must be stopped before it writes much more; one
# whose commit request waits at the gate waits anyway (each look is an HTTP round trip to the catalog server)
POLL_S = 0.01
GATE_POLL_S = 0.1


class EngineHold:
    """Attach to the engine's process (`attach(pid)`, its own process group) for the engine run."""

    def __init__(self, writer: LiveWriter, table: str, data_dir: Path | None, gate_uri: str | None):
        """Held at the commit gate of `gate_uri`, or else at the first new file in `data_dir`."""
        self.writer, self.table, self.data_dir, self.gate_uri = writer, table, data_dir, gate_uri
        self.hold = ""  # how the engine was held ("" = never)
        self.held_s: float | None = None
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pgid: int | None = None
        self._baseline: set[str] = set()

    def _files(self) -> set[str]:
        if self.data_dir is None:
            return set()
        try:
            return {e.name for e in os.scandir(self.data_dir)}
        except FileNotFoundError:
            return set()

    def __enter__(self) -> EngineHold:
        self._baseline = self._files()
        if self.gate_uri:
            gate.arm(self.gate_uri, self.table)
        return self

    def attach(self, pid: int) -> None:
        self._pgid = pid
        self._thread = threading.Thread(target=self._watch, name="live-writer", daemon=True)
        self._thread.start()

    def detach(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=120)

    def __exit__(self, *exc: object) -> None:
        self.detach()
        if self.gate_uri:
            try:
                gate.disarm(self.gate_uri)
            except OSError:
                pass

    def _held_at_gate(self) -> bool:
        if not self.gate_uri:
            return False
        try:
            return bool(gate.state(self.gate_uri).get("held"))
        except OSError:
            return False

    def _watch(self) -> None:
        while not self._stop.is_set():
            how, stopped = "", False
            if self.gate_uri:
                how = "its commit request held at the REST catalog's commit gate" if self._held_at_gate() else ""
            else:
                new = sorted(self._files() - self._baseline)
                if new and self._pgid is not None:
                    try:
                        os.killpg(self._pgid, signal.SIGSTOP)
                        stopped = True
                    except ProcessLookupError:
                        return
                    how = f"stopped (SIGSTOP) at its first output file ({new[0]})"
            if how:
                self._commit(how, stopped)
                return
            self._stop.wait(GATE_POLL_S if self.gate_uri else POLL_S)

    def _commit(self, how: str, stopped: bool) -> None:
        t0 = time.perf_counter()
        try:
            self.writer.commit()
        except Exception as e:  # noqa: BLE001 - recorded; the engine must still be let go
            self.error = f"the writer's commit failed: {type(e).__name__}: {e}"[:500]
        finally:
            if stopped and self._pgid is not None:
                try:
                    os.killpg(self._pgid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            if self.gate_uri:
                try:
                    gate.disarm(self.gate_uri)
                except OSError as e:
                    self.error = self.error or f"could not release the commit gate: {e}"
            self.hold, self.held_s = how, time.perf_counter() - t0


INGEST_BRANCH = "ingest"


@contextmanager
def live_writer(ctx: RunContext, slot: Slot) -> Iterator[tuple[EngineHold, WriterCommit] | None]:
    """For a live-writer case: the writer's files written and the engine hold armed, for the engine run
    (`with` block); None otherwise.  A conformance case's concurrent commit (`ctx.during`) is prepared on the
    table as written, the same writer and hold.  With a branch (--cow-branch) the branch is created at the dataset's
    snapshot first, and the writer commits to it."""
    case = slot.case
    if not case:
        yield None
        return
    sc, ds = ctx.scenario, ctx.dataset
    assert ds is not None and ctx.catalog is not None
    assert ds.snapshot_id is not None  # a generated dataset always has one
    if ctx.during:  # a conformance case's own commit on its table as written
        commit = prepare_declared(ctx.catalog.load_table(ds.table), ctx.during)
    else:
        assert sc.live_writer is not None
        commit = prepare_commit(ds, case, sc.live_writer.rows)
    branch = slot.branch or "main"
    if branch != "main":
        ctx.catalog.load_table(ds.table).manage_snapshots().create_branch(ds.snapshot_id, branch).commit()
    gated = (engine_class(slot.engine).capabilities.commits_through_rest and ctx.served is not None
             and ctx.served.pid is not None)
    writer = LiveWriter(ctx.settings, ds.table, commit, branch=branch)
    with EngineHold(writer, ds.table, None if gated else Path(local_path(ds.location)) / "data",
                    ctx.served.settings.rest_uri if gated and ctx.served else None) as hold:
        yield hold, commit


def publish(tbl, rec: LiveWriterRecord) -> LiveWriterRecord:
    """--cow-branch: main := the compactor's last snapshot on the branch, when the branch's head is the
    compactor's (the harness's metadata-only step after the engine, timed as `publish_s`); returns the record
    with what was published."""
    assert rec.branch
    head = tbl.metadata.refs.get(rec.branch)
    engine = {c.snapshot_id for c in rec.commits if c.who == "engine"}
    if head is None or head.snapshot_id not in engine:
        return rec
    t0 = time.perf_counter()
    tbl.manage_snapshots().set_current_snapshot(snapshot_id=head.snapshot_id).commit()
    publish_s = round(time.perf_counter() - t0, 4)
    tbl.refresh()
    return rec.model_copy(update={"publish_s": publish_s, "published_snapshot_id": head.snapshot_id,
                                  "main_delete_files": len(live_files(tbl).deletes)})


def judge(ctx: RunContext, r: RunResult, hold: EngineHold, commit: WriterCommit,
          integrity: IntegrityInput | None = None) -> RunResult:
    """The live-writer run's record, verdict and verification (instead of the compaction checks), with
    the integrity checks on the branch it compacted (the writer's snapshot is not the engine's)."""
    ds = ctx.dataset
    assert ds is not None and ctx.catalog is not None
    tbl = ctx.catalog.load_table(ds.table)
    branch = r.live_writer.branch if r.live_writer else None
    # a declared commit's end state is the conformance case's to state (its rows and keys), not the generator's
    stated = None
    if commit.expected is None:
        assert ctx.expected is not None and ctx.written is not None
        stated = Stated(end=ctx.expected, written=ctx.written)
        rows, checksum = stated.end.rows, ""
    else:
        rows, checksum = commit.expected.rows, commit.expected.checksum
    rec = LiveWriterRecord(case=commit.case, description=f"the writer {commit.describe()}", rows=commit.rows,
                           target_file=commit.target_file, hold=hold.hold, branch=branch,
                           held_s=None if hold.held_s is None else round(hold.held_s, 4),
                           writer_commit_s=hold.writer.commit_s, writer_snapshot_id=hold.writer.snapshot_id,
                           expected_rows=rows, expected_checksum=checksum)
    ref = tbl.metadata.refs.get(branch) if branch else None
    assert ds.snapshot_id is not None  # a generated dataset always has one
    rec, v = live_verdict(rec, tbl, ctx.catalog_settings, ds.snapshot_id, r.status, r.error,
                          commit.appended_keys, commit.deleted_keys, r.error_causes,
                          snapshot_id=ref.snapshot_id if ref is not None else None, stated=stated)
    if branch:
        rec = publish(tbl, rec)
        v = v.with_checks(Check(
            name="main_has_no_delete_file", ok=rec.main_delete_files == 0,
            message=(f"main published at the compactor's snapshot {rec.published_snapshot_id}: "
                     f"{rec.main_delete_files} live delete file(s)" if rec.published_snapshot_id is not None
                     else f"nothing published: the head of {branch} is not the compactor's snapshot")))
    if integrity is not None:
        mine = replace(integrity, exclude_snapshots=integrity.exclude_snapshots
                       | ({rec.writer_snapshot_id} if rec.writer_snapshot_id is not None else set()))
        tbl.refresh()
        more, _ = integrity_checks(mine, tbl)
        v = v.model_copy(update={"rules": [*v.rules, INTEGRITY_RULE]}).with_checks(*more)
        if unverifies(more):
            failed = ", ".join(c.name for c in more if c.required and not c.ok)
            rec = rec.model_copy(update={"reason": rec.reason + f"; but the table's integrity failed ({failed})"})
    if hold.error:
        rec = rec.model_copy(update={"evidence": {**rec.evidence, "writer_error": hold.error}})
    after = (rec.published_snapshot_id or (ref.snapshot_id if ref else None)) if branch else None
    return assemble(r, live_writer=rec, verification=v, verified=v.verified,
                    after=table_stats(tbl, after, content=False, footers_too=False))
