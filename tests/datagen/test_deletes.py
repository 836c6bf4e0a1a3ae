"""The delete-heavy scenarios: generator shape and ground truth against independent readers, the
deletes verifier, and both engines end to end through the real CLI (tiny scale)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError
from pyiceberg.manifest import DataFileContent

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.catalog.rest import serve
from bench.core.errors import UserError
from bench.core.iceberg_java.runtime import ICEBERG_VERSION
from bench.core.table.deletes import classify
from bench.core.table.entries import live_entries, live_files
from bench.core.uri import local_path
from bench.scenario import load_scenario
from bench.verify.checks import VerifyInput, verify
from bench.verify.readers import ReaderUnavailable, read_duckdb_iceberg, read_merge_on_read, read_parquet_files
from bench.verify.stats import table_stats
from datagen import deletes
from datagen.dataset import prepare
from datagen.recipes import DeletesRecipe
from tests.helpers import INTEGRITY_CHECKS, TINY, run_bench

PER_COMMIT = 4  # 8 checkpoints at the tiny scale -> two commit pairs


def recipe(name: str = "deletes-standard", **over) -> DeletesRecipe:
    r = load_scenario(name).table
    return DeletesRecipe.model_validate({**r.model_dump(), **over})


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """deletes-standard at the tiny scale, generated once (one JVM for the commits)."""
    wh = tmp_path_factory.mktemp("deletes-wh")
    settings = CatalogSettings(warehouse=str(wh))
    cat = load_sql_catalog(settings)
    r = recipe(files_per_commit=PER_COMMIT)
    ds = prepare(cat, settings, r, float(TINY), 42, workers=2)
    return {"settings": settings, "catalog": cat, "ds": ds, "plan": deletes.plan(r, float(TINY)),
            "warehouse": wh}


def _sha(paths):
    return [hashlib.sha256(Path(local_path(p)).read_bytes()).hexdigest() for p in paths]


# --- the plan (no JVM) ------------------------------------------------------------------------------
def test_scale_rule_counts_and_checkpoint_shape():
    std, high, massive = recipe("deletes-standard"), recipe("deletes-high"), recipe("deletes-massive")
    p = deletes.plan(std, 1.0)
    assert (p.n, p.position_files, p.equality_files, p.rows_per_file) == (20_000, 10_000, 10_000, 50_000)
    assert p.has_pos[:4] == (False, True, False, True) and p.has_eq[:4] == (False, True, False, True)
    h = deletes.plan(high, 1.0)
    assert (h.n, h.position_files, h.equality_files) == (20_000, 20_000, 20_000) and all(h.has_eq)
    local = deletes.plan(high, load_scenario("deletes-high").local_scale)
    assert (local.n, local.rows_per_file) == (100, 50_000)  # above the floor: published row count
    tiny = deletes.plan(std, float(TINY))
    assert (tiny.n, tiny.position_files, tiny.equality_files) == (8, 4, 4)  # the floor, ratios kept
    assert tiny.rows_per_file == 6_250  # below the floor the files shrink: same total rows
    assert tiny.k_pos == tiny.k_eq == 625  # 20 % deleted, half by position, half by equality
    m = deletes.plan(massive, 1.0)
    assert m.eq_bytes_per_file == pytest.approx(20e9 / 20_000)  # ~20 GB of equality deletes at 1.0
    assert deletes.plan(massive, 0.002).eq_bytes_per_file == pytest.approx(20e9 * 0.002 / 40)
    with pytest.raises(ValidationError):
        recipe(data_files=0)
    with pytest.raises(ValidationError, match="at most one delete file"):
        recipe(position_delete_files=30_000)
    with pytest.raises(UserError, match="leaves no row"):
        deletes.plan(recipe(deleted_fraction=0.99, rows_per_data_file=100), 1.0)


def test_deleted_rows_are_deterministic_disjoint_and_planned_forward():
    p = deletes.plan(recipe(), float(TINY))
    for j in range(p.n):
        targets = p.eq_targets(j)
        a = deletes.deleted_rows(42, j, p.rows_per_file, p.k_pos if p.has_pos[j] else 0, p.k_eq, targets)
        b = deletes.deleted_rows(42, j, p.rows_per_file, p.k_pos if p.has_pos[j] else 0, p.k_eq, targets)
        c = deletes.deleted_rows(7, j, p.rows_per_file, p.k_pos if p.has_pos[j] else 0, p.k_eq, targets)
        for x, y in zip(a, b):
            assert np.array_equal(x, y)
        assert not np.array_equal(a[1], c[1])  # another seed, other rows
        pos, eq, assign = a
        assert len(np.intersect1d(pos, eq)) == 0 and list(pos) == sorted(pos)
        assert len(pos) == (p.k_pos if p.has_pos[j] else 0) and len(eq) == p.k_eq
        # an equality delete only ever removes rows of data files at or before its checkpoint
        assert set(assign.tolist()) <= set(targets) and all(t >= j for t in targets)
        assert all(p.has_eq[t] for t in targets) and len(targets) <= p.window


# --- the generated table -------------------------------------------------------------------------------
def test_shape_from_the_manifests(generated):
    cat, ds, p = generated["catalog"], generated["ds"], generated["plan"]
    tbl = cat.load_table(ds.table)
    entries = live_entries(tbl)
    data = {e.data_file.file_path: e for e in entries if e.data_file.content == DataFileContent.DATA}
    pos = [e for e in entries if e.data_file.content == DataFileContent.POSITION_DELETES]
    eq = [e for e in entries if e.data_file.content == DataFileContent.EQUALITY_DELETES]
    assert (len(data), len(pos), len(eq)) == (8, 4, 4)
    assert ds.files == len(entries) == 16 and sorted(ds.live_files) == sorted(e.data_file.file_path for e in entries)
    # two commit pairs: data + position deletes, then equality deletes
    kinds = [s.summary.get("bench.commit") for s in tbl.metadata.snapshots]
    assert kinds == ["data+position-deletes", "equality-deletes"] * 2
    index = {path: int(Path(path).stem.split("-")[1]) for path in data}
    for e in pos:
        # a position delete names exactly one data file, spelled as the manifest spells it, committed
        # in the same snapshot (same sequence number)
        table = pq.read_table(local_path(e.data_file.file_path))
        paths = set(table.column("file_path").to_pylist())
        assert len(paths) == 1 and (target := paths.pop()) in data
        assert e.sequence_number == data[target].sequence_number
        assert table.column("pos").to_pylist() == sorted(table.column("pos").to_pylist())
        assert table.schema.field("file_path").metadata[b"PARQUET:field_id"] == b"2147483546"
        assert table.schema.field("pos").metadata[b"PARQUET:field_id"] == b"2147483545"
        assert Path(e.data_file.file_path).stem.split("-")[1] == Path(target).stem.split("-")[1]
    for e in eq:
        assert list(e.data_file.equality_ids) == [1, 2]
        i = int(Path(e.data_file.file_path).stem.split("-")[1])
        assert p.has_eq[i]
        # later than every data file at or before its checkpoint: it applies to all of them
        assert all(e.sequence_number > d.sequence_number for path, d in data.items() if index[path] <= i)
    cls = classify(live_files(tbl), tbl.specs())
    assert cls.dangling == [] and (cls.applying_position, cls.applying_equality) == (4, 4)


def test_ground_truth_against_independent_readers(generated):
    """The generator's own ground truth vs DuckDB's iceberg extension through a real REST server and
    vs our merge-on-read over the Parquet files."""
    ds, cat = generated["ds"], generated["catalog"]
    gt = ds.ground_truth
    assert gt.rows == gt.rows_written - gt.position_deleted_rows - gt.equality_deleted_rows
    assert 0 < gt.rows < gt.rows_written and ds.rows == gt.rows
    assert gt.equality_keys > gt.equality_deleted_rows > 0  # unmatched keys are in there too
    tbl = cat.load_table(ds.table)
    expected = (gt.rows, gt.checksum)
    assert read_merge_on_read(tbl, None) == expected
    with serve(generated["settings"]) as served:
        assert read_duckdb_iceberg(tbl, None, served.settings) == expected
        st = table_stats(tbl, settings=served.settings)
    assert (st.rows, st.checksum, st.content_reader) == (*expected, "duckdb-iceberg")
    with pytest.raises(ReaderUnavailable):  # deletes apply: reading the data files alone is wrong
        read_parquet_files(tbl, None)


@pytest.mark.spark
@pytest.mark.slow
def test_spark_reader_agrees_with_the_ground_truth(generated):
    """Iceberg's own Java reader (Spark) sees the surviving rows the generator planned."""
    from tests.spark_session import spark_session

    ds, settings = generated["ds"], generated["settings"]
    with spark_session(settings) as spark:
        n, s1, s2 = spark.sql(f"SELECT count(*), sum(v1), sum(v2) FROM {settings.name}.{ds.table}").collect()[0]
    tbl = generated["catalog"].load_table(ds.table)
    files = [local_path(e.data_file.file_path) for e in live_entries(tbl)
             if e.data_file.content == DataFileContent.DATA]
    assert n == ds.ground_truth.rows
    # the same surviving keys as DuckDB's iceberg extension sees
    with serve(settings) as served:
        from bench.core.catalog.duck import duckdb_connect_iceberg

        con = duckdb_connect_iceberg(served.settings)
        d = con.execute(f"SELECT count(*), sum(v1), sum(v2) FROM ice.{ds.table}").fetchone()
        total = con.execute("SELECT sum(v2) FROM read_parquet(?)", [files]).fetchone()[0]
        con.close()
    assert (n, int(s1), int(s2)) == tuple(int(x) for x in d)
    assert int(s2) < int(total)  # deleted rows really are gone


