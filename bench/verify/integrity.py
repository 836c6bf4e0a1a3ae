"""What a compaction must never change: the table's identity, its history and the meaning of its commits.

A compaction changes the physical layout of a table and nothing else.  These checks compare the table's
metadata after the run with the input's (the metadata the run was restored to), on the branch the run
compacted, and are required for every engine that commits:

- identity: the same table (UUID, format version, location), schema (field ids, names, types, required,
  identifier fields), partition specs, sort orders, and table properties (except properties the scenario
  or the engine declares it sets);
- history: the input snapshot is an ancestor of the compacted branch's new head; every snapshot of the
  input is still there (nothing expired), every branch of the input still exists and descends from where
  it was, every tag points where it did;
- commit semantics: every snapshot the run committed is a `replace` (incremental readers skip those: an
  `overwrite` or `append` would hand them the whole table again as new rows); where the summary of the
  new head states totals (records, data files, delete files, position and equality delete records, file
  size) they equal what its manifests hold.  A missing total is recorded, not a failure.  The totals of
  the run's intermediate snapshots (e.g. a first pass a second one supersedes) are compared the same way
  and recorded as an advisory check: the table a reader gets after the run is the head.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import ancestors_of

from bench.core.fmt import fmt_bytes_against
from bench.core.records.verification import Check, CommitEvent
from bench.core.table.entries import LiveFiles, live_files

RULE = ("integrity: the same table (UUID, format version, location, schema, partition specs, sort orders, "
        "properties); the input snapshot an ancestor of the new head of the compacted branch; no snapshot, "
        "branch or tag of the input lost or moved elsewhere; every snapshot the run committed a `replace`; "
        "the head's summary totals equal its manifests")
# snapshot summary totals -> what the manifests of that snapshot hold
TOTALS = ("total-records", "total-data-files", "total-delete-files", "total-position-deletes",
          "total-equality-deletes", "total-files-size")


@dataclass
class IntegrityInput:
    """The input's metadata (captured after the run's restore) and what to compare on."""

    before: TableMetadata
    branch: str = "main"  # the branch the run compacted
    exclude_snapshots: set[int] = field(default_factory=set)  # snapshots others committed (a live writer)
    declared_properties: frozenset[str] = frozenset()  # properties the scenario or the engine may set


def _schema(m: TableMetadata) -> dict[str, Any]:
    d = m.schema().model_dump(by_alias=True, mode="json")
    d.pop("schema-id", None)
    return d


def _schema_diff(before: dict[str, Any], after: dict[str, Any]) -> str:
    b = {f["id"]: f for f in before.get("fields", [])}
    a = {f["id"]: f for f in after.get("fields", [])}
    parts = [f"+{a[i]}" for i in a if i not in b] + [f"-{b[i]}" for i in b if i not in a]
    parts += [f"{b[i]} -> {a[i]}" for i in a if i in b and a[i] != b[i]]
    if before.get("identifier-field-ids") != after.get("identifier-field-ids"):
        parts.append(f"identifier fields {before.get('identifier-field-ids')} -> {after.get('identifier-field-ids')}")
    return "; ".join(parts)[:1000]


def _specs(m: TableMetadata) -> tuple[int, list[Any]]:
    return m.default_spec_id, sorted((s.model_dump(by_alias=True, mode="json") for s in m.partition_specs),
                                     key=lambda s: s["spec-id"])


def _orders(m: TableMetadata) -> tuple[int, list[Any]]:
    return m.default_sort_order_id, sorted((o.model_dump(by_alias=True, mode="json") for o in m.sort_orders),
                                           key=lambda o: o["order-id"])


def ancestors(m: TableMetadata, snapshot_id: int | None) -> list[int]:
    """`snapshot_id` and its ancestors, newest first, as far as the metadata holds them."""
    head = m.snapshot_by_id(snapshot_id) if snapshot_id is not None else None
    return [s.snapshot_id for s in ancestors_of(head, m)]


def _ids(ids: Iterable[int], n: int = 3) -> str:
    ids = list(ids)
    return ", ".join(str(i) for i in ids[:n]) + (f" (+{len(ids) - n} more)" if len(ids) > n else "")


def identity_checks(ii: IntegrityInput, after: TableMetadata) -> list[Check]:
    b = ii.before
    same_table = (b.table_uuid == after.table_uuid and b.format_version == after.format_version
                  and b.location == after.location)
    schema_b, schema_a = _schema(b), _schema(after)
    fields = schema_b.get("fields", [])
    props_b = {k: v for k, v in b.properties.items() if k not in ii.declared_properties}
    props_a = {k: v for k, v in after.properties.items() if k not in ii.declared_properties}
    changed = sorted(k for k in set(props_b) | set(props_a) if props_b.get(k) != props_a.get(k))
    declared = f" (not compared: {', '.join(sorted(ii.declared_properties))})" if ii.declared_properties else ""
    spec_b, spec_a = _specs(b), _specs(after)
    order_b, order_a = _orders(b), _orders(after)
    return [
        Check(name="same_table", ok=same_table,
              message=(f"table UUID {after.table_uuid}, format v{after.format_version}, location as the input's"
                       if same_table else
                       f"not the input's table: UUID {b.table_uuid} -> {after.table_uuid}, format "
                       f"v{b.format_version} -> v{after.format_version}, location {b.location} -> {after.location}")),
        Check(name="same_schema", ok=schema_b == schema_a,
              message=(f"schema: {len(fields)} fields with the input's ids, names, types and required flags"
                       if schema_b == schema_a else "schema changed: " + _schema_diff(schema_b, schema_a))),
        Check(name="same_partitioning", ok=spec_b == spec_a,
              message=(f"partition specs as the input's ({len(spec_a[1])} spec(s), default {spec_a[0]})"
                       if spec_b == spec_a else f"partition specs changed: {spec_b} -> {spec_a}"[:1000])),
        Check(name="same_sort_order", ok=order_b == order_a,
              message=(f"sort orders as the input's ({len(order_a[1])}, default {order_a[0]})"
                       if order_b == order_a else f"sort orders changed: {order_b} -> {order_a}"[:1000])),
        Check(name="same_properties", ok=not changed,
              message=(f"{len(props_a)} table properties as the input's{declared}" if not changed else
                       "table properties changed: " + "; ".join(
                           f"{k}: {props_b.get(k)!r} -> {props_a.get(k)!r}" for k in changed[:5]) + declared)),
    ]


def history_checks(ii: IntegrityInput, after: TableMetadata) -> list[Check]:
    b = ii.before
    base_ref = b.refs.get(ii.branch) or b.refs.get("main")
    base = base_ref.snapshot_id if base_ref is not None else b.current_snapshot_id
    head_ref = after.refs.get(ii.branch)
    head = head_ref.snapshot_id if head_ref is not None else None
    chain = ancestors(after, head)
    is_ancestor = base is not None and base in chain
    before_ids = [s.snapshot_id for s in b.snapshots]
    after_ids = {s.snapshot_id for s in after.snapshots}
    lost = [i for i in before_ids if i not in after_ids]
    moved = []
    for name, ref in b.refs.items():
        now = after.refs.get(name)
        if now is None:
            moved.append(f"{ref.snapshot_ref_type.value} {name} is gone")
        elif ref.snapshot_ref_type == SnapshotRefType.TAG or now.snapshot_ref_type == SnapshotRefType.TAG:
            if now.snapshot_id != ref.snapshot_id or now.snapshot_ref_type != ref.snapshot_ref_type:
                moved.append(f"tag {name}: {ref.snapshot_id} -> {now.snapshot_id}")
        elif ref.snapshot_id not in ancestors(after, now.snapshot_id):
            moved.append(f"branch {name} moved off its history: {ref.snapshot_id} is not an ancestor of "
                         f"{now.snapshot_id}")
    kept = not lost and not moved
    before = len(chain) - 1 - chain.index(base) if base is not None and is_ancestor else 0
    empty = base is None and not b.snapshots  # an empty input (no snapshot): no history to keep or travel to
    return [
        Check(name="input_is_ancestor", ok=is_ancestor or empty,
              message=(f"the input snapshot {base} is an ancestor of the new head {head} of {ii.branch} "
                       f"({before} snapshot(s) before it in a chain of {len(chain)})"
                       if is_ancestor else
                       f"the input has no snapshot (an empty table): no time travel to keep (head of {ii.branch}: "
                       f"{head})" if empty else
                       f"the input snapshot {base} is not an ancestor of the head {head} of {ii.branch} "
                       f"(its chain: {_ids(chain, 5) or 'none'}): time travel to the input is lost")),
        Check(name="history_kept", ok=kept,
              message=(f"all {len(before_ids)} snapshot(s) and {len(b.refs)} ref(s) of the input kept "
                       f"({', '.join(sorted(b.refs))})" if kept else
                       "; ".join(([f"{len(lost)} snapshot(s) of the input gone (expired or a new table): "
                                   f"{_ids(lost)}"] if lost else []) + moved)[:1000])),
    ]


def commit_event(s: Any, who: str = "engine") -> CommitEvent:
    """A snapshot as a commit event: who, operation, parent, files added and removed, the step that made
    it when its summary says (`bench.step`)."""
    summary = s.summary.additional_properties if s.summary else {}
    return CommitEvent(who=who, snapshot_id=s.snapshot_id, parent_id=s.parent_snapshot_id,  # type: ignore[arg-type]
                       sequence_number=s.sequence_number, timestamp_ms=s.timestamp_ms,
                       operation=str(s.summary.operation.value) if s.summary else "",
                       added_files=_int(summary.get("added-data-files")),
                       deleted_files=_int(summary.get("deleted-data-files")), step=str(summary.get("bench.step", "")))


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _manifest_totals(files: LiveFiles) -> dict[str, int]:
    return {
        "total-records": sum(e.data_file.record_count for e in files.data),
        "total-data-files": len(files.data),
        "total-delete-files": len(files.deletes),
        "total-position-deletes": sum(e.data_file.record_count for e in files.position),
        "total-equality-deletes": sum(e.data_file.record_count for e in files.equality),
        "total-files-size": sum(e.data_file.file_size_in_bytes for e in files.all),
    }


def totals_differences(tbl: Table, snapshot_id: int, files: LiveFiles | None = None) -> tuple[list[str], list[str]]:
    """(differences, totals missing from the summary) of one snapshot: summary totals vs manifests."""
    snap = tbl.metadata.snapshot_by_id(snapshot_id)
    summary = snap.summary.additional_properties if snap is not None and snap.summary else {}
    held = _manifest_totals(files if files is not None else live_files(tbl, snapshot_id))
    diffs, missing = [], []
    for key in TOTALS:
        stated = summary.get(key)
        if stated is None:
            missing.append(key)
        elif str(stated) != str(held[key]):
            sizes = key == "total-files-size" and str(stated).isdigit()  # a size for people, the difference kept
            diffs.append(f"{key} {fmt_bytes_against(int(stated), held[key])}" if sizes
                         else f"{key} {stated} (manifests: {held[key]})")
    return diffs, missing


def commit_checks(ii: IntegrityInput, tbl: Table, head_files: LiveFiles | None = None) -> tuple[list[Check], list]:
    """(checks, the run's snapshots oldest first) for the snapshots the run committed."""
    after = tbl.metadata
    before_ids = {s.snapshot_id for s in ii.before.snapshots}
    mine = sorted((s for s in after.snapshots if s.snapshot_id not in before_ids
                   and s.snapshot_id not in ii.exclude_snapshots),
                  key=lambda s: (s.sequence_number or 0, s.timestamp_ms))
    ops = [(s.snapshot_id, s.summary.operation.value if s.summary else "unknown") for s in mine]
    wrong = [(i, op) for i, op in ops if op != "replace"]
    listing = ", ".join(f"{i} {op}" for i, op in ops)
    checks = [Check(name="commits_are_replace", ok=not wrong,
                    message=(f"{len(ops)} snapshot(s) committed, every one a replace: {listing}" if ops and not wrong
                             else "no snapshot committed by the run" if not ops else
                             f"{len(wrong)} of {len(ops)} snapshot(s) committed are not a replace ({listing}): "
                             "incremental readers take them as new data and read the rows again"))]
    head_ref = after.refs.get(ii.branch)
    head = head_ref.snapshot_id if head_ref is not None else None
    mine_ids = {s.snapshot_id for s in mine}
    if head is not None and head in mine_ids:
        diffs, missing = totals_differences(tbl, head, head_files)
        note = f"; not stated: {', '.join(missing)} (recorded, not a failure)" if missing else ""
        checks.append(Check(name="summary_totals", ok=not diffs,
                            message=(f"the summary of the head {head} states totals equal to its manifests{note}"
                                     if not diffs else f"the summary of the head {head} misstates: "
                                     + "; ".join(diffs) + note)))
    inter = [s.snapshot_id for s in mine if s.snapshot_id != head]
    if inter:
        wrong_inter = []
        for sid in inter:
            diffs, _ = totals_differences(tbl, sid)
            if diffs:
                wrong_inter.append(f"{sid}: " + "; ".join(diffs))
        checks.append(Check(name="summary_totals_intermediate", ok=not wrong_inter, required=False,
                            message=(f"{len(inter)} intermediate snapshot(s) of the run state totals equal to their "
                                     "manifests" if not wrong_inter else
                                     f"{len(wrong_inter)} of {len(inter)} intermediate snapshot(s) of the run "
                                     "misstate their totals: " + " | ".join(wrong_inter))[:1000]))
    return checks, mine


def integrity_checks(ii: IntegrityInput, tbl: Table, head_files: LiveFiles | None = None) -> tuple[list[Check], list]:
    """Every integrity check of `tbl` (loaded after the run) against the input; and the run's snapshots.
    `head_files`: the compacted branch head's live files when already read."""
    after = tbl.metadata
    commits, mine = commit_checks(ii, tbl, head_files)
    return identity_checks(ii, after) + history_checks(ii, after) + commits, mine
