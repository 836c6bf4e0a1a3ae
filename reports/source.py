"""A run set on the user's own table (`--source-table`): its header (which table, the pinned snapshot, its files,
bytes and deletes, the refs the clone carried, others' commits meanwhile, what the scenario asked of each engine)
in place of the generated scenario's description and scale; and, for every engine card, why a run is not
verified, in one line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.core.fmt import fmt_bytes
from bench.core.results import RunResult


@dataclass
class SourceHeader:
    table: str
    snapshot_id: int | None
    files: str  # "15 files (12 data, 2 position-delete, 1 equality-delete), 123 KiB, 1,122 rows"
    refs: list[str] = field(default_factory=list)  # "tag audited at 123 (kept)"
    others: str = ""  # others' commits while the run went on
    gone: str = ""  # pinned files gone (the owner's maintenance)
    asked: list[tuple[str, str]] = field(default_factory=list)  # (engine, what it was asked)
    pin: str = ""  # what the pin covers


def _asked(r: RunResult) -> str:
    """What the scenario asked of the engine on this table: the work as the engine recorded it (its intent and
    steps), the target and small-file sizes."""
    got = r.engine_settings.get("work")
    work: dict[str, Any] = got if isinstance(got, dict) else {}
    intent, steps = work.get("intent") or "", work.get("steps") or []
    sizes = (f"target {fmt_bytes(r.target_file_size_bytes)}, small below {fmt_bytes(r.small_file_threshold_bytes)}"
             + ("" if r.commits == "table" else ", committing nothing (a floor)"))
    return "; ".join(x for x in (intent, " -> ".join(steps), sizes) if x)


def source_header(runs: list[RunResult]) -> SourceHeader | None:
    """The header of a run set whose runs are on the user's own table (None: a generated dataset)."""
    mine = [r for r in runs if r.source is not None]
    if not mine:
        return None
    first = next((r for r in mine if r.before.data_files), mine[0])
    src, b = first.source, first.before
    assert src is not None
    deletes = b.position_delete_files + b.equality_delete_files
    files = (f"{b.data_files + deletes} files ({b.data_files} data, {b.position_delete_files} position-delete, "
             f"{b.equality_delete_files} equality-delete), {fmt_bytes(b.data_bytes + b.delete_bytes)} on disk, "
             f"{b.rows:,} rows")
    last = mine[-1].source
    assert last is not None
    refs = [f"branch main at {src.snapshot_id} (the pinned snapshot: each engine's compaction commits to it)"]
    for ref in src.refs:
        if ref.name == "main":
            continue
        after = {x.source and next((a.after_snapshot_id for a in x.source.refs if a.name == ref.name), None)
                 for x in mine if x.source and x.source.refs and x.status == "ok"}
        where = ("" if not after else " (kept by every run)" if after == {ref.snapshot_id} else
                 f" (MOVED: {', '.join(str(a) for a in sorted(after, key=str))})")
        refs.append(f"{ref.type} {ref.name} at {ref.snapshot_id}{where}")
    others = (f"{len(last.commits_by_others)} snapshot(s) committed by others while the run went on ("
              + ", ".join(f"{c.operation} {c.snapshot_id}" for c in last.commits_by_others[:4])
              + (", ..." if len(last.commits_by_others) > 4 else "")
              + "): facts beside the results, never differences") if last.commits_by_others else ""
    gone_in = next((r.source for r in mine if r.source and r.source.gone), None)
    gone = (f"{len(gone_in.gone)} pinned file(s) gone from the source between {' and '.join(gone_in.gone_between)} "
            f"(the owner's maintenance), e.g. {gone_in.gone[0]}: the runs from then on are not verified"
            if gone_in else "")
    asked, seen = [], set()
    for r in mine:
        if r.engine not in seen:
            seen.add(r.engine)
            asked.append((r.engine, _asked(r)))
    pin = (f"The pin: {src.files} files (the metadata file, the manifest lists and manifests of the pinned snapshot "
           f"and of the carried refs, their data and delete files), each by size and sampled content")
    return SourceHeader(table=src.table, snapshot_id=src.snapshot_id, files=files, refs=refs, others=others,
                        gone=gone, asked=asked, pin=pin)


def why_not_verified(runs: list[Any]) -> str:
    """One line: why the first measured run that is not verified is not (its error, else its first failed
    check), "" when every run is verified."""
    for r in runs:
        if r.verified or r.warmup:
            continue
        if r.error:
            return " ".join(r.error.split())[:200]
        failed = next((c for c in r.verification.checks if not c.ok), None)
        if failed is not None:
            return " ".join(f"{failed.name}: {failed.message}".split())[:200]
        return f"status {r.status}"
    return ""
