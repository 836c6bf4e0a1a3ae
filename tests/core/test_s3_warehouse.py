"""The warehouse on S3, against a real S3-compatible server (moto's, on 127.0.0.1, started and stopped
here): datagen writes to the bucket (pyiceberg, and the deletes generator's JVM), the loopback REST catalog
vends the S3 settings, every engine compacts there (iceberg-compaction; spark, spark-3.5 and gluten with
Iceberg's S3FileIO through Iceberg's REST client), the verifier and the readers read the files back (DuckDB +
httpfs, pyarrow footers, Spark SQL, the reference reader); no secret lands in a file.  The `bench run`s share
one dataset per warehouse prefix (module fixtures)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import TINY, bench_env, moto_server, run_bench

BUCKET = "bench-wh"
SECRET = "s3cr3t-never-written-Zq81"
AWS_VARS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE",
            "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "BENCH_WAREHOUSE",
            "BENCH_STATE_DIR")


@pytest.fixture(scope="module")
def s3_endpoint():
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with moto_server(BUCKET) as endpoint:
        yield endpoint


def _client(endpoint: str):
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test-key", aws_secret_access_key=SECRET)


def _keys(endpoint: str, prefix: str) -> list[str]:
    pages = _client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def _objects(endpoint: str, prefix: str) -> dict[str, tuple[int, str, str]]:
    """Every object under `prefix` as the server lists it: key -> (size, ETag, last modified)."""
    pages = _client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return {o["Key"]: (o["Size"], o["ETag"], o["LastModified"].isoformat())
            for page in pages for o in page.get("Contents", [])}


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
    from bench.core.catalog.s3 import S3Connection
    from bench.core.errors import UserError

    c = S3Connection.from_env({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID": "k",
                               "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"})
    p = c.fileio_properties()
    assert p["s3.endpoint"] == "http://127.0.0.1:9000" and p["s3.path-style-access"] == "true"
    assert p["s3.force-virtual-addressing"] == "false"
    assert p["s3.region"] == p["client.region"] == "us-east-1"  # default with an endpoint
    assert (p["s3.access-key-id"], p["s3.secret-access-key"], p["s3.session-token"]) == ("k", "s", "t")
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


def test_jvm_s3_conf(monkeypatch, tmp_path):
    """Every JVM reaches an S3 warehouse through Iceberg's S3FileIO, its line's AWS SDK bundle from the jar cache:
    an engine's session through the loopback REST catalog (Iceberg's REST client), the harness's own JVMs (readers,
    the reference reader, datagen's committer) through the JdbcCatalog on the SQLite file; the same S3 settings
    either way and no secret (the AWS SDK reads the keys from the environment).  A cache without the bundle is one
    line naming `bench setup`."""
    from bench.core.catalog import CatalogSettings
    from bench.core.iceberg_java import runtime
    from bench.core.iceberg_java.spark_conf import base_conf
    from bench.engines.spark.engine import SparkEngine
    from bench.engines.spark_35 import Spark35Engine
    from bench.runner.context import storage_problems
    from bench.scenario import load_scenario

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("BENCH_STATE_DIR", str(tmp_path))
    settings = CatalogSettings.for_warehouse("s3://bucket-a/wh")
    served = settings.with_rest("http://127.0.0.1:8181")
    cat = "spark.sql.catalog.bench."
    for engine, bundle in ((SparkEngine(), "iceberg-aws-bundle-1.12.0.jar"),
                           (Spark35Engine(), "iceberg-aws-bundle-1.10.1.jar")):
        assert all(r.ok for r in engine.storage_requirements(settings))
        conf = base_conf(served, "local[1]", jars=engine.engine_jars(served),
                         rest=engine.capabilities.commits_through_rest)
        jars = conf["spark.jars"].split(",")
        assert jars[-1].endswith(bundle) and jars[0].endswith(f"-{engine.line.iceberg}.jar")
        assert conf[cat + "type"] == "rest" and conf[cat + "uri"] == "http://127.0.0.1:8181"
        assert conf[cat + "warehouse"] == "s3://bucket-a/wh"
        assert conf[cat + "io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
        assert conf[cat + "s3.endpoint"] == "http://127.0.0.1:9000" and conf[cat + "s3.path-style-access"] == "true"
        assert conf[cat + "client.region"] == "us-east-1"
        assert not any(SECRET in v for v in conf.values())
    own = base_conf(settings, "local[1]")
    assert own[cat + "uri"] == f"jdbc:sqlite:{settings.state_path / 'catalog.db'}"
    assert own[cat + "io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO" and own[cat + "warehouse"] == settings.warehouse
    assert own["spark.jars"].split(",")[-1].endswith("iceberg-aws-bundle-1.12.0.jar")
    assert not any(SECRET in v for v in own.values())
    assert "aws-bundle" not in base_conf(CatalogSettings.for_warehouse(tmp_path / "wh"), "local[1]")["spark.jars"]

    bundle = runtime.HARNESS_LINE.aws
    monkeypatch.setattr(runtime.Artifact, "present", lambda a: a != bundle)  # a cache without the 1.12 bundle
    problems = storage_problems(load_scenario("deletes-standard"), 0.00005, 0, ["spark", "spark-3.5", "risingwave"],
                                settings)
    assert len(problems) == 2 and problems[0].startswith("datagen: ") and problems[1].startswith("spark: ")
    assert all("iceberg-aws-bundle" in p and "bench setup" in p for p in problems), problems


# --- end to end through the CLI -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def home(s3_endpoint, tmp_path_factory):
    """What the module's `bench run`s share: the local state of the S3 warehouses (catalog, dataset manifests), so
    the bin-packing dataset in s3://bench-wh/wh is generated once and restored for each engine after."""
    root = tmp_path_factory.mktemp("s3home")
    (root / "cwd").mkdir()
    return SimpleNamespace(root=root, cwd=root / "cwd", state=root / "state", results=root / "results",
                           env=_env(s3_endpoint, root / "state"))


