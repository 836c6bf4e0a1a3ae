"""Iceberg's Java library in the lower layer: the offline jars (relocated Jackson built with jarjar,
cached), the online Maven download (against a real HTTP server on 127.0.0.1 posing as Maven Central),
and the plain JVM (py4j) the deletes generator commits through."""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
import zipfile
from pathlib import Path

import pytest

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.errors import UserError
from bench.core.iceberg_java import gateway, runtime
from bench.core.iceberg_java.gateway import JavaIceberg, catalog_properties

# ------------------------------------------------------------------------------------------------
# provisioning (no JVM besides jarjar)


@pytest.fixture(scope="module")
def built_cache(tmp_path_factory):
    """A fresh BENCH_CACHE_DIR, provisioned once for this module's provisioning tests."""
    cache = tmp_path_factory.mktemp("bench-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCH_CACHE_DIR", str(cache))
        mp.delenv("BENCH_SPARK_MAVEN", raising=False)
        mp.delenv("BENCH_MAVEN", raising=False)
        t0 = time.perf_counter()
        first = list(runtime.provision())
        t_first = time.perf_counter() - t0
    return {"cache": cache, "first": first, "t_first": t_first}


@pytest.fixture
def temp_cache(built_cache, monkeypatch):
    """Point this test (only) at the temporary cache."""
    monkeypatch.setenv("BENCH_CACHE_DIR", str(built_cache["cache"]))
    monkeypatch.delenv("BENCH_SPARK_MAVEN", raising=False)
    monkeypatch.delenv("BENCH_MAVEN", raising=False)
    return built_cache


def requirement(name: str):
    reqs = {r.name: r for r in runtime.requirements()}
    return reqs[name]


def test_provision_builds_into_the_cache_dir(temp_cache):
    jar = runtime.relocated_jar_path()
    assert jar is not None and jar.is_file()
    assert jar.is_relative_to(temp_cache["cache"] / "iceberg-java")
    assert any("building" in line for line in temp_cache["first"])
    assert (jar.parent / "build.json").is_file()
    # no half-built directories left behind
    assert not [p for p in (temp_cache["cache"] / "iceberg-java").iterdir() if p.name.startswith(".build-")]


def test_provision_twice_reuses_the_cache(temp_cache):
    jar = runtime.relocated_jar_path()
    mtime = jar.stat().st_mtime_ns
    t0 = time.perf_counter()
    second = list(runtime.provision())
    t_second = time.perf_counter() - t0
    assert any("(cached" in line for line in second), second
    assert not any("building" in line for line in second)
    assert jar.stat().st_mtime_ns == mtime
    assert t_second < 2.0 and t_second < temp_cache["t_first"], (t_second, temp_cache["t_first"])


def test_relocated_jar_is_complete(temp_cache):
    jar = runtime.relocated_jar_path()
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        assert "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactoryBuilder.class" in names
        for cls in runtime.REQUIRED_CLASSES:
            assert cls in names
        assert not [n for n in names if n.startswith("com/fasterxml/")]
        assert not [n for n in names if n.startswith("META-INF/versions/") or n.endswith("module-info.class")]
        svc = "META-INF/services/org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonFactory"
        assert z.read(svc).decode().strip() == "org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonFactory"
        # every class the runtime jar references under the shaded Jackson prefix is now provided
        with zipfile.ZipFile(runtime.runtime_jar()) as rt:
            present = {n for n in rt.namelist() if n.startswith("org/apache/iceberg/shaded/com/fasterxml/")}
        assert "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactoryBuilder.class" not in present
    assert all(r.ok for r in runtime.requirements()), runtime.requirements()
    jars = runtime.iceberg_jars()
    assert jars[0].endswith(runtime.RUNTIME_JAR_NAME) and jars[1] == str(jar)
    assert "sqlite-jdbc" in jars[2] and all(Path(j).is_file() for j in jars)


