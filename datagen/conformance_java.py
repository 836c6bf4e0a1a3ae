"""The conformance cases Iceberg's Java API writes without Spark SQL (`writer: java-api`): shapes Spark SQL cannot
declare, such as nanosecond timestamps (format v3).  It runs in the Spark writer's process (its JVM, through py4j;
datagen.conformance), never in the harness's:

    the table     created by the catalog's own Java API (Catalog.createTable) from the case's schema and identity
                  partitioning (parsed as pyiceberg parses them: datagen.conformance_pyiceberg), properties as given
    INSERT ...    the rows evaluated by DuckDB and cast to the table's Arrow schema with its field ids, written by
                  pyarrow as one Parquet file, committed as a RowDelta with Iceberg's own metrics of the file
                  (bench.core.iceberg_java.commit); the table unpartitioned

Anything else is refused with its statement (the case is recorded as not written, with why).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from bench.core.catalog import CatalogSettings, load_catalog
from datagen.conformance import Case


def _create(spark: Any, settings: CatalogSettings, case: Case) -> Any:
    from datagen.conformance_pyiceberg import schema_of, spec_of

    jvm = spark.sparkContext._jvm
    ice = jvm.org.apache.iceberg
    catalog = spark._jsparkSession.sessionState().catalogManager().catalog(settings.name).icebergCatalog()
    ident = ice.catalog.TableIdentifier.parse(case.table)  # namespace.name
    if catalog.tableExists(ident):
        catalog.dropTable(ident, True)  # a case defined anew
    schema = schema_of(case)
    spec = spec_of(case, schema)
    if spec.fields:
        raise ValueError("the java-api writer writes unpartitioned tables only")
    props = jvm.java.util.HashMap()
    for k, v in {"format-version": str(case.format_version), **case.properties}.items():
        props.put(k, v)
    jschema = ice.SchemaParser.fromJson(schema.model_dump_json())
    return catalog.createTable(ident, jschema, ice.PartitionSpec.unpartitioned(), props)


def _append(spark: Any, settings: CatalogSettings, case: Case, table: Any, values: str) -> None:
    import pyarrow.parquet as pq
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    from bench.core.iceberg_java.commit import RowDeltaCommitter
    from datagen.conformance_pyiceberg import rows

    tbl = load_catalog(settings).load_table(case.table)
    data = rows(values, tbl).cast(schema_to_pyarrow(tbl.schema()))  # with the field ids
    location = str(table.location()).removeprefix("file:")
    path = Path(location) / "data" / f"java-api-{uuid.uuid4().hex[:12]}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, path)
    jvm = spark.sparkContext._jvm
    c = RowDeltaCommitter(jvm, table, spark.sparkContext._gateway.new_array(jvm.int, 0))
    c.row_delta([c.data_file(f"file:{path}", os.path.getsize(path))], [], {"conformance-case": case.name})


def write_case(spark: Any, settings: CatalogSettings, case: Case) -> None:
    from datagen.conformance_pyiceberg import INSERT

    table = _create(spark, settings, case)
    for step in case.steps:
        for n in range(step.repeat):
            case.pace()
            sql = case.statement(step.sql or "", "{t}", n)
            m = INSERT.match(sql)
            if step.sql is None or m is None:
                raise ValueError(f"the java-api writer runs INSERT ... VALUES only, not {(step.sql or step)!r:.120}")
            table.refresh()
            _append(spark, settings, case, table, m[1])


__all__ = ["write_case"]
