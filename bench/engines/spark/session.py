"""Spark's side of the classpath and catalog: the conf of a session on this machine (local mode, or a
driver of the standalone cluster of `bench.engines.spark.cluster`).

Loopback only, no driver UI, Iceberg's SQL extensions, the harness catalog mounted as `<settings.name>`
(Iceberg's JdbcCatalog on the embedded SQLite file, or its REST client for an external catalog:
online only, the offline runtime lacks HttpClient5) and the Iceberg jars of the lower layer
(`bench.core.iceberg_java.runtime`: offline from pinned packages, online from Maven Central with
S3FileIO for an S3 warehouse).
"""

from __future__ import annotations

from bench.core.catalog import CatalogSettings
from bench.core.iceberg_java.gateway import catalog_properties, quiet_log4j2_file
from bench.core.iceberg_java.runtime import iceberg_jars

EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


def catalog_conf(settings: CatalogSettings) -> dict[str, str]:
    """Spark conf that mounts the harness catalog as `<settings.name>`."""
    name = settings.name
    conf = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog"}
    for k, v in catalog_properties(settings).items():
        conf[f"spark.sql.catalog.{name}.{k}"] = v
    return conf


def base_conf(settings: CatalogSettings, master: str, app_name: str = "bench") -> dict[str, str]:
    """Everything a session on this machine needs, before the memory plan and the scenario's conf."""
    conf = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.extensions": EXTENSIONS,
        "spark.jars": ",".join(iceberg_jars(remote=settings.is_remote)),
    }
    conf.update(catalog_conf(settings))
    return conf


def standalone_conf(cores: int, executors: int, executor_java_options: list[str]) -> dict[str, str]:
    """A driver of a standalone cluster whose workers have `cores` cores each: one executor per worker with
    all of them (its memory comes from the memory plan)."""
    return {
        "spark.executor.cores": str(cores),
        "spark.cores.max": str(cores * executors),
        "spark.executor.instances": str(executors),
        "spark.executor.extraJavaOptions": " ".join(executor_java_options),
        "spark.dynamicAllocation.enabled": "false",
    }


def driver_address(master_host: str) -> str:
    """The address of this node that the cluster's workers reach the driver at: $BENCH_SPARK_DRIVER_HOST, or
    127.0.0.1 for a master on loopback, or the local address of the route to the master."""
    import os
    import socket

    if os.environ.get("BENCH_SPARK_DRIVER_HOST"):
        return os.environ["BENCH_SPARK_DRIVER_HOST"]
    from bench.engines.spark.cluster import is_loopback

    if is_loopback(master_host):
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((master_host, 7077))  # UDP: no packet is sent; the kernel picks the route's address
        return str(s.getsockname()[0])


def log4j_option() -> str:
    return f"-Dlog4j2.configurationFile={quiet_log4j2_file().as_uri()}"
