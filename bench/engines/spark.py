"""Spark's `rewrite_data_files` (Apache Iceberg's Spark procedures) as a benchmark engine.

Runs inside the engine subprocess (`bench.engines.worker`), so the SparkSession it builds is the first
in the process and every setting, including the driver heap, reaches a fresh JVM.

Settings come from a named profile (`options["profile"]`):
  paper  the published settings verbatim (executor.memory 40g, executor.memoryOverhead 8g,
         driver.memory 12g, memory.fraction 0.8, memory.storageFraction 0.2, shuffle.partitions 1000);
  local  (default) the same, memory sizes scaled by this node's RAM / 64 GiB (the published node).
Spark runs in local mode (`local[<cores>]`): the one JVM is driver and executor, so its heap is
`spark.driver.memory`; the executor settings are passed as published but have no effect (recorded).
A memory budget caps the heap: heap = min(profile driver.memory, 75% of the budget, budget - 256 MiB),
and the JVM's off-heap pools are capped (MaxDirectMemorySize 10%, MaxMetaspaceSize max(10%, 192 MiB))
so heap + off-heap stays near the budget (Spark + Iceberg use ~150 MiB of non-heap memory).  Spark
refuses a heap under 450 MiB, so the smallest budget is 706 MiB.  The rule is recorded in the outcome.
Scenario options (`engines: spark:`): see OPTIONS below.
An S3 warehouse (`--warehouse s3://...`) needs Iceberg's S3FileIO and the AWS SDK (iceberg-aws-bundle),
which only Maven Central has: with BENCH_SPARK_MAVEN=1 (a node with internet) it is added to
spark.jars.packages with the catalog's io-impl/s3.endpoint/s3.path-style-access/client.region
(bench.spark_runtime); offline the engine says it is unavailable (`storage_requirements`).
A java.lang.OutOfMemoryError ends the JVM at once (-XX:+ExitOnOutOfMemoryError, exit code 3) and is
raised as EngineOOM, so the runner records status "oom" instead of waiting on a half-dead JVM.
"""

from __future__ import annotations

import os
import re
from typing import Any, ClassVar

from bench.catalog import CatalogSettings
from bench.engines.base import CompactionJob, EngineOOM, EngineOutcome, Requirement, module_requirement
from bench.errors import UserError
from bench.memory import parse_size
from bench import spark_runtime

GiB = 1024**3
MiB = 1024**2
PAPER_NODE_RAM = 64 * GiB  # m5.4xlarge

PAPER_PROFILE: dict[str, str] = {
    "spark.executor.memory": "40g",
    "spark.executor.memoryOverhead": "8g",
    "spark.driver.memory": "12g",
    "spark.memory.fraction": "0.8",
    "spark.memory.storageFraction": "0.2",
    "spark.sql.shuffle.partitions": "1000",
}
MEMORY_SIZE_KEYS = ("spark.executor.memory", "spark.executor.memoryOverhead", "spark.driver.memory")
PROFILES = ("local", "paper")

# Spark's UnifiedMemoryManager refuses a heap below 1.5 x its 300 MiB reserved memory.
SPARK_MIN_HEAP = 450 * MiB
HEAP_SHARE = 0.75
NON_HEAP_FLOOR = 256 * MiB  # measured: Spark + Iceberg use ~150 MiB of non-heap (metaspace, code cache)
DIRECT_SHARE = 0.10
METASPACE_SHARE = 0.10
METASPACE_FLOOR = 192 * MiB  # Spark + Iceberg load ~100-150 MiB of classes
BUDGET_RULE = (f"heap (spark.driver.memory) = min(profile driver.memory, {HEAP_SHARE:.0%} of budget, "
               f"budget - {NON_HEAP_FLOOR // MiB} MiB); "
               f"-XX:MaxDirectMemorySize = {DIRECT_SHARE:.0%} of budget; -XX:MaxMetaspaceSize = "
               f"max({METASPACE_SHARE:.0%} of budget, {METASPACE_FLOOR // MiB} MiB); the rest is left for "
               f"code cache, thread stacks and GC structures")
