"""The warehouse on S3, against a real S3-compatible server (moto's, on 127.0.0.1, started and stopped
here): datagen writes to the bucket, the loopback REST catalog vends the S3 settings, iceberg-compaction
compacts there, the verifier reads the files back (DuckDB + httpfs, pyarrow footers); Spark and the
deletes generator refuse an S3 warehouse offline with one line; no secret lands in a file."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from tests.helpers import TINY, bench_env, run_bench

BUCKET = "bench-wh"
SECRET = "s3cr3t-never-written-Zq81"
AWS_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE",
            "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "BENCH_SPARK_MAVEN",
            "BENCH_WAREHOUSE", "BENCH_STATE_DIR")


@pytest.fixture(scope="module")
def s3_endpoint():
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        _client(endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        server.stop()


def _client(endpoint: str):
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test-key", aws_secret_access_key=SECRET)


def _keys(endpoint: str, prefix: str) -> list[str]:
    pages = _client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def _aws_env(endpoint: str, state: Path) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL_S3": endpoint, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test-key",
            "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_EC2_METADATA_DISABLED": "true",
            "BENCH_STATE_DIR": str(state)}


def _env(endpoint: str, state: Path) -> dict[str, str]:
    env = bench_env()
    for k in AWS_VARS:
        env.pop(k, None)
    env.update(_aws_env(endpoint, state))
    return env


@pytest.fixture
def aws_environ(s3_endpoint, tmp_path, monkeypatch):
    """The same AWS environment in this process (for in-process checks)."""
    for k in AWS_VARS:
        monkeypatch.delenv(k, raising=False)
    for k, v in _aws_env(s3_endpoint, tmp_path / "state").items():
        monkeypatch.setenv(k, v)
    return s3_endpoint


# --- settings -------------------------------------------------------------------------------------
def test_warehouse_uris_and_state_dir(tmp_path, monkeypatch):
    from bench.core.catalog import CatalogSettings
    from bench.core.errors import UserError

    monkeypatch.setenv("BENCH_STATE_DIR", str(tmp_path / "st"))
    a = CatalogSettings.for_warehouse("s3://bucket-a/wh/run1/")
    b = CatalogSettings.for_warehouse("s3://bucket-a/wh/run2")
    assert a.is_remote and a.warehouse == "s3://bucket-a/wh/run1" and a.warehouse_uri == a.warehouse
    assert a.state_path.parent == tmp_path / "st" and a.state_path.name.startswith("bucket-a-")
    assert a.state_path != b.state_path  # every S3 warehouse has its own catalog
    assert a.sqlite_path == a.state_path / "catalog.db" and a.datasets_path == a.state_path / "datasets"
    assert CatalogSettings.model_validate_json(a.model_dump_json()) == a
    with pytest.raises(ValueError):
        a.warehouse_path  # noqa: B018 - an S3 warehouse has no local directory
    local = CatalogSettings.for_warehouse(f"file://{tmp_path}/w")
    assert not local.is_remote and local.warehouse == str(tmp_path / "w") and local.state_path == tmp_path / "w"
    for bad in ("gs://b/x", "s3a://b/x", "s3://", "s3://Upper/x"):
        with pytest.raises(UserError):
            CatalogSettings.for_warehouse(bad)


def test_s3_properties_from_environment():
    from bench.core.catalog.s3 import S3Connection, redact
    from bench.core.errors import UserError

    c = S3Connection.from_env({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID": "k",
                               "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"})
    p = c.fileio_properties()
    assert p["s3.endpoint"] == "http://127.0.0.1:9000" and p["s3.path-style-access"] == "true"
    assert p["s3.force-virtual-addressing"] == "false"
    assert p["s3.region"] == p["client.region"] == "us-east-1"  # default with an endpoint
    assert (p["s3.access-key-id"], p["s3.secret-access-key"], p["s3.session-token"]) == ("k", "s", "t")
    assert "s" not in redact(p).values() and "t" not in redact(p).values()
    assert "ENDPOINT '127.0.0.1:9000'" in c.duckdb_secret_sql() and "USE_SSL false" in c.duckdb_secret_sql()
    # AWS_ENDPOINT_URL_S3 wins; no keys -> no credential properties (the default chain is used)
    role = S3Connection.from_env({"AWS_ENDPOINT_URL": "http://a:1", "AWS_ENDPOINT_URL_S3": "https://b:2",
                                  "AWS_DEFAULT_REGION": "eu-west-1"})
    assert role.fileio_properties() == {"s3.endpoint": "https://b:2", "s3.path-style-access": "true",
                                        "s3.force-virtual-addressing": "false", "s3.region": "eu-west-1",
                                        "client.region": "eu-west-1"}
    assert S3Connection.from_env({}).fileio_properties() == {}  # AWS itself: virtual-hosted, region per bucket
    java = c.java_catalog_properties()
    assert java["io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO" and "s" not in java.values()
    with pytest.raises(UserError):
        S3Connection.from_env({"AWS_ACCESS_KEY_ID": "k"})
    with pytest.raises(UserError):
        S3Connection.from_env({"AWS_ENDPOINT_URL_S3": "127.0.0.1:9000"})


def test_spark_s3_conf_online_and_refusal_offline(monkeypatch, tmp_path):
    """A JVM (Spark's session, the deletes generator's committer) reaches S3 through Iceberg's S3FileIO:
    refused offline, configured online (BENCH_MAVEN=1: jars from Maven Central, faked here)."""
    from bench.core.catalog import CatalogSettings
    from bench.core.errors import UserError
    from bench.core.iceberg_java import runtime
    from bench.engines.spark.session import base_conf

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("BENCH_STATE_DIR", str(tmp_path))
    settings = CatalogSettings.for_warehouse("s3://bucket-a/wh")
    monkeypatch.delenv("BENCH_SPARK_MAVEN", raising=False)
    monkeypatch.delenv("BENCH_MAVEN", raising=False)
    with pytest.raises(UserError, match="iceberg-aws-bundle"):
        base_conf(settings, "local[1]")
    assert not runtime.s3_requirement().ok
    monkeypatch.setenv("BENCH_MAVEN", "1")
    monkeypatch.setattr(runtime, "fetch_maven", lambda name: tmp_path / f"{name}.jar")  # no network here
    conf = base_conf(settings, "local[1]")
    assert conf["spark.jars"].split(",")[-1] == str(tmp_path / "aws-bundle.jar")
    cat = "spark.sql.catalog.bench."
    assert conf[cat + "io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert conf[cat + "s3.endpoint"] == "http://127.0.0.1:9000" and conf[cat + "s3.path-style-access"] == "true"
    assert conf[cat + "client.region"] == "us-east-1" and conf[cat + "warehouse"] == "s3://bucket-a/wh"
    assert conf[cat + "uri"] == f"jdbc:sqlite:{settings.state_path / 'catalog.db'}"
    assert not any(SECRET in v for v in conf.values())  # the AWS SDK reads keys from the environment
    local = base_conf(CatalogSettings.for_warehouse(tmp_path / "wh"), "local[1]")
    assert "aws-bundle" not in local["spark.jars"]


# --- end to end through the CLI -----------------------------------------------------------------------
def test_run_risingwave_on_s3(s3_endpoint, tmp_path):
    """bench run on s3://bucket/wh: generated, compacted and verified in the bucket; only the catalog and
    the manifests are local; the secret is in no file and no output."""
    env = _env(s3_endpoint, tmp_path / "state")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    results = tmp_path / "results"
    r = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "risingwave", "--warehouse",
                  f"s3://{BUCKET}/wh", "--results-dir", results, "--run-id", "s3", cwd=cwd, env=env, timeout=180)
    assert r.returncode == 0, r.stderr + r.stdout
    rec = json.loads((results / "s3" / "bin-packing--risingwave--rep0.json").read_text())
    assert rec["status"] == "ok" and rec["verified"] is True, rec.get("error")
    assert rec["files_in"] >= 16 and rec["files_out"] < rec["files_in"]
    assert rec["environment"]["warehouse"]["storage"] == "s3"
    assert rec["environment"]["warehouse"]["warehouse"] == f"s3://{BUCKET}/wh"

    keys = _keys(s3_endpoint, "wh/")
    data = [k for k in keys if k.endswith(".parquet")]
    assert sum("/data/gen-" in k for k in data) == rec["files_in"]  # datagen wrote the input to S3
    assert any("/data/iceberg-compact-" in k for k in data)  # iceberg-compaction wrote its output there
    assert any(k.endswith(".metadata.json") for k in keys)

    # the table's live files (read from the local catalog) are exactly those objects' URIs
    from pyiceberg.catalog.sql import SqlCatalog

    states = [p for p in (tmp_path / "state").iterdir() if p.is_dir()]
    assert len(states) == 1 and states[0].name.startswith(f"{BUCKET}-")
    state = states[0]
    props = {"s3.endpoint": s3_endpoint, "s3.region": "us-east-1", "s3.access-key-id": "test-key",
             "s3.secret-access-key": SECRET}
    cat = SqlCatalog("bench", uri=f"sqlite:///{state / 'catalog.db'}", warehouse=f"s3://{BUCKET}/wh", **props)
    tbl = cat.load_table(rec["dataset"])
    live = {t.file.file_path for t in tbl.scan().plan_files()}
    assert len(live) == rec["files_out"] and live <= {f"s3://{BUCKET}/{k}" for k in data}

    # nothing of the warehouse on local disk: only the catalog, the manifests and a marker
    assert not (cwd / "warehouse").exists() and not any(cwd.rglob("*"))
    assert sorted(p.name for p in state.iterdir()) == [".bench.lock", "catalog.db", "datasets", "warehouse.json"]
    # the one exception: spare copies of the dataset's metadata files (bench.core.table.state.keep_spares),
    # kept beside the manifests so a commit that deletes old metadata, or the table parked while an engine
    # sets up, cannot break the restore
    spares = [p for p in (state / "datasets").rglob("*") if ".spare" in str(p.relative_to(state))]
    assert sum(p.name.endswith(".metadata.json") for p in spares) == 1, spares
    assert not [p for p in tmp_path.rglob("*") if p not in spares and (
        p.suffix in (".avro",) or p.name.endswith(".metadata.json")
        or (p.suffix == ".parquet" and p.name != "samples.parquet"))]
    # no secret in any file written, nor in the output
    for p in [*tmp_path.rglob("*")]:
        if p.is_file():
            assert SECRET.encode() not in p.read_bytes(), p
    assert SECRET not in r.stdout + r.stderr

    # datagen finds the dataset again through the local manifest + the bucket
    d = run_bench("datagen", "bin-packing", "--scale", TINY, "--warehouse", f"s3://{BUCKET}/wh",
                  cwd=cwd, env=env, timeout=120)
    assert d.returncode == 0 and "reused" in d.stdout, d.stderr + d.stdout
    # an emptied prefix with the local state left behind: the dataset is generated again, not trusted
    client = _client(s3_endpoint)
    for k in keys + _keys(s3_endpoint, "wh/"):
        client.delete_object(Bucket=BUCKET, Key=k)
    d = run_bench("datagen", "bin-packing", "--scale", TINY, "--warehouse", f"s3://{BUCKET}/wh",
                  cwd=cwd, env=env, timeout=120)
    assert d.returncode == 0 and "(generated)" in d.stdout, d.stderr + d.stdout
    assert sum("/data/gen-" in k for k in _keys(s3_endpoint, "wh/")) == rec["files_in"]


def test_rest_catalog_vends_s3_settings(aws_environ, tmp_path):
    """Clients given only the REST URI (no S3 settings of their own) read the table: pyiceberg through
    LoadTableResult.config, DuckDB's iceberg extension with the harness's S3 secret."""
    import pyarrow as pa
    from pyiceberg.catalog.rest import RestCatalog

    from bench.core.catalog import CatalogSettings, load_sql_catalog
    from bench.core.catalog.duck import duckdb_connect_iceberg
    from bench.core.catalog.rest import serve

    settings = CatalogSettings.for_warehouse(f"s3://{BUCKET}/vend")
    cat = load_sql_catalog(settings)
    cat.create_namespace_if_not_exists("bench")
    tbl = cat.create_table("bench.t", pa.schema([("a", pa.int64())]))
    tbl.append(pa.table({"a": [1, 2, 3]}))
    with serve(settings) as srv:
        served = srv.settings
        client = RestCatalog("c", uri=served.rest_uri)  # no s3.* properties of its own
        assert client.load_table("bench.t").scan().to_arrow().num_rows == 3
        con = duckdb_connect_iceberg(served)
        try:
            assert con.execute("SELECT count(*), sum(a) FROM ice.bench.t").fetchone() == (3, 6)
        finally:
            con.close()
    assert any(k.startswith("vend/") and k.endswith(".parquet") for k in _keys(aws_environ, "vend/"))


def test_spark_and_deletes_on_s3_refused_offline(s3_endpoint, tmp_path):
    """Offline, Spark and the deletes generator cannot reach S3: exit 2 with one line, before anything
    is generated or run."""
    env = _env(s3_endpoint, tmp_path / "state")
    results = tmp_path / "results"
    r = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "risingwave,spark", "--warehouse",
                  f"s3://{BUCKET}/refused", "--results-dir", results, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 2, r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "iceberg-aws-bundle" in lines[0] and "BENCH_MAVEN=1" in lines[0] and lines[0].count("spark:") == 1
    assert _keys(s3_endpoint, "refused") == [] and not results.exists()

    d = run_bench("datagen", "deletes-standard", "--scale", TINY, "--warehouse", f"s3://{BUCKET}/refused-del",
                  cwd=tmp_path, env=env, timeout=120)
    assert d.returncode == 2, d.stderr + d.stdout
    lines = d.stderr.strip().splitlines()
    assert len(lines) == 1 and "deletes scenarios cannot be generated on an S3 warehouse offline" in lines[0]
    assert _keys(s3_endpoint, "refused-del") == []

    doc = run_bench("doctor", "--engines", "risingwave,spark", cwd=tmp_path, timeout=120,
                    env={**env, "BENCH_WAREHOUSE": f"s3://{BUCKET}/wh"})
    assert doc.returncode == 1
    assert "[ok  ] S3 warehouse reachable" in doc.stdout
    assert "[FAIL] engine spark: S3 warehouse (iceberg-aws-bundle)" in doc.stdout


def test_delete_compaction_and_delete_aware_readers_on_s3(aws_environ, tmp_path):
    """Position deletes on S3 (written by DuckDB through the REST catalog), read by the delete-aware
    readers (DuckDB's iceberg extension, our merge-on-read over s3:// files, pyiceberg's scan),
    compacted away by iceberg-compaction on S3, and verified."""
    import pyarrow as pa

    from bench.core.catalog import CatalogSettings, load_sql_catalog
    from bench.core.catalog.duck import _quote, duckdb_connect, extension_path
    from bench.core.catalog.rest import serve
    from bench.core.dataset import GroundTruth
    from bench.core.table import live_entries
    from bench.engines import get_engine
    from bench.engines.base import CompactionJob, PhaseClock
    from bench.verify import VerifyInput, table_stats, verify
    from bench.verify.readers import read

    settings = CatalogSettings.for_warehouse(f"s3://{BUCKET}/del")
    cat = load_sql_catalog(settings)
    cat.create_namespace_if_not_exists("bench")
    tbl = cat.create_table("bench.t", pa.schema([("id", pa.int64()), ("s", pa.string())]),
                           properties={"format-version": "2"})
    for i in range(4):
        tbl.append(pa.table({"id": list(range(i * 50, i * 50 + 50)), "s": [f"v{i}"] * 50}))
    with serve(settings) as srv:
        served = srv.settings
        con = duckdb_connect(remote=True)  # a writable attach (the verifier's own is read-only)
        try:
            for name in ("avro", "iceberg"):
                con.execute(f"LOAD {_quote(str(extension_path(name)))}")
            con.execute(f"ATTACH {_quote(served.warehouse)} AS w (TYPE iceberg, ENDPOINT "
                        f"{_quote(served.rest_uri)}, AUTHORIZATION_TYPE 'none', "
                        f"ACCESS_DELEGATION_MODE 'none', READ_ONLY false)")
            con.execute("DELETE FROM w.bench.t WHERE id % 7 = 0")
        finally:
            con.close()
        with_deletes = cat.load_table("bench.t")
        before = table_stats(with_deletes, settings=served)
        assert before.position_delete_files >= 1 and before.rows == 200 - len(range(0, 200, 7))
        answers = {n: read(n, with_deletes, None, served)
                   for n in ("duckdb-iceberg", "duckdb-merge-on-read", "pyiceberg-scan")}
        assert {a.content for a in answers.values()} == {(before.rows, before.checksum)}, answers

        job = CompactionJob(table="bench.t", catalog=served, scenario="s3-deletes", kind="deletes",
                            target_file_size_bytes=64 * 2**20, small_file_threshold_bytes=48 * 2**20, cores=1,
                            work_dir=str(tmp_path / "work"))
        engine = get_engine("risingwave")
        engine.open(job, PhaseClock())
        try:
            engine.compact(job, PhaseClock())
        finally:
            engine.close()
        compacted = cat.load_table("bench.t")
        vi = VerifyInput(kind="deletes", table=compacted, before=before,
                         before_paths={e.data_file.file_path for e in live_entries(with_deletes)},
                         ground_truth=GroundTruth(rows=before.rows, checksum=before.checksum),
                         target_file_size_bytes=64 * 2**20, small_file_threshold_bytes=48 * 2**20,
                         output_codec="snappy", input_fingerprint="t", input_identical=True, settings=served)
        after, v = verify(vi)
        assert v.verified, v.differences
        assert after.delete_files == 0
    written = [k for k in _keys(aws_environ, "del/") if k.endswith(".parquet")]
    assert any("/data/iceberg-compact-" in k for k in written) and len(written) >= 6
