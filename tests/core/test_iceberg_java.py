"""Iceberg's Java library in the lower layer: the resolver (jars from Maven Central, checked against the lock and
the published SHA-1, cached; against a real HTTP server on 127.0.0.1 posing as Maven Central), and the plain JVM
(py4j) the deletes generator commits through."""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
from pathlib import Path

import pytest

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.errors import UserError
from bench.core.iceberg_java import gateway, runtime
from bench.core.iceberg_java.gateway import JavaIceberg, catalog_properties

# ------------------------------------------------------------------------------------------------
# the resolver: jars from a repository laid out like Maven Central, checked against the lock


def _artifact(group: str, name: str, version: str, data: bytes) -> runtime.Artifact:
    return runtime.Artifact(group, name, version, len(data), hashlib.sha256(data).hexdigest())


@pytest.fixture
def fake_maven(tmp_path, monkeypatch):
    """A repository laid out like Maven Central on 127.0.0.1 (stopped after the test), a lock whose two lines pin
    its jars, and an empty jar cache."""
    root = tmp_path / "repo"
    jars = {"rt41": b"runtime 4.1", "aws12": b"aws bundle 1.12", "rt35": b"runtime 3.5", "aws10": b"aws bundle 1.10",
            "jdbc": b"sqlite jdbc"}
    arts = {"rt41": _artifact("org.apache.iceberg", "iceberg-spark-runtime-4.1_2.13", "1.12.0", jars["rt41"]),
            "aws12": _artifact("org.apache.iceberg", "iceberg-aws-bundle", "1.12.0", jars["aws12"]),
            "rt35": _artifact("org.apache.iceberg", "iceberg-spark-runtime-3.5_2.12", "1.10.2", jars["rt35"]),
            "aws10": _artifact("org.apache.iceberg", "iceberg-aws-bundle", "1.10.1", jars["aws10"]),
            "jdbc": _artifact("org.xerial", "sqlite-jdbc", "3.54.1.0", jars["jdbc"])}
    for key, art in arts.items():
        path = root / art.relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jars[key])
        Path(f"{path}.sha1").write_text(hashlib.sha1(jars[key]).hexdigest() + "  " + art.file_name + "\n")
    lines = {"4.1": runtime.SparkLine("4.1", "4.1.4", "1.12.0", arts["rt41"], arts["aws12"], (17, 21)),
             "3.5": runtime.SparkLine("3.5", "3.5.9", "1.10.2", arts["rt35"], arts["aws10"], (11, 17))}
    fake = runtime.Lock("4.1", lines, arts["jdbc"], tuple(arts.values()))
    monkeypatch.setattr(runtime, "lock", lambda: fake)
    monkeypatch.setattr(runtime, "HARNESS_LINE", lines["4.1"])

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("BENCH_MAVEN_REPO", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "cache"))
    yield {"root": root, "arts": arts, "lines": lines}
    server.shutdown()
    server.server_close()


def test_setup_fetches_every_locked_jar_once_and_runs_never_download(fake_maven, monkeypatch):
    arts = fake_maven["arts"]
    with pytest.raises(UserError, match="not in the jar cache .*bench setup"):
        runtime.iceberg_jars()  # before setup: one line naming the command, no download
    assert not (runtime.cache_root() / "maven").exists()
    reqs = {r.name: r for r in runtime.requirements()}
    assert not reqs["jar iceberg-spark-runtime-4.1_2.13 1.12.0"].ok
    assert "bench setup" in reqs["jar iceberg-spark-runtime-4.1_2.13 1.12.0"].fix
    lines = list(runtime.provision())
    assert sum("(fetched from" in line for line in lines) == 5, lines
    assert runtime.iceberg_jars() == [str(arts["rt41"].path), str(arts["jdbc"].path)]
    assert runtime.iceberg_jars(remote=True, line="3.5") == [str(arts["rt35"].path), str(arts["jdbc"].path),
                                                             str(arts["aws10"].path)]
    assert arts["rt41"].path.read_bytes() == b"runtime 4.1"
    assert runtime.s3_requirement().ok
    # cached: the repository is not asked again (a broken one does not matter any more)
    monkeypatch.setenv("BENCH_MAVEN_REPO", "http://127.0.0.1:9")
    again = list(runtime.provision())
    assert sum("(cached)" in line for line in again) == 5, again
    assert not [p for p in arts["rt41"].path.parent.iterdir() if p.name.startswith(".")]  # no temporary left


