"""The verdict of a live-writer run: did the engine's compaction and the writer's commit both survive?

The end state is read back by every reader that can (`bench.verify.readers`: our merge-on-read, DuckDB's
iceberg extension, pyiceberg's scan) and compared with the expected one (the dataset's ground truth
with the writer's commit applied, from the generator).  The commits after the dataset's snapshot are
listed in order with who made them.  Then:
    unsafe        a reader that answered sees other rows than expected (evidence: deleted keys that are
                  back, appended keys that are missing, the row-count difference, the snapshots)
    inconclusive  the writer's commit did not land between the engine's planning and its commit, or
                  the engine ended for another reason (timeout, out of memory), or nothing could read
    safe          the content is as expected and the engine's compaction committed after the writer's
                  (its commit was retried or validated on top of the writer's snapshot)
    refused       the content is as expected and the engine failed without committing anything (on the
                  conflict: its error is the evidence); one that ends ok having committed nothing is
                  inconclusive (nothing was refused)
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pyiceberg.table import Table

from bench.core.catalog import CatalogSettings
from bench.core.catalog.duck import duckdb_connect_iceberg
from bench.core.expected import Expected, canonical, difference
from bench.core.records.live import LiveWriterRecord
from bench.core.records.verification import Check, CommitEvent, ReaderAnswer, Verification
from bench.core.sql import ident
from bench.verify.expected import read_keys
from bench.verify.integrity import commit_event
from bench.verify.readers import read

CAUSE = re.compile(r"(ValidationException|CommitFailedException|CommitStateUnknownException|Conflict|conflict)")
LIVE_READERS = ("duckdb-merge-on-read", "duckdb-iceberg", "pyiceberg-scan")
SHOWN_KEYS = 20
RULES = [
    "the writer's commit must land after the engine planned and before its commit (the engine is held "
    "at that point), and the commit order is read from the table's snapshots",
    "content: rows and checksum of the end state equal the dataset's ground truth with the writer's commit "
    "applied (from the generator), read by every reader that can (merge-on-read, DuckDB iceberg, pyiceberg)",
    "safe: content as expected and the engine's compaction committed; refused: content as expected and the "
    "engine committed nothing; unsafe: any reader sees rows lost or deleted rows back",
]


def commit_events(tbl: Table, base_snapshot_id: int, writer_snapshot_id: int | None) -> list[CommitEvent]:
    """Every snapshot committed after the dataset's, in sequence-number order."""
    meta = tbl.metadata
    base = meta.snapshot_by_id(base_snapshot_id)
    base_seq = base.sequence_number if base is not None else 0
    return [commit_event(s, "writer" if s.snapshot_id == writer_snapshot_id else "engine")
            for s in sorted(meta.snapshots, key=lambda s: (s.sequence_number or 0, s.timestamp_ms))
            if (s.sequence_number or 0) > (base_seq or 0)]


def key_evidence(tbl: Table, settings: CatalogSettings | None, appended: list[int],
                 deleted: list[int], snapshot_id: int | None = None) -> dict[str, Any]:
    """Which of the writer's rows the end state gets wrong, read through DuckDB's iceberg extension."""
    if settings is None or not settings.rest_uri or not (appended or deleted):
        return {}
    ns, name = tuple(tbl.name())[-2:]
    source = f"ice.{ident(ns)}.{ident(name)}" + (f" AT (VERSION => {int(snapshot_id)})" if snapshot_id else "")
    out: dict[str, Any] = {}
    try:
        con = duckdb_connect_iceberg(settings)
        try:
            if deleted:
                back = sorted(r[0] for r in con.execute(
                    f"SELECT DISTINCT v2 FROM {source} WHERE v2 IN (SELECT unnest(?))", [deleted]).fetchall())
                out["deleted_rows_back"] = len(back)
                out["deleted_keys_back"] = back[:SHOWN_KEYS]
            if appended:
                present = {r[0] for r in con.execute(
                    f"SELECT DISTINCT v2 FROM {source} WHERE v2 IN (SELECT unnest(?))", [appended]).fetchall()}
                missing = sorted(set(appended) - present)
                out["appended_rows_missing"] = len(missing)
                out["appended_keys_missing"] = missing[:SHOWN_KEYS]
        finally:
            con.close()
    except Exception as e:  # noqa: BLE001 - evidence is best effort; the verdict stands on the readers
        out["key_check_error"] = f"{type(e).__name__}: {e}"[:300]
    return out


