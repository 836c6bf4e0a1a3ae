"""A maintenance operation's outcome (expire-snapshots, remove-orphan-files, rewrite-manifests,
rewrite-position-deletes) against what its conformance case states by the Iceberg spec
(bench.core.expected.MaintenanceExpected), on real files and rows.

The expectation is resolved once, on the table as written (`resolve`): each ref's head and the rows it must read, the
files that must still exist (every file the kept snapshots reach: manifest lists, manifests, live data and delete
files, statistics files; and the files named to stay), the files that must be gone (those only the expired snapshots
reach, and the files named to go) and the files the operation must take out of the refs it commits to (named to be
replaced: e.g. the position-delete files a rewrite replaces or drops).  After the engine's operation, `outcome`
checks:

    kept_reachable_files   every file that must stay, and every file the table after the operation still reaches,
                           exists (one missing is data loss: deleted-live)
    no_deleted_row_back    no ref reads a row the case says is deleted (resurrected)
    kept_snapshots_listed  every snapshot the case keeps is still in the metadata (one expired loses its time
                           travel: its rows can no longer be read; wrong-rows)
    refs_read_their_rows   every ref is where it was (a ref the operation commits to: at a descendant of its head)
                           and reads its rows, none lost (wrong-rows)
    removed_unreachable    every file that must go is gone and every expired snapshot with it, and no file to be
                           replaced is live at the new head of a ref the operation commits to (kept-garbage: a
                           finding, not a safety failure)
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from pyiceberg.table import Table
from pyiceberg.table.snapshots import ancestors_of

from bench.core.expected import (
    DANGLING_POSITION_DELETES,
    POSITION_DELETES,
    STATISTICS,
    Expected,
    MaintenanceExpected,
    canonical,
)
from bench.core.records.verification import Check
from bench.core.table.deletes import classify
from bench.core.table.entries import LiveFiles, live_files
from bench.core.table.shape import detached_snapshots
from bench.core.uri import local_path
from bench.verify.expected import expected_check, read_keys

KEPT = "kept_reachable_files"
RESURRECTED = "no_deleted_row_back"
REF_ROWS = "refs_read_their_rows"
KEPT_SNAPSHOTS = "kept_snapshots_listed"
REMOVED = "removed_unreachable"
TABLE_CHECK = "case_maintenance_expectation_holds"  # the table as written against the expectation (the harness's)
ALL = "all"  # a snapshot selector: every snapshot of the table as written
DETACHED = "detached"  # a snapshot selector: every snapshot in no ref's history (bench.core.table.shape)
SHOWN = 4  # paths named in a message


@dataclass(frozen=True)
class Resolved:
    """A maintenance case's expectation on the table as written: local paths, snapshot ids."""

    refs: dict[str, tuple[int, Expected]] = field(default_factory=dict)  # ref -> (its head, the rows it reads)
    must_exist: set[str] = field(default_factory=set)
    must_remove: set[str] = field(default_factory=set)
    must_leave: set[str] = field(default_factory=set)  # not live at the new head of a ref the operation commits to
    expired: set[int] = field(default_factory=set)
    kept: set[int] = field(default_factory=set)  # the snapshots that must stay listed: those kept and the refs' heads
    advancing: set[str] = field(default_factory=set)  # refs the operation commits to: their heads may move forward
    problems: list[str] = field(default_factory=list)  # what did not resolve: the case's defect, the harness's


def select(tbl: Table, selector: str) -> list[int]:
    """The snapshot ids a selector names on `tbl` (REF, REF~N, ALL or DETACHED); [] when it names none."""
    md = tbl.metadata
    if selector == ALL:
        return [s.snapshot_id for s in md.snapshots]
    if selector == DETACHED:
        return detached_snapshots(md)
    name, _, back = selector.partition("~")
    ref = md.refs.get(name)
    if ref is None:
        return []
    lineage = list(ancestors_of(md.snapshot_by_id(ref.snapshot_id), md))
    n = int(back or 0)
    return [lineage[n].snapshot_id] if n < len(lineage) else []


def reachable(tbl: Table, snapshot_ids: set[int]) -> set[str]:
    """Every file the snapshots reach, as local paths: manifest lists, manifests, the live entries' data and delete
    files (not the entries a snapshot marks deleted: those belong to its parent), and their statistics files."""
    out: set[str] = set()
    md = tbl.metadata
    for sid in snapshot_ids:
        snap = md.snapshot_by_id(sid)
        if snap is None:
            continue
        out.add(local_path(snap.manifest_list))
        for m in snap.manifests(tbl.io):
            out.add(local_path(m.manifest_path))
            out.update(local_path(e.data_file.file_path) for e in m.fetch_manifest_entry(tbl.io, discard_deleted=True))
    for stats in [*md.statistics, *md.partition_statistics]:
        if stats.snapshot_id in snapshot_ids:
            out.add(local_path(stats.statistics_path))
    return out


