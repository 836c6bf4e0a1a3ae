"""A Spark session on the harness catalog, for tests that read a table with Iceberg's own Java reader
(the engine builds its own session inside its subprocess; tests need one in-process)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from bench.core.catalog import CatalogSettings
from bench.core.iceberg_java.spark_conf import local_conf, session


@contextlib.contextmanager
def spark_session(settings: CatalogSettings, heap: str = "1g") -> Iterator:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark import SparkContext
    spark = session(local_conf(settings, 1, "bench-test", heap))
    try:
        yield spark
    finally:
        spark.stop()
        gw, SparkContext._gateway, SparkContext._jvm = SparkContext._gateway, None, None
        proc = getattr(gw, "proc", None)
        if gw is not None:
            gw.shutdown()
        if proc is not None:  # PySpark's gateway JVM exits when its stdin closes
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=30)
