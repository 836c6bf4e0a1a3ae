"""The delete-heavy scenarios: generator shape and ground truth against independent readers, the
deletes verifier, and both engines end to end through the real CLI (tiny scale)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from pyiceberg.manifest import DataFileContent

from bench.catalog import CatalogSettings, load_sql_catalog
from bench.catalog.rest import serve
from bench.errors import UserError
from bench.scenario import load_scenario
from bench.verify import (classify_deletes, live_manifest_entries, local_path, read_duckdb_iceberg,
                          read_live_data_parquet, read_merge_on_read, table_stats, verify_deletes,
                          ReaderUnavailable)
from datagen import deletes
from datagen.dataset import prepare
from datagen.schema import COLUMNS
from tests.conftest import TINY, run_bench

PER_COMMIT = 4  # 8 checkpoints at the tiny scale -> two commit pairs


def recipe(name: str = "deletes-standard", **over) -> dict:
    r = load_scenario(name).table.model_dump()
    r.update(over)
    return r


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """deletes-standard at the tiny scale, generated once (one JVM for the commits)."""
    wh = tmp_path_factory.mktemp("deletes-wh")
    settings = CatalogSettings(warehouse=str(wh))
    cat = load_sql_catalog(settings)
    r = recipe(files_per_commit=PER_COMMIT)
    ds = prepare(cat, wh, "bench", r, float(TINY), 42, workers=2, echo=lambda _: None)
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
    with pytest.raises(UserError):
        deletes.plan(recipe(data_files=0), 1.0)
    with pytest.raises(UserError):
        deletes.plan(recipe(position_delete_files=30_000), 1.0)


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
    entries = live_manifest_entries(tbl)
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
    assert classify_deletes(tbl)["dangling_equality"] == 0 and classify_deletes(tbl)["dangling_position"] == 0


def test_ground_truth_against_independent_readers(generated):
    """The generator's own ground truth vs DuckDB's iceberg extension through a real REST server and
    vs our merge-on-read over the Parquet files."""
    ds, cat = generated["ds"], generated["catalog"]
    gt = ds.ground_truth
    assert gt["rows"] == gt["rows_written"] - gt["position_deleted_rows"] - gt["equality_deleted_rows"]
    assert 0 < gt["rows"] < gt["rows_written"] and ds.rows == gt["rows"]
    assert gt["equality_keys"] > gt["equality_deleted_rows"] > 0  # unmatched keys are in there too
    tbl = cat.load_table(ds.table)
    expected = (gt["rows"], gt["checksum"])
    assert read_merge_on_read(tbl, None, COLUMNS) == expected
    with serve(generated["settings"]) as served:
        assert read_duckdb_iceberg(tbl, None, COLUMNS, served) == expected
        st = table_stats(tbl, settings=served)
    assert (st.rows, st.checksum, st.content_reader) == (*expected, "duckdb-iceberg")
    with pytest.raises(ReaderUnavailable):  # deletes apply: reading the data files alone is wrong
        read_live_data_parquet(tbl, None, COLUMNS)


@pytest.mark.spark
@pytest.mark.slow
def test_spark_reader_agrees_with_the_ground_truth(generated):
    """Iceberg's own Java reader (Spark) sees the surviving rows the generator planned."""
    from bench.spark_runtime import spark_session

    ds, settings = generated["ds"], generated["settings"]
    with spark_session(settings, cores=1, heap="1g") as spark:
        n, s1, s2 = spark.sql(f"SELECT count(*), sum(v1), sum(v2) FROM {settings.name}.{ds.table}").collect()[0]
    tbl = generated["catalog"].load_table(ds.table)
    files = [local_path(e.data_file.file_path) for e in live_manifest_entries(tbl)
             if e.data_file.content == DataFileContent.DATA]
    assert n == ds.ground_truth["rows"]
    # the same surviving keys as DuckDB's iceberg extension sees
    with serve(settings) as served:
        from bench.catalog.duck import duckdb_connect_iceberg

        con = duckdb_connect_iceberg(served)
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
        st = table_stats(tbl, settings=served)
        v = verify_deletes(st, st, ds.ground_truth, table=tbl, settings=served)
        bad = verify_deletes(st, st, {**ds.ground_truth, "checksum": "1"}, table=tbl, settings=served)
    assert not v.verified
    assert v.checks["no_applying_delete_files"] is False and v.checks["new_snapshot"] is False
    assert v.checks["rows_match_ground_truth"] and v.checks["checksum_matches_ground_truth"]
    assert v.checks["independent_readers_agree"]  # duckdb-iceberg and merge-on-read
    assert {"duckdb-iceberg", "duckdb-merge-on-read"} <= {k for k, x in v.independent_reader.items()
                                                          if isinstance(x, dict) and "rows" in x}
    assert v.independent_reader["live_delete_files_after"]["position_applying"] == 4
    assert any("still apply" in d for d in v.differences)
    assert not bad.checks["checksum_matches_ground_truth"] and not bad.checks["input_matches_generator"]


