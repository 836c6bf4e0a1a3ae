"""The `pyiceberg` engine: pyiceberg's own maintenance, maintenance only (no JVM: both cases' tables are
pyiceberg-written)."""

from __future__ import annotations

import json

import pytest

from bench.engines import engine_class
from bench.engines.base import MaintenanceOp, PhaseClock
from bench.engines.pyiceberg_maintenance import NotSupported, PyicebergEngine, cutoff
from tests.helpers import run_bench


def test_what_pyiceberg_can_do_is_declared():
    """Expiry is its one operation; compaction and every other operation are refused with pyiceberg's version, while
    an engine that declares nothing about compaction still compacts; a retain_last above 1 is refused, not faked;
    the cutoff is the op's point in time to the millisecond."""
    cls = engine_class("pyiceberg")
    assert cls.why_not("expire-snapshots") is None and cls.why_not("format-v3") is None
    for feature in ("rewrite-data-files", "remove-orphan-files", "rewrite-manifests", "rewrite-position-deletes"):
        assert "pyiceberg 0.12.0 has no" in (cls.why_not(feature) or ""), feature
    assert engine_class("risingwave").why_not("rewrite-data-files") is None
    keep_three = MaintenanceOp(op="expire_snapshots", retain_last=3)
    with pytest.raises(NotSupported, match="retain_last 3 is not supported"):
        PyicebergEngine().expire_snapshots(None, keep_three, PhaseClock())  # type: ignore[arg-type]
    at = MaintenanceOp(op="expire_snapshots", older_than_ms=1_700_000_000_123)
    assert cutoff(at).timestamp() == 1_700_000_000.123


def test_pyiceberg_expires_and_declares_no_orphan_removal(tmp_path):
    """`bench conformance` on two pyiceberg-written cases: its expiry commits (the expired snapshots' manifest lists
    stay on disk: kept-garbage, its own finding), its orphan removal is unsupported with its reason; each cell's
    reproducer replays pyiceberg's own call and shows the same."""
    p = run_bench("conformance", "--cases", "expire-pyiceberg-written,orphans-pyiceberg-written", "--engines",
                  "pyiceberg", "--warehouse", tmp_path / "wh", "--results-dir", tmp_path / "r", "--run-id", "c")
    assert p.returncode == 0, p.stderr[-3000:]
    cells = {c["case"]: c for c in json.loads((tmp_path / "r" / "c" / "conformance.json").read_text())["cells"]}
    assert cells["expire-pyiceberg-written"]["verdict"] == "kept-garbage", cells
    assert "removed_unreachable" in cells["expire-pyiceberg-written"]["evidence"]
    assert cells["orphans-pyiceberg-written"]["verdict"] == "unsupported", cells
    assert "pyiceberg 0.12.0 has no orphan file removal" in cells["orphans-pyiceberg-written"]["evidence"]
    assert all(c["self_written"] for c in cells.values())
    shown = {(r["case"], r["shown"]): r for r in json.loads((tmp_path / "r" / "c" / "conformance.json").read_text())[
        "reproducers"]}
    assert set(shown) == {("expire-pyiceberg-written", True), ("orphans-pyiceberg-written", True)}, shown
    out = (tmp_path / "r" / "c" / "reproducers" / "expire-pyiceberg-written--pyiceberg" / "output.txt").read_text()
    assert "table.maintenance.expire_snapshots().older_than(" in out and "not removed, though nothing reaches it" in out
