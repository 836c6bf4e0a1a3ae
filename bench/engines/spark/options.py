"""What a scenario may set under `engines: spark:` (`SparkOptions`, validated when the scenario loads) and the knobs a
tune searches (`KNOBS`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bench.core.records.engine_run import DeployMode
from bench.engines.base import Knob
from bench.engines.procedure import Scalar
from bench.engines.spark import memory
from bench.engines.spark.cluster import parse_master

RESERVED_CONF = ("spark.master", "spark.driver.extraJavaOptions", "spark.jars", "spark.jars.packages",
                 "spark.driver.memory", "spark.executor.memory", "spark.executor.extraJavaOptions",
                 "spark.executor.cores", "spark.cores.max", "spark.executor.instances")
EXTERNAL_WEBUI_PORT = 8080  # a standalone master's default web UI port

GIB = 1024**3
KNOBS = (
    Knob("slots_per_core", "slots_per_core", (1, 2, 3), published=1,
         note="task slots per core given: local[k x cores] (standalone: k x cores executor cores); more slots "
              "than cores overlap reads and writes with compute"),
    Knob("max-concurrent-file-group-rewrites", "rewrite_options.max-concurrent-file-group-rewrites", (1, 2, 5, 10),
         published=5, note="file groups rewritten at once (Iceberg's default 5; not set by the published run)"),
    Knob("max-file-group-size-bytes", "rewrite_options.max-file-group-size-bytes", (GIB, 4 * GIB, 100 * GIB),
         published=100 * GIB, note="bytes per file group (Iceberg's default 100 GiB); Iceberg's rewrite reads each "
                                   "group with a split size it derives from the group (inputSplitSize), so this is "
                                   "also the read-split knob"),
    Knob("partial-progress.enabled", "rewrite_options.partial-progress.enabled", (False, True), published=False,
         note="commit file groups as they finish (Iceberg's default off)"),
    Knob("memory.fraction", "memory_fraction", (0.6, 0.8, 0.9), published=0.8,
         note="share of the heap (less 300 MiB) for execution and storage (published 0.8; Spark's default 0.6)"),
    Knob("vectorized reader batch size", "", (),
         note="Iceberg takes it from a read option or the table property read.parquet.vectorization.batch-size; "
              "rewrite_data_files passes no read option through and a table property would change the table "
              "under test"),
    Knob("spark.sql.files.maxPartitionBytes", "", (),
         note="applies to Spark's own file sources, not to Iceberg scans; Iceberg's rewrite sets the split size "
              "per file group (searched through max-file-group-size-bytes)"),
)


class SparkOptions(BaseModel):
    """What a scenario may put under `engines: spark:`."""

    model_config = ConfigDict(extra="forbid")

    profile: Literal["local", "paper"] = "local"  # settings profile (bench.engines.spark.memory)
    mode: Literal["local", "standalone"] = "local"  # deploy mode: one JVM, or a standalone master + worker(s)
    workers: int = Field(1, ge=1, le=8)  # standalone on this node: workers, one executor each (cores split)
    # spark://HOST:PORT of a standalone cluster that already runs (e.g. terraform's spark_workers): the
    # driver runs here, the executors on its workers; implies standalone, starts no daemon
    master: str | None = None
    master_webui: str | None = None  # that master's web UI (default http://HOST:8080), read for what it granted
    # task slots per core given: local[k x cores], or k x cores executor cores in standalone (published: 1)
    slots_per_core: int = Field(1, ge=1, le=8)
    memory_fraction: float | None = Field(None, gt=0.0, lt=1.0)  # over the profile's spark.memory.fraction
    # the catalog: the harness's REST server, as every engine reaches it; or `jdbc`, Iceberg's JdbcCatalog on the
    # embedded SQLite file in the engine's JVM (no server: what the catalog's round trips cost, measured against rest)
    catalog: Literal["rest", "jdbc"] = "rest"
    rewrite_options: dict[str, Scalar] = Field(default_factory=dict)  # extra rewrite_data_files options
    spark_conf: dict[str, Scalar] = Field(default_factory=dict)  # extra Spark settings, applied last

    @model_validator(mode="after")
    def _not_reserved(self) -> SparkOptions:
        reserved = sorted(k for k in self.spark_conf if k in RESERVED_CONF or k in memory.MEMORY_PROFILE_KEYS)
        if reserved:
            raise ValueError(f"spark_conf may not set {reserved[0]}: it comes from the profile's memory, the "
                             f"memory budget or the job")
        if self.master is not None:
            parse_master(self.master)  # ValueError: spark://HOST:PORT
            if self.workers != 1:
                raise ValueError("workers is for the cluster the harness starts on this node; a cluster given "
                                 "by master has its own workers")
        if self.workers != 1 and self.mode != "standalone":
            raise ValueError("workers needs mode standalone")
        return self

    @property
    def deploy(self) -> DeployMode:
        """local (one JVM), standalone (a cluster the harness starts here) or external (master given)."""
        return "external" if self.master else self.mode

    @property
    def master_host(self) -> str:
        return parse_master(self.master)[0] if self.master else "127.0.0.1"

    def webui(self) -> str:
        return (self.master_webui or f"http://{self.master_host}:{EXTERNAL_WEBUI_PORT}").rstrip("/")