# --- both engines end to end ------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.slow
def test_both_engines_on_deletes_standard_through_the_cli(generated, tmp_path):
    wh, res = tmp_path / "wh", tmp_path / "results"
    proc = run_bench("run", "deletes-standard", "--scale", TINY, "--engines", "spark,risingwave",
                     "--results-dir", res, "--warehouse", wh, "--run-id", "del")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = {json.loads(p.read_text())["engine"]: json.loads(p.read_text())
               for p in (res / "del").glob("*.json")}
    assert set(records) == {"spark", "risingwave"}
    for engine, r in records.items():
        assert r["status"] == "ok" and r["verified"], (engine, r["error"], r["verification"])
        v, after = r["verification"], r["after"]
        assert v["checks"]["rows_match_ground_truth"] and v["checks"]["checksum_matches_ground_truth"]
        assert v["checks"]["independent_readers_agree"] and v["checks"]["no_applying_delete_files"]
        assert after["rows"] == r["before"]["rows"] == generated["ds"].ground_truth["rows"]
        assert r["before"]["position_delete_files"] == 4 and r["before"]["equality_delete_files"] == 4
        # live delete files after compaction are reported, position and equality, dangling or not
        live = v["independent_reader"]["live_delete_files_after"]
        assert live["position"] == after["position_delete_files"]
        assert live["equality"] == after["equality_delete_files"]
        assert v["checks"]["no_live_delete_files"] == (after["delete_files"] == 0)
        assert (after["delete_files"] == 0) or any("dangling" in d for d in v["differences"])
        assert r["telemetry"]["peak_rss_bytes"] > 0 and r["duration_s"] > 0
    assert records["risingwave"]["engine_settings"]["strategy"] == "files_with_deletes"
    assert any("delete-file-threshold" in a for a in records["spark"]["engine_actions"])
    # Spark's extra step drops the equality deletes its procedures leave behind: nothing stays live
    assert records["spark"]["after"]["delete_files"] == 0
    assert records["spark"]["engine_result"]["remove_dangling_deletes"]["removed_equality_delete_files"] >= 0
    # determinism: generated again from the same seed in another warehouse (other commit batching),
    # the same data files and the same ground truth
    ds_cli = json.loads(next(p for p in (wh / "datasets").glob("deletes_*.json")
                             if not p.name.endswith(".baseline.json")).read_text())
    gt, gt_cli = generated["ds"].ground_truth, ds_cli["ground_truth"]
    assert (gt_cli["rows"], gt_cli["checksum"]) == (gt["rows"], gt["checksum"])
    data = lambda files: sorted(f for f in files if not f.endswith("deletes.parquet"))  # noqa: E731
    assert _sha(data(ds_cli["live_files"])) == _sha(data(generated["ds"].live_files))


def test_generator_refuses_a_catalog_spark_cannot_commit_to():
    class FakeRest:
        name = "bench"
        properties = {"uri": "http://127.0.0.1:8181", "warehouse": "s3://bucket/wh"}

    with pytest.raises(UserError, match="embedded SQLite catalog"):
        deletes._settings_for(FakeRest(), "bench.t")
