"""Spark's `rewrite_data_files` (Apache Iceberg's Spark procedures) as a benchmark engine.

Runs inside the engine subprocess (`bench.engines.worker`), so the SparkSession it builds is the first
in the process and every setting, including the driver heap, reaches a fresh JVM.  Memory settings
come from a named profile and the memory budget (`bench.engines.spark.memory`).

Steps:
  open()     `session start` (the JVM, local[<cores>]) and `catalog warm-up` (Iceberg's JdbcCatalog is
             loaded lazily by Spark: listing the namespace's tables initializes it without loading the
             table to compact, whose metadata read belongs to the compaction);
  compact()  `rewrite_data_files` (bin-pack; plan, rewrite and commit inside one procedure call); for
             deletes also `rewrite_position_delete_files` (rewrite-all) and `remove dangling deletes`:
             on an unpartitioned table neither procedure drops the equality deletes that no longer apply
             to any live data file, so they are found by the harness's delete rules
             (`bench.core.table.deletes`) and removed in one metadata-only commit through Iceberg's Java
             API in this JVM (`bench.core.iceberg_java.commit`).  Every engine must reach the same end
             state (no live delete file), so this step is part of its run.
A java.lang.OutOfMemoryError ends the JVM at once (-XX:+ExitOnOutOfMemoryError, exit code 3) and is
raised as EngineOOM (status heap-oom: the JVM's own limit, below the budget), so the runner does not
wait on a half-dead JVM.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bench.core.catalog import CatalogSettings
from bench.core.errors import UserError
from bench.core.iceberg_java import runtime as iceberg_runtime
from bench.core.iceberg_java.commit import remove_delete_files
from bench.core.requirements import Requirement, module_requirement
from bench.core.results import MemoryCap
from bench.engines.base import CompactionJob, EngineBase, EngineOOM, EngineOutcome, PhaseClock
from bench.engines.spark import memory, session

SUPPORTED_JAVA = (8, 11, 17)  # Spark 3.5
PYSPARK_DIST = "pyspark==3.5.9"
RESERVED_CONF = ("spark.master", "spark.driver.extraJavaOptions", "spark.jars", "spark.jars.packages",
                 "spark.driver.memory", "spark.executor.memory")
# Exit codes of a JVM that died of an OutOfMemoryError: -XX:+ExitOnOutOfMemoryError exits with 3,
# Spark's executor exits with SparkExitCode.OOM = 52.
OOM_EXIT_CODES = {3: "-XX:+ExitOnOutOfMemoryError", 52: "Spark executor OOM exit"}
OOM_TEXT = re.compile(r"(java\.lang\.OutOfMemoryError|SparkOutOfMemoryError|OutOfDirectMemoryError"
                      r"|Java heap space|GC overhead limit exceeded|Direct buffer memory)")
Scalar = str | int | float | bool


class SparkOptions(BaseModel):
    """What a scenario may put under `engines: spark:`."""

    model_config = ConfigDict(extra="forbid")

    profile: Literal["local", "paper"] = "local"  # settings profile (bench.engines.spark.memory)
    rewrite_options: dict[str, Scalar] = Field(default_factory=dict)  # extra rewrite_data_files options
    spark_conf: dict[str, Scalar] = Field(default_factory=dict)  # extra Spark settings, applied last

    @model_validator(mode="after")
    def _not_reserved(self) -> SparkOptions:
        reserved = sorted(k for k in self.spark_conf if k in RESERVED_CONF or k in memory.PAPER_PROFILE)
        if reserved:
            raise ValueError(f"spark_conf may not set {reserved[0]}: it comes from the profile, the memory "
                             f"budget or the job")
        return self


def spark_literal(value: Any) -> str:
    """A Spark SQL string literal (backslash escapes) of a scalar; booleans as 'true'/'false'."""
    if isinstance(value, bool):
        value = "true" if value else "false"
    if not isinstance(value, (str, int, float)):
        raise ValueError(f"only scalars can be Spark SQL literals, got {value!r}")
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def spark_map(options: dict[str, Any]) -> str:
    """map('k', 'v', ...) of Spark SQL literals."""
    return "map(" + ", ".join(f"{spark_literal(k)}, {spark_literal(v)}" for k, v in options.items()) + ")"


def _row_dict(rows: list) -> dict[str, Any]:
    if not rows:
        return {}
    d = rows[0].asDict(recursive=True)
    if len(rows) > 1:
        d["rows"] = [r.asDict(recursive=True) for r in rows]
    return d


class SparkEngine(EngineBase):
    name: ClassVar[str] = "spark"
    description: ClassVar[str] = ("Apache Spark 3.5 + Iceberg 1.10 rewrite_data_files (bin-pack) in local "
                                  "mode, JDBC (SQLite) catalog")
    color: ClassVar[str] = "#E25A1C"
    packages: ClassVar[tuple[str, ...]] = ("pyspark", "snowpark-connect-deps-iceberg")
    Options: ClassVar[type[BaseModel]] = SparkOptions
    output_codecs: ClassVar[frozenset[str] | None] = frozenset(
        {"snappy", "zstd", "gzip", "lz4", "uncompressed", "brotli"})
    min_budget_bytes: ClassVar[int] = memory.min_budget_bytes()  # the heap Spark accepts, plus non-heap

    def __init__(self) -> None:
        self.spark: Any = None
        self.plan: dict[str, Any] = {}
        self.actions: list[str] = []
        self.master = ""
        self.jars: list[str] = []
        self.conf: dict[str, str] = {}
        self._inspector: Any = None

    # -- bench doctor ----------------------------------------------------------------------------
    def requirements(self) -> list[Requirement]:
        java = iceberg_runtime.java_requirement(SUPPORTED_JAVA, "Spark 3.5")
        return [java, *iceberg_runtime.requirements()[1:],
                module_requirement("pyspark", f"pip install {PYSPARK_DIST} (or `make setup`)")]

    def storage_requirements(self, settings: CatalogSettings) -> list[Requirement]:
        """An S3 warehouse needs iceberg-aws-bundle: online only (BENCH_MAVEN=1)."""
        return [iceberg_runtime.s3_requirement()] if settings.is_remote else []

    # -- life cycle ------------------------------------------------------------------------------
    def _conf(self, job: CompactionJob, opts: SparkOptions) -> dict[str, str]:
        self.plan = memory.memory_plan(opts.profile, job.memory_budget_bytes)
        self.master = f"local[{max(1, int(job.cores))}]"
        conf = session.base_conf(job.catalog, self.master, app_name=f"bench-{job.scenario}")
        self.jars = conf["spark.jars"].split(",")
        conf.update(self.plan["conf"])
        conf["spark.driver.extraJavaOptions"] = " ".join([*self.plan["java_options"], session.log4j_option()])
        if job.work_dir:
            local_dir = os.path.join(job.work_dir, "spark-local")
            os.makedirs(local_dir, exist_ok=True)
            conf["spark.local.dir"] = local_dir
        for k, v in opts.spark_conf.items():  # the scenario's Spark settings, applied last (recorded)
            conf[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
        return conf

    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        opts = self.options(job)
        for req in self.storage_requirements(job.catalog):
            if not req.ok:
                raise UserError(f"{req.detail}; {req.fix}")
        conf = self._conf(job, opts)
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # Spark binds the external interface otherwise
        with clock.phase("session start", f"JVM and SparkSession, {self.master}"):
            from pyspark.sql import SparkSession

            builder = SparkSession.builder
            for k, v in conf.items():
                builder = builder.config(k, v)
            self.conf = conf
            self.spark = builder.getOrCreate()
            self.spark.sparkContext.setLogLevel("WARN")
            # the output codec, for Spark's writes (session conf beats the table default)
            self._set("spark.sql.iceberg.compression-codec", job.output_codec)
            if job.output_codec_level is not None:
                self._set("spark.sql.iceberg.compression-level", str(int(job.output_codec_level)))
        with clock.phase("catalog warm-up", "SHOW TABLES: initializes Iceberg's JdbcCatalog, loads no table"):
            namespace = job.table.rsplit(".", 1)[0]
            self.spark.sql(f"SHOW TABLES IN {job.catalog.name}.{namespace}").collect()
        if job.kind == "deletes":
            with clock.phase("inspector", "pyiceberg catalog client and the delete rules, for dangling deletes"):
                import pyiceberg.io.pyarrow  # noqa: F401

                import bench.core.table.deletes  # noqa: F401
                from bench.core.catalog import load_catalog

                self._inspector = load_catalog(job.catalog)

    def memory_caps(self) -> list[MemoryCap]:
        """The JVM's limits as it reports them: heap (Runtime.maxMemory), direct memory and metaspace
        (HotSpotDiagnosticMXBean)."""
        jvm = self._jvm()
        caps = [MemoryCap(name="JVM heap", bytes=int(jvm.java.lang.Runtime.getRuntime().maxMemory()),
                          source="Runtime.maxMemory() of the Spark JVM")]
        try:
            bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
                jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
            for option, name in (("MaxDirectMemorySize", "JVM direct memory"), ("MaxMetaspaceSize", "JVM metaspace")):
                value = int(str(bean.getVMOption(option).getValue()))
                # 0 (direct memory) means "as large as the heap"; 2^64-1 (metaspace) means unlimited
                caps.append(MemoryCap(name=name, bytes=value if 0 < value < 2**62 else None,
                                      source=f"-XX:{option} as the JVM reports it"
                                             + ("" if 0 < value < 2**62 else " (no limit set)")))
        except Exception as e:  # noqa: BLE001 - a JVM without the bean still has a heap cap
            caps.append(MemoryCap(name="JVM off-heap limits", bytes=None, source=f"not readable: {e}"))
        return caps

    def _set(self, key: str, value: str) -> None:
        self.spark.conf.set(key, value)
        self.actions.append(f"SET {key}={value}")

    def _sql(self, statement: str) -> list:
        self.actions.append(statement)
        return self.spark.sql(statement).collect()

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        if self.spark is None:
            raise RuntimeError("spark engine: compact() before open()")
        opts = self.options(job)
        cat = job.catalog
        # Fully qualified: the namespace "bench" is also the catalog's name, so 'bench.t' would be
        # read as table t in catalog bench.
        table = f"{cat.name}.{cat.qualified(job.table)}"
        options: dict[str, Any] = {"target-file-size-bytes": int(job.target_file_size_bytes),
                                   "min-file-size-bytes": int(job.small_file_threshold_bytes)}
        if job.kind == "deletes":
            options["delete-file-threshold"] = 1
        options.update(opts.rewrite_options)
        result: dict[str, Any] = {}
        try:
            with clock.phase("rewrite_data_files", "one procedure call: plan, rewrite and commit"):
                rows = self._sql(f"CALL {cat.name}.system.rewrite_data_files(table => {spark_literal(table)}, "
                                 f"strategy => 'binpack', options => {spark_map(options)})")
            result = _row_dict(rows)
            if job.kind == "deletes":
                with clock.phase("rewrite_position_delete_files", "rewrite-all: drops dangling position deletes"):
                    rows = self._sql(f"CALL {cat.name}.system.rewrite_position_delete_files("
                                     f"table => {spark_literal(table)}, options => map('rewrite-all', 'true'))")
                result["rewrite_position_delete_files"] = _row_dict(rows)
                with clock.phase("remove dangling deletes", "metadata-only commit through Iceberg's Java API"):
                    result["remove_dangling_deletes"] = self._remove_dangling_deletes(job, table)
        except Exception as exc:  # noqa: BLE001 - classified below
            raise self._classify(exc) from exc
        return EngineOutcome(engine_result=result, settings=self._settings(job), versions=self._versions(),
                             actions=list(self.actions))

    def _remove_dangling_deletes(self, job: CompactionJob, table: str) -> dict[str, int]:
        """Remove live delete files that apply to no live data file (bench.core.table.deletes), in one
        RewriteFiles commit in this JVM."""
        from bench.core.table import live_files
        from bench.core.table.deletes import classify

        tbl = self._inspector.load_table(job.catalog.qualified(job.table))
        dangling = classify(live_files(tbl), tbl.specs()).dangling
        jvm = self._jvm()
        jtable = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(self.spark._jsparkSession, table)
        self.actions.append(f"Java API: remove the {len(dangling)} delete file(s) of {table} that apply to no "
                            "live data file (table.newRewrite().deleteFile(f) for each, one commit)")
        removed = remove_delete_files(jvm, jtable, set(dangling), {"bench.step": "remove-dangling-deletes"})
        return {"removed_equality_delete_files": removed["equality"],
                "removed_position_delete_files": removed["position"]}

    # -- failure classification --------------------------------------------------------------------
    def jvm_exit_code(self, wait_s: float = 0.0) -> int | None:
        """The JVM's exit code if it has died (waiting up to `wait_s` for it to finish dying)."""
        return _jvm_exit_code(self.spark, wait_s)

    def _classify(self, exc: BaseException) -> BaseException:
        m = OOM_TEXT.search(str(exc))
        if m:
            return EngineOOM(f"java.lang.OutOfMemoryError in Spark ({m.group(0)})")
        # A lost connection to the JVM: it is dying or dead; give it a moment to exit, then read why.
        lost = isinstance(exc, (ConnectionError, OSError)) or type(exc).__name__ in ("Py4JNetworkError", "Py4JError")
        code = self.jvm_exit_code(wait_s=15.0 if lost else 0.0)
        if code in OOM_EXIT_CODES:
            return EngineOOM(f"the Spark JVM exited with code {code} ({OOM_EXIT_CODES[code]}) after a "
                             f"java.lang.OutOfMemoryError")
        if code is not None and code < 0:
            return RuntimeError(f"the Spark JVM was killed by signal {-code} ({type(exc).__name__}); "
                                f"a kernel OOM kill or a time limit look like this")
        if code is not None:
            return RuntimeError(f"the Spark JVM exited with code {code} ({type(exc).__name__})")
        return exc

    # -- what is recorded ----------------------------------------------------------------------------
    def _jvm(self) -> Any:
        return self.spark.sparkContext._jvm

    def _settings(self, job: CompactionJob) -> dict[str, Any]:
        s: dict[str, Any] = {k: v for k, v in self.plan.items() if k != "conf"}
        s["master"] = self.master
        s["cores"] = int(self.master[len("local["):-1])
        s["spark_conf"] = {k: v for k, v in self.conf.items() if k.startswith("spark.") and k != "spark.jars"}
        s["spark_memory"] = {k: v for k, v in self.conf.items() if "memory" in k.lower()}
        s["jars"] = self.jars
        runtime = self._jvm().java.lang.Runtime.getRuntime()
        s["heap_granted_bytes"] = int(runtime.maxMemory())
        s["available_processors"] = int(runtime.availableProcessors())
        try:  # a snapshot after the compaction (peaks are measured from outside by the runner)
            mx = self._jvm().java.lang.management.ManagementFactory.getMemoryMXBean()
            s["jvm_heap_used_bytes_after"] = int(mx.getHeapMemoryUsage().getUsed())
            s["jvm_non_heap_used_bytes_after"] = int(mx.getNonHeapMemoryUsage().getUsed())
        except Exception:  # noqa: BLE001
            pass
        s["output_codec_conf"] = self.spark.conf.get("spark.sql.iceberg.compression-codec", None)
        s["small_file_threshold_bytes"] = job.small_file_threshold_bytes
        s["heap_dump_on_oom"] = "off: a dump is as large as the heap"
        return s

    def _versions(self) -> dict[str, str]:
        jvm = self._jvm()
        v = {"spark": self.spark.version, "java": str(jvm.java.lang.System.getProperty("java.version")),
             "java_vm": str(jvm.java.lang.System.getProperty("java.vm.name"))}
        try:
            v["iceberg"] = str(jvm.org.apache.iceberg.IcebergBuild.version())
        except Exception:  # noqa: BLE001
            v["iceberg"] = iceberg_runtime.iceberg_version_from_jars(self.jars)
        try:
            import pyspark

            v["pyspark"] = pyspark.__version__
        except Exception:  # noqa: BLE001
            pass
        return v

    def close(self) -> None:
        spark, self.spark = self.spark, None
        if spark is None:
            return
        if _jvm_exit_code(spark, 0.0) is not None:
            return  # the JVM is gone: nothing to stop
        spark.stop()


def _jvm_exit_code(spark: Any, wait_s: float) -> int | None:
    """Exit code of the JVM behind `spark` (the spark-submit process PySpark launched, which execs
    the JVM), or None while it runs."""
    try:
        proc = spark.sparkContext._gateway.proc
    except Exception:  # noqa: BLE001
        return None
    if proc is None:
        return None
    if wait_s > 0:
        try:
            return proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None
    return proc.poll()