LOCAL_MODE_NOTE = ("local mode: one JVM is driver and executor; its heap is spark.driver.memory; "
                   "spark.executor.memory/memoryOverhead are passed as published but have no effect. "
                   "The `local` profile therefore gives that JVM the executor's share of the node "
                   "(40g x RAM / 64 GiB), since it does the executor's work; `paper` passes the published "
                   "settings verbatim, which in local mode means a 12g heap")

# What a scenario may put under `engines: spark:`.
OPTIONS = {
    "profile": "settings profile: local (default) or paper",
    "output_codec": "Parquet codec of the rewritten files (default snappy, like iceberg-compaction)",
    "output_codec_level": "codec level (e.g. zstd 5), via spark.sql.iceberg.compression-level",
    "rewrite_options": "extra rewrite_data_files options, e.g. max-concurrent-file-group-rewrites",
    "spark_conf": "extra Spark settings, applied last",
}
RESERVED_CONF = ("spark.master", "spark.driver.extraJavaOptions", "spark.jars", "spark.jars.packages",
                 "spark.driver.memory", "spark.executor.memory")
CODECS = ("snappy", "zstd", "gzip", "lz4", "uncompressed", "none", "brotli")
# Exit codes of a JVM that died of an OutOfMemoryError: -XX:+ExitOnOutOfMemoryError exits with 3,
# Spark's executor exits with SparkExitCode.OOM = 52.
OOM_EXIT_CODES = {3: "-XX:+ExitOnOutOfMemoryError", 52: "Spark executor OOM exit"}
OOM_TEXT = re.compile(r"(java\.lang\.OutOfMemoryError|SparkOutOfMemoryError|OutOfDirectMemoryError"
                      r"|Java heap space|GC overhead limit exceeded|Direct buffer memory)")


def fmt_mib(n: int) -> str:
    return f"{max(1, n // MiB)}m"


def node_ram_bytes() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


def profile_settings(profile: str, ram_bytes: int | None = None) -> dict[str, str]:
    """The Spark settings of a named profile on a node with `ram_bytes` of RAM."""
    if profile == "paper":
        return dict(PAPER_PROFILE)
    if profile == "local":
        ram = ram_bytes if ram_bytes is not None else node_ram_bytes()
        scale = ram / PAPER_NODE_RAM
        out = dict(PAPER_PROFILE)
        for k in MEMORY_SIZE_KEYS:
            out[k] = fmt_mib(int(parse_size(PAPER_PROFILE[k]) * scale))
        # local mode: the one JVM does the executor's work, so it gets the executor's memory
        out["spark.driver.memory"] = out["spark.executor.memory"]
        return out
    raise UserError(f"unknown spark profile {profile!r}; known: {', '.join(PROFILES)}")