def test_verifier_reports_live_deletes_and_wrong_truth(generated):
    """The uncompacted table as 'after': every delete still applies, nothing was committed."""
    ds, cat = generated["ds"], generated["catalog"]
    tbl = cat.load_table(ds.table)
    with serve(generated["settings"]) as served:
        st = table_stats(tbl, settings=served.settings)
        paths = {e.data_file.file_path for e in live_entries(tbl)}

        def check(gt):
            vi = VerifyInput(kind="deletes", table=tbl, before=st, before_paths=paths, ground_truth=gt,
                             target_file_size_bytes=512 << 20, small_file_threshold_bytes=384 << 20,
                             output_codec="snappy", input_fingerprint="x", input_identical=True,
                             settings=served.settings)
            return verify(vi)[1]

        v = check(ds.ground_truth)
        bad = check(ds.ground_truth.model_copy(update={"checksum": "1"}))
    assert not v.verified
    ok = {c.name: c.ok for c in v.checks}
    assert ok["no_live_delete_files"] is False and ok["new_snapshot"] is False
    assert v.check("no_live_delete_files").required  # required for every engine, not advisory
    assert ok["content_duckdb_merge_on_read"] and ok["content_duckdb_iceberg"]
    assert ok["independent_readers_agree"]  # duckdb-iceberg and merge-on-read
    assert not ok["content_pyiceberg_scan"]  # pyiceberg cannot apply equality deletes: it says so
    assert "equality deletes" in v.check("content_pyiceberg_scan").message
    assert "4 position and 4 equality delete files live" in v.check("no_live_delete_files").message
    assert any(d.startswith("no_live_delete_files:") for d in v.differences)
    bad_ok = {c.name: c.ok for c in bad.checks}
    assert not bad_ok["content_duckdb_merge_on_read"] and not bad_ok["input_matches_generator"]


