"""A live source table during a run (bench.core.pin): pinned, not frozen.

After every engine run the source is checked against its pin: others' commits are recorded on the result, a
change to a pinned file or a commit by the harness fails the result (and the run, in one line, at its end),
pinned files gone (the owner's maintenance) leave that run and every later one not verified, saying which files
went and between which times.  The clone's refs are checked too: main where the engine left it (advanced by a
compaction that committed, in place otherwise), every other branch and tag where it was, every file they
reference present."""

from __future__ import annotations

import time

from pyiceberg.table.snapshots import ancestors_of

from bench.core.pin import Observation, SourceWatch, observe, pinned_files, sample_hash
from bench.core.records.scenario import RefPin
from bench.core.records.verification import Check
from bench.core.results import RunResult
from bench.core.source import SourceRef, load_source
from bench.runner.context import RunContext
from bench.runner.record import assemble, checked


def look(ctx: RunContext) -> Observation:
    """The source now against its pin (a source that cannot be read back is a failure to name)."""
    assert ctx.source is not None and ctx.source_before is not None
    t0 = time.perf_counter()
    try:
        tbl = load_source(SourceRef(catalog_file=ctx.source.catalog_file, table=ctx.source.table))
        ob = observe(ctx.source_before, tbl, ctx.dataset.location if ctx.dataset else ctx.settings.warehouse_uri)
        ob.seconds = time.perf_counter() - t0  # its catalog's load of the table included
        return ob
    except Exception as e:  # noqa: BLE001 - the source unreadable afterwards is a difference, said in one line
        return Observation(changed=[" ".join(f"cannot read the source again: {type(e).__name__}: {e}".split())[:400]])


def watch(ctx: RunContext) -> SourceWatch:
    """The run's watch (made with its pin: bench.runner.run.use_source)."""
    assert ctx.source_watch is not None
    return ctx.source_watch


def update(ctx: RunContext, ob: Observation) -> SourceWatch:
    """The run's watch after observation `ob`."""
    assert ctx.source_before is not None and ctx.source is not None
    w = watch(ctx)
    w.saw(ob, ctx.source_before, ctx.source.table)
    return w


def check_source(ctx: RunContext, r: RunResult) -> RunResult:
    """The source after this engine run, against its pin: recorded on the record's `source`, required checks
    of the run."""
    assert r.source is not None and ctx.source is not None
    ob = look(ctx)
    w = update(ctx, ob)
    rec = r.source.model_copy(update={
        "commits_by_others": ob.others, "source_refs_moved": ob.refs_moved, "observe_s": ob.seconds,
        "gone": ob.gone[:20], "gone_between": list(w.gone_between) if ob.gone else [],
        "unchanged": not ob.failures and not ob.gone,
        "differences": (ob.failures + [f"gone: {p}" for p in ob.gone])[:20]})
    others = (f"; others committed {len(ob.others)} snapshot(s) since the pin (recorded, not a difference)"
              if ob.others else "")
    msg = (f"the pinned snapshot {rec.snapshot_id} of {ctx.source.table} is as pinned: its {rec.files} files "
           f"(metadata file, manifest lists, manifests, data and delete files: size and sampled content){others}"
           if not ob.failures else
           f"THE SOURCE TABLE {ctx.source.table} CHANGED during the run: {len(ob.failures)} difference(s), e.g. "
           f"{ob.failures[0]}")
    checks = [Check(name="source_unchanged", ok=not ob.failures, message=msg, whose="harness")]
    if ob.gone:  # nobody's output is wrong: the harness cannot verify on files that went (the owner's doing)
        checks.append(Check(name="source_files_present", ok=False, message=w.gone, whose="harness"))
    said = (f"the source table changed: {ob.failures[0]}" if ob.failures else
            f"not verified: {w.gone}" if ob.gone else None)
    error = r.error if said is None else (r.error + "; " if r.error else "") + said
    return assemble(checked(r, *checks), source=rec, error=error)