def test_a_jar_whose_published_sha1_differs_is_refused_and_not_cached(fake_maven):
    art = fake_maven["arts"]["jdbc"]
    (fake_maven["root"] / art.relative).write_bytes(b"sqlite jdbc, tampered")
    with pytest.raises(UserError, match="SHA-1 .* does not match the published"):
        runtime.fetch(art)
    assert not art.path.exists() and not list(art.path.parent.iterdir())  # nothing half-trusted left


def test_a_jar_the_lock_does_not_pin_is_refused_even_with_a_matching_sha1(fake_maven):
    art = fake_maven["arts"]["rt35"]
    path = fake_maven["root"] / art.relative
    path.write_bytes(b"another runtime")  # the repository's own checksum agrees: a changed artifact
    Path(f"{path}.sha1").write_text(hashlib.sha1(b"another runtime").hexdigest())
    with pytest.raises(UserError, match="the lock pins"):
        runtime.fetch(art)
    assert not art.path.exists()


def test_an_unreachable_repository_is_one_line(fake_maven, monkeypatch):
    monkeypatch.setenv("BENCH_MAVEN_REPO", "http://127.0.0.1:9")
    with pytest.raises(UserError, match="cannot download .*BENCH_MAVEN_REPO"):
        list(runtime.provision())


def test_the_cached_jars_are_the_locked_ones():
    """The jars this machine's JVMs load are byte for byte the ones the lock pins (checked when fetched)."""
    list(runtime.provision())
    for art in runtime.lock().artifacts:
        assert art.path.stat().st_size == art.size
        assert hashlib.sha256(art.path.read_bytes()).hexdigest() == art.sha256, art.coordinate
    assert {line.iceberg for line in runtime.lock().lines.values()} >= {"1.12.0", "1.10.2"}


def test_java_requirement_reports_version():
    req = {r.name: r for r in runtime.requirements()}["java"]
    assert req.ok, req
    assert "17" in req.detail


def test_an_external_rest_catalog_goes_through_icebergs_rest_client():
    external = CatalogSettings(warehouse="/tmp/x", rest_uri="http://127.0.0.1:8181", external_rest=True,
                               properties={"warehouse": "prod"})
    assert catalog_properties(external) == {"type": "rest", "uri": "http://127.0.0.1:8181", "warehouse": "prod"}
    embedded = CatalogSettings(warehouse="/tmp/x")
    assert catalog_properties(embedded)["catalog-impl"] == "org.apache.iceberg.jdbc.JdbcCatalog"
    served = embedded.with_rest("http://127.0.0.1:8182")
    assert catalog_properties(served, rest=True) == {"type": "rest", "uri": "http://127.0.0.1:8182",
                                                     "warehouse": "/tmp/x"}


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


def test_the_cache_is_one_per_machine_unless_named(tmp_path, monkeypatch):
    """Not in the clone: every clone of the project on a machine shares the jars and environments it fetched."""
    monkeypatch.delenv("BENCH_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert runtime.cache_root() == (tmp_path / "home" / ".cache" / "iceberg-compaction-bench").resolve()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert runtime.cache_root() == (tmp_path / "xdg").resolve() / "iceberg-compaction-bench"
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "named"))
    assert runtime.cache_root() == (tmp_path / "named").resolve()
    assert not runtime.cache_root().is_relative_to(runtime.PROJECT_ROOT)
