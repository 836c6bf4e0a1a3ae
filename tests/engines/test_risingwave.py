"""The `risingwave` engine (PyPI iceberg-compaction) end to end, exactly as the harness runs it:
a tiny table in a tmp warehouse, the loopback REST catalog, a CompactionJob JSON and
`python -m bench.engines.worker job.json out.json risingwave` in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.catalog.duck import duckdb_connect_iceberg
from bench.core.catalog.rest import serve
from bench.core.errors import UserError
from bench.engines import get_engine
from bench.engines.base import CompactionJob

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("x", pa.float64())])
FILES = 20
ROWS_PER_FILE = 50


def batch(i: int) -> pa.Table:
    ids = list(range(i * ROWS_PER_FILE, (i + 1) * ROWS_PER_FILE))
    return pa.Table.from_pydict({"id": ids, "v": [f"value-{n}" for n in ids], "x": [n / 7 for n in ids]},
                                schema=SCHEMA)


def content(tbl) -> list[tuple]:
    t = tbl.scan().to_arrow()
    return sorted(zip(t["id"].to_pylist(), t["v"].to_pylist(), t["x"].to_pylist()))


def live_files(tbl) -> list[dict]:
    return tbl.inspect.files().select(["content", "file_path"]).to_pylist()


def local(path: str) -> str:
    return unquote(urlsplit(path).path) if path.startswith("file:") else path


@pytest.fixture
def small_files_table(tmp_path) -> CatalogSettings:
    settings = CatalogSettings(warehouse=str(tmp_path / "warehouse"))
    cat = load_sql_catalog(settings)
    cat.create_namespace("bench")
    t = cat.create_table("bench.t", SCHEMA, properties={"format-version": "2"})
    for i in range(FILES):
        t.append(batch(i))
    assert len(live_files(cat.load_table("bench.t"))) == FILES
    return settings


def run_worker(tmp_path: Path, job: CompactionJob) -> tuple[subprocess.CompletedProcess, dict]:
    job_path, out_path = tmp_path / "job.json", tmp_path / "out.json"
    job_path.write_text(job.model_dump_json())
    proc = subprocess.run([sys.executable, "-m", "bench.engines.worker", str(job_path), str(out_path),
                           "risingwave"], capture_output=True, text=True, timeout=180)
    assert out_path.exists(), proc.stderr[-3000:]
    return proc, json.loads(out_path.read_text())


def make_job(served: CatalogSettings, tmp_path: Path, kind: str = "binpack", **kw) -> CompactionJob:
    target = kw.pop("target", 8 * 1024 * 1024)
    return CompactionJob(table="bench.t", catalog=served, scenario="test", kind=kind,
                         target_file_size_bytes=target, small_file_threshold_bytes=int(0.75 * target), cores=2,
                         work_dir=str(tmp_path / "work"), **kw)


def test_binpack_end_to_end(small_files_table, tmp_path):
    settings = small_files_table
    cat = load_sql_catalog(settings)
    before = content(cat.load_table("bench.t"))
    with serve(settings) as served:
        assert served.settings.rest_uri
        proc, out = run_worker(tmp_path, make_job(served.settings, tmp_path, memory_budget_bytes=2 << 30))
    assert proc.returncode == 0 and out["status"] == "ok", (out, proc.stderr[-3000:])
    outcome = out["outcome"]
    er = outcome["engine_result"]
    assert er["input_files_count"] == FILES and 1 <= er["output_files_count"] < FILES
    assert er["input_bytes_total"] > 0 and er["output_bytes_total"] > 0

    s = outcome["settings"]
    assert s["strategy"] == "small_files" and s["grouping_strategy"] == "bin_pack"
    assert s["max_input_parallelism"] == s["max_output_parallelism"] == 8  # 4 x 2 cores
    assert s["small_file_threshold_bytes"] == 6 * 1024 * 1024  # 0.75 x 8 MiB
    assert s["target_file_size_bytes"] == 8 * 1024 * 1024
    assert s["memory_limit"] == "not configurable; enforced by the harness from outside"
    assert s["output_codec"].startswith("snappy")
    assert outcome["versions"]["iceberg-compaction"] == "202604.9.0rc0"
    assert [p["name"] for p in out["phases"]][0] == "compaction" and out["memory_caps"] == []
    assert outcome["deployment"] == {"mode": "embedded", "master": None, "workers": None, "executors": None,
                                     "executor_cores": [], "executor_memory_bytes": [], "cores": 2, "nodes": 1,
                                     "hosts": [],
                                     "writes_at_once": {"max_output_parallelism": s["max_output_parallelism"]}}
    assert any("strategy='small_files'" in a for a in outcome["actions"])
    assert out["duration_s"] > 0 and out["setup_s"] >= 0

    after = cat.load_table("bench.t")
    files = live_files(after)
    assert len(files) == er["output_files_count"] < FILES and all(f["content"] == 0 for f in files)
    assert content(after) == before and len(before) == FILES * ROWS_PER_FILE
    for f in files:
        meta = pq.ParquetFile(local(f["file_path"])).metadata
        codecs = {meta.row_group(g).column(c).compression
                  for g in range(meta.num_row_groups) for c in range(meta.num_columns)}
        assert codecs == {"SNAPPY"}, (f["file_path"], codecs)


def test_deletes_end_to_end(small_files_table, tmp_path):
    """Position deletes written by DuckDB (through the REST catalog), then compacted away."""
    settings = small_files_table
    cat = load_sql_catalog(settings)
    with serve(settings) as srv:
        served = srv.settings
        con = duckdb_connect_iceberg(served)
        con.execute("DELETE FROM ice.bench.t WHERE id % 9 = 0")
        con.close()
        with_deletes = cat.load_table("bench.t")
        expected = content(with_deletes)
        assert len(expected) < FILES * ROWS_PER_FILE
        assert any(f["content"] == 1 for f in live_files(with_deletes))  # position delete files
        proc, out = run_worker(tmp_path, make_job(served, tmp_path, kind="deletes"))
        assert proc.returncode == 0 and out["status"] == "ok", (out, proc.stderr[-3000:])
        s = out["outcome"]["settings"]
        assert s["strategy"] == "files_with_deletes" and s["min_delete_file_count_threshold"] == 1
        after = cat.load_table("bench.t")
        assert content(after) == expected
        # DuckDB, reading through the catalog, agrees
        con = duckdb_connect_iceberg(served)
        assert sorted(con.execute("SELECT id, v, x FROM ice.bench.t").fetchall()) == expected
        con.close()
    er = out["outcome"]["engine_result"]
    assert er["input_files_count"] > 0 and er["output_files_count"] >= 1
    # every data file that had deletes was rewritten, and no delete file stays live: the engine reaches
    # the end state every engine must (a second pass when its first leaves dangling delete files)
    files = live_files(after)
    live_data = {f["file_path"] for f in files if f["content"] == 0}
    old_data = {f["file_path"] for f in live_files(with_deletes) if f["content"] == 0}
    assert live_data and not (live_data & old_data)
    assert [f for f in files if f["content"] != 0] == []
    assert er["delete_files_left_after_compaction"] == 0 or "second_pass" in er
    assert [p["name"] for p in out["phases"]][:2] == ["compaction", "inspect"]


def test_engine_without_rest_uri_fails_in_open(small_files_table, tmp_path):
    job = make_job(small_files_table, tmp_path)  # catalog without rest_uri
    proc, out = run_worker(tmp_path, job)
    assert proc.returncode == 1 and out["status"] == "failed" and out["step"] == "open"
    assert "REST catalog" in out["error"]


def test_engine_refuses_a_codec_it_cannot_write(small_files_table, tmp_path):
    with serve(small_files_table) as served:
        proc, out = run_worker(tmp_path, make_job(served.settings, tmp_path, output_codec="zstd"))
    assert out["status"] == "failed" and "cannot write zstd" in out["error"]


def test_config_values_defaults_and_overrides():
    eng = get_engine("risingwave")
    base = dict(table="bench.t", catalog=CatalogSettings(warehouse="/tmp/x"), scenario="s",
                target_file_size_bytes=512 * 2**20, small_file_threshold_bytes=384 * 2**20, cores=16)
    values, _ = eng.config_values(CompactionJob(kind="binpack", **base))
    assert values["max_input_parallelism"] == values["max_output_parallelism"] == 64  # the published 64
    assert values["small_file_threshold_bytes"] == 384 * 2**20  # the harness's threshold
    assert (values["strategy"], values["grouping_strategy"]) == ("small_files", "bin_pack")

    values, _ = eng.config_values(CompactionJob(kind="deletes", options={"strategy": "full"}, **base))
    assert values["strategy"] == "full" and values["min_delete_file_count_threshold"] == 1

    values, _ = eng.config_values(CompactionJob(
        kind="binpack", options={"strategy": "auto", "max_record_batch_rows": 4096}, **base))
    assert values["strategy"] == "auto" and values["max_record_batch_rows"] == 4096  # the scenario wins

    with pytest.raises(UserError, match="option memory_limit"):
        eng.config_values(CompactionJob(kind="binpack", options={"memory_limit": "8G"}, **base))
    with pytest.raises(UserError, match="option strategy"):
        eng.config_values(CompactionJob(kind="binpack", options={"strategy": "fastest"}, **base))


def test_requirements_met_here():
    reqs = get_engine("risingwave").requirements()
    assert reqs and all(r.ok for r in reqs), [(r.name, r.detail) for r in reqs if not r.ok]


def test_no_partition_filter_in_this_version_is_declared_with_its_evidence():
    """iceberg-compaction's API takes no predicate: neither CompactionConfig nor Compaction(...) nor run() has a
    parameter that could carry one, so the engine declares partition-filter unsupported (its reason names the
    version and the API).  When a version adds one, this fails and the declaration must be revisited."""
    import importlib.metadata
    import inspect

    import iceberg_compaction as ic

    from bench.engines.risingwave import PINNED_VERSION, RisingWaveEngine

    assert importlib.metadata.version("iceberg-compaction") == PINNED_VERSION
    params = [*inspect.signature(ic.CompactionConfig).parameters, *inspect.signature(ic.Compaction).parameters,
              *inspect.signature(ic.Compaction.run).parameters]
    assert not [p for p in params if any(w in p for w in ("filter", "where", "predicate", "partition_spec"))], params
    why = RisingWaveEngine.why_not("partition-filter")
    assert why and PINNED_VERSION in why and "CompactionConfig" in why
    assert RisingWaveEngine.why_not("branch") is None
