"""A streaming run's table after each cycle: what it looks like (files, manifests, snapshots, metadata
bytes, scan planning time) and whether its content is what the writer committed (the generator's
expected table), with a verdict per cycle.

    safe          every reader that answered sees exactly the expected rows (count and checksum over all
                  columns)
    unsafe        a reader sees other rows: evidence are the keys the writer deleted during the cycle that
                  are back, the row difference, and the snapshots of the cycle (who committed them)
    inconclusive  no reader could read the table
An unsafe cycle leaves the table wrong for every later cycle: `first_unsafe_cycle` in the totals says
where it diverged.
"""

from __future__ import annotations

import os
import time
from collections.abc import Container

from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata

from bench.core.catalog import CatalogSettings
from bench.core.records.live import CycleRecord
from bench.core.records.verification import Check, ReaderAnswer
from bench.core.table.deletes import equality_delete_work
from bench.core.table.entries import live_files
from bench.core.uri import local_path
from bench.verify.integrity import IntegrityInput, history_checks, identity_checks
from bench.verify.lineage import RULE as LINEAGE_RULE
from bench.verify.lineage import lineage_check
from bench.verify.live import key_evidence
from bench.verify.readers import read

RULES = [
    "after every cycle the table (main) is read back by our merge-on-read and by DuckDB's iceberg reader and must "
    "equal the generator's expected table after the writer's last commit it holds (rows and checksum over all columns)",
    "integrity after every cycle's maintenance, as a single run's: the same table (UUID, format version, location, "
    "schema, partition specs, sort orders, properties); the branch's head before the cycle an ancestor of its head "
    "after, and no snapshot, branch or tag lost or moved (both advisory in a cycle that expires snapshots, which "
    "removes history by design and cuts the chain of parents); every snapshot the maintenance committed a `replace`",
    "safe: every reader that answered sees exactly that table; unsafe: rows lost or deleted rows back (evidence: "
    "the keys the writer deleted in the cycle that are back); a run is verified when every cycle is safe",
]
# on a format v3 table, with the integrity of every cycle whose maintenance wrote data files (cycle_lineage)
CYCLE_LINEAGE_RULE = "per cycle, " + LINEAGE_RULE
STREAM_READERS = ("duckdb-merge-on-read", "duckdb-iceberg")  # pyiceberg cannot apply equality deletes
# DuckDB's iceberg extension compares every row with every applicable equality key (duckdb-iceberg#626): ~20 s
# for 4e8 comparisons here; above this it does not check a cycle (said in its answer), our merge-on-read does
STREAM_DUCKDB_WORK = 100_000_000


def _size(uri: str) -> int:
    try:
        return os.path.getsize(local_path(uri))
    except OSError:
        return 0


def measure_table(rec: CycleRecord, tbl: Table, snapshot_id: int | None) -> None:
    """Files, manifests, snapshots, metadata bytes and the scan planning time of `snapshot_id` (None: the
    current snapshot): reading its manifest list and every manifest with pyiceberg (the metadata work of
    planning a full scan; pyiceberg's own plan_files refuses a table with live equality deletes)."""
    snap = tbl.metadata.snapshot_by_id(snapshot_id) if snapshot_id else tbl.current_snapshot()
    rec.table.snapshot_id = snap.snapshot_id if snap is not None else None
    rec.table.metadata_location = tbl.metadata_location
    rec.snapshots = len(tbl.metadata.snapshots)
    if snap is None:
        return
    t0 = time.perf_counter()
    files = live_files(tbl, snap.snapshot_id)  # what planning a scan reads: the manifest list and every manifest
    rec.planning_s = round(time.perf_counter() - t0, 4)
    t = rec.table
    t.data_files, t.delete_files = len(files.data), len(files.deletes)
    t.position_delete_files, t.equality_delete_files = len(files.position), len(files.equality)
    t.data_bytes = sum(e.data_file.file_size_in_bytes for e in files.data)
    t.delete_bytes = sum(e.data_file.file_size_in_bytes for e in files.deletes)
    manifests = snap.manifests(tbl.io)
    rec.manifests = len(manifests)
    rec.metadata_bytes = (_size(tbl.metadata_location) + _size(snap.manifest_list)
                          + sum(m.manifest_length for m in manifests))


