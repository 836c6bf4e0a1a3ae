"""The `spark` engine, with a real JVM and tiny tables.

JVM starts are the cost here (5-10 s each): the suite starts four, all in subprocesses that end
with their test - the binpack run, the forced OOM, the delete writer and the delete compaction.
The Iceberg jars it runs on are tested in tests/core/test_iceberg_java.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.errors import UserError
from bench.core.iceberg_java import runtime
from bench.engines.base import CompactionJob, PhaseClock

MiB = 1024**2
GiB = 1024**3
PROJECT_ROOT = Path(__file__).resolve().parents[2]
WORKER_TIMEOUT_S = 300

SCHEMA = pa.schema([pa.field("v1", pa.int32(), nullable=False), pa.field("v2", pa.int64(), nullable=False),
                    pa.field("v3", pa.string())])


# ------------------------------------------------------------------------------------------------
# helpers


def small_batch(i: int, rows: int = 300) -> pa.Table:
    return pa.table({"v1": pa.array([i] * rows, pa.int32()),
                     "v2": pa.array(range(i * rows, (i + 1) * rows), pa.int64()),
                     "v3": [f"row-{i}-{j}" for j in range(rows)]}, schema=SCHEMA)


def make_small_files_table(settings: CatalogSettings, name: str, appends: int = 20):
    cat = load_sql_catalog(settings)
    cat.create_namespace_if_not_exists(settings.namespace)
    tbl = cat.create_table(f"{settings.namespace}.{name}", schema=SCHEMA)
    for i in range(appends):
        tbl.append(small_batch(i))
    return tbl


def table_state(settings: CatalogSettings, name: str) -> dict:
    tbl = load_sql_catalog(settings).load_table(f"{settings.namespace}.{name}")
    files = tbl.inspect.files().to_pylist()
    content = tbl.scan().to_arrow().sort_by([("v1", "ascending"), ("v2", "ascending")])
    return {"data_files": [f for f in files if f["content"] == 0],
            "delete_files": [f for f in files if f["content"] != 0],
            "rows": content.num_rows, "content": content,
            "snapshot_id": tbl.current_snapshot().snapshot_id}


def parquet_codecs(path_uri: str) -> set[str]:
    md = pq.ParquetFile(path_uri.removeprefix("file:").removeprefix("//")).metadata
    return {md.row_group(r).column(c).compression for r in range(md.num_row_groups)
            for c in range(md.num_columns)}


def run_worker(tmp: Path, job: CompactionJob, engine: str = "spark") -> tuple[dict, str]:
    """Run the engine exactly as the harness does: job JSON -> worker subprocess -> outcome JSON, the job's
    catalog served over REST for it (the engine reaches it through Iceberg's REST client, as in every run)."""
    from bench.core.catalog.rest import serve

    tmp.mkdir(parents=True, exist_ok=True)
    job_path, out_path = tmp / "job.json", tmp / "out.json"
    with serve(job.catalog) as served:
        job_path.write_text(job.model_copy(update={"catalog": served.settings}).model_dump_json())
        proc = subprocess.run([sys.executable, "-m", "bench.engines.worker", str(job_path), str(out_path), engine],
                              capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, cwd=PROJECT_ROOT)
    assert out_path.exists(), f"worker wrote no outcome (exit {proc.returncode}): {proc.stderr[-3000:]}"
    return json.loads(out_path.read_text()), proc.stderr


def job_for(settings: CatalogSettings, table: str, tmp: Path, **kw) -> CompactionJob:
    base = dict(table=f"{settings.namespace}.{table}", catalog=settings, scenario="test",
                kind="binpack", target_file_size_bytes=512 * MiB, small_file_threshold_bytes=384 * MiB,
                output_codec="snappy", options={"profile": "local"}, memory_budget_bytes=GiB,
                cores=2, work_dir=str(tmp / "work"))
    base.update(kw)
    return CompactionJob(**base)


@pytest.fixture(scope="module")
def provisioned():
    """The real runtime in the default cache (what `bench setup` builds); idempotent."""
    lines = list(runtime.provision())
    assert lines[-1].startswith("iceberg java ready")
    return runtime.iceberg_jars()


# ------------------------------------------------------------------------------------------------
# settings (no JVM)


def test_profiles_and_budget_rule():
    from bench.engines.spark.memory import PAPER_PROFILE, memory_plan, min_budget_bytes, profile_settings

    assert profile_settings("paper") == PAPER_PROFILE
    assert PAPER_PROFILE["spark.executor.memory"] == "40g" and PAPER_PROFILE["spark.driver.memory"] == "12g"
    local = profile_settings("local", ram_bytes=32 * GiB)  # half the published node
    assert local["spark.executor.memory"] == "20480m"
    assert local["spark.executor.memoryOverhead"] == "4096m"
    assert local["spark.driver.memory"] == "20480m"  # local mode: the JVM gets the executor's share
    assert local["spark.memory.fraction"] == "0.8" and local["spark.memory.storageFraction"] == "0.2"

    plan = memory_plan("local", 2 * GiB, ram_bytes=32 * GiB)
    assert plan["conf"]["spark.driver.memory"] == "1536m"  # 75% of the budget < 20 GiB profile heap
    assert "-XX:MaxDirectMemorySize=204m" in plan["java_options"]
    assert "-XX:+ExitOnOutOfMemoryError" in plan["java_options"]
    assert "75%" in plan["budget_rule"]
    plan = memory_plan("paper", 24 * GiB, ram_bytes=24 * GiB)
    assert plan["conf"]["spark.driver.memory"] == "12288m"  # the profile heap already fits
    plan = memory_plan("local", 768 * MiB, ram_bytes=24 * GiB)
    assert plan["heap_requested_bytes"] == 512 * MiB  # budget - 256 MiB of non-heap
    with pytest.raises(UserError, match="too small for Spark"):
        memory_plan("local", 300 * MiB, ram_bytes=24 * GiB)
    assert memory_plan("local", min_budget_bytes(), ram_bytes=24 * GiB)["heap_requested_bytes"] >= 480 * MiB
    with pytest.raises(UserError, match="unknown spark profile"):
        memory_plan("huge", None)


def test_bad_options_fail_before_starting_a_jvm(tmp_path):
    from bench.engines.spark.engine import SparkEngine
    from bench.scenario import Scenario, load_scenario

    settings = CatalogSettings(warehouse=str(tmp_path / "wh"))
    eng = SparkEngine()
    clock = PhaseClock()
    with pytest.raises(UserError, match="option codec"):
        eng.open(job_for(settings, "t", tmp_path, options={"codec": "zstd"}), clock)
    with pytest.raises(UserError, match="spark_conf may not set spark.driver.memory"):
        eng.open(job_for(settings, "t", tmp_path, options={"spark_conf": {"spark.driver.memory": "64g"}}), clock)
    with pytest.raises(UserError, match="too small for Spark"):
        eng.open(job_for(settings, "t", tmp_path, memory_budget_bytes=300 * MiB), clock)
    with pytest.raises(ValidationError):
        job_for(settings, "t", tmp_path, kind="sort")
    assert eng.spark is None and clock.phases == []
    eng.close()  # safe after a failed open()
    # a scenario with bad engine options fails when it loads, before any data is generated
    raw = load_scenario("bin-packing").model_dump(mode="json")
    raw["engines"]["spark"] = {"profile": "huge"}
    with pytest.raises(ValidationError, match="engines.spark.profile"):
        Scenario.model_validate(raw)


def test_what_a_spark_engine_can_do_is_its_lines():
    """A branch is its Spark line's Iceberg release's to compact (1.12.0's rewrite_data_files takes one): spark
    declares it, spark-3.5 (its subclass on line 3.5, which declares only the line) and gluten (Iceberg 1.10.0) refuse
    it with the reason; no Spark line rewrites manifests on a branch, which streaming mode branch asks when its
    maintenance rewrites manifests; everything else is every line's."""
    from bench.engines import engine_class
    from bench.engines.spark.engine import SUPPORTS, line_supports
    from bench.scenario import load_scenario

    spark, old, gluten = (engine_class(e) for e in ("spark", "spark-3.5", "gluten"))
    assert spark.line == runtime.HARNESS_LINE and old.line == runtime.spark_line("3.5")
    assert spark.why_not("branch") is None
    assert spark.capabilities.supports == line_supports(spark.line) == SUPPORTS | {"branch"}
    assert old.capabilities.supports == gluten.capabilities.supports == SUPPORTS
    assert "Iceberg 1.10.2's rewrite_data_files cannot compact a branch" in (old.why_not("branch") or "")
    assert "1.10.0" in (gluten.why_not("branch") or "")
    for cls in (spark, old, gluten):
        assert "rewrite_manifests cannot work on a branch" in (cls.why_not("rewrite-manifests-branch") or "")
    assert engine_class("risingwave").why_not("rewrite-manifests-branch") is None
    branch = load_scenario("streaming-cdc").model_copy(deep=True)
    assert branch.streaming is not None
    branch.streaming.mode = "branch"
    assert {"branch", "rewrite-manifests-branch"} <= branch.needs()
    branch.streaming.maintenance = [op for op in branch.streaming.maintenance if op.op != "rewrite_manifests"]
    assert "branch" in branch.needs() and "rewrite-manifests-branch" not in branch.needs()
    assert spark.declared_runtime() == runtime.HARNESS_LINE.describe()
    assert old.declared_runtime() == runtime.spark_line("3.5").describe()


# ------------------------------------------------------------------------------------------------
# the engine, end to end through the worker (one JVM each)


@pytest.fixture(scope="module")
def binpack_run(provisioned, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spark-binpack")
    settings = CatalogSettings(warehouse=str(tmp / "warehouse"))
    make_small_files_table(settings, "small")
    before = table_state(settings, "small")
    job = job_for(settings, "small", tmp, memory_budget_bytes=GiB,
                  options={"profile": "local",
                           "rewrite_options": {"max-concurrent-file-group-rewrites": 2,
                                               "partial-progress.enabled": False}})
    t0 = time.perf_counter()
    record, stderr = run_worker(tmp, job)
    wall = time.perf_counter() - t0
    after = table_state(settings, "small")
    return {"settings": settings, "before": before, "after": after, "record": record, "stderr": stderr,
            "wall": wall, "job": job}


@pytest.mark.spark
def test_binpack_status_ok(binpack_run):
    rec = binpack_run["record"]
    assert rec["status"] == "ok", (rec, binpack_run["stderr"][-3000:])
    assert rec["setup_s"] > 0 and rec["duration_s"] > 0
    # the steps: session start and catalog warm-up before the clock starts, then the procedure call
    assert [p["name"] for p in rec["setup_phases"]][:2] == ["session start", "catalog warm-up"]
    assert rec["phases"][0]["name"] == "rewrite_data_files"
    assert abs(sum(p["seconds"] for p in rec["phases"]) - rec["duration_s"]) < 1e-6
    caps = {c["name"]: c for c in rec["memory_caps"]}
    assert caps["JVM heap"]["bytes"] <= 768 * MiB + 16 * MiB  # 75 % of the 1 GiB budget, as granted
    assert caps["JVM direct memory"]["bytes"] == int(0.10 * GiB) // MiB * MiB
    assert caps["JVM metaspace"]["bytes"] == 192 * MiB
    assert [c["role"] for c in rec["memory_caps"]] == ["heap", "direct", "metaspace"]  # local: no executor heap
    d = rec["outcome"]["deployment"]
    assert d["mode"] == "local" and d["master"].startswith("local[") and d["executors"] == 1
    assert d["executor_cores"] == [d["cores"]] and d["nodes"] == 1 and d["executor_memory_bytes"] == []


@pytest.mark.spark
def test_binpack_compacts_and_keeps_the_content(binpack_run):
    before, after = binpack_run["before"], binpack_run["after"]
    assert len(before["data_files"]) == 20
    assert len(after["data_files"]) < len(before["data_files"])
    assert len(after["data_files"]) == 1  # 20 x ~2.5 KB files, 512 MiB target
    assert after["snapshot_id"] != before["snapshot_id"]  # pyiceberg sees Spark's JdbcCatalog commit
    assert after["rows"] == before["rows"] == 20 * 300
    assert after["content"].equals(before["content"])
    res = binpack_run["record"]["outcome"]["engine_result"]
    assert res["rewritten_data_files_count"] == 20
    assert res["added_data_files_count"] == 1
    assert res["failed_data_files_count"] == 0
    assert res["rewritten_bytes_count"] == sum(f["file_size_in_bytes"] for f in before["data_files"])


@pytest.mark.spark
def test_binpack_output_codec_is_snappy(binpack_run):
    # the table default of Iceberg (and pyiceberg's input files) is zstd: the session conf took
    assert {c for f in binpack_run["before"]["data_files"] for c in parquet_codecs(f["file_path"])} == {"ZSTD"}
    for f in binpack_run["after"]["data_files"]:
        assert parquet_codecs(f["file_path"]) == {"SNAPPY"}
    out = binpack_run["record"]["outcome"]
    assert "SET spark.sql.iceberg.compression-codec=snappy" in out["actions"]


@pytest.mark.spark
def test_binpack_records_settings_versions_actions(binpack_run):
    out = binpack_run["record"]["outcome"]
    s = out["settings"]
    assert s["profile"] == "local" and s["master"] == "local[2]" and s["cores"] == 2
    # the heap the JVM actually granted: within the 1 GiB budget's 75%, near what was asked
    assert s["heap_requested_bytes"] == 768 * MiB
    assert 0.9 * s["heap_requested_bytes"] <= s["heap_granted_bytes"] <= 768 * MiB + 16 * MiB
    assert s["spark_memory"]["spark.driver.memory"] == "768m"
    for k in ("spark.executor.memory", "spark.executor.memoryOverhead", "spark.memory.fraction",
              "spark.memory.storageFraction"):
        assert k in s["spark_memory"]
    assert "75%" in s["budget_rule"] and "local mode" in s["local_mode_note"]
    assert s["spark_conf"]["spark.sql.catalog.bench.type"] == "rest"  # Iceberg's REST client, as every engine
    assert s["spark_conf"]["spark.driver.bindAddress"] == "127.0.0.1"
    assert out["versions"]["spark"] == runtime.HARNESS_LINE.pyspark  # the harness's Spark line (maven.lock.toml)
    assert out["versions"]["iceberg"] == runtime.HARNESS_LINE.iceberg
    assert out["versions"]["java"].startswith("17")
    calls = [a for a in out["actions"] if a.startswith("CALL")]
    assert calls == ["CALL bench.system.rewrite_data_files(table => 'bench.bench.small', strategy => 'binpack', "
                     "options => map('target-file-size-bytes', '536870912', 'min-file-size-bytes', '402653184', "
                     "'min-input-files', '2', 'max-concurrent-file-group-rewrites', '2', 'partial-progress.enabled', "
                     "'false'))"]
    assert s["work"]["intent"] == "rewrite small data files, in every partition holding 2 or more; no delete file"


@pytest.mark.spark
@pytest.mark.slow
def test_forced_oom_is_reported_as_heap_oom(provisioned, tmp_path):
    """A 768 MiB budget (512 MiB heap) and ten 64 MiB strings: the Parquet writer buffers about 100
    values before it first checks its page size, so the heap runs out deterministically (the input
    is tiny on disk: zstd)."""
    settings = CatalogSettings(warehouse=str(tmp_path / "warehouse"))
    cat = load_sql_catalog(settings)
    cat.create_namespace_if_not_exists(settings.namespace)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("blob", pa.string())])
    tbl = cat.create_table("bench.wide", schema=schema)
    value = "x" * (64 * MiB)
    for i in range(10):
        tbl.append(pa.table({"id": pa.array([i], pa.int64()), "blob": pa.array([value])}, schema=schema))
    del value
    job = job_for(settings, "wide", tmp_path, memory_budget_bytes=768 * MiB, cores=1)
    t0 = time.perf_counter()
    record, stderr = run_worker(tmp_path, job)
    elapsed = time.perf_counter() - t0
    assert record["status"] == "heap-oom", (record, stderr[-3000:])  # the JVM's limit, not the budget
    assert record["step"] == "compact"
    assert "OutOfMemoryError" in record["error"]
    assert "java.lang.OutOfMemoryError" in stderr
    assert elapsed < WORKER_TIMEOUT_S
    # nothing was committed
    assert len(load_sql_catalog(settings).load_table("bench.wide").inspect.files()) == 10