def table_files(tbl: Table, names: set[str]) -> dict[str, list[str]]:
    """The files of the table as written that these names (bench.core.expected.TABLE_FILES) stand for, as local
    paths: the position-delete files are those live at main's head (its delete files read only when named)."""
    out = {STATISTICS: [local_path(s.statistics_path) for s in tbl.metadata.statistics]}
    if names & {POSITION_DELETES, DANGLING_POSITION_DELETES}:
        head = tbl.metadata.refs.get("main")
        files = live_files(tbl, head.snapshot_id) if head is not None else LiveFiles()
        out[POSITION_DELETES] = [local_path(e.data_file.file_path) for e in files.position]
        if DANGLING_POSITION_DELETES in names:
            out[DANGLING_POSITION_DELETES] = [local_path(p) for p in classify(files, tbl.specs()).dangling_position]
    return out


def resolve(tbl: Table, main: Expected, m: MaintenanceExpected, named: dict[str, list[str]]) -> Resolved:
    """The expectation on the table as written; `main`: the rows main reads (the case's `expected`); `named`: the
    case's own files by name (its orphans' paths), beside the table's own (table_files)."""
    named = {**named, **table_files(tbl, set(m.kept_files + m.removed_files + m.replaced_files))}
    refs: dict[str, tuple[int, Expected]] = {}
    problems: list[str] = []
    for ref, exp in {"main": main, **m.refs}.items():
        head = tbl.metadata.refs.get(ref)
        if head is None:
            problems.append(f"no ref {ref}")
        else:
            refs[ref] = (head.snapshot_id, exp)
    kept: set[int] = set()
    expired: set[int] = set()
    for selectors, into in ((m.kept, kept), (m.expired, expired)):
        for s in selectors:
            ids = select(tbl, s)
            into.update(ids)
            problems += [] if ids else [f"snapshot {s} names no snapshot"]
    problems += [f"{n} names no file" for n in m.kept_files + m.removed_files + m.replaced_files if not named.get(n)]
    others = {s.snapshot_id for s in tbl.metadata.snapshots} - expired
    heads = {head for head, _ in refs.values()}
    return Resolved(refs=refs, problems=problems,
                    must_exist=reachable(tbl, kept | heads) | {p for n in m.kept_files for p in named.get(n, [])},
                    must_remove=(reachable(tbl, expired) - reachable(tbl, others))
                    | {p for n in m.removed_files for p in named.get(n, [])},
                    must_leave={p for n in m.replaced_files for p in named.get(n, [])},
                    expired=expired, kept=kept | heads, advancing=set(m.advances))


def _few(paths: set[str] | list[str]) -> str:
    shown = sorted(paths)[:SHOWN]
    return ", ".join(os.path.basename(p) for p in shown) + (f", ... ({len(paths)} in all)" if len(paths) > SHOWN
                                                             else "")


def table_check(tbl: Table, res: Resolved) -> Check:
    """The table as written against the expectation (a harness check): every name resolves, every file that must
    stay or go exists, every ref reads its rows."""
    problems = list(res.problems)
    absent = {p for p in res.must_exist | res.must_remove | res.must_leave if not os.path.exists(p)}
    problems += [f"{len(absent)} file(s) it names do not exist: {_few(absent)}"] if absent else []
    for ref, (head, exp) in res.refs.items():
        c = expected_check(tbl, head, exp, TABLE_CHECK, "harness", f"ref {ref} as written")
        problems += [] if c.ok else [c.message]
    return Check(name=TABLE_CHECK, ok=not problems, whose="harness", about="rows",
                 message="; ".join(problems) or (f"{len(res.refs)} ref(s) read their rows; {len(res.must_exist)} "
                                                 f"file(s) must stay, {len(res.must_remove)} must go"))