def cycle_integrity(before: TableMetadata, tbl: Table, branch: str, snaps: list[dict], expired: bool,
                    declared: frozenset[str] = frozenset()) -> list[Check]:
    """The integrity checks of a single run (bench.verify.integrity) across one cycle's maintenance: `before` the
    metadata at the cycle's start, `snaps` the cycle's new snapshots with who made them; `expired`: the cycle
    expired snapshots (its history checks are then advisory: losing history is that operation's purpose, and an
    expired parent cuts the chain from the new head back to the cycle's start)."""
    ii = IntegrityInput(before=before, branch=branch, declared_properties=declared)
    out = identity_checks(ii, tbl.metadata)
    for c in history_checks(ii, tbl.metadata):
        if expired:
            c.required = False
            c.message += " (the cycle expired snapshots: advisory)"
        out.append(c)
    mine = [s for s in snaps if s.get("who") == "maintenance"]
    wrong = [s for s in mine if s.get("operation") != "replace"]
    out.append(Check(name="commits_are_replace", ok=not wrong,
                     message=(f"{len(mine)} snapshot(s) the maintenance committed, each a replace" if not wrong else
                              f"{len(wrong)} of the {len(mine)} snapshot(s) the maintenance committed are not a "
                              f"replace: " + ", ".join(f"{s['snapshot_id']} {s['operation']}" for s in wrong[:3]))))
    return out


def cycle_lineage(tbl: Table, branch: str, before_live: Container[str], writer_prefix: str) -> list[Check]:
    """Format v3: a single run's `row_lineage_kept` over the data files one cycle's maintenance wrote (live on `branch`
    after it, not before it, and not the writer's: their names start with `writer_prefix`); [] on an older format or
    when the maintenance wrote no data file (expiry, manifests only)."""
    head = tbl.metadata.refs.get(branch)
    if tbl.metadata.format_version < 3 or head is None:
        return []
    new = [e.data_file.file_path for e in live_files(tbl, head.snapshot_id).data
           if e.data_file.file_path not in before_live
           and not os.path.basename(e.data_file.file_path).startswith(writer_prefix)]
    return [lineage_check(new)] if new else []


def check_content(rec: CycleRecord, tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None,
                  deleted_keys: list[int], cycle_snapshots: list[dict]) -> None:
    """Read `snapshot_id` back with every stream reader, compare with rec.expected_*, and give the verdict."""
    work = equality_delete_work(live_files(tbl, snapshot_id), tbl.specs())
    rec.readers = [read(name, tbl, snapshot_id, settings) if name != "duckdb-iceberg" or work <= STREAM_DUCKDB_WORK
                   else ReaderAnswer(reader=name, unavailable=f"{work:.3g} row x equality-key comparisons, above "
                                                              f"{STREAM_DUCKDB_WORK:.3g} for a streaming cycle")
                   for name in STREAM_READERS]
    answered = [a for a in rec.readers if a.answered]
    wrong = [a for a in answered if a.content != (rec.expected_rows, rec.expected_checksum)]
    rec.content_ok = bool(answered) and not wrong
    if answered:
        rec.table.rows, rec.table.checksum = answered[0].got()
        rec.table.content_reader = answered[0].reader
    if not answered:
        rec.verdict, rec.reason = "inconclusive", "no reader could read the table: " + "; ".join(
            f"{a.reader}: {a.why_not}" for a in rec.readers)
        return
    if not wrong:
        rec.verdict = "safe"
        rec.reason = f"content as expected ({len(answered)} readers: {rec.expected_rows} rows, checksum equal)"
        return
    a = wrong[0]
    rec.evidence.update(key_evidence(tbl, settings, [], deleted_keys, snapshot_id))
    rec.evidence["row_difference"] = (a.rows or 0) - rec.expected_rows
    rec.evidence["snapshots"] = cycle_snapshots[-20:]
    parts = [f"{a.reader} reads {a.rows} rows, expected {rec.expected_rows}"]
    if rec.evidence.get("deleted_rows_back"):
        parts.append(f"{rec.evidence['deleted_rows_back']} of the {len(deleted_keys)} keys the writer deleted "
                     "in this cycle are back")
    rec.verdict, rec.reason = "unsafe", "; ".join(parts)
