"""Spark's `rewrite_data_files` (Apache Iceberg's Spark procedures) as a benchmark engine.

Runs inside the engine subprocess (`bench.engines.worker`), so the SparkSession it builds is the first
in the process and every setting, including the driver heap, reaches a fresh JVM.  Memory settings
come from a named profile and the memory budget (`bench.engines.spark.memory`).

Deploy modes (`engines: spark: mode:`, `--spark-mode`, or the profile `spark:standalone`):
  local       (default) one JVM, `local[<cores>]`: driver and executor in one, heap = spark.driver.memory;
  standalone  Spark's cluster deploy mode on this node: open() starts a standalone master and one worker
              bound to 127.0.0.1 (`bench.engines.spark.cluster`, from the distribution pyspark ships),
              the driver connects to spark://127.0.0.1:<port> and gets exactly one executor with all the
              job's cores; driver, executor and the two daemons are sized to fit the budget together.
              The daemons are children of this process (inside the budget's cgroup and the runner's
              telemetry) and die with it; close() stops them.

Steps:
  open()     [`cluster start` (standalone: master and worker, until the worker is ALIVE)], `session start`
             (the driver JVM), [`executor start` (standalone: until the one executor has registered with
             the driver, so its JVM start is not part of the compaction)], `catalog warm-up` (Iceberg's
             JdbcCatalog is loaded lazily by Spark: listing the namespace's tables initializes it without
             loading the table to compact, whose metadata read belongs to the compaction);
  compact()  `rewrite_data_files` (bin-pack, or strategy sort by the table's sort order, or sort with
             sort_order => 'zorder(...)' for z-order; plan, rewrite and commit inside one procedure call); for
             deletes also `rewrite_position_delete_files` (rewrite-all) and `remove dangling deletes`:
             on an unpartitioned table neither procedure drops the equality deletes that no longer apply
             to any live data file, so they are found by the harness's delete rules
             (`bench.core.table.deletes`) and removed in one metadata-only commit through Iceberg's Java
             API in this JVM (`bench.core.iceberg_java.commit`).  Every engine must reach the same end
             state (no live delete file), so this step is part of its run.
A java.lang.OutOfMemoryError ends the driver JVM at once (-XX:+ExitOnOutOfMemoryError, exit code 3) and
is raised as EngineOOM (status heap-oom: the JVM's own limit, below the budget), so the runner does not
wait on a half-dead JVM.  In standalone mode an executor's OutOfMemoryError reaches the driver as a
task or stage failure (the error text, or ExecutorLostFailure with Spark's OOM exit code 52): heap-oom too.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bench.core.catalog import CatalogSettings
from bench.core.errors import UserError
from bench.core.iceberg_java import runtime as iceberg_runtime
from bench.core.iceberg_java.commit import remove_delete_files
from bench.core.iceberg_java.spark_conf import session as spark_session
from bench.core.requirements import Requirement, module_requirement
from bench.core.results import CapRole, Deployment, DeployMode, MemoryCap
from bench.engines.base import CompactionJob, EngineBase, EngineOOM, EngineOutcome, Knob, MaintenanceOp, PhaseClock
from bench.engines.procedure import Scalar, derived_options, spark_literal, spark_map, strategy_args, where_arg
from bench.engines.spark import memory, session, tasks
from bench.engines.spark.cluster import ClusterView, StandaloneCluster, is_loopback, parse_master

SUPPORTED_JAVA = (8, 11, 17)  # Spark 3.5
PYSPARK_DIST = "pyspark==3.5.9"
RESERVED_CONF = ("spark.master", "spark.driver.extraJavaOptions", "spark.jars", "spark.jars.packages",
                 "spark.driver.memory", "spark.executor.memory", "spark.executor.extraJavaOptions",
                 "spark.executor.cores", "spark.cores.max", "spark.executor.instances")
# Exit codes of a JVM that died of an OutOfMemoryError: -XX:+ExitOnOutOfMemoryError exits with 3,
# Spark's executor exits with SparkExitCode.OOM = 52.
OOM_EXIT_CODES = {3: "-XX:+ExitOnOutOfMemoryError", 52: "Spark executor OOM exit"}
OOM_TEXT = re.compile(r"(java\.lang\.OutOfMemoryError|SparkOutOfMemoryError|OutOfDirectMemoryError"
                      r"|Java heap space|GC overhead limit exceeded|Direct buffer memory)")
# standalone: an executor that died of an OutOfMemoryError, as the driver reports the lost executor
EXECUTOR_OOM_TEXT = re.compile(r"ExecutorLostFailure[^\n]*?(?:exit(?:ed)? (?:with )?code|exit status)\D{0,3}52\b")
EXECUTOR_TASK_OOM = re.compile(r"\(\S+ executor (\w+)\): (?:java\.lang\.OutOfMemoryError|\S*SparkOutOfMemoryError)")
EXECUTOR_READY_TIMEOUT_S = 120.0
ICEBERG_MAX_CONCURRENT_GROUPS = 5  # max-concurrent-file-group-rewrites: Iceberg's default (RewriteDataFiles)
EXTERNAL_WEBUI_PORT = 8080  # a standalone master's default web UI port
# fixed driver ports towards a cluster on other machines (its security group admits exactly these)
DRIVER_PORT, BLOCK_MANAGER_PORT = 7078, 7079
RESERVED_SYSTEM_MEMORY = 300 * 1024 * 1024  # Spark's UnifiedMemoryManager keeps this much of a heap


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


def _row_dict(rows: list) -> dict[str, Any]:
    if not rows:
        return {}
    d = rows[0].asDict(recursive=True)
    if len(rows) > 1:
        d["rows"] = [r.asDict(recursive=True) for r in rows]
    return d


class SparkEngine(EngineBase):
    name: ClassVar[str] = "spark"
    description: ClassVar[str] = ("Apache Spark 3.5 + Iceberg 1.10 rewrite_data_files (bin-pack, sort, z-order), "
                                  "local mode "
                                  "(one JVM) or standalone mode (a master, one worker and one executor on "
                                  "127.0.0.1; option mode), JDBC (SQLite) catalog")
    color: ClassVar[str] = "#E25A1C"
    # Iceberg Java's and Spark's own refusals (UnsupportedOperationException: "Cannot ... unsupported ...")
    refusal_pattern: ClassVar[str] = r"UnsupportedOperationException|[Nn]ot (yet )?supported"
    packages: ClassVar[tuple[str, ...]] = ("pyspark", "snowpark-connect-deps-iceberg")
    # Iceberg Java's commit retries (Tasks) and the exceptions a lost commit race raises
    conflict_log_pattern: ClassVar[str] = r"Retrying task after failure|CommitFailedException|ValidationException"
    Options: ClassVar[type[BaseModel]] = SparkOptions
    output_codecs: ClassVar[frozenset[str] | None] = frozenset(
        {"snappy", "zstd", "gzip", "lz4", "uncompressed", "brotli"})
    min_budget_bytes: ClassVar[int] = memory.min_budget_bytes()  # the heap Spark accepts, plus non-heap
    knobs: ClassVar[tuple[Knob, ...]] = KNOBS
    # Iceberg 1.10's rewrite_data_files: strategy => 'sort' sorts each file group by the table's sort order
    # (range-partitioned: output files of a group do not overlap); sort_order => 'zorder(c1,c2)' z-orders;
    # rewrite_data_files and rewrite_position_delete_files take `where` (Iceberg 1.10.2's procedure parameters)
    # and Iceberg's expire_snapshots(table, older_than, retain_last) and rewrite_manifests(table) procedures;
    # Iceberg 1.10 reads and writes format v3 (deletion vectors): verified on a Spark-written v3 table with one
    # (tests/runner/test_work_intent.py)
    supports: ClassVar[frozenset[str]] = frozenset({"sort", "zorder", "partition-filter", "partition-filter-deletes",
                                                    "maintenance", "expire-snapshots", "expire-under-writer",
                                                    "rewrite-manifests",
                                                    "format-v3"})
    not_supported: ClassVar[dict[str, str]] = {"branch": (
        "Iceberg 1.10.2's rewrite_data_files cannot compact a branch: the action plans from the table's current "
        "snapshot (main); named as table => 'ns.t.branch_ingest', or with spark.wap.branch set, it silently "
        "compacts main instead, and a 'branch' option is rejected ('Cannot use options [branch], they are not "
        "supported by the action or the rewriter BIN-PACK'); established on this machine with Spark 3.5.9")}

    def __init__(self) -> None:
        self.spark: Any = None
        self.plan: dict[str, Any] = {}
        self.actions: list[str] = []
        self.master = ""
        self.mode: DeployMode = "local"
        self.cores = 1
        self.jars: list[str] = []
        self.conf: dict[str, str] = {}
        self._inspector: Any = None
        self.cluster: ClusterView | None = None
        self.executors: dict[str, Any] = {}  # standalone: the executors as Spark reports them
        self.driver_host = "127.0.0.1"

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
        """The session's conf; for a cluster, the master URL is set once it runs (`_cluster_conf`)."""
        self.mode = opts.deploy
        self.cores = max(1, int(job.cores)) * opts.slots_per_core  # task slots
        self.plan = memory.memory_plan(opts.profile, job.memory_budget_bytes, mode=opts.deploy, workers=opts.workers)
        self.master = f"local[{self.cores}]" if opts.deploy == "local" else ""
        conf = session.base_conf(job.catalog, self.master, app_name=f"bench-{job.scenario}",
                                 jars=self.engine_jars(job.catalog))
        self.jars = conf["spark.jars"].split(",")
        conf.update(self.plan["conf"])
        if opts.memory_fraction is not None:
            conf["spark.memory.fraction"] = str(opts.memory_fraction)
        conf["spark.driver.extraJavaOptions"] = " ".join([*self.plan["java_options"], session.log4j_option()])
        if opts.deploy == "standalone":
            conf.update(session.standalone_conf(self.worker_cores(opts), opts.workers,
                                                [*self.plan["executor_java_options"], session.log4j_option()]))
        if job.work_dir:
            local_dir = os.path.join(job.work_dir, "spark-local")
            os.makedirs(local_dir, exist_ok=True)
            conf["spark.local.dir"] = local_dir
        if job.shared_process:  # the next job's table may have the same name: load every table afresh
            conf[f"spark.sql.catalog.{job.catalog.name}.cache-enabled"] = "false"
        for k, v in opts.spark_conf.items():  # the scenario's Spark settings, applied last (recorded)
            conf[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
        return conf

    def engine_jars(self, settings: CatalogSettings) -> list[str] | None:
        """The session's Iceberg jars: None for the harness's (bench.core.iceberg_java.runtime); a variant with
        its own runtime (gluten) names its own."""
        return None

    def worker_cores(self, opts: SparkOptions) -> int:
        """Standalone on this node: each worker's (and its executor's) cores, the task slots split evenly."""
        return max(1, self.cores // opts.workers)

    def _start_cluster(self, job: CompactionJob, opts: SparkOptions, clock: PhaseClock) -> None:
        root = os.path.join(job.work_dir or os.getcwd(), "spark-standalone")
        n, cores = opts.workers, self.worker_cores(opts)
        cluster = StandaloneCluster(root, cores=cores, worker_memory_mib=self.plan["worker_memory_mib"],
                                    daemon_memory=self.plan["daemon_memory"],
                                    daemon_java_options=self.plan["daemon_java_options"], workers=n)
        self.cluster = cluster
        what = "one worker" if n == 1 else f"{n} workers"
        with clock.phase("cluster start", f"standalone master and {what} on 127.0.0.1, until every worker is "
                                          "ALIVE at the master"):
            cluster.start()
        self.master = cluster.master_url
        self.actions.append(f"standalone cluster: master {self.master}, {what} with {cores} cores and "
                            f"{self.plan['worker_memory_mib']} MiB each (logs in {root})")

    def _external_cluster(self, opts: SparkOptions, conf: dict[str, str]) -> None:
        """A cluster that runs elsewhere: one executor per ALIVE worker with all its cores; the driver
        reachable from the workers on fixed ports."""
        assert opts.master
        view = ClusterView(opts.master, opts.webui())
        self.cluster, self.master = view, opts.master
        status = view.status()
        if status is None:
            raise RuntimeError(f"spark master {opts.master}: its web UI {view.master_webui}/json/ does not answer "
                               "(set option master_webui)")
        workers = view.alive_workers()
        if not workers:
            raise RuntimeError(f"spark master {opts.master} has no ALIVE worker")
        cores = min(int(w.get("cores", 1)) for w in workers)
        heap, overhead = memory.external_executor_sizes(min(int(w.get("memory", 0)) for w in workers))
        conf.update(session.standalone_conf(cores, len(workers), [*memory.executor_java_options(overhead),
                                                                   session.log4j_option()]))
        conf.update({"spark.executor.memory": memory.fmt_mib(heap),
                     "spark.executor.memoryOverhead": memory.fmt_mib(overhead)})
        host = session.driver_address(opts.master_host)
        conf.update({"spark.driver.host": host, "spark.driver.bindAddress": host})
        if not is_loopback(opts.master_host):  # the cluster's security group admits these ports only
            conf.update({"spark.driver.bindAddress": "0.0.0.0", "spark.driver.port": str(DRIVER_PORT),
                         "spark.blockManager.port": str(BLOCK_MANAGER_PORT)})
        self.plan.update({"executor_heap_requested_bytes": heap, "executor_overhead_bytes": overhead,
                          "external_workers": [{k: w.get(k) for k in ("id", "host", "cores", "memory")}
                                               for w in workers]})
        self.driver_host = host
        self.actions.append(f"external standalone cluster: master {opts.master}, {len(workers)} ALIVE worker(s) "
                            f"on {', '.join(view.hosts())}; one executor each with {cores} cores, "
                            f"{memory.fmt_mib(heap)} heap + {memory.fmt_mib(overhead)} overhead; driver on {host}")

    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        opts = self.options(job)
        for req in self.storage_requirements(job.catalog):
            if not req.ok:
                raise UserError(f"{req.detail}; {req.fix}")
        conf = self._conf(job, opts)
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # Spark binds the external interface otherwise
        if opts.deploy == "standalone":
            self._start_cluster(job, opts, clock)
            assert isinstance(self.cluster, StandaloneCluster)
            conf["spark.master"] = self.master
            # names the run's cluster on the executor's command line too (the daemons carry it already)
            conf["spark.executor.extraJavaOptions"] += " " + self.cluster.marker()
        elif opts.deploy == "external":
            with clock.phase("cluster contact", f"the master's web UI: its ALIVE workers ({opts.master})"):
                self._external_cluster(opts, conf)
            conf["spark.master"] = self.master
            os.environ["SPARK_LOCAL_IP"] = self.driver_host
        with clock.phase("session start", f"driver JVM and SparkSession, {self.master}"):
            self.conf = conf
            self.spark = spark_session(conf)
            self.spark.sparkContext.setLogLevel("WARN")
            # the output codec, for Spark's writes (session conf beats the table default)
            self._set("spark.sql.iceberg.compression-codec", job.output_codec)
            if job.output_codec_level is not None:
                self._set("spark.sql.iceberg.compression-level", str(int(job.output_codec_level)))
        if opts.deploy != "local":
            expected = int(conf["spark.executor.instances"])
            with clock.phase("executor start", f"the workers launch {expected} executor(s); until each has "
                                               "registered with the driver"):
                self._wait_for_executors(expected)
        with clock.phase("catalog warm-up", "SHOW TABLES: initializes Iceberg's JdbcCatalog, loads no table"):
            namespace = job.table.rsplit(".", 1)[0]
            self.spark.sql(f"SHOW TABLES IN {job.catalog.name}.{namespace}").collect()
        if job.intent().applies_deletes:
            with clock.phase("inspector", "pyiceberg catalog client and the delete rules, for dangling deletes"):
                import pyiceberg.io.pyarrow  # noqa: F401

                import bench.core.table.deletes  # noqa: F401
                from bench.core.catalog import load_catalog

                self._inspector = load_catalog(job.catalog)

    def option_problems(self, options: dict[str, Any], settings: CatalogSettings) -> list[str]:
        """A cluster on other machines cannot read a warehouse on this node's disk."""
        opts = SparkOptions.model_validate(options)
        if opts.master and not is_loopback(opts.master_host) and not settings.is_remote:
            return [f"master {opts.master} is a cluster on other machines: its executors cannot read the local "
                    f"warehouse {settings.warehouse}; use a shared one (--warehouse s3://bucket/prefix)"]
        return []

    # -- standalone: what Spark reports of its executors ------------------------------------------------
    def _executor_summaries(self) -> list[dict[str, Any]]:
        """The driver's view of its executors (AppStatusStore, UI or not): id, cores, storage memory."""
        out = []
        summaries = self.spark.sparkContext._jsc.sc().statusStore().executorList(True)
        for i in range(summaries.size()):
            e = summaries.apply(i)
            if str(e.id()) == "driver":
                continue
            out.append({"id": str(e.id()), "host_port": str(e.hostPort()), "cores": int(e.totalCores()),
                        "max_storage_memory_bytes": int(e.maxMemory())})
        return out

    def _wait_for_executors(self, expected: int, timeout_s: float = EXECUTOR_READY_TIMEOUT_S) -> None:
        assert self.cluster is not None
        app_id = self.spark.sparkContext.applicationId
        deadline = time.monotonic() + timeout_s
        next_check = time.monotonic() + 1.0
        while True:
            # registered, and its block manager too (it reports the memory the executor was granted)
            execs = [e for e in self._executor_summaries() if e["max_storage_memory_bytes"] > 0]
            if len(execs) >= expected:
                break
            now = time.monotonic()
            if now > deadline:
                raise RuntimeError(f"spark standalone: {len(execs)} of {expected} executor(s) registered with the "
                                   f"driver within {timeout_s:.0f} s (the master's view of the app: "
                                   f"{self.cluster.app(app_id)})\n{self.cluster.log_tails()}")
            if now > next_check:  # the master relaunches a failing executor without end: stop at the second
                next_check = now + 1.0
                ended = self.cluster.finished_executors(app_id)
                if len(ended) >= 2 * expected:
                    raise RuntimeError(f"spark standalone: executors exited {len(ended)} times before "
                                       f"{expected} registered with the driver\n{self.cluster.log_tails()}")
            time.sleep(0.1)
        self.executors = self._granted_executors(execs)

    def _granted_executors(self, execs: list[dict[str, Any]]) -> dict[str, Any]:
        """Executors, cores and memory as Spark reports them: the driver's status store, the master's
        entry of the application and the worker's executor list."""
        assert self.cluster is not None
        app_id = self.spark.sparkContext.applicationId
        app = self.cluster.app(app_id) or {}
        workers = self.cluster.workers_json()
        on_worker = [e for w in workers for e in w.get("executors", []) if e.get("appid") == app_id]
        fraction = float(self.conf.get("spark.memory.fraction", "0.6"))
        heaps = [int(e["max_storage_memory_bytes"] / fraction) + RESERVED_SYSTEM_MEMORY for e in execs]
        return {
            "app_id": app_id,
            "executor_count": len(execs),
            "executor_cores": [e["cores"] for e in execs],
            "cores_total": sum(e["cores"] for e in execs),
            "executor_memory_mib_master": app.get("memoryperexecutor", app.get("memoryperslave")),
            "app_cores_master": app.get("cores"),
            "executor_memory_mib_worker": [e.get("memory") for e in on_worker],
            "worker_cores_used": [w.get("coresused") for w in workers],
            "executor_unified_memory_bytes": [e["max_storage_memory_bytes"] for e in execs],
            "executor_heap_granted_bytes": heaps,
            "executors": execs,
            "executor_jvm_memory_options": [
                [a for a in cmd if a.startswith(("-Xmx", "-Xms", "-XX:Max", "-XX:ReservedCodeCacheSize"))]
                for cmd in self.cluster.executor_command_lines()],
            "sources": "count and cores: the driver's status store (executorList); memory per executor: the "
                       "master's /json/ activeapps entry and the worker's /json/ executors (MiB); executor heap "
                       "= Runtime.maxMemory of the executor as Spark's UnifiedMemoryManager reports it back "
                       "(unified memory / spark.memory.fraction + 300 MiB reserved); JVM options: the command "
                       "line of the executor process the worker launched",
        }

    def min_budget(self, options: dict[str, Any]) -> int:
        """Standalone needs room for the driver, the executors and the daemons."""
        opts = SparkOptions.model_validate(options)
        return memory.min_budget_bytes(opts.deploy, opts.workers)

    def memory_caps(self) -> list[MemoryCap]:
        """The JVM's limits as it reports them: heap (Runtime.maxMemory), direct memory and metaspace
        (HotSpotDiagnosticMXBean)."""
        jvm = self._jvm()
        caps = [MemoryCap(name="JVM heap" if self.mode == "local" else "driver JVM heap", role="heap",
                          bytes=int(jvm.java.lang.Runtime.getRuntime().maxMemory()),
                          source="Runtime.maxMemory() of the Spark JVM"
                                 + (" (the driver; the executor's heap is listed apart)"
                                    if self.mode != "local" else ""))]
        if self.mode != "local":
            heaps = self.executors.get("executor_heap_granted_bytes") or [None]
            caps.append(MemoryCap(name="executor JVM heap", role="executor-heap", bytes=heaps[0],
                                  source="the executor's Runtime.maxMemory as its UnifiedMemoryManager reports "
                                         "it to the driver (unified memory / spark.memory.fraction + 300 MiB); "
                                         f"-Xmx {self.conf.get('spark.executor.memory')}"))
        try:
            bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
                jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
            roles: tuple[tuple[str, str, CapRole], ...] = (
                ("MaxDirectMemorySize", "JVM direct memory", "direct"),
                ("MaxMetaspaceSize", "JVM metaspace", "metaspace"))
            for option, name, role in roles:
                value = int(str(bean.getVMOption(option).getValue()))
                # 0 (direct memory) means "as large as the heap"; 2^64-1 (metaspace) means unlimited
                caps.append(MemoryCap(name=name, role=role, bytes=value if 0 < value < 2**62 else None,
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
        asked = self.asked(job)
        options: dict[str, Any] = asked["rewrite_data_files"]
        result: dict[str, Any] = {}
        # a partition filter: both procedures take it as `where` (Spark SQL; pyiceberg's syntax is a subset)
        where = where_arg(job)
        try:
            with clock.phase("rewrite_data_files", "one procedure call: plan, rewrite and commit"):
                rows = self._sql(f"CALL {cat.name}.system.rewrite_data_files(table => {spark_literal(table)}, "
                                 f"{strategy_args(job)}options => {spark_map(options)}{where})")
            result = _row_dict(rows)
            if job.intent().applies_deletes:
                self._finish_deletes(job, clock, table, where, result)
        except Exception as exc:  # noqa: BLE001 - classified below
            raise self._classify(exc) from exc
        settings = self._settings(job)
        settings["work"] = {k: v for k, v in asked.items() if k != "rewrite_data_files"}
        deployment = self._deployment()
        deployment.writes_at_once = self._writes_at_once(opts.rewrite_options)
        return EngineOutcome(engine_result=result, settings=settings, versions=self._versions(),
                             actions=list(self.actions), deployment=deployment,
                             read_tasks=tasks.rewrite_tasks(self.spark))

    def asked(self, job: CompactionJob) -> dict[str, Any]:
        """What Spark is asked for `job` (derived_options), the scenario's explicit rewrite_options over it
        (they win; each one that differs from the derived value is recorded under `overridden`)."""
        derived = derived_options(job)
        explicit = dict(self.options(job).rewrite_options)
        steps = ["rewrite_data_files"]
        if job.intent().applies_deletes:
            steps += ["rewrite_position_delete_files (rewrite-all), where position delete files are still live",
                      "remove the delete files still live that apply to no live data file (Java API), where any"]
        return {"intent": job.intent().describe(), "stated_by": job.intent().stated_by,
                "rewrite_data_files": {**derived, **explicit}, "steps": steps,
                "overridden": {k: {"derived": derived[k], "explicit": v} for k, v in explicit.items()
                               if k in derived and derived[k] != v}}

    def _finish_deletes(self, job: CompactionJob, clock: PhaseClock, table: str, where: str,
                        result: dict[str, Any]) -> None:
        """No delete file stays live: rewrite_data_files removed the dangling ones it can see (remove-dangling-
        deletes); position deletes still live (on an unpartitioned table their sequence numbers can equal the new
        files') go through rewrite_position_delete_files, and whatever still applies to no live data file is
        removed through the Java API."""
        with clock.phase("inspect", "count live delete files in the manifests (pyiceberg)"):
            left = self._live_deletes(job)
        result["delete_files_left_after_rewrite"] = {"position": left[0], "equality": left[1]}
        if left[0]:
            with clock.phase("rewrite_position_delete_files", "rewrite-all: drops dangling position deletes"):
                rows = self._sql(f"CALL {job.catalog.name}.system.rewrite_position_delete_files("
                                 f"table => {spark_literal(table)}, options => map('rewrite-all', 'true'){where})")
            result["rewrite_position_delete_files"] = _row_dict(rows)
        if sum(left):
            with clock.phase("remove dangling deletes", "metadata-only commit through Iceberg's Java API"):
                result["remove_dangling_deletes"] = self._remove_dangling_deletes(job, table)

    def _live_deletes(self, job: CompactionJob) -> tuple[int, int]:
        """(position, equality) delete files live in the table now."""
        from bench.core.table import live_files

        files = live_files(self._inspector.load_table(job.catalog.qualified(job.table)))
        return len(files.position), len(files.equality)

    def _table(self, job: CompactionJob) -> str:
        return f"{job.catalog.name}.{job.catalog.qualified(job.table)}"

    def expire_snapshots(self, job: CompactionJob, op: MaintenanceOp, clock: PhaseClock) -> dict[str, Any]:
        # a TIMESTAMP literal is read in the session's time zone: the JVM's default, this process's local time
        older = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - op.older_than_s))
        with clock.phase("expire_snapshots", f"procedure expire_snapshots(older_than {older}, retain_last "
                                             f"{op.retain_last}): one commit, then it deletes unreachable files"):
            rows = self._sql(f"CALL {job.catalog.name}.system.expire_snapshots(table => "
                             f"{spark_literal(self._table(job))}, older_than => TIMESTAMP '{older}', "
                             f"retain_last => {int(op.retain_last)})")
        return _row_dict(rows)

    def rewrite_manifests(self, job: CompactionJob, clock: PhaseClock) -> dict[str, Any]:
        with clock.phase("rewrite_manifests", "procedure rewrite_manifests: metadata only"):
            rows = self._sql(f"CALL {job.catalog.name}.system.rewrite_manifests(table => "
                             f"{spark_literal(self._table(job))})")
        return _row_dict(rows)

    def _writes_at_once(self, rewrite_options: dict[str, Any]) -> dict[str, int]:
        """File groups rewritten at once (the option, or Iceberg's default) and the file groups Iceberg
        planned, as its rewrite jobs describe themselves in Spark's status store (absent when none says)."""
        key = "max-concurrent-file-group-rewrites"
        out = ({key: int(rewrite_options[key])} if key in rewrite_options
               else {f"{key} (Iceberg's default)": ICEBERG_MAX_CONCURRENT_GROUPS})
        try:  # the file groups Iceberg planned, as its rewrite jobs describe themselves
            totals = {groups for groups, _ in tasks.rewrite_jobs(self.spark)}
            if totals:
                out["file groups"] = max(totals)
        except Exception:  # noqa: BLE001 - the setting is still known
            pass
        return out

    def nodes(self) -> int:
        """Machines the run used: this one, plus the hosts of an external cluster's workers."""
        if self.mode != "external" or self.cluster is None:
            return 1
        return len(set(self.cluster.hosts()) | {self.driver_host})

    def _deployment(self) -> Deployment:
        """How Spark ran, as it reported it (after `_settings`, which refreshes the executors)."""
        if self.mode == "local" or self.cluster is None:  # local[N]: the driver's JVM is the one executor
            return Deployment(mode="local", master=self.master, executors=1, executor_cores=[self.cores],
                              cores=self.cores)
        e = self.executors
        mem = [int(b) for b in e.get("executor_heap_granted_bytes") or [] if b]
        if not mem and e.get("executor_memory_mib_master"):  # the master's figure, the same for each executor
            mem = [int(e["executor_memory_mib_master"]) * 1024**2] * int(e.get("executor_count") or 0)
        workers = self.cluster.worker_count if isinstance(self.cluster, StandaloneCluster) else \
            len(self.cluster.alive_workers())
        return Deployment(mode=self.mode, master=self.master, workers=workers,
                          executors=e.get("executor_count"), executor_cores=list(e.get("executor_cores") or []),
                          executor_memory_bytes=mem, cores=e.get("cores_total"), nodes=self.nodes(),
                          hosts=self.cluster.hosts())

    def _remove_dangling_deletes(self, job: CompactionJob, table: str) -> dict[str, int]:
        """Remove live delete files that apply to no live data file (bench.core.table.deletes), in one
        RewriteFiles commit in this JVM; with a partition filter, only those of the partitions it selects."""
        from bench.core.partition_filter import table_selector
        from bench.core.table import live_files
        from bench.core.table.deletes import classify, scope

        tbl = self._inspector.load_table(job.catalog.qualified(job.table))
        files = live_files(tbl)
        dangling = classify(files, tbl.specs()).dangling
        where = ""
        selected = table_selector(tbl, job.partition_filter, files)
        if selected is not None:
            keep = {e.data_file.file_path for e in files.deletes if selected(scope(e.data_file))}
            dangling = [p for p in dangling if p in keep]
            where = f" in the partitions {job.partition_filter!r} selects"
        jvm = self._jvm()
        jtable = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(self.spark._jsparkSession, table)
        self.actions.append(f"Java API: remove the {len(dangling)} delete file(s) of {table}{where} that apply to no "
                            "live data file (table.newRewrite().deleteFile(f) for each, one commit)")
        removed = remove_delete_files(jvm, jtable, set(dangling), {"bench.step": "remove-dangling-deletes"})
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
            task = EXECUTOR_TASK_OOM.search(text)  # "Lost task 0.3 in stage 0.0 (TID 3) (host executor 1): ..."
            where = f"executor {task.group(1)}" if task else "Spark"
            return EngineOOM(f"java.lang.OutOfMemoryError in {where} ({m.group(0)})")
        m = EXECUTOR_OOM_TEXT.search(text)
        if m:
            return EngineOOM(f"a Spark executor died of a java.lang.OutOfMemoryError (ExecutorLostFailure with "
                             f"exit code 52, {OOM_EXIT_CODES[52]})")
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
        s["mode"] = self.mode
        s["master"] = self.master
        if self.mode != "local" and self.cluster is not None:
            s["cluster"] = self.cluster.describe()
            try:  # as Spark reports them now, after the compaction (a lost executor is replaced)
                execs = [e for e in self._executor_summaries() if e["max_storage_memory_bytes"] > 0]
                if execs:
                    self.executors = self._granted_executors(execs)
            except Exception:  # noqa: BLE001 - keep what open() saw
                pass
            s.update(self.executors)
            s["cores"] = self.executors.get("cores_total")
        else:  # local[N]: the driver's JVM is the one executor, with N task slots
            s["executor_count"], s["executor_cores"], s["cores"] = 1, [self.cores], self.cores
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
        """Stop the session, then (standalone) the worker and the master; safe after a failed open()."""
        spark, self.spark = self.spark, None
        cluster, self.cluster = self.cluster, None
        try:
            if spark is not None and _jvm_exit_code(spark, 0.0) is None:  # a dead JVM: nothing to stop
                spark.stop()
        finally:
            if cluster is not None:
                cluster.stop()


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