def outcome(tbl: Table, res: Resolved) -> list[Check]:
    """The table after the operation against the expectation (the engine's checks)."""
    after = {s.snapshot_id for s in tbl.metadata.snapshots}
    live = res.must_exist | reachable(tbl, after) | {local_path(tbl.metadata_location)}
    missing = {p for p in live if not os.path.exists(p)}
    checks = [Check(name=KEPT, ok=not missing, about="rows", message=(
        f"{len(missing)} file(s) still reachable from a kept snapshot or ref were deleted: {_few(missing)}" if missing
        else f"all {len(live)} files reachable from the kept snapshots and refs exist"))]
    back, wrong = _refs(tbl, res)
    checks.append(Check(name=RESURRECTED, ok=not back, about="rows",
                        message="; ".join(back) or "no ref reads a deleted row"))
    gone = res.kept - after
    checks.append(Check(name=KEPT_SNAPSHOTS, ok=not gone, about="rows", message=(
        f"{len(gone)} snapshot(s) the case keeps were expired: {sorted(gone)[:SHOWN]}" if gone
        else f"all {len(res.kept)} snapshot(s) the case keeps are listed")))
    checks.append(Check(name=REF_ROWS, ok=not wrong, about="rows",
                        message="; ".join(wrong) or f"{len(res.refs)} ref(s) where they were" + (
                            f" ({', '.join(sorted(res.advancing))} at or after its head)" if res.advancing else "")
                        + ", reading their rows"))
    still = {p for p in res.must_remove if os.path.exists(p)}
    snaps = res.expired & after
    said = ([f"{len(still)} unreachable file(s) not removed: {_few(still)}"] if still else []) + (
        [f"{len(snaps)} snapshot(s) due to expire still in the metadata"] if snaps else []) + _left_live(tbl, res)
    # garbage left behind loses nothing: a finding (advisory), not what `verified` (safe) turns on
    checks.append(Check(name=REMOVED, ok=not said, about="metadata", required=False, message="; ".join(said) or (
        f"all {len(res.must_remove)} file(s) due to go are gone" + (
            f", none of the {len(res.must_leave)} to be replaced is live" if res.must_leave else ""))))
    return checks


def _left_live(tbl: Table, res: Resolved) -> list[str]:
    """The files to be replaced still live at the head of a ref the operation commits to, in words per ref."""
    out = []
    for ref in sorted(res.advancing if res.must_leave else set()):
        now = tbl.metadata.refs.get(ref)
        live = {local_path(e.data_file.file_path) for e in live_files(tbl, now.snapshot_id).all} if now else set()
        left = res.must_leave & live
        out += [f"{len(left)} file(s) still live at {ref}'s head that the operation must replace or drop: "
                f"{_few(left)}"] if left else []
    return out


def _refs(tbl: Table, res: Resolved) -> tuple[list[str], list[str]]:
    """(rows that came back, per ref; refs gone, moved, unreadable or missing rows)."""
    back, wrong = [], []
    for ref, (head, exp) in res.refs.items():
        now = tbl.metadata.refs.get(ref)
        if now is None or not _where_it_may_be(tbl, ref in res.advancing, head, now.snapshot_id):
            wrong.append(f"ref {ref} " + ("is gone" if now is None else f"moved {head} -> {now.snapshot_id}"
                                          + (" (not a descendant of its head)" if ref in res.advancing else "")))
            continue
        try:
            rows, keys, _ = read_keys(tbl, now.snapshot_id, exp.key)
        except Exception as e:  # noqa: BLE001 - a ref whose files are gone cannot be read: said, not raised
            wrong.append(f"ref {ref} cannot be read: {type(e).__name__}: {str(e)[:200]}")
            continue
        if exp.keys is not None and keys is not None:
            got, want = Counter(map(canonical, keys)), Counter(map(canonical, exp.keys))
            extra, lost = got - want, want - got
        else:
            extra = Counter({"rows": rows - exp.rows}) if rows > exp.rows else Counter()
            lost = Counter({"rows": exp.rows - rows}) if rows < exp.rows else Counter()
        if extra:
            back.append(f"ref {ref} reads {sum(extra.values())} row(s) it must not: {sorted(map(str, extra))[:SHOWN]}")
        if lost:
            wrong.append(f"ref {ref} lost {sum(lost.values())} row(s): {sorted(map(str, lost))[:SHOWN]}")
    return back, wrong


def _where_it_may_be(tbl: Table, advances: bool, head: int, now: int) -> bool:
    """A ref is where it was, or (one the operation commits to) at a snapshot whose ancestors include its old head."""
    if now == head:
        return True
    snap = tbl.metadata.snapshot_by_id(now)
    return advances and snap is not None and any(s.snapshot_id == head for s in ancestors_of(snap, tbl.metadata))
