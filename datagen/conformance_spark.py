"""The Spark writer's process of the conformance cases (`writer: spark` and `writer: java-api`, datagen.conformance):
`python -m datagen.conformance_spark TODO ROOT` starts one Spark session (its JVM never lives in the harness) on the
cases' SQLite catalog under ROOT and writes each case: Spark SQL statements with Iceberg's Java writer, equality
deletes as pyarrow files committed by Iceberg's Java API (RowDelta), and the java-api cases through Iceberg's Java API
alone (datagen.conformance_java).  `written.datagen.conformance_spark.part.json` last."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.core.catalog import CatalogSettings, load_catalog
from datagen.conformance import NAMESPACE, Case, EqualityDelete, equality_rows, write_all, write_orphan


def _equality_delete(spark: Any, settings: CatalogSettings, case: Case, d: EqualityDelete) -> None:
    """One equality-delete file (pyarrow, the key columns with their field ids) committed by Iceberg's Java
    API (RowDelta) on the table Spark wrote."""
    import pyarrow.parquet as pq

    from bench.core.iceberg_java.commit import RowDeltaCommitter

    jvm = spark.sparkContext._jvm
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession,
                                                                      f"{settings.name}.{case.table}")
    keys, data = equality_rows(load_catalog(settings).load_table(case.table).schema(), d)
    fields = keys.fields
    location = table.location().removeprefix("file:")
    path = f"{location}/data/eq-delete-{uuid.uuid4().hex[:12]}.parquet"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, path)
    arr = spark.sparkContext._gateway.new_array(jvm.int, len(fields))
    for i, f in enumerate(fields):
        arr[i] = f.field_id
    c = RowDeltaCommitter(jvm, table, arr)
    f = c.equality_file(f"file:{path}", os.path.getsize(path), tuple(d.partition) if d.partition else None)
    c.row_delta([], [f], {"conformance-case": case.name})


def _write_case(spark: Any, settings: CatalogSettings, case: Case) -> None:
    t = f"{settings.name}.{case.table}"
    spark.sql(f"DROP TABLE IF EXISTS {t} PURGE")  # a case defined anew
    props = {"format-version": str(case.format_version), "write.delete.mode": "merge-on-read",
             "write.update.mode": "merge-on-read", **case.properties}
    spark.sql(f"CREATE TABLE {t} ({case.all_columns}) USING iceberg"
              + (f" PARTITIONED BY ({case.partitioned_by})" if case.partitioned_by else "")
              + " TBLPROPERTIES (" + ", ".join(f"'{k}'='{v}'" for k, v in props.items()) + ")")
    with session_settings(spark.conf, case.session_keys):
        for step in case.steps:
            for n in range(step.repeat):
                case.pace()
                if step.sql is not None:
                    spark.sql(case.statement(step.sql, t, n))
                if step.equality_delete is not None:
                    _equality_delete(spark, settings, case, step.equality_delete)
                if step.orphan is not None:
                    write_orphan(case, load_catalog(settings).load_table(case.table).location(), step.orphan)


@contextmanager
def session_settings(conf: Any, keys: list[str]) -> Iterator[None]:
    """The session settings `keys` (a case's: Case.session_keys) as they were before, when the block ends however it
    ends: the session writes the next case too, and a setting a step made (spark.wap.id: a staged write) must not
    reach it.  `conf`: Spark's RuntimeConfig (get with a default, set, unset)."""
    before = {k: conf.get(k, None) for k in keys}
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                conf.unset(key)
            else:
                conf.set(key, value)


def _writers(spark: Any, case: Case) -> dict[str, Any]:
    """Written.written_by and .packages of a case this process wrote: Spark SQL with Iceberg's Java library, and
    for an equality delete pyarrow's file committed through Iceberg's Java API; a java-api case: Iceberg's Java API
    alone (in Spark's JVM) and pyarrow's files."""
    import pyarrow as pa

    iceberg = str(spark.sparkContext._jvm.org.apache.iceberg.IcebergBuild.version())
    packages = ["pyspark"]  # Spark, with the Iceberg runtime jar of its line (bench.core.iceberg_java.runtime)
    if case.writer == "java-api":
        return {"written_by": f"Iceberg {iceberg}'s Java API (create, RowDelta; no Spark SQL); Parquet with field ids "
                              f"by pyarrow {pa.__version__}", "packages": [*packages, "pyarrow"]}
    by = f"Spark {spark.version} + Iceberg {iceberg} (Java)"
    if any(step.equality_delete is not None for step in case.steps):
        by += f"; equality-delete files: pyarrow {pa.__version__}, committed by Iceberg {iceberg}'s Java API"
        packages.append("pyarrow")
    return {"written_by": by, "packages": packages}


def main(spec: str, root: str) -> int:
    from bench.core.iceberg_java.spark_conf import local_conf, session

    cases = [Case.model_validate(c) for c in json.loads(Path(spec).read_text())]
    settings = CatalogSettings.for_warehouse(Path(root) / "lake")
    load_catalog(settings).create_namespace_if_not_exists(NAMESPACE)
    spark = session(local_conf(settings, 2, "bench-conformance-writer", "1g",
                               extra={"spark.sql.session.timeZone": "UTC"}))
    try:
        def write_one(case: Case) -> None:
            if case.writer == "java-api":
                from datagen.conformance_java import write_case as write_java

                write_java(spark, settings, case)
            else:
                _write_case(spark, settings, case)

        return write_all(cases, write_one, lambda c: _writers(spark, c), root, "datagen.conformance_spark")
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
