"""The `repark` engine, in its own environment (Python 3.12, built by `bench setup --engines repark`, which
`make test` runs first): a tiny bin-packing run through the CLI, verified by the harness's verifier; its commit
to the harness's catalog is a compare-and-swap that refuses a pointer that moved; a run naming it where its
environment is not built is one line and exit 2.  (Its deletes run: tests/datagen/test_deletes.py.)"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.engines.repark import CommitConflict, ReparkEngine, current_location, memory_limit_gb, swap_location
from tests.helpers import INTEGRITY_CHECKS, TINY, bench_env, run_bench


def test_binpack_in_its_own_environment_is_verified(tmp_path, shared_warehouse):
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "repark", "--results-dir", tmp_path,
                  "--warehouse", shared_warehouse, "--run-id", "rp", "--memory-budget", "3G")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    r = json.loads((tmp_path / "rp" / "bin-packing--repark--rep0.json").read_text())
    assert r["status"] == "ok" and r["verified"], (r["error"], r["verification"]["differences"])
    checks = {c["name"]: c for c in r["verification"]["checks"]}
    for name in ("content_duckdb_read_parquet", "content_pyiceberg_scan", "output_codec", "compaction_complete",
                 *INTEGRITY_CHECKS):
        assert checks[name]["ok"] and checks[name]["required"], (name, checks[name]["message"])
    assert {c["operation"] for c in r["verification"]["committed"]} == {"replace"}
    assert r["files_out"] < r["files_in"]
    # it ran under its own interpreter and says with what: repark, its Python, pyarrow and the Rust crates
    v = r["versions"]
    assert v["repark"] == "1.5.5" and v["repark env: python"].startswith("3.12.")
    assert v["crate iceberg"].startswith("0.9.1 (git+https://github.com/TRO-Wolf/iceberg-rust@")
    assert v["crate datafusion"] and v["repark env: pyarrow"]
    # its memory pool from the budget: 75% of 3 GiB in whole GB
    assert r["engine_settings"]["repark.memory.limit.gb"] == 2
    assert r["memory_caps"][0]["bytes"] == 2 * 1024**3
    # the output codec is set as the table's property for the rewrite and set back after it (same_properties)
    steps = [ph["name"] for ph in r["phases"] if ph["name"] != "other"]
    assert steps == ["register", "codec", "rewrite_data_files", "codec", "commit"], steps
    assert any("(compare-and-swap)" in a for a in r["engine_actions"])


def test_commit_is_a_compare_and_swap(tmp_path):
    """The pointer moves only from the metadata file repark registered: when another commit came first, the
    swap is refused and the catalog keeps the other writer's commit."""
    settings = CatalogSettings(warehouse=str(tmp_path / "wh"))
    cat = load_sql_catalog(settings)
    cat.create_namespace("bench")
    t = cat.create_table("bench.t", pa.schema([("id", pa.int64())]))
    registered = current_location(settings, "bench.t")
    t.append(pa.table({"id": [1, 2]}))  # a concurrent writer's commit
    moved = current_location(settings, "bench.t")
    assert moved != registered
    with pytest.raises(CommitConflict, match="moved while repark compacted"):
        swap_location(settings, "bench.t", registered, registered + ".repark")
    assert current_location(settings, "bench.t") == moved
    swap_location(settings, "bench.t", moved, registered)  # from the current one it swaps
    assert current_location(settings, "bench.t") == registered
    # what the codec step restores is the table's own properties, read from its metadata file: a table with no
    # codec property gets none back (repark's SHOW TBLPROPERTIES lists its default, zstd, as if set)
    props = ReparkEngine._properties(registered)
    assert "write.parquet.compression-codec" not in props and props == dict(t.properties)


def test_pool_size_from_the_budget():
    assert memory_limit_gb(3 * 1024**3, None) == 2
    assert memory_limit_gb(1024**3, None) == 1  # never 0 (0 means unbounded to repark)
    assert memory_limit_gb(None, None) == 0 and memory_limit_gb(8 * 1024**3, 5) == 5


def test_missing_environment_is_one_line_naming_the_command(tmp_path):
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "repark", "--warehouse", tmp_path / "wh",
                  "--results-dir", tmp_path, env=bench_env(BENCH_CACHE_DIR=str(tmp_path / "empty-cache")))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "bench setup --engines repark" in lines[0], p.stderr
    assert not (tmp_path / "wh").exists() or not list((tmp_path / "wh").rglob("*.parquet"))  # nothing ran


V3_TABLE = """
import json, os, sys
from repark import ReparkSession
spark = (ReparkSession.builder.config("repark.memory.limit.gb", "1")
         .config("repark.sql.allowCreateFormatVersion3", "true").getOrCreate())
spark.register_memory_catalog("m", sys.argv[1])
spark.sql("CREATE NAMESPACE m.db").collect()
spark.sql("CREATE TABLE m.db.t (id bigint, s string) USING iceberg TBLPROPERTIES ('format-version'='3')").collect()
for i in range(3):
    spark.sql(f"INSERT INTO m.db.t VALUES ({i}, 'a'), ({i + 10}, 'b')").collect()
def current():
    rows = spark.sql("SELECT file FROM m.db.t.metadata_log_entries").toArrow().to_pylist()
    return max((r["file"] for r in rows), key=lambda f: os.path.basename(f).split("-")[0])
before = current()
spark.sql("CALL m.system.rewrite_data_files(table => 'db.t', options => map('min-input-files', '2'))").collect()
print(json.dumps({"before": before, "after": current()}))
"""


