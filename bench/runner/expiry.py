"""`bench inspect`: could the table owner's snapshot expiry remove the pinned snapshot while a run uses it?

Iceberg's expire_snapshots removes a snapshot no ref retains once it is older than the branch's
`max-snapshot-age-ms` (else the table property `history.expire.max-snapshot-age-ms`, 5 days by default) and is
not among the branch's newest `min-snapshots-to-keep` (`history.expire.min-snapshots-to-keep`, 1).  The snapshot
a branch or tag points to is retained (a ref's own `max-ref-age-ms` aside).  A pinned snapshot that is main's
head today stops being retained by it at the next commit of a live writer.  With `gc.enabled=false` expiry
refuses to run.  Sources: the Iceberg table spec ("Snapshot Retention Policy") and its configuration page.
"""

from __future__ import annotations

import time
from typing import Any

from pyiceberg.table import Table

from bench.core.source import SourceRef, load_source

DEFAULT_MAX_AGE_MS = 5 * 24 * 3600 * 1000
DEFAULT_MIN_KEEP = 1
ASSUMED_RUN_S = 3600.0  # when no fitted model gives the run's expected duration


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def expiry_risk(tbl: Table, snapshot_id: int, expected_run_s: float | None) -> dict[str, Any]:
    """The retention facts of the pinned snapshot and a warning ("" = none) when expiry could remove it within
    the run's expected duration (`expected_run_s`; None: ASSUMED_RUN_S, said so)."""
    props, md = tbl.properties, tbl.metadata
    main = md.refs.get("main")
    max_age = _int(getattr(main, "max_snapshot_age_ms", None),
                   _int(props.get("history.expire.max-snapshot-age-ms"), DEFAULT_MAX_AGE_MS))
    min_keep = _int(getattr(main, "min_snapshots_to_keep", None),
                    _int(props.get("history.expire.min-snapshots-to-keep"), DEFAULT_MIN_KEEP))
    snap = md.snapshot_by_id(snapshot_id)
    age_ms = int(time.time() * 1000) - (snap.timestamp_ms if snap else 0)
    held_by = sorted(n for n, r in md.refs.items() if r.snapshot_id == snapshot_id and n != "main")
    head = main is not None and main.snapshot_id == snapshot_id
    run_s = expected_run_s if expected_run_s else ASSUMED_RUN_S
    out: dict[str, Any] = {"max_snapshot_age_ms": max_age, "min_snapshots_to_keep": min_keep, "age_ms": age_ms,
                           "retained_by": held_by + (["main (its head)"] if head else []),
                           "gc_enabled": str(props.get("gc.enabled", "true")).lower() != "false",
                           "expirable_in_s": round((max_age - age_ms) / 1000, 1), "expected_run_s": run_s,
                           "run_s_assumed": not expected_run_s, "warning": ""}
    if not out["gc_enabled"] or held_by:
        return out
    if age_ms + run_s * 1000 < max_age:
        return out
    when = ("already" if age_ms >= max_age else f"in {(max_age - age_ms) / 1000:.0f} s")
    what = ("once anyone commits to main (it is main's head now; a live table's next commit)" if head else
            "by the next expire_snapshots")
    how = "assumed" if not expected_run_s else "expected"
    keep = (f" (unless it stays among main's newest {min_keep} snapshot(s))" if min_keep > 1 else "")
    out["warning"] = (f"the pinned snapshot {snapshot_id} is {age_ms / 3.6e6:.1f} h old and becomes expirable "
                      f"{when} (max-snapshot-age {max_age / 3.6e6:.1f} h): the owner's expire_snapshots could remove "
                      f"it and its files {what}{keep}, within the run's {how} {run_s:.0f} s;"
                      f" the runs after that would not be verified. Pin a snapshot a tag holds, or "
                      "pause the owner's maintenance")
    return out


def pinned_expiry(ref: SourceRef, snapshot_id: int, expected: dict[str, Any] | None) -> dict[str, Any]:
    """`expiry_risk` of the source's pinned snapshot, the run's expected duration the sum of each engine's expected
    seconds from the fitted models (`bench inspect`'s "expected"), when there are any."""
    engines = (expected or {}).get("engines") or {}
    run_s = sum(float(v.get("seconds") or 0) for v in engines.values()) or None
    return expiry_risk(load_source(ref), snapshot_id, run_s)


def render_expiry(d: dict[str, Any]) -> list[str]:
    """`bench inspect`'s lines on expiry."""
    x = d.get("expiry")
    if not x:
        return []
    if x["warning"]:
        return [f"WARNING: {x['warning']}"]
    why = ("gc.enabled=false: expiry refuses to run" if not x["gc_enabled"] else
           f"retained by {', '.join(x['retained_by'])}" if x["retained_by"] and "main (its head)" not in
           x["retained_by"] else f"expirable in {x['expirable_in_s'] / 3600:.1f} h")
    return [f"snapshot expiry: the pinned snapshot is safe for the run ({why}; max-snapshot-age "
            f"{x['max_snapshot_age_ms'] / 3.6e6:.1f} h, run {'assumed' if x['run_s_assumed'] else 'expected'} "
            f"{x['expected_run_s']:.0f} s)"]
