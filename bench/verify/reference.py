"""The reference reader: Iceberg's Java library (Spark SQL over the harness catalog, Iceberg's JdbcCatalog on its
SQLite file), the implementation of the Iceberg spec every other reader is held to.  It decides the ground truth
when the verifier's required readers disagree (bench.runner.source.ground_truth, bench.verify.checks.verify): a
reader that disagrees with it is recorded as a reader finding, and the harness refuses only a table the reference
cannot read either.

It runs in its own process (`python -m bench.verify.reference JOB OUT`), so no JVM lives in the harness: Spark
reads the snapshot (columns by field id, every delete applied by Iceberg's own rules) and writes its rows as
Parquet under plain column names (c0, c1, ...); DuckDB then casts each column to the table's type as DuckDB reads
it (bench.verify.columns.duckdb_types) and takes the same checksum as every other reader.  A JVM start costs a few
seconds, which is why it is consulted only on a disagreement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pyiceberg.table import Table

from bench.core import children
from bench.core.catalog import CatalogSettings
from bench.core.checksum import checksum_select
from bench.core.iceberg_java.spark_conf import local_conf, session
from bench.core.machine import java_binary
from bench.core.sql import ident, spark_idents, string_list
from bench.core.table.fieldids import duckdb_types

NAME = "iceberg-java"
RESOLVES = "field id (Iceberg's Java library)"
TIMEOUT_S = 1800
DRIVER_MEMORY = "2g"


class ReferenceUnavailable(RuntimeError):
    """The reference reader cannot run here (no Java, no pyspark, no catalog it can open)."""


def _job(tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None, out_dir: Path) -> dict:
    if settings is None:
        raise ReferenceUnavailable("no catalog settings to open the table with")
    try:
        import pyspark  # noqa: F401
    except ImportError as e:
        raise ReferenceUnavailable("pyspark is not installed") from e
    if java_binary() is None:
        raise ReferenceUnavailable("java not found")
    try:
        conf = local_conf(settings, 2, "bench-reference-reader", DRIVER_MEMORY, extra={
            "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS", "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": "2"})
    except Exception as e:  # noqa: BLE001 - the reason is the answer
        raise ReferenceUnavailable(str(e).splitlines()[0] if str(e) else type(e).__name__) from e
    ns, name = tuple(tbl.name())[-2:]
    return {"conf": conf, "table": spark_idents(settings.name, ns, name),
            "snapshot_id": snapshot_id, "out": str(out_dir)}


def read_reference(tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None) -> tuple[int, str]:
    """(rows, checksum) of the snapshot as Iceberg's Java library reads it.  ReferenceUnavailable when it cannot
    run here; RuntimeError (with the JVM's last lines) when it fails on the table."""
    import duckdb

    with tempfile.TemporaryDirectory(prefix="bench-reference-") as tmp:
        job, out, log = Path(tmp) / "job.json", Path(tmp) / "rows", Path(tmp) / "spark.log"
        job.write_text(json.dumps(_job(tbl, snapshot_id, settings, out)))
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1")
        with open(log, "wb") as fh:
            p = children.run([sys.executable, "-m", "bench.verify.reference", str(job)], stdout=fh,
                             stderr=subprocess.STDOUT, env=env, timeout=TIMEOUT_S)
        if p.returncode != 0:
            lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
            why = next((x for x in reversed(lines) if "Exception" in x or "Error" in x), lines[-1] if lines else "")
            raise RuntimeError(f"Iceberg's Java library (Spark SQL) could not read it: {why.strip()[:400]}")
        parts = sorted(str(x) for x in out.glob("*.parquet"))
        if not parts:
            return 0, "0"
        fields = tbl.schema().fields
        types = duckdb_types(tbl.schema())
        cast = ", ".join(f"CAST(c{i} AS {types[f.field_id]}) AS {ident(f.name)}" for i, f in enumerate(fields))
        con = duckdb.connect()
        try:
            row = con.execute(checksum_select([f.name for f in fields],
                                              f"(SELECT {cast} FROM read_parquet({string_list(parts)}))")).fetchone()
        finally:
            con.close()
    assert row is not None
    return int(row[0]), str(row[1])


def _main(job_file: str) -> int:
    job = json.loads(Path(job_file).read_text())
    spark = session(job["conf"])
    try:
        at = f" VERSION AS OF {int(job['snapshot_id'])}" if job["snapshot_id"] is not None else ""
        df = spark.sql(f"SELECT * FROM {job['table']}{at}")
        df.toDF(*[f"c{i}" for i in range(len(df.columns))]).write.parquet(job["out"])
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1]))
