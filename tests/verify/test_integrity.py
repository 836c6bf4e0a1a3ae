"""A compaction must leave the same table: identity, history and the kind of its commits (bench.verify.integrity),
and no work may hide outside the clock (bench.runner.inputs.SetupGuard).  Each test-only engine in
tests/fakes/corrupt.py does the physical work right and breaks one of these; each must be caught."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.core.catalog import CatalogSettings, load_catalog
from bench.core.dataset import load_manifest, parked_dir, spare_dir
from bench.core.table.state import list_files, park, restore
from tests.helpers import INTEGRITY_CHECKS, TINY, run_bench

# engine -> the required checks it must fail (and no other required check)
BROKEN = {
    "overwrite": {"commits_are_replace"},
    "recreate": {"same_table", "input_is_ancestor", "history_kept", "commits_are_replace"},
    "expire": {"input_is_ancestor", "history_kept"},
    "misstate": {"summary_totals"},
    "evolve-props": {"same_properties"},
    "evolve-schema": {"same_schema", "content_duckdb_read_parquet", "content_pyiceberg_scan"},
    "evolve-spec": {"same_partitioning"},
    "evolve-sort": {"same_sort_order"},
}


@pytest.fixture(scope="module")
def run(shared_warehouse, tmp_path_factory):
    res = tmp_path_factory.mktemp("integrity-results")
    engines = ["rewrite", *BROKEN, "setupwork", "setuppeek"]
    proc = run_bench("run", "bin-packing", "--scale", TINY, "--engines", ",".join(engines), "--results-dir", res,
                     "--warehouse", shared_warehouse, "--run-id", "integrity")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = {}
    for p in (res / "integrity").glob("*--rep0.json"):
        d = json.loads(p.read_text())
        records[d["engine"]] = d
    return {"records": records, "dir": res / "integrity"}


def _failed(r: dict) -> set[str]:
    return {c["name"] for c in r["verification"]["checks"] if not c["ok"] and c["required"]}


def test_a_right_compaction_keeps_the_table_and_commits_a_replace(run):
    r = run["records"]["rewrite"]
    assert r["status"] == "ok" and r["verified"], r["verification"]["differences"]
    checks = {c["name"]: c for c in r["verification"]["checks"]}
    for name in (*INTEGRITY_CHECKS, "setup_out_of_reach"):
        assert checks[name]["ok"] and checks[name]["required"], (name, checks[name]["message"])
    assert "UUID" in checks["same_table"]["message"] and "replace" in checks["commits_are_replace"]["message"]
    assert [c["operation"] for c in r["verification"]["committed"]] == ["replace"]
    assert [c["step"] for c in r["verification"]["committed"]] == ["commit"]  # placed in its phase by time
    assert r["setup_io"]["parked"].startswith("unregistered from the catalog, its directory moved")
    assert r["setup_io"]["setup_read_chars"] > 0  # the evidence is recorded
    assert r["setup_s"] is not None and r["duration_s"] > 0


@pytest.mark.parametrize("engine", sorted(BROKEN))
def test_each_broken_table_is_caught_by_its_check(run, engine):
    r = run["records"][engine]
    assert r["status"] == "ok" and r["verified"] is False
    assert _failed(r) == BROKEN[engine], r["verification"]["differences"]
    for name in BROKEN[engine]:  # the difference says what was compared
        assert any(d.startswith(f"{name}:") for d in r["verification"]["differences"])


def test_work_in_setup_cannot_reach_the_table(run):
    """Rewriting in open() (untimed) and committing in compact(): the table is not there while it sets
    up, so the engine fails instead of coming out as a fast verified run."""
    r = run["records"]["setupwork"]
    assert r["status"] == "failed" and r["verified"] is False and r["duration_s"] is None
    assert "does not exist" in r["error"], r["error"]
    # nor can an engine read the table's files from the warehouse directory behind the catalog's back
    peek = run["records"]["setuppeek"]
    assert peek["verified"], peek["verification"]["differences"]
    log = next(run["dir"].glob("work/*setuppeek*/engine.log")).read_text()
    assert "setuppeek: read 0 bytes of the table's Parquet files in open()" in log


def test_a_table_left_parked_by_a_killed_run_comes_back(shared_warehouse, run):
    """A harness killed while an engine set up leaves the table parked: the next reset restores it."""
    settings = CatalogSettings.for_warehouse(shared_warehouse)
    ds = next(m for m in (load_manifest(settings.state_path, p.stem) for p in
                          (settings.state_path / "datasets").glob("smallfiles_*.json")
                          if not p.name.endswith(".baseline.json")) if m is not None)
    cat = load_catalog(settings)
    name = ds.table.split(".")[-1]
    parked = parked_dir(settings.state_path, name)
    assert not parked.exists()
    park(cat, ds.table, ds.location, parked)
    assert parked.is_dir() and not Path(ds.location.removeprefix("file://")).exists()
    assert list_files(ds.location) == {}
    restore(cat, ds.table, ds.metadata_location, ds.location, ds.table_files,
            spare_dir(settings.state_path, name), parked)
    assert list_files(ds.location) == ds.table_files and not parked.exists()
    assert cat.load_table(ds.table).metadata_location == ds.metadata_location
    shutil.rmtree(parked.parent, ignore_errors=True)
