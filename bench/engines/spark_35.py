"""Spark 3.5 with Iceberg 1.10 (`spark-3.5`): the `spark` engine on the previous Spark line, so that every result
can show what the upgrade to the current line buys and earlier results stay reproducible.

It differs from `spark` only in what it declares: the lock's Spark line "3.5" (its Iceberg runtime jar from Maven
Central, `bench/core/iceberg_java/maven.lock.toml`), and so what that line's Iceberg release can do (no branch:
bench.engines.spark.engine.line_supports), and an environment of its own with that line's pyspark
(`bench setup --engines spark-3.5`), since the harness's environment holds the current line's pyspark.  It is declared
an earlier version of `spark`: a conformance matrix with both shows how each case's verdict changed.
"""

from __future__ import annotations

from typing import ClassVar

from bench.core.iceberg_java import runtime
from bench.engines import environment as envs
from bench.engines.spark.engine import SparkEngine

LINE = runtime.spark_line("3.5")

PINS = (f"pyspark=={LINE.pyspark}", *envs.SPARK_WORKER_PINS)  # pyspark first: `bench list` shows it


class Spark35Engine(SparkEngine):
    name: ClassVar[str] = "spark-3.5"
    line: ClassVar[runtime.SparkLine] = LINE
    description: ClassVar[str] = (f"Apache {LINE.describe()} rewrite_data_files, the previous Spark line: the "
                                  "spark engine's calls and settings, in its own environment")
    color: ClassVar[str] = "#F29C73"
    earlier_version_of: ClassVar[str] = "spark"
    packages: ClassVar[tuple[str, ...]] = ()  # recorded from its own environment (versions())
    library_packages: ClassVar[tuple[str, ...]] = SparkEngine.packages  # Iceberg's Java library, as spark's
    environment: ClassVar[envs.EngineEnvironment | None] = envs.EngineEnvironment(
        python="3.11", requirements=PINS,
        why=f"pyspark {LINE.pyspark}; the harness's environment holds pyspark {runtime.HARNESS_LINE.pyspark}",
        from_source=("pyspark",))  # PyPI has pyspark as a source archive only (pure Python and jars)