def record_gone(ctx: RunContext, r: RunResult) -> RunResult:
    """An engine run after pinned files went: not run (the clone references files that are gone), not verified,
    and why, in one line."""
    w = watch(ctx)
    return checked(assemble(r, status="failed", verified=False, error=f"not run: {w.gone}"),
                   Check(name="source_files_present", ok=False, message=w.gone, whose="harness"))


def check_refs(ctx: RunContext, r: RunResult, committed: bool, branch: str | None = None) -> RunResult:
    """The clone's refs after the engine: main (and the `branch` it compacted, published to main) at the pinned
    snapshot or a descendant of it (`committed`: the engine commits to the table; otherwise in place), every other
    branch and tag where the source had it, every file each references present (a required check)."""
    assert ctx.catalog is not None and ctx.dataset is not None and ctx.source_before is not None
    assert r.source is not None
    pin = ctx.source_before
    if pin.snapshot_id is None:
        return r
    tbl = ctx.catalog.load_table(ctx.dataset.table)
    now = {n: ref.snapshot_id for n, ref in tbl.metadata.refs.items()}
    was = {"main": pin.snapshot_id} | {x.name: x.snapshot_id for x in pin.refs if x.name in pin.carried}
    kinds = {x.name: x.type for x in pin.refs} | {"main": "branch"}
    wrong = []
    for name, sid in was.items():
        after = now.get(name)
        if name in ("main", branch) and committed:  # the pinned snapshot, or an ancestor of the ref's new head
            head = tbl.metadata.snapshot_by_id(after) if after is not None else None
            if head is None or sid not in {s.snapshot_id for s in ancestors_of(head, tbl.metadata)}:
                wrong.append(f"{name} moved off the pinned snapshot's history: {sid} -> {after}")
        elif after != sid:
            wrong.append(f"{kinds.get(name, 'ref')} {name}: {sid} -> {after}")
    ids = {s for s in now.values()}
    missing = [p for p in pinned_files(tbl, ids) if sample_hash(p)[0] < 0]
    refs = [RefPin(name=n, type=kinds.get(n, "branch"), snapshot_id=sid, after_snapshot_id=now.get(n))
            for n, sid in was.items()]
    ok = not wrong and not missing
    main = ("advanced by the compaction" if now.get("main") != pin.snapshot_id else "in place: nothing committed")
    main += f", as branch {branch} it compacted" if branch else ""
    msg = (f"{len(was)} ref(s) of the clone where they belong ({', '.join(sorted(was))}: main {main}, every "
           f"other as the source had it) and every file they reference present" if ok else
           "; ".join(wrong + ([f"{len(missing)} file(s) the refs reference missing, e.g. {missing[0]}"]
                              if missing else [])))
    return assemble(checked(r, Check(name="refs_kept", ok=ok, message=msg[:1000], whose="engine", about="metadata")),
                    source=r.source.model_copy(update={"refs": refs}))


def finish_source(ctx: RunContext) -> str:
    """The whole run: the source looked at once more.  Returns why the run does not count when the harness changed
    it (the CLI says it in one line, exit 1; "" otherwise); pinned files gone are said, others' commits counted."""
    if ctx.source is None or ctx.source_before is None:
        return ""
    w = update(ctx, look(ctx))
    table, pin = ctx.source.table, ctx.source_before
    if w.failures:
        return (f"THE SOURCE TABLE {table} CHANGED during the run ({len(w.failures)} difference(s), e.g. "
                f"{w.failures[0]}): no result of this run counts")
    others = len(w.last.others) if w.last else 0
    if w.gone:
        ctx.progress.info(f"source {table}: {w.gone}; the engine runs from then on are not verified")
    else:
        ctx.progress.info(f"source {table}: unchanged: the pinned snapshot {pin.snapshot_id} (fingerprint "
                          f"{pin.digest}: {len(pin.files)} pinned files, size and sampled content)"
                          + (f"; others committed {others} snapshot(s) meanwhile, recorded beside the results"
                             if others else ""))
    return ""