@pytest.mark.parametrize("damage", ["empty", "truncated", "unrelocated"])
def test_damaged_cached_jar_is_detected_and_repaired(temp_cache, damage):
    jar = runtime.relocated_jar_path()
    good = jar.read_bytes()
    if damage == "empty":
        jar.write_bytes(b"")
    elif damage == "truncated":
        jar.write_bytes(good[: len(good) // 2])
    else:  # a readable jar that still has unrelocated Jackson classes
        with zipfile.ZipFile(jar, "a") as z:
            z.writestr("com/fasterxml/jackson/core/JsonFactory.class", b"\xca\xfe\xba\xbe")
    req = requirement("relocated jackson jar")
    assert not req.ok
    assert "bench setup" in req.fix
    with pytest.raises(UserError, match="bench setup"):
        runtime.iceberg_jars()
    if damage == "truncated":  # provision() replaces a damaged build (one rebuild is enough to show it)
        lines = list(runtime.provision())
        assert any("discarding" in line for line in lines), lines
    else:
        jar.write_bytes(good)
    assert requirement("relocated jackson jar").ok


def test_missing_cache_is_reported_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("BENCH_SPARK_MAVEN", raising=False)
    monkeypatch.delenv("BENCH_MAVEN", raising=False)
    req = requirement("relocated jackson jar")
    assert not req.ok and "not built" in req.detail and "bench setup" in req.fix
    with pytest.raises(UserError, match="bench setup"):
        runtime.iceberg_jars()


def test_missing_jarjar_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(runtime, "JAVA_DIR", tmp_path)
    reqs = {r.name: r for r in runtime.requirements()}
    assert not reqs["jarjar"].ok and reqs["jarjar"].fix == "apt-get install -y libjarjar-java"
    assert not reqs["sqlite jdbc jar"].ok and "libxerial-sqlite-jdbc-java" in reqs["sqlite jdbc jar"].fix
    assert not reqs["relocated jackson jar"].ok
    with pytest.raises(UserError, match="libjarjar-java"):
        list(runtime.provision())


def test_java_requirement_reports_version():
    req = requirement("java")
    assert req.ok, req
    assert "17" in req.detail


@pytest.fixture
def maven_repo(tmp_path):
    """A directory laid out like Maven Central, served on 127.0.0.1 (stopped after the test)."""
    root = tmp_path / "repo"
    for name in runtime.MAVEN_ARTIFACTS:
        url = runtime.maven_url(name, repo="http://x")
        rel = url[len("http://x/"):]
        jar = root / rel
        jar.parent.mkdir(parents=True, exist_ok=True)
        jar.write_bytes(f"jar of {name}".encode())
        Path(str(jar) + ".sha1").write_text(hashlib.sha1(jar.read_bytes()).hexdigest() + "\n")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_maven_mode_downloads_checked_jars_once(maven_repo, tmp_path, monkeypatch):
    root, url = maven_repo
    monkeypatch.setenv("BENCH_MAVEN", "1")
    monkeypatch.setenv("BENCH_MAVEN_REPO", url)
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "cache"))
    jars = runtime.iceberg_jars(remote=True)  # an S3 warehouse: the AWS bundle too
    assert [Path(j).name for j in jars] == ["iceberg-spark-runtime-3.5_2.12-1.10.2.jar",
                                            "sqlite-jdbc-3.40.1.0.jar", "iceberg-aws-bundle-1.10.2.jar"]
    assert Path(jars[0]).read_bytes() == b"jar of runtime"
    assert runtime.s3_requirement().ok
    # cached: the server is not asked again (a broken repository does not matter any more)
    monkeypatch.setenv("BENCH_MAVEN_REPO", "http://127.0.0.1:9")
    assert runtime.iceberg_jars(remote=True) == jars


def test_maven_mode_refuses_a_jar_whose_checksum_differs(maven_repo, tmp_path, monkeypatch):
    root, url = maven_repo
    jar = next(root.rglob("sqlite-jdbc-*.jar"))
    jar.write_bytes(b"tampered")
    monkeypatch.setenv("BENCH_MAVEN", "1")
    monkeypatch.setenv("BENCH_MAVEN_REPO", url)
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(UserError, match="SHA-1 .* does not match"):
        runtime.iceberg_jars()
    assert not runtime.maven_path("sqlite-jdbc").exists()  # nothing half-trusted left in the cache


def test_offline_refuses_s3_and_external_rest(monkeypatch):
    monkeypatch.delenv("BENCH_MAVEN", raising=False)
    monkeypatch.delenv("BENCH_SPARK_MAVEN", raising=False)
    with pytest.raises(UserError, match="iceberg-aws-bundle"):
        runtime.iceberg_jars(remote=True)
    assert not runtime.s3_requirement().ok
    external = CatalogSettings(warehouse="/tmp/x", rest_uri="http://127.0.0.1:8181", external_rest=True)
    with pytest.raises(UserError, match="HttpClient5"):
        catalog_properties(external)


def test_plain_jvm_opens_the_catalog_and_commits(tmp_path):
    """The JVM the deletes generator commits through: no Spark session, the SQLite catalog via JDBC,
    a commit pyiceberg sees."""
    import pyarrow as pa

    list(runtime.provision())
    settings = CatalogSettings(warehouse=str(tmp_path / "wh"))
    cat = load_sql_catalog(settings)
    cat.create_namespace("bench")
    tbl = cat.create_table("bench.t", pa.schema([("v1", pa.int32())]), properties={"format-version": "2"})
    tbl.append(pa.table({"v1": pa.array([1, 2, 3], pa.int32())}))
    t0 = time.perf_counter()
    with JavaIceberg(settings) as java:
        started = time.perf_counter() - t0
        jt = java.load_table("bench.t")
        assert jt.currentSnapshot().snapshotId() == tbl.current_snapshot().snapshot_id
        jt.newRowDelta().set("bench.test", "yes").commit()
        proc = java.proc
    assert proc.poll() is not None  # the JVM is gone after the block
    assert cat.load_table("bench.t").current_snapshot().summary["bench.test"] == "yes"
    assert started < 30


def test_the_gateway_writes_its_class_archive_once_and_maps_it_after(tmp_path, monkeypatch):
    """Class-data sharing for the harness's own JVM: the first gateway of a cache writes the archive at its exit
    (renamed into place whole), the next ones map it and load fewer classes from the jars; the same commits."""
    list(runtime.provision())
    monkeypatch.setattr(gateway, "archive_dir", lambda: tmp_path / "cds")
    import pyarrow as pa

    settings = CatalogSettings(warehouse=str(tmp_path / "wh"))
    cat = load_sql_catalog(settings)
    cat.create_namespace("bench")
    tbl = cat.create_table("bench.t", pa.schema([("v1", pa.int32())]), properties={"format-version": "2"})
    tbl.append(pa.table({"v1": pa.array([1, 2, 3], pa.int32())}))
    for expect_archive_before in (False, True):
        assert bool(list((tmp_path / "cds").glob("*.jsa"))) is expect_archive_before
        with JavaIceberg(settings) as java:
            opts = " ".join(java.proc.args)
            assert ("-XX:ArchiveClassesAtExit=" in opts) is not expect_archive_before
            assert java.load_table("bench.t").currentSnapshot().snapshotId() == tbl.current_snapshot().snapshot_id
        archives = list((tmp_path / "cds").iterdir())
        assert [a.suffix for a in archives] == [".jsa"] and archives[0].stat().st_size > 1 << 20  # no temporary left