def _run(home, run_id: str, engines: str, *args, scenario: str = "bin-packing", prefix: str = "wh") -> dict:
    """`bench run SCENARIO --engines ENGINES` on s3://bench-wh/PREFIX; {engine: its record}, each ok and verified."""
    r = run_bench("run", scenario, "--scale", TINY, "--engines", engines, "--warehouse", f"s3://{BUCKET}/{prefix}",
                  "--results-dir", home.results, "--run-id", run_id, *args, cwd=home.cwd, env=home.env, timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout
    assert SECRET not in r.stdout + r.stderr
    recs = {x["engine"]: x for x in (json.loads(p.read_text()) for p in (home.results / run_id).glob(f"{scenario}--*"))}
    assert sorted(recs) == sorted(engines.split(","))
    for rec in recs.values():
        assert rec["status"] == "ok" and rec["verified"] is True, (rec.get("error"), rec["verification"])
        assert rec["files_out"] < rec["files_in"] and rec["environment"]["warehouse"]["storage"] == "s3"
    return recs


def _state(home, prefix: str = "wh") -> Path:
    """The local state directory of s3://bench-wh/PREFIX under the module's state root."""
    from bench.core.catalog import state_dir_for

    return home.state / state_dir_for(f"s3://{BUCKET}/{prefix}").name


def _live_files(home, endpoint: str, dataset: str, prefix: str = "wh") -> set[str]:
    """The table's live data files, from the warehouse's local catalog, read with pyiceberg on S3."""
    from pyiceberg.catalog.sql import SqlCatalog

    props = {"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access-key-id": "test-key",
             "s3.secret-access-key": SECRET}
    cat = SqlCatalog("bench", uri=f"sqlite:///{_state(home, prefix) / 'catalog.db'}",
                     warehouse=f"s3://{BUCKET}/{prefix}", **props)
    return {t.file.file_path for t in cat.load_table(dataset).scan().plan_files()}


def _no_secret_in_files(root: Path) -> None:
    for p in root.rglob("*"):
        if p.is_file():
            assert SECRET.encode() not in p.read_bytes(), p


def test_run_risingwave_on_s3(s3_endpoint, home):
    """bench run on s3://bucket/wh: generated, compacted and verified in the bucket; only the catalog and
    the manifests are local; the secret is in no file and no output."""
    rec = _run(home, "rw", "risingwave")["risingwave"]
    assert rec["files_in"] >= 16
    assert rec["environment"]["warehouse"]["warehouse"] == f"s3://{BUCKET}/wh"

    keys = _keys(s3_endpoint, "wh/")
    data = [k for k in keys if k.endswith(".parquet")]
    assert sum("/data/gen-" in k for k in data) == rec["files_in"]  # datagen wrote the input to S3
    assert any("/data/iceberg-compact-" in k for k in data)  # iceberg-compaction wrote its output there
    assert any(k.endswith(".metadata.json") for k in keys)

    # the table's live files (read from the local catalog) are exactly those objects' URIs
    live = _live_files(home, s3_endpoint, rec["dataset"])
    assert len(live) == rec["files_out"] and live <= {f"s3://{BUCKET}/{k}" for k in data}

    # nothing of the warehouse on local disk: only the catalog, the manifests and a marker
    state = _state(home)
    assert not (home.cwd / "warehouse").exists() and not any(home.cwd.rglob("*"))
    assert sorted(p.name for p in state.iterdir()) == [".bench.lock", "catalog.db", "datasets", "warehouse.json"]
    # the one exception: spare copies of the dataset's metadata files (bench.core.table.state.keep_spares),
    # kept beside the manifests so a commit that deletes old metadata, or the table parked while an engine
    # sets up, cannot break the restore
    spares = [p for p in (state / "datasets").rglob("*") if ".spare" in str(p.relative_to(state))]
    assert sum(p.name.endswith(".metadata.json") for p in spares) == 1, spares
    assert not [p for p in home.root.rglob("*") if p not in spares and (
        p.suffix in (".avro",) or p.name.endswith(".metadata.json")
        or (p.suffix == ".parquet" and p.name != "samples.parquet"))]
    _no_secret_in_files(home.root)

    # datagen finds the dataset again through the local manifest + the bucket
    d = run_bench("datagen", "bin-packing", "--scale", TINY, "--warehouse", f"s3://{BUCKET}/wh",
                  cwd=home.cwd, env=home.env, timeout=120)
    assert d.returncode == 0 and "reused" in d.stdout, d.stderr + d.stdout
    # an emptied prefix with the local state left behind: the dataset is generated again, not trusted
    client = _client(s3_endpoint)
    for k in keys + _keys(s3_endpoint, "wh/"):
        client.delete_object(Bucket=BUCKET, Key=k)
    d = run_bench("datagen", "bin-packing", "--scale", TINY, "--warehouse", f"s3://{BUCKET}/wh",
                  cwd=home.cwd, env=home.env, timeout=120)
    assert d.returncode == 0 and "(generated)" in d.stdout, d.stderr + d.stdout
    assert sum("/data/gen-" in k for k in _keys(s3_endpoint, "wh/")) == rec["files_in"]


def _java_engine_on_s3(home, endpoint: str, rec: dict, iceberg: str, last: bool = True) -> None:
    """A JVM engine's run on s3://bench-wh/wh: its line's Iceberg, its session's catalog the loopback REST server
    with Iceberg's S3FileIO (no secret in its settings), its output files objects of the bucket (its class path has
    no other S3 client: Hadoop's S3A is not on it; the table holds the output of the run's `last` engine)."""
    assert rec["versions"]["iceberg"] == iceberg
    conf = rec["engine_settings"]["spark_conf"]
    cat = "spark.sql.catalog.bench."
    assert conf[cat + "type"] == "rest" and conf[cat + "uri"].startswith("http://127.0.0.1:")
    assert conf[cat + "io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO" and conf[cat + "s3.endpoint"] == endpoint
    assert any(j.endswith(".jar") and "iceberg-aws-bundle-" in j for j in rec["engine_settings"]["jars"])
    assert not any("hadoop-aws" in j for j in rec["engine_settings"]["jars"])
    if last:
        live = _live_files(home, endpoint, rec["dataset"])
        keys = {f"s3://{BUCKET}/{k}" for k in _keys(endpoint, "wh/")}
        assert len(live) == rec["files_out"] and live <= keys and not any("/data/gen-" in f for f in live)
    _no_secret_in_files(home.root)


def test_run_the_jvm_engines_on_s3(s3_endpoint, home):
    """In one run on the dataset in the bucket (each engine its own subprocess, the table restored between them):
    spark (Spark 4.1, Iceberg 1.12), spark-3.5 (Spark 3.5.9, Iceberg 1.10.2, its own environment) and gluten
    (Gluten's Velox bundle, its own Iceberg 1.10.0 runtime, the 3.5 line's AWS bundle), each verified; what fell back
    to Spark is recorded as on a local warehouse; the reader queries (DuckDB's iceberg extension through the REST
    catalog, httpfs) read the bucket before and after each, their answers the truth."""
    recs = _run(home, "jvm", "spark,spark-3.5,gluten", "--readers", "on")
    last = max(recs.values(), key=lambda r: r["started_at"])["engine"]
    for engine, iceberg in (("spark", "1.12.0"), ("spark-3.5", "1.10.2"), ("gluten", "1.10.0")):
        _java_engine_on_s3(home, s3_endpoint, recs[engine], iceberg, last=engine == last)
    reads = recs["spark"]["reads"]
    assert reads["ok"] and reads["after_measured"], reads["message"]
    assert all(q["before"] == q["after"] == q["truth"] for q in reads["queries"]), reads["queries"]
    fallbacks = recs["gluten"]["engine_result"]["gluten_fallbacks"]
    assert fallbacks["recorded"] and {k.split(":")[0] for k in fallbacks["by_reason"]} == {"BatchScan", "AppendData"}


def test_deletes_generated_and_compacted_by_spark_on_s3(s3_endpoint, home):
    """deletes-standard on s3://bench-wh/deletes: datagen's committing JVM (Iceberg's RowDelta, S3FileIO on the
    JdbcCatalog) commits the data, position- and equality-delete files it wrote to the bucket; spark compacts them
    away (rewrite_data_files, rewrite_position_delete_files, the dangling deletes removed through Iceberg's Java
    API), verified; `bench doctor` on that warehouse says every engine can reach it."""
    rec = _run(home, "deletes", "spark", scenario="deletes-standard", prefix="deletes")["spark"]
    before = rec["before"]
    assert before["position_delete_files"] >= 1 and before["equality_delete_files"] >= 1
    assert rec["after"]["delete_files"] == 0 and rec["versions"]["iceberg"] == "1.12.0"
    written = [k for k in _keys(s3_endpoint, "deletes/") if k.endswith(".parquet")]
    assert len(written) >= before["data_files"] + before["delete_files"] + rec["files_out"]
    _no_secret_in_files(home.root)

    doc = run_bench("doctor", "--engines", "risingwave,spark,spark-3.5,gluten", cwd=home.cwd, timeout=120,
                    env={**home.env, "BENCH_WAREHOUSE": f"s3://{BUCKET}/deletes"})
    assert doc.returncode == 0, doc.stdout + doc.stderr
    assert "[ok  ] S3 warehouse reachable" in doc.stdout
    assert "[ok  ] deletes datagen on an S3 warehouse (iceberg-aws-bundle)" in doc.stdout
    for engine, bundle in (("spark", "1.12.0"), ("spark-3.5", "1.10.1"), ("gluten", "1.10.1")):
        assert f"[ok  ] engine {engine}: S3 warehouse (jar iceberg-aws-bundle {bundle})" in doc.stdout, doc.stdout


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


def test_delete_compaction_and_delete_aware_readers_on_s3(aws_environ, tmp_path):
    """Position deletes on S3 (written by DuckDB through the REST catalog), read by the delete-aware
    readers (DuckDB's iceberg extension, our merge-on-read over s3:// files, pyiceberg's scan, the reference
    reader: Spark SQL in its own JVM, the JdbcCatalog with S3FileIO), compacted away by iceberg-compaction on S3,
    and verified."""
    import pyarrow as pa

    from bench.core.catalog import CatalogSettings, load_sql_catalog
    from bench.core.catalog.duck import _quote, duckdb_connect, extension_path
    from bench.core.catalog.rest import serve
    from bench.core.dataset import GroundTruth
    from bench.core.table.entries import live_entries
    from bench.engines import get_engine
    from bench.engines.base import CompactionJob, PhaseClock
    from bench.verify.checks import VerifyInput, verify
    from bench.verify.readers import read
    from bench.verify.stats import table_stats

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
                   for n in ("duckdb-iceberg", "duckdb-merge-on-read", "pyiceberg-scan", "iceberg-java")}
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
