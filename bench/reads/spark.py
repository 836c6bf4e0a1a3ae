"""Spark SQL as the fallback reader: where DuckDB's iceberg reader is quadratic on equality deletes
(duckdb-iceberg#626), a local Spark session (pyspark, Iceberg's offline jars, the harness catalog as
Iceberg's JdbcCatalog on the SQLite file) runs the same queries.  It runs in its own process (`python -m
bench.reads.spark JOB OUT`), like an engine, so its JVM never lives in the harness; the session starts
before any clock, and each query is timed alone (cold: the page cache dropped right before it; warm:
one untimed run first).  The point lookup's row comes back as Arrow and is checksummed like DuckDB's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.core import children
from bench.core.catalog import CATALOG_NAME, CatalogSettings
from bench.core.checksum import arrow_checksum
from bench.core.iceberg_java.gateway import catalog_properties
from bench.core.iceberg_java.runtime import iceberg_jars
from bench.core.iceberg_java.spark_conf import local_conf, session
from bench.core.machine import drop_page_cache, java_binary
from bench.core.records.reads import ReadQuery
from bench.core.sql import spark_idents
from bench.reads.queries import aggregate_answer, query_sql

NAME = "spark-sql"
TIMEOUT_S = 3600
DRIVER_MEMORY = "4g"


def table_ref(table: str, catalog: str = CATALOG_NAME) -> str:
    """The table in Spark SQL: its catalog is mounted under the harness catalog's own name (Iceberg's
    JdbcCatalog finds tables by that name)."""
    ns, name = table.split(".")[-2:]
    return spark_idents(catalog, ns, name)


def unavailable(settings: CatalogSettings) -> str:
    """Why Spark SQL cannot read here ("" when it can)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    if java_binary() is None:
        return "java not found"
    try:
        iceberg_jars(remote=settings.is_remote)
        catalog_properties(settings)
    except Exception as e:  # noqa: BLE001 - the reason is the answer
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    return ""


def conf(settings: CatalogSettings) -> dict[str, str]:
    """The harness's Spark session conf (`bench.core.iceberg_java.spark_conf`), local, with a driver
    heap and Arrow for the point lookup's rows."""
    return local_conf(settings, "*", "bench-reads", DRIVER_MEMORY,
                      extra={"spark.sql.execution.arrow.pyspark.enabled": "true"})


def run_queries(settings: CatalogSettings, table: str, queries: list[ReadQuery],
                cache_mode: str) -> dict[str, tuple[list[str], float]]:
    """Run the queries in a Spark process; {query: (answer, seconds)}."""
    with tempfile.TemporaryDirectory(prefix="bench-reads-spark-") as tmp:
        job, out, log = Path(tmp) / "job.json", Path(tmp) / "out.json", Path(tmp) / "spark.log"
        job.write_text(json.dumps({"conf": conf(settings), "catalog": settings.name, "table": table,
                                   "cache": cache_mode,
                                   "queries": [q.model_dump() for q in queries]}))
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1")
        with open(log, "wb") as fh:
            p = children.run([sys.executable, "-m", "bench.reads.spark", str(job), str(out)], stdout=fh,
                             stderr=subprocess.STDOUT, env=env, timeout=TIMEOUT_S)
        if p.returncode != 0 or not out.exists():
            tail = " | ".join(log.read_text(errors="replace").splitlines()[-3:])[:500]
            raise RuntimeError(f"the Spark SQL reader exited with status {p.returncode}: {tail}")
        raw = json.loads(out.read_text())
    return {k: (v[0], float(v[1])) for k, v in raw.items()}


def _main(job_file: str, out_file: str) -> int:
    job = json.loads(Path(job_file).read_text())
    spark = session(job["conf"])
    try:
        ref = table_ref(job["table"], job["catalog"])
        spark.sql(f"SELECT 1 FROM {ref} LIMIT 0").collect()  # catalog and table metadata warm, untimed
        out = {}
        for qd in job["queries"]:
            q = ReadQuery.model_validate(qd)
            df_sql = query_sql(q, ref)

            def execute(sql: str = df_sql, point: bool = q.name == "point-lookup"):
                df = spark.sql(sql)
                # DataFrame.toArrow is pyspark 4's (the harness's); _arrow where a pyspark lacks it
                return df.toArrow() if point and hasattr(df, "toArrow") else (
                    _arrow(df) if point else df.collect()[0])

            if job["cache"] == "cold":
                drop_page_cache()
            else:
                execute()
            t0 = time.perf_counter()
            raw = execute()
            seconds = time.perf_counter() - t0
            if q.name == "point-lookup":
                n, s = arrow_checksum(raw)
                answer = [str(n), str(s)]
            else:
                answer = aggregate_answer(tuple(raw))
            out[q.name] = (answer, seconds)
        Path(out_file).write_text(json.dumps(out))
    finally:
        spark.stop()
    return 0


def _arrow(df):
    """A DataFrame's rows as one Arrow table (pyspark 3.5 has no public toArrow)."""
    import pyarrow as pa

    batches = df._collect_as_arrow()  # noqa: SLF001 - the Arrow path pyspark's toPandas itself uses
    return pa.Table.from_batches(batches) if batches else pa.table({})


if __name__ == "__main__":
    sys.exit(_main(*sys.argv[1:3]))
