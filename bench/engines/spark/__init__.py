"""Apache Spark + Iceberg's `rewrite_data_files` as a benchmark engine.

    engine    the engine (SparkEngine): options, open/compact/close, failure classification
    session   the session conf: loopback, catalog, Iceberg jars
    memory    the settings profiles and the memory plan within a budget (local and standalone)
    cluster   the standalone master and worker processes (mode: standalone)
"""

from bench.engines.spark.engine import SparkEngine

__all__ = ["SparkEngine"]
