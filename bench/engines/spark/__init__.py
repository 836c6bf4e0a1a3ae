"""Apache Spark + Iceberg's `rewrite_data_files` as a benchmark engine.

    engine    the engine (SparkEngine): the protocol's steps, open/compact/close, and what is recorded
    options   what a scenario may set (SparkOptions) and the knobs a tune searches
    deploy    the deploy modes (local, standalone on this node, an external cluster): around the session
    deletes   the delete steps after rewrite_data_files: rewrite_position_delete_files, dangling deletes
    failures  failure classification: OutOfMemoryError of the driver or an executor, a JVM that died
    session   the session conf: loopback, catalog, Iceberg jars
    memory    the settings profiles and the memory plan within a budget (local and standalone)
    cluster   the standalone master and worker processes (mode: standalone)
"""

from bench.engines.spark.engine import SparkEngine

__all__ = ["SparkEngine"]