# --- both engines end to end ------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.slow
def test_both_engines_on_deletes_standard_through_the_cli(generated, tmp_path):
    """Both engines reach the same end state (no live delete file, the ground truth's rows), each step
    timed as a phase; an engine that leaves a delete file live is not verified."""
    wh, res = tmp_path / "wh", tmp_path / "results"
    # the reader queries (DuckDB's iceberg extension on the input's delete files, twice each: warm) around two
    # engines that commit and the floor; the other engines on the same dataset (reused) without them
    for run_id, engines, readers in (("del", "spark,risingwave,arrow-floor", "on"), ("del2", "leaky,repark,gluten",
                                                                                   "off")):
        proc = run_bench("run", "deletes-standard", "--scale", TINY, "--engines", engines, "--results-dir", res,
                         "--warehouse", wh, "--run-id", run_id, "--readers", readers)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = {json.loads(p.read_text())["engine"]: json.loads(p.read_text()) for p in res.glob("del*/*--rep0.json")}
    assert set(records) == {"spark", "risingwave", "leaky", "arrow-floor", "repark", "gluten"}
    for engine in ("spark", "risingwave", "repark", "gluten"):
        r = records[engine]
        assert r["status"] == "ok" and r["verified"], (engine, r["error"], r["verification"]["differences"])
        checks = {c["name"]: c for c in r["verification"]["checks"]}
        for name in ("content_duckdb_merge_on_read", "content_pyiceberg_scan", "content_duckdb_iceberg",
                     "independent_readers_agree", "no_live_delete_files", "output_codec", *INTEGRITY_CHECKS):
            assert checks[name]["ok"] and checks[name]["required"], (engine, name, checks[name]["message"])
        # the same table, its history kept, every commit a replace; the table out of reach during setup
        assert {c["operation"] for c in r["verification"]["committed"]} == {"replace"}, engine
        assert r["setup_io"]["parked"] and checks["setup_out_of_reach"]["ok"]
        after = r["after"]
        assert after["rows"] == r["before"]["rows"] == generated["ds"].ground_truth.rows
        assert after["delete_files"] == 0  # the same end state for every engine
        assert r["before"]["position_delete_files"] == 4 and r["before"]["equality_delete_files"] == 4
        assert r["telemetry"]["peak_rss_bytes"] > 0 and r["duration_s"] > 0
        # the harness counted the delete files' opens while it compacted (bench.telemetry.opens): applying the
        # deletes, every engine opened each of the 8 delete files at least once
        opens = r["delete_opens"]
        assert opens["opens"] is not None and (opens["delete_files"], opens["opened"]) == (8, 8), (engine, opens)
        assert opens["opens"] == opens["position_opens"] + opens["equality_opens"] and opens["data_opens"] > 0
        # every step is a phase; the phases add up to the compaction time
        assert abs(sum(p["seconds"] for p in r["phases"]) - r["duration_s"]) < 1e-6
        if engine not in ("spark", "risingwave"):
            continue
        # readers gained: before, the full scan merged the delete files; after, none (bench.reads)
        reads = r["reads"]
        assert reads["ok"] and reads["reader"] == "duckdb-iceberg" and reads["after_usable"], reads["message"]
        full = next(q for q in reads["queries"] if q["name"] == "full-scan")
        assert full["delete_files_merged_before"] > 0 and full["delete_files_merged_after"] == 0
        assert full["before"] == full["after"] == full["truth"]
        assert int(full["truth"][0]) == generated["ds"].ground_truth.rows
    spark, rw, rp = records["spark"], records["risingwave"], records["repark"]
    # repark (its own environment): its first rewrite applies the deletes and drops the position deletes; the
    # equality deletes of the last commit stay live (dangling) until its second pass (rewrite-all)
    assert rp["engine_result"]["delete_files_left_after_rewrite"] == 4
    assert [p["name"] for p in rp["phases"] if p["name"] not in ("codec", "other")] == [
        "register", "rewrite_data_files", "inspect", "second pass", "commit"]
    # gluten (its own environment): spark's steps on Gluten's Velox backend, Iceberg 1.10.0; what fell back to
    # Spark is read from Gluten's own reporter: the rewrite's Iceberg scan (IcebergStagedScan) is not offloaded
    gl = records["gluten"]
    assert gl["versions"]["iceberg"] == "1.10.0" and gl["versions"]["gluten"] == "1.7.0"
    assert gl["versions"]["spark"] == "3.5.5" and spark["versions"]["iceberg"] == ICEBERG_VERSION
    fallbacks = gl["engine_result"]["gluten_fallbacks"]
    assert fallbacks["recorded"] and any(r.startswith("BatchScan: Unsupported scan IcebergStagedScan")
                                         for r in fallbacks["by_reason"]), fallbacks
    assert any(c["name"] == "Gluten/Velox off-heap (spark.memory.offHeap.size)" for c in gl["memory_caps"])
    # rewrite_data_files removes the dangling deletes it can (remove-dangling-deletes): Iceberg 1.12.0's (spark) all of
    # them, the equality deletes of the last commit (as new as the new files) too; Iceberg 1.10's (gluten's 1.10.0)
    # the position deletes only, the equality deletes going through the Java API; rewrite_position_delete_files runs
    # only where position deletes are left
    # the mechanism, counted: Spark opened each position-delete file once (its data file) and each equality-delete
    # file once per data file it may apply to (checkpoint i's keys bound v2 below the data after i: i + 1 files)
    opens = spark["delete_opens"]
    assert opens["position_opens"] == 4 and opens["data_opens"] == 8 and opens["tasks"] >= 1, opens
    assert opens["equality_opens"] == sum(i + 1 for i in generated["plan"].eq_checkpoints), opens
    left = spark["engine_result"]["delete_files_left_after_rewrite"]
    assert left == {"position": 0, "equality": 0}, left
    assert [p["name"] for p in spark["phases"]][:2] == ["rewrite_data_files", "inspect"]
    assert "remove dangling deletes" not in [p["name"] for p in spark["phases"]]
    assert gl["engine_result"]["delete_files_left_after_rewrite"] == {"position": 0, "equality": 4}, gl["engine_result"]
    assert [p["name"] for p in gl["phases"]][:3] == ["rewrite_data_files", "inspect", "remove dangling deletes"]
    assert any("'remove-dangling-deletes', 'true'" in a for a in spark["engine_actions"])
    assert "catalog warm-up" in [p["name"] for p in spark["setup_phases"]]  # outside duration_s
    assert any("delete-file-threshold" in a for a in spark["engine_actions"])
    # the input's last commit adds equality deletes: RisingWave's first pass leaves them dangling, its
    # own second pass removes them, timed as a step of its run
    assert rw["engine_result"]["delete_files_left_after_compaction"] > 0
    # ... and its first pass's summary says no delete file is left while its manifests hold them: an
    # advisory finding on the intermediate snapshot; the head's totals (required) are right
    rw_checks = {c["name"]: c for c in rw["verification"]["checks"]}
    intermediate = rw_checks["summary_totals_intermediate"]
    assert not intermediate["ok"] and not intermediate["required"]
    assert "total-delete-files 0 (manifests: 4)" in intermediate["message"]
    assert [c["step"] for c in rw["verification"]["committed"]] == ["compaction", "second pass"]
    assert [c["step"] for c in gl["verification"]["committed"]][-1] == "remove-dangling-deletes"
    assert [p["name"] for p in rw["phases"]][:3] == ["compaction", "inspect", "second pass"]
    assert rw["engine_settings"]["strategy"] == "files_with_deletes"
    # the floor applies the same deletes in pyarrow, commits nothing, and its output reads back the same
    floor = records["arrow-floor"]
    assert floor["verified"] and floor["commits"] == "none", floor["verification"]["differences"]
    assert floor["after"]["rows"] == generated["ds"].ground_truth.rows and floor["after"]["delete_files"] == 0
    assert floor["engine_result"]["files_rewritten"] > 0 and floor["engine_result"]["equality_delete_files_read"] == 4
    assert {c["name"] for c in floor["verification"]["checks"] if c["ok"]} >= {
        "content_duckdb_merge_on_read", "content_pyiceberg_scan", "independent_readers_agree", "nothing_committed"}
    assert floor["reads"] is None  # readers would read the input unchanged after it: none timed around it
    # the same, without the second pass: not verified, and the failed check says why
    leaky = records["leaky"]
    assert leaky["status"] == "ok" and leaky["verified"] is False
    assert any(d.startswith("no_live_delete_files:") for d in leaky["verification"]["differences"])
    # determinism: generated again from the same seed in another warehouse (other commit batching),
    # the same data files and the same ground truth
    ds_cli = json.loads(next(p for p in (wh / "datasets").glob("deletes_*.json")
                             if p.name.count(".") == 1).read_text())  # not .baseline.json, .hashes.json
    gt, gt_cli = generated["ds"].ground_truth, ds_cli["ground_truth"]
    assert (gt_cli["rows"], gt_cli["checksum"]) == (gt.rows, gt.checksum)
    data = lambda files: sorted(f for f in files if not f.endswith("deletes.parquet"))  # noqa: E731
    assert _sha(data(ds_cli["live_files"])) == _sha(data(generated["ds"].live_files))