def min_budget_bytes() -> int:
    """The smallest memory budget whose heap Spark accepts under the budget rule."""
    return max(-(-SPARK_MIN_HEAP * 4 // 3), SPARK_MIN_HEAP + NON_HEAP_FLOOR)


def memory_plan(profile: str, budget_bytes: int | None, ram_bytes: int | None = None) -> dict[str, Any]:
    """Spark conf + JVM options for `profile` within `budget_bytes`, and the rule that produced them."""
    ram = ram_bytes if ram_bytes is not None else node_ram_bytes()
    conf = profile_settings(profile, ram)
    java_opts = ["-XX:+ExitOnOutOfMemoryError"]
    plan: dict[str, Any] = {"profile": profile, "node_ram_bytes": ram,
                            "profile_scale": 1.0 if profile == "paper" else ram / PAPER_NODE_RAM,
                            "memory_budget_bytes": budget_bytes, "local_mode_note": LOCAL_MODE_NOTE}
    heap = parse_size(conf["spark.driver.memory"])
    if budget_bytes:
        cap = min(int(budget_bytes * HEAP_SHARE), budget_bytes - NON_HEAP_FLOOR)
        if cap < SPARK_MIN_HEAP:
            raise UserError(
                f"memory budget {budget_bytes // MiB} MiB is too small for Spark: it leaves a heap of "
                f"{max(cap, 0) // MiB} MiB, below the smallest heap Spark accepts ({SPARK_MIN_HEAP // MiB} MiB); "
                f"give at least {min_budget_bytes() // MiB} MiB")
        heap = min(heap, cap)
        conf["spark.driver.memory"] = fmt_mib(heap)
        java_opts += [f"-XX:MaxDirectMemorySize={fmt_mib(int(budget_bytes * DIRECT_SHARE))}",
                      f"-XX:MaxMetaspaceSize={fmt_mib(max(int(budget_bytes * METASPACE_SHARE), METASPACE_FLOOR))}"]
        plan["budget_rule"] = BUDGET_RULE
    else:
        plan["budget_rule"] = "no budget: heap = profile spark.driver.memory, JVM off-heap defaults"
    plan["conf"] = conf
    plan["java_options"] = java_opts
    plan["heap_requested_bytes"] = parse_size(conf["spark.driver.memory"])
    return plan


def _sql_str(value: Any) -> str:
    if isinstance(value, bool):
        value = "true" if value else "false"
    if not isinstance(value, (str, int, float)):
        raise UserError(f"spark rewrite option values must be scalars, got {value!r}")
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _sql_map(options: dict[str, Any]) -> str:
    return "map(" + ", ".join(f"{_sql_str(k)}, {_sql_str(v)}" for k, v in options.items()) + ")"


def _row_dict(rows) -> dict[str, Any]:
    if not rows:
        return {}
    d = rows[0].asDict(recursive=True)
    if len(rows) > 1:
        d["rows"] = [r.asDict(recursive=True) for r in rows]
    return d


class SparkEngine:
    name: ClassVar[str] = "spark"
    description: ClassVar[str] = ("Apache Spark 3.5 + Iceberg 1.10 rewrite_data_files (bin-pack) in local "
                                  "mode, JDBC (SQLite) catalog")

    def __init__(self) -> None:
        self.spark = None
        self.plan: dict[str, Any] = {}
        self.actions: list[str] = []
        self.master = ""
        self.jars: list[str] = []
        self.catalog: CatalogSettings | None = None
        self.conf: dict[str, str] = {}

    # -- bench doctor ----------------------------------------------------------------------------
    def requirements(self) -> list[Requirement]:
        return [*spark_runtime.runtime_requirements(),
                module_requirement("psutil", "pip install psutil (sizes the local profile)")]

    def storage_requirements(self, settings: CatalogSettings) -> list[Requirement]:
        """An S3 warehouse needs iceberg-aws-bundle: online only (BENCH_SPARK_MAVEN=1)."""
        return [spark_runtime.s3_requirement()] if settings.is_remote else []

    # -- life cycle ------------------------------------------------------------------------------
    def _conf(self, job: CompactionJob) -> dict[str, str]:
        cat = CatalogSettings.from_dict(job.catalog)
        self.catalog = cat
        profile = str(job.options.get("profile", "local"))
        self.plan = memory_plan(profile, job.memory_budget_bytes)
        self.master = f"local[{max(1, int(job.cores))}]"
        # Loopback only, no UI, Iceberg SQL extensions, the harness catalog (JdbcCatalog on the SQLite
        # file) and the local jars: shared with the harness's own sessions in bench.spark_runtime.
        conf = spark_runtime.base_conf(cat, job.cores, app_name=f"bench-{job.scenario}")
        self.jars = (conf.get("spark.jars") or conf.get("spark.jars.packages", "")).split(",")
        conf.update(self.plan["conf"])
        conf["spark.driver.extraJavaOptions"] = " ".join(self.plan["java_options"])
        if job.work_dir:
            local_dir = os.path.join(job.work_dir, "spark-local")
            os.makedirs(local_dir, exist_ok=True)
            conf["spark.local.dir"] = local_dir
        # Extra Spark settings from the scenario, applied last (recorded like the rest).
        for k, v in (job.options.get("spark_conf") or {}).items():
            conf[str(k)] = str(v)
        return conf

    def open(self, job: CompactionJob) -> None:
        if job.kind not in ("binpack", "deletes"):
            raise UserError(f"spark engine: unsupported job kind {job.kind!r} (binpack, deletes)")
        unknown = sorted(set(job.options) - set(OPTIONS))
        if unknown:
            raise UserError(f"spark engine: unknown option {unknown[0]!r}; known: {', '.join(OPTIONS)}")
        for key in ("rewrite_options", "spark_conf"):
            if not isinstance(job.options.get(key) or {}, dict):
                raise UserError(f"spark engine: option {key} must be a mapping")
        reserved = sorted(k for k in (job.options.get("spark_conf") or {})
                          if k in RESERVED_CONF or k in PAPER_PROFILE)
        if reserved:
            raise UserError(f"spark engine: spark_conf may not set {reserved[0]}: it comes from the profile, "
                            f"the memory budget or the job")
        codec = self._codec(job)  # validate before paying for a JVM
        for req in self.storage_requirements(CatalogSettings.from_dict(job.catalog)):
            if not req.ok:
                raise UserError(f"{req.detail}; {req.fix}")
        conf = self._conf(job)
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        from pyspark.sql import SparkSession

        builder = SparkSession.builder
        for k, v in conf.items():
            builder = builder.config(k, v)
        self.conf = conf
        self.spark = builder.getOrCreate()
        self.spark.sparkContext.setLogLevel("WARN")
        # The output codec, for Spark's writes alone (session conf beats the table default, zstd in 1.10).
        self._set("spark.sql.iceberg.compression-codec", codec)
        level = job.options.get("output_codec_level")
        if level is not None:
            self._set("spark.sql.iceberg.compression-level", str(int(level)))

    def _set(self, key: str, value: str) -> None:
        self.spark.conf.set(key, value)
        self.actions.append(f"SET {key}={value}")

    @staticmethod
    def _codec(job: CompactionJob) -> str:
        codec = str(job.options.get("output_codec", "snappy")).lower()
        if codec not in CODECS:
            raise UserError(f"spark engine: unknown output_codec {codec!r}; known: {', '.join(CODECS)}")
        return codec

    def _sql(self, statement: str):
        self.actions.append(statement)
        return self.spark.sql(statement).collect()

    def compact(self, job: CompactionJob) -> EngineOutcome:
        if self.spark is None:
            raise RuntimeError("spark engine: compact() before open()")
        cat = self.catalog
        table = job.table if "." in job.table else f"{cat.namespace}.{job.table}"
        # Fully qualified: the namespace "bench" is also the catalog's name, so 'bench.t' would be
        # read as table t in catalog bench.
        table = f"{cat.name}.{table}"
        options: dict[str, Any] = {"target-file-size-bytes": int(job.target_file_size_bytes)}
        if job.kind == "deletes":
            options["delete-file-threshold"] = 1
        options.update(job.options.get("rewrite_options") or {})
        result: dict[str, Any] = {}
        try:
            rows = self._sql(f"CALL {cat.name}.system.rewrite_data_files(table => {_sql_str(table)}, "
                             f"strategy => 'binpack', options => {_sql_map(options)})")
            result = _row_dict(rows)
            if job.kind == "deletes":
                # rewrite_data_files does not drop dangling deletes of unpartitioned tables:
                # rewrite them all so no delete stays live.
                rows = self._sql(f"CALL {cat.name}.system.rewrite_position_delete_files("
                                 f"table => {_sql_str(table)}, options => map('rewrite-all', 'true'))")
                result["rewrite_position_delete_files"] = _row_dict(rows)
                result["remove_dangling_deletes"] = self._remove_dangling_deletes(table)
        except Exception as exc:  # noqa: BLE001 - classified below
            raise self._classify(exc) from exc
        return EngineOutcome(engine_result=result, settings=self._settings(), versions=self._versions(),
                             actions=list(self.actions), output_codec=self._codec(job))

    def _remove_dangling_deletes(self, table: str) -> dict[str, int]:
        """Drop delete files that no longer apply to any live data file, in one RewriteFiles commit.

        On an unpartitioned table neither rewrite_data_files (remove-dangling-deletes) nor
        rewrite_position_delete_files drops equality deletes whose sequence number equals the smallest
        data sequence number left (Iceberg keeps deletes not strictly older).  By the v2 rules an
        equality delete applies to data files of smaller data sequence number and a position delete to
        those of smaller or equal one; deletes that cannot apply to any live data file are removed with
        the Iceberg Java API (`table.newRewrite().deleteFile(f)`), which changes no row."""
        jvm = self._jvm()
        tbl = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(self.spark._jsparkSession, table)
        self.actions.append(f"Java API: remove delete files that apply to no live data file of {table} "
                            f"(table.newRewrite().deleteFile(f) for each, one commit)")
        snap = tbl.currentSnapshot()
        if snap is None:
            return {"removed_equality_delete_files": 0, "removed_position_delete_files": 0}
        io, specs, mf = tbl.io(), tbl.specs(), jvm.org.apache.iceberg.ManifestFiles

        def files(manifests, read):
            for m in manifests:
                it = read(m, io, specs).iterator()
                while it.hasNext():
                    yield it.next()

        seqs = [f.dataSequenceNumber() for f in files(snap.dataManifests(io), mf.read)]
        min_seq = min(seqs) if seqs else None
        rewrite, removed = tbl.newRewrite(), {"equality": 0, "position": 0}
        for f in files(snap.deleteManifests(io), mf.readDeleteManifest):
            kind = "equality" if f.content().toString() == "EQUALITY_DELETES" else "position"
            seq = f.dataSequenceNumber()
            dangling = min_seq is None or (seq <= min_seq if kind == "equality" else seq < min_seq)
            if dangling:
                rewrite.deleteFile(f.copyWithoutStats())
                removed[kind] += 1
        if removed["equality"] or removed["position"]:
            rewrite.commit()
        return {"removed_equality_delete_files": removed["equality"],
                "removed_position_delete_files": removed["position"]}

    # -- failure classification --------------------------------------------------------------------
    def jvm_exit_code(self, wait_s: float = 0.0) -> int | None:
        """The JVM's exit code if it has died (waiting up to `wait_s` for it to finish dying)."""
        return _jvm_exit_code(self.spark, wait_s)

    def _classify(self, exc: BaseException) -> BaseException:
        text = str(exc)
        m = OOM_TEXT.search(text)
        if m:
            return EngineOOM(f"java.lang.OutOfMemoryError in Spark ({m.group(0)})")
        # A lost connection to the JVM: it is dying or dead; give it a moment to exit, then read why.
        lost = isinstance(exc, (ConnectionError, OSError)) or type(exc).__name__ in (
            "Py4JNetworkError", "Py4JError")
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
    def _jvm(self):
        return self.spark.sparkContext._jvm

    def _settings(self) -> dict[str, Any]:
        s: dict[str, Any] = {k: v for k, v in self.plan.items() if k not in ("conf",)}
        s["master"] = self.master
        s["cores"] = int(self.master[len("local["):-1])
        s["spark_conf"] = {k: v for k, v in self.conf.items()
                           if k.startswith("spark.") and k != "spark.jars"}
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
        s["heap_dump_on_oom"] = "off: a dump is as large as the heap"
        return s

    def _versions(self) -> dict[str, str]:
        jvm = self._jvm()
        v = {"spark": self.spark.version,
             "java": str(jvm.java.lang.System.getProperty("java.version")),
             "java_vm": str(jvm.java.lang.System.getProperty("java.vm.name"))}
        try:
            v["iceberg"] = str(jvm.org.apache.iceberg.IcebergBuild.version())
        except Exception:  # noqa: BLE001
            v["iceberg"] = spark_runtime.iceberg_version_from_jars(self.jars)
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


def _jvm_exit_code(spark, wait_s: float) -> int | None:
    """Exit code of the JVM behind `spark` (the spark-submit process PySpark launched, which execs
    the JVM), or None while it runs."""
    import subprocess

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
