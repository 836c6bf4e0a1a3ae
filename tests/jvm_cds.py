"""Class data sharing for the tests' Spark JVMs: one archive of the classes a Spark driver loads, made once per
virtualenv and kept in the harness's cache (JDK 17's dynamic AppCDS, `-XX:ArchiveClassesAtExit`), mapped by every
JVM the tests start (`-XX:SharedArchiveFile` in JAVA_TOOL_OPTIONS, beside the C1-only flag of tests/conftest.py).
A Spark JVM then reads its classes from the archive instead of loading, parsing and verifying them from the jars:
measured here, a tiny `bench run --engines spark` took 14 s instead of 19-24 s.  What the JVMs compute is the same;
a JVM whose class path is not the archive's (the Iceberg Java gateway, Spark's launcher) uses the JDK's own archive
only, silently.  Benchmarks never use it (the harness sets no such flag): it is the tests' shared JVM state, like
their shared warehouse.

    python -m tests.jvm_cds PATH      # trains: a Spark session on an Iceberg table, the archive written at exit
    python -m tests.jvm_cds --ensure  # the archive the tests will map, trained when missing (`make test` runs
                                      # it beside the checks, so the tests' first step does not wait for it)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # a class-path mismatch only disables the archive: say nothing
# the C1 compiler only: tests/conftest.py says why (an archive is trained with the options it is used with)
TEST_JAVA_TOOL_OPTIONS = "-XX:TieredStopAtLevel=1"


def archive_path() -> Path | None:
    """The archive for this JDK and Spark (content-addressed under the harness's cache); None without java."""
    from bench.core.iceberg_java.runtime import cache_root
    from bench.core.machine import java_binary

    java = java_binary()
    if java is None:
        return None
    try:
        import pyspark
    except ImportError:
        return None
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    # the jars as the JVM checks them before it maps an archive: by path, size and modification time.  The cache is
    # shared by every clone on the machine, each with its own virtualenv, and a virtualenv made again at the same
    # path (a CI's clean clone) has the same paths with new times: an archive of other jars is refused silently,
    # every class loaded from the jars again (a tiny Spark run 19 s instead of 10 s)
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    where = hashlib.sha256("\n".join([version, pyspark.__version__, *map(str, jars)]).encode()).hexdigest()[:16]
    stats = hashlib.sha256("\n".join(f"{st.st_size} {st.st_mtime_ns}" for st in map(os.stat, jars)).encode())
    return cache_root() / "test-cds" / f"spark-driver-{where}-{stats.hexdigest()[:8]}.jsa"


def ensure_archive(base_options: str) -> Path | None:
    """The archive, trained now when missing (about 40 s, once per virtualenv); None when it cannot be made."""
    path = archive_path()
    if path is None:
        return None
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # the archives of this virtualenv's earlier jars (made again at the same path) are never mapped again
    for stale in path.parent.glob(path.name.rsplit("-", 1)[0] + "*.jsa"):
        stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".jsa.tmp")
    os.close(fd)
    os.unlink(tmp)
    env = {**os.environ, "JAVA_TOOL_OPTIONS": base_options}
    try:
        p = subprocess.run([sys.executable, "-m", "tests.jvm_cds", tmp], env=env, capture_output=True, text=True,
                           timeout=300, cwd=Path(__file__).parents[1])
        if p.returncode != 0 or not Path(tmp).is_file():
            return None
        os.replace(tmp, path)  # atomic: a JVM never maps a half-written archive
        return path
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        Path(tmp).unlink(missing_ok=True)


def _train(out: str) -> None:
    """What a test's Spark run does, in a driver whose class path is the engine's (Spark's jars): create, insert,
    rewrite, expire, read an Iceberg table."""
    from bench.core.catalog import CatalogSettings, load_sql_catalog
    from bench.core.iceberg_java.spark_conf import local_conf, session

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    with tempfile.TemporaryDirectory() as wh:
        settings = CatalogSettings(warehouse=wh)
        load_sql_catalog(settings).create_namespace("t")  # the catalog's tables, as the harness makes them
        spark = session(local_conf(settings, 2, "bench-test-cds", "1g",
                                   java_options=(f"-XX:ArchiveClassesAtExit={out}", QUIET)))
        c = settings.name
        spark.sql(f"CREATE TABLE {c}.t.x (id BIGINT, s STRING, d DATE) USING iceberg PARTITIONED BY (d) "
                  "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
        for i in range(3):
            spark.sql(f"INSERT INTO {c}.t.x SELECT id, CAST(id AS STRING), DATE '2024-01-01' + CAST(id % 2 AS INT) "
                      f"FROM range({i * 100}, {(i + 1) * 100})")
        spark.sql(f"DELETE FROM {c}.t.x WHERE id % 7 = 3")
        spark.sql(f"CALL {c}.system.rewrite_data_files(table => 't.x', options => map('min-input-files', '2'))")
        spark.sql(f"CALL {c}.system.rewrite_position_delete_files(table => 't.x')")
        spark.sql(f"CALL {c}.system.rewrite_manifests(table => 't.x')")
        spark.sql(f"CALL {c}.system.expire_snapshots(table => 't.x', retain_last => 1)")
        spark.sql(f"SELECT d, count(*), sum(id) FROM {c}.t.x GROUP BY d ORDER BY d").collect()
        spark.stop()  # the JVM exits when the gateway closes: the archive is written then


if __name__ == "__main__" and sys.argv[1:] == ["--ensure"]:
    if "JAVA_TOOL_OPTIONS" not in os.environ:  # else the tests keep the options they are given, and no archive
        print(f"tests' class data sharing archive: {ensure_archive(TEST_JAVA_TOOL_OPTIONS) or 'none (no java)'}")
elif __name__ == "__main__":
    _train(sys.argv[1])
    from pyspark import SparkContext

    gw = SparkContext._gateway
    proc = getattr(gw, "proc", None)
    if gw is not None:
        gw.shutdown()
    if proc is not None:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=120)