def test_a_v3_streaming_cycle_checks_the_lineage_of_what_maintenance_wrote(tmp_path):
    """A streaming cycle on a format v3 table applies a single run's row_lineage_kept to the data files
    its maintenance wrote (bench.verify.streaming.cycle_lineage, called per cycle by bench.runner.streaming).  Real v3
    metadata: repark (format v3 on request) makes a three-file table and compacts it; its output carries the rows'
    lineage, the inserted files (no _row_id written: ids inherited from first_row_id) read as new would not."""
    import subprocess

    from pyiceberg.table import StaticTable

    from bench.core.table.entries import live_files
    from bench.engines import environment as envs
    from bench.engines.repark import ENVIRONMENT
    from bench.verify.streaming import cycle_lineage

    python = envs.interpreter("repark", ENVIRONMENT)
    p = subprocess.run([str(python), "-c", V3_TABLE, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    paths = json.loads(p.stdout.strip().splitlines()[-1])
    before, after = (StaticTable.from_metadata(paths[k]) for k in ("before", "after"))
    assert after.metadata.format_version == 3
    inserted = {e.data_file.file_path for e in live_files(before).data}
    kept = cycle_lineage(after, "main", inserted, "stream-")
    assert [c.name for c in kept] == ["row_lineage_kept"] and kept[0].ok and kept[0].required, kept
    assert kept[0].message.startswith("1 new data file(s) carry")
    lost = cycle_lineage(before, "main", set(), "stream-")  # every inserted file as if maintenance had written it
    assert len(lost) == 1 and not lost[0].ok and "3 of 3 new data file(s) lose the rows' lineage" in lost[0].message
    assert "no _row_id" in lost[0].message
    assert cycle_lineage(after, "main", inserted, "compacted-") == []  # the writer's own files are not checked
    assert cycle_lineage(after, "main", inserted | {e.data_file.file_path for e in live_files(after).data},
                         "stream-") == []  # the maintenance wrote no data file (expiry, manifests)


def test_sort_and_zorder_are_verified(tmp_path, shared_warehouse):
    """repark's rewrite_data_files takes Spark's strategy and sort_order: the sorted table sorted by its sort order
    (sorted_output, required) and z-ordered, each verified by the harness's checks.  (Its `where` refuses a
    predicate on a date column: partition filters are declared not supported.)"""
    common = ("sorted-smallfiles", "--scale", TINY, "--engines", "repark", "--target-file-size", "4M",
              "--results-dir", tmp_path, "--warehouse", shared_warehouse, "--memory-budget", "3G")
    runs = {}
    for run_id, args in (("sort", ()), ("zorder", ("--strategy", "zorder"))):
        p = run_bench("run", *common, *args, "--run-id", run_id)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        runs[run_id] = json.loads(next((tmp_path / run_id).glob("*--repark--rep0.json")).read_text())
        r = runs[run_id]
        assert r["status"] == "ok" and r["verified"], (run_id, r["error"], r["verification"]["differences"])
        assert r["files_out"] < r["files_in"]
    sort = {c["name"]: c for c in runs["sort"]["verification"]["checks"]}
    assert sort["sorted_output"]["ok"] and sort["sorted_output"]["required"], sort["sorted_output"]
    assert "sorted by v2 asc nulls-first" in sort["sorted_output"]["message"]
    assert sort["same_sort_order"]["ok"]
    assert "strategy => 'sort'" in " ".join(runs["sort"]["engine_actions"])
    assert "sort_order => 'zorder(v1,v2)'" in " ".join(runs["zorder"]["engine_actions"])
    assert runs["zorder"]["scenario_record"]["content"]["rewrite"]["strategy"] == "zorder"



def test_its_expiry_under_a_concurrent_writer_is_declared_not_run():
    """repark's expire_snapshots deletes files before the harness's compare-and-swap: under a writer that commits
    meanwhile a refused swap would break the table's history, so such runs are unsupported (with the reason);
    sequential maintenance, where nothing else commits, needs no such guarantee."""
    from bench.engines import engine_class
    from bench.scenario import load_scenario

    sc = load_scenario("streaming-cdc")
    assert "expire-under-writer" not in sc.needs()
    concurrent = sc.with_stream_mode("concurrent").needs()
    assert "expire-under-writer" in concurrent
    assert "before the harness's compare-and-swap" in (ReparkEngine.why_not("expire-under-writer") or "")
    for other in ("spark", "gluten", "risingwave"):  # commit first (Iceberg Java), or delete nothing (RisingWave's)
        assert engine_class(other).why_not("expire-under-writer") is None
