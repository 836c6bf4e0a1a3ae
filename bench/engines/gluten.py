"""Spark on Apache Gluten's Velox backend (PyPI `velox-spark` 1.7.0.1: Gluten 1.7.0, its Velox bundle for Spark
3.5, `gluten-iceberg`, and its own Iceberg runtime 1.10.0; pinned pyspark 3.5.5): the `spark` engine with the same
`rewrite_data_files` call and settings (a subclass: bench/engines/spark), in its own environment (Python 3.11 with
pyspark 3.5.5 instead of the harness's 3.5.9; `bench setup --engines gluten`).

What differs from `spark`:
  * the jars: Gluten's bundle, gluten-iceberg and the Iceberg runtime 1.10.0 the wheel ships (the harness's Spark
    uses Iceberg 1.10.2: every result records the Iceberg version it ran, from the JVM's IcebergBuild);
  * Gluten's own session settings, from velox_spark.config.gluten_config (the plugin, its columnar shuffle, the
    driver's class path), with Velox's off-heap memory `spark.memory.offHeap.size` = OFFHEAP_SHARE of the budget;
    the JVM heap is planned by the spark engine's memory plan within the rest of the budget;
  * native Iceberg writes (`spark.gluten.sql.enable.enhancedFeatures`, `...iceberg.enableNativeWrite`), as
    Gluten's docs (VeloxIceberg.md) say they need;
  * what fell back to Spark: the lines of Gluten's validation failures in the engine's own log, counted by
    operator and reason (`engine_result.gluten_fallbacks`).
It declares what spark-3.5 declares (sort, z-order, partition filters, maintenance, format v3; not branches), in local
mode only (`option_problems`).  Like spark it reaches the catalog through the loopback REST server and an S3
warehouse through Iceberg's S3FileIO (its 1.10.0 runtime with the 3.5 line's AWS SDK bundle): tested end to end on
a local S3 server, where the scan and the write fall back to Spark as they do on a local warehouse.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from bench.core.catalog import CatalogSettings
from bench.core.iceberg_java import runtime
from bench.core.records.telemetry import MemoryCap
from bench.core.requirements import Requirement
from bench.engines import environment as envs
from bench.engines.base import Capabilities, CompactionJob, EngineOutcome, PhaseClock
from bench.engines.spark import session
from bench.engines.spark.engine import MANIFESTS_ON_BRANCH, SUPPORTS, SparkEngine
from bench.engines.spark.options import SparkOptions

OFFHEAP_SHARE = 0.4  # of the budget, for Velox's off-heap memory; the JVM's plan gets the rest
# Gluten's fallback reporter: "Validation failed for plan: <node> ..., due to: <reason>" (the reason may start on
# the next line, " - ..."); its validator: "Validation failed with exception from: <node> ..., reason: <reason>"
FALLBACK = re.compile(r"Validation failed (?:for plan|with exception from): (\w+)[^\n]*?, (?:due to|reason): ?(.*)$")
NATIVE_WRITE = {"spark.gluten.sql.enable.enhancedFeatures": "true",
                "spark.gluten.sql.columnar.iceberg.enableNativeWrite": "true"}


# velox-spark 1.7.0.1 and the pyspark it pins, then a Spark worker's own pins (the two it is for first: `bench list`
# shows them)
PINS = ("velox-spark==1.7.0.1", "pyspark==3.5.5", *envs.SPARK_WORKER_PINS)


class GlutenEngine(SparkEngine):
    name: ClassVar[str] = "gluten"
    description: ClassVar[str] = ("Spark 3.5.5 on Apache Gluten 1.7.0's Velox backend (PyPI velox-spark), Iceberg "
                                  "1.10.0: the spark engine's rewrite_data_files, native where Gluten offloads; "
                                  "own environment")
    color: ClassVar[str] = "#D4A017"
    packages: ClassVar[tuple[str, ...]] = ()  # recorded from its own environment (versions())
    line: ClassVar[runtime.SparkLine] = runtime.spark_line("3.5")  # its Java versions and AWS SDK bundle
    # Spark and Iceberg's Java library (its own runtime jar, 1.10.0): a table spark's library wrote is its own too
    library_packages: ClassVar[tuple[str, ...]] = SparkEngine.packages
    environment: ClassVar[envs.EngineEnvironment | None] = envs.EngineEnvironment(
        python="3.11", requirements=PINS,
        why="velox-spark 1.7.0.1 pins pyspark==3.5.5; the harness runs pyspark 3.5.9",
        from_source=("pyspark",))  # PyPI has pyspark as a source archive only (pure Python and jars)
    # the procedures every spark line has, in Gluten's Spark with its own Iceberg runtime (1.10.0, not its line's)
    capabilities: ClassVar[Capabilities] = replace(SparkEngine.capabilities, supports=SUPPORTS, not_supported={
        "branch": ("Iceberg 1.10's rewrite_data_files cannot compact a branch (it plans from main): established with "
                   "spark-3.5's Iceberg 1.10.2; gluten's 1.10.0 has the same action"),
        "rewrite-manifests-branch": MANIFESTS_ON_BRANCH.format(iceberg="1.10.0")})

    @classmethod
    def declared_runtime(cls) -> str:
        return "Spark 3.5.5 + Iceberg 1.10.0 on Gluten 1.7.0"  # its wheel's, not its line's (PINS)

    def __init__(self) -> None:
        super().__init__()
        self.offheap = 0

    def requirements(self) -> list[Requirement]:
        return [envs.requirement(self.name, self.environment)] if self.environment else []

    def option_problems(self, options: dict[str, Any], settings: CatalogSettings) -> list[str]:
        opts = SparkOptions.model_validate(options)
        return ["gluten is wired for local mode only"] if opts.deploy != "local" else []

    def engine_jars(self, settings: CatalogSettings) -> list[str]:
        from velox_spark import jar as vjar

        bundle, source = vjar.resolve()
        if bundle is None:
            raise RuntimeError(f"velox-spark's Gluten bundle jar is missing ({source})")
        # beside it in the wheel: gluten-iceberg and its Iceberg runtime 1.10.0; from the jar cache the JDBC driver
        # and, for an S3 warehouse, the Spark 3.5 line's AWS SDK bundle
        extras = sorted(str(p) for p in Path(bundle).parent.glob("*.jar") if p != bundle)
        return [str(bundle), *extras, runtime.jdbc_jar(), *([str(self.line.aws.path)] if settings.is_remote else [])]

    def _conf(self, job: CompactionJob, opts: SparkOptions) -> dict[str, str]:
        from bench.core.machine import node_ram_bytes

        budget = job.memory_budget_bytes or node_ram_bytes()
        self.offheap = int(budget * OFFHEAP_SHARE)
        conf = super()._conf(job.model_copy(update={"memory_budget_bytes": budget - self.offheap}), opts)
        from velox_spark.config import gluten_config

        jars = [Path(j) for j in self.jars]
        gluten = gluten_config(jars[0], self.offheap, None, conf.get("spark.master") or None, 17,
                               extra_jars=jars[1:])
        for key, value in gluten.items():
            if key.endswith("extraJavaOptions"):
                conf[key] = f"{value} {conf.get(key, '')}".strip()
            elif key != "spark.driver.memory":  # the memory plan's heap stands
                conf[key] = value
        conf.update(NATIVE_WRITE)
        conf.update(session.scenario_conf(opts.spark_conf))  # the scenario's Spark settings still win
        return conf

    def memory_caps(self) -> list[MemoryCap]:
        return [*super().memory_caps(),
                MemoryCap(name="Gluten/Velox off-heap (spark.memory.offHeap.size)", role="other", bytes=self.offheap,
                          source=f"{OFFHEAP_SHARE:.0%} of the budget; the JVM heap is planned within the rest")]

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        outcome = super().compact(job, clock)
        outcome.engine_result["gluten_fallbacks"] = self.fallbacks(job)
        outcome.settings["gluten"] = {k: self.conf.get(k) for k in (
            "spark.plugins", "spark.memory.offHeap.size", "spark.shuffle.manager", *NATIVE_WRITE)}
        return outcome

    def fallbacks(self, job: CompactionJob) -> dict[str, Any]:
        """What Gluten's validation sent back to Spark, from its log lines in this run's engine log."""
        log = Path(job.work_dir) / "engine.log"
        if not job.work_dir or not log.exists():
            return {"recorded": False, "why": f"no engine log at {log}"}
        seen: Counter[str] = Counter()
        lines = log.read_text(errors="replace").splitlines()
        for i, line in enumerate(lines):
            m = FALLBACK.search(line)
            if m:
                reason = m.group(2).strip() or (lines[i + 1].strip(" -") if i + 1 < len(lines) else "")
                seen[f"{m.group(1)}: {reason[:160]}"] += 1
        return {"recorded": True, "source": "Gluten's 'Validation failed' lines (fallback reporter, validator) in "
                "the engine log" + (" (a shared process: every job so far)" if job.shared_process else ""),
                "operators_fallen_back": sum(seen.values()), "by_reason": dict(seen)}

    def versions(self) -> dict[str, str]:
        import importlib.metadata

        import velox_spark

        v = super().versions()
        v.update({"velox-spark": importlib.metadata.version("velox-spark"),
                  "gluten": str(velox_spark.__gluten_version__),
                  "gluten bundle jar": Path(self.jars[0]).name})
        return v