def content(rec: LiveWriterRecord, tbl: Table, settings: CatalogSettings | None, snapshot_id: int | None,
            appended: list[int], deleted: list[int]) -> tuple[list[ReaderAnswer], str]:
    """Every reader's answer on the end state against the generator's rows and checksum: those that answered, and
    what is wrong ('' when nothing is), its evidence in `rec`."""
    rec.readers = [read(name, tbl, snapshot_id, settings) for name in LIVE_READERS]
    answered = [a for a in rec.readers if a.answered]
    wrong = [a for a in answered if a.content != (rec.expected_rows, rec.expected_checksum)]
    if not wrong:
        return answered, ""
    rec.evidence.update(key_evidence(tbl, settings, appended, deleted, snapshot_id))
    rec.evidence["row_difference"] = (wrong[0].rows or 0) - rec.expected_rows
    parts = [f"{wrong[0].reader} reads {wrong[0].rows} rows, expected {rec.expected_rows}"]
    if rec.evidence.get("deleted_rows_back"):
        parts.append(f"{rec.evidence['deleted_rows_back']} of the {len(deleted)} rows the writer deleted are back")
    if rec.evidence.get("appended_rows_missing"):
        parts.append(f"{rec.evidence['appended_rows_missing']} of the {len(appended)} appended rows are lost")
    return answered, "; ".join(parts)


@dataclass
class Stated:
    """A conformance case's expectations of a run with a concurrent commit: the end state, and the table as written
    (the rows the concurrent commit deleted are those written and not in the end state, by the case's key)."""

    end: Expected
    written: Expected


def stated_content(rec: LiveWriterRecord, tbl: Table, settings: CatalogSettings | None, snapshot_id: int | None,
                   stated: Stated) -> tuple[list[ReaderAnswer], str]:
    """The end state against the case's stated rows (count and key values, by the harness's merge-on-read reader);
    the other readers' answers are witnesses (kept in `rec`).  Returns the readers that answered (none when the
    reference could not read) and what is wrong; the deleted rows that are back in `rec.evidence`."""
    rec.readers = [read(name, tbl, snapshot_id, settings) for name in LIVE_READERS]
    end, written = stated.end, stated.written
    try:
        rows, keys, reader = read_keys(tbl, snapshot_id, end.key)
    except Exception as e:  # noqa: BLE001 - the end state the harness cannot read decides nothing
        rec.evidence["read_error"] = f"{type(e).__name__}: {e}"[:500]
        return [], ""
    answered = [a for a in rec.readers if a.answered]
    wrong = difference(end, rows, keys)
    if wrong and end.key and keys is not None and written.key == end.key and written.keys is not None:
        deleted = Counter(map(canonical, written.keys)) - Counter(map(canonical, end.keys or []))
        back = (Counter(map(canonical, keys)) - Counter(map(canonical, end.keys or []))) & deleted
        if back:
            rec.evidence["deleted_rows_back"] = sum(back.values())
            rec.evidence["deleted_keys_back"] = sorted(back, key=str)[:SHOWN_KEYS]
            wrong += f"; {sum(back.values())} of the {sum(deleted.values())} rows deleted meanwhile are back"
    return answered or [ReaderAnswer(reader=reader, rows=rows)], (f"{reader}: {wrong}" if wrong else "")


