"""A Spark session's conf on this machine, and the session, for every JVM of the harness that runs Spark SQL (the
Spark engine, `bench.engines.spark`; the fallback reader, `bench.reads.spark`; the reference reader,
`bench.verify.reference`; the conformance cases' writer, `datagen.conformance_spark`): loopback only, no driver UI,
Iceberg's SQL extensions, the harness catalog mounted as `<settings.name>` (Iceberg's JdbcCatalog on the
embedded SQLite file, or its REST client: an external catalog, or the loopback server an engine reaches, as every
engine does) and the Iceberg jars of `runtime.iceberg_jars` (from the jar cache, with the AWS SDK bundle for an S3
warehouse).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

from bench.core.catalog import CatalogSettings
from bench.core.iceberg_java.gateway import catalog_properties, quiet_log4j2_file
from bench.core.iceberg_java.runtime import iceberg_jars

EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


def catalog_conf(settings: CatalogSettings, rest: bool = False) -> dict[str, str]:
    """Spark conf that mounts the harness catalog as `<settings.name>` (`rest`: through its loopback REST server)."""
    name = settings.name
    conf = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog"}
    for k, v in catalog_properties(settings, rest).items():
        conf[f"spark.sql.catalog.{name}.{k}"] = v
    return conf


def base_conf(settings: CatalogSettings, master: str, app_name: str = "bench",
              jars: list[str] | None = None, rest: bool = False) -> dict[str, str]:
    """Everything a session on this machine needs, before the memory plan and the scenario's conf (`jars`:
    other Iceberg jars than the harness's, e.g. an engine's own runtime; `rest`: the catalog through its loopback
    REST server)."""
    conf = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.extensions": EXTENSIONS,
        "spark.jars": ",".join(jars if jars is not None else iceberg_jars(remote=settings.is_remote)),
    }
    conf.update(catalog_conf(settings, rest))
    return conf


def log4j_option() -> str:
    return f"-Dlog4j2.configurationFile={quiet_log4j2_file().as_uri()}"


def local_conf(settings: CatalogSettings, cores: int | str, app_name: str, driver_memory: str,
               java_options: tuple[str, ...] = (), extra: dict[str, str] | None = None) -> dict[str, str]:
    """A local session of the harness's own (a reader, a writer, a test; the engine plans its own within a budget):
    `base_conf` in `local[<cores>]` with a driver heap, the quiet log4j configuration (then `java_options`) and
    `extra` settings last."""
    conf = base_conf(settings, f"local[{cores}]", app_name=app_name)
    conf.update({"spark.driver.memory": driver_memory,
                 "spark.driver.extraJavaOptions": " ".join([log4j_option(), *java_options])})
    conf.update(extra or {})
    return conf


def session(conf: dict[str, str]) -> SparkSession:
    """The SparkSession (getOrCreate) with every key of `conf` set before its driver JVM starts."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()
