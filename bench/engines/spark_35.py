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

# every distribution of its environment, pinned (the worker's: pyspark and py4j, pydantic, psutil, and pyiceberg with
# pyarrow for the deletes inspector); pyspark first (`bench list` shows it)
PINS = (f"pyspark=={LINE.pyspark}", "py4j==0.10.9.7", "annotated-types==0.8.0", "cachetools==8.0.2",
        "certifi==2026.10.19.post1", "charset-normalizer==3.5.3",
        "click==8.5.1", "fsspec==2026.9.0", "idna==3.20", "markdown-it-py==4.3.0", "mdurl==0.1.2", "mmh3==5.3.1",
        "psutil==7.2.2", "pyarrow==26.0.1", "pydantic==2.14.4", "pydantic_core==2.50.5",
        "Pygments==2.21.0", "pyiceberg==0.12.0", "pyparsing==3.3.3", "pyroaring==1.2.0",
        "python-dateutil==4.0.0", "requests==2.34.2", "rich==15.0.0", "SQLAlchemy==2.1.9", "strictyaml==1.7.3",
        "tenacity==9.2.1", "typing-inspection==0.4.5", "typing_extensions==4.16.0", "tzdata==2026.6",
        "urllib3==2.8.0", "zstandard==0.25.0")


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