def live_verdict(rec: LiveWriterRecord, tbl: Table, settings: CatalogSettings | None, base_snapshot_id: int,
                 engine_status: str, engine_error: str | None, appended: list[int],
                 deleted: list[int], causes: list[str] | None = None,
                 snapshot_id: int | None = None, stated: Stated | None = None) -> tuple[LiveWriterRecord, Verification]:
    """Fill `rec` (case, hold, expected end state and writer snapshot already set) with the commits,
    the readers' answers on `snapshot_id` (a branch's head; None: the current snapshot), the verdict and
    its evidence; and the run's verification.  `stated`: a conformance case's end state and its table as written
    (instead of the generator's rows and checksum)."""
    rec.commits = commit_events(tbl, base_snapshot_id, rec.writer_snapshot_id)
    rec.order = [c.who for c in rec.commits]
    writer = next((c for c in rec.commits if c.who == "writer"), None)
    engine = [c for c in rec.commits if c.who == "engine"]
    writer_seq = writer.sequence_number or 0 if writer is not None else 0
    before_writer = [c for c in engine if writer is not None and (c.sequence_number or 0) < writer_seq]
    rec.interleaved = bool(rec.hold) and writer is not None and not before_writer
    rec.evidence = {"snapshots": [c.model_dump() for c in rec.commits]}
    if engine_error:
        rec.evidence["engine_error"] = engine_error[:1000]
        conflicts = [c for c in causes or [] if CAUSE.search(c)]
        if conflicts:  # the engine's own failure chain names the conflict (a Java cause behind py4j's error)
            rec.evidence["engine_causes"] = conflicts[:3]
            engine_error = conflicts[0]
    answered, wrong = (content(rec, tbl, settings, snapshot_id, appended, deleted) if stated is None
                       else stated_content(rec, tbl, settings, snapshot_id, stated))
    if not rec.interleaved:
        why = ("the engine was never held (it wrote nothing under the table and sent no commit)" if not rec.hold
               else "the engine committed before the writer" if before_writer else "the writer did not commit")
        rec.verdict, rec.reason = "inconclusive", f"no interleaving: {why}"
    elif engine_status in ("timeout", "oom", "heap-oom"):
        rec.verdict, rec.reason = "inconclusive", f"the engine ended with {engine_status}, not on the conflict"
    elif not answered:
        rec.verdict, rec.reason = "inconclusive", "no reader could read the end state"
    elif wrong:
        rec.verdict, rec.reason = "unsafe", wrong
    elif engine:
        retried = any(c.parent_id == rec.writer_snapshot_id for c in engine)
        rec.verdict = "safe"
        where = "on top of the writer's snapshot (retried or validated)" if retried else "after the writer"
        rec.reason = f"content as expected ({len(answered)} readers); the engine's compaction committed {where}"
    elif engine_status == "ok":  # no failure, no commit: nothing refused, nothing shown either way
        rec.verdict, rec.reason = "inconclusive", "the engine ended ok and committed nothing"
    else:
        rec.verdict = "refused"
        rec.reason = ("content as expected; the engine committed nothing"
                      + (f" and failed: {engine_error.splitlines()[0][:300]}" if engine_error else ""))
    content_said = (f"{len(answered)} reader(s): " + ", ".join(f"{a.reader} {a.rows} rows" for a in answered)
                    + (f"; expected {rec.expected_rows} rows, checksum {rec.expected_checksum}" if stated is None
                       else f"; expected {stated.end.rows} rows as the case states them"
                       + (f": {wrong}" if wrong else "")))
    checks = [
        Check(name="interleaved", ok=rec.interleaved,
              message=f"held: {rec.hold or 'never'}; commit order: {' -> '.join(rec.order) or 'none'}"),
        Check(name="content_as_expected", ok=bool(answered) and not wrong, about="rows", message=content_said),
        Check(name="engine_compaction_committed", ok=bool(engine),
              message=f"{len(engine)} engine snapshot(s) after the dataset's"),
    ]
    differences = [] if rec.verdict == "safe" else [f"live writer ({rec.case}): {rec.verdict}: {rec.reason}"]
    v = Verification(verified=rec.verdict == "safe", checks=checks, rules=list(RULES), differences=differences,
                     reader=", ".join(a.reader for a in answered),
                     readers={a.reader: a.model_dump(exclude_none=True) for a in rec.readers})
    return rec, v