DELETE_WRITER = textwrap.dedent("""
    import json, sys
    from bench.engines.base import CompactionJob, PhaseClock
    from bench.engines.spark.engine import SparkEngine
    job = CompactionJob.model_validate_json(open(sys.argv[1]).read())
    eng = SparkEngine()
    eng.open(job, PhaseClock())
    try:
        t = "bench." + job.table
        eng.spark.sql(f"ALTER TABLE {t} SET TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
        eng.spark.sql(f"DELETE FROM {t} WHERE v2 % 7 = 0")
        eng.spark.sql(f"DELETE FROM {t} WHERE v1 = 3 AND v2 % 2 = 0")
    finally:
        eng.close()
""")


@pytest.fixture(scope="module")
def deletes_run(provisioned, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spark-deletes")
    settings = CatalogSettings(warehouse=str(tmp / "warehouse"))
    make_small_files_table(settings, "withdel", appends=6)
    job = job_for(settings, "withdel", tmp, kind="deletes", memory_budget_bytes=GiB)
    from bench.core.catalog.rest import serve

    with serve(settings) as served:
        (tmp / "writer-job.json").write_text(job.model_copy(update={"catalog": served.settings}).model_dump_json())
        subprocess.run([sys.executable, "-c", DELETE_WRITER, str(tmp / "writer-job.json")], check=True,
                       capture_output=True, timeout=WORKER_TIMEOUT_S, cwd=PROJECT_ROOT)
    before = table_state(settings, "withdel")
    record, stderr = run_worker(tmp / "run", job)
    after = table_state(settings, "withdel")
    return {"before": before, "after": after, "record": record, "stderr": stderr}


@pytest.mark.spark
@pytest.mark.slow
def test_deletes_are_applied_and_no_delete_file_stays_live(deletes_run):
    before, after, rec = deletes_run["before"], deletes_run["after"], deletes_run["record"]
    assert rec["status"] == "ok", (rec, deletes_run["stderr"][-3000:])
    assert len(before["delete_files"]) > 0  # the writer produced position deletes
    expected = 6 * 300 - len([v for v in range(6 * 300) if v % 7 == 0 or (v // 300 == 3 and v % 2 == 0)])
    assert before["rows"] == expected
    assert after["rows"] == expected and after["content"].equals(before["content"])
    assert after["delete_files"] == []
    assert len(after["data_files"]) == 1
    out = rec["outcome"]
    calls = [a for a in out["actions"] if a.startswith("CALL")]
    # the intent of a delete compaction (bench.core.work): every data file with a delete file, dangling deletes
    # removed by the procedure.  Iceberg 1.12.0's rewrite leaves none of the position deletes of the files it rewrote,
    # even on this unpartitioned table where their sequence number is the new files' (1.10.2 left them live, for
    # rewrite_position_delete_files and the Java API's removal: bench.engines.spark.deletes): the delete steps find
    # nothing left and run nothing more
    left = out["engine_result"]["delete_files_left_after_rewrite"]
    assert left == {"position": 0, "equality": 0}, out["engine_result"]
    assert [p["name"] for p in rec["phases"]][:2] == ["rewrite_data_files", "inspect"]
    assert not {"rewrite_position_delete_files", "remove dangling deletes"} & {p["name"] for p in rec["phases"]}
    assert len(calls) == 1
    assert "'delete-file-threshold', '1'" in calls[0] and "'remove-dangling-deletes', 'true'" in calls[0]
    assert out["engine_result"]["rewritten_data_files_count"] == len(before["data_files"])
    assert out["engine_result"]["removed_delete_files_count"] >= 1  # remove-dangling-deletes
