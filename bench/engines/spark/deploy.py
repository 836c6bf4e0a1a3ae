"""The Spark engine's deploy modes (`engines: spark: mode:`, `--spark-mode`, or the profile `spark:standalone`):

  local       (default) one JVM, `local[<cores>]`: driver and executor in one, heap = spark.driver.memory;
  standalone  Spark's cluster deploy mode on this node: a standalone master and worker(s) bound to 127.0.0.1
              (`bench.engines.spark.cluster`, from the distribution pyspark ships) start before the session, the
              driver connects to spark://127.0.0.1:<port> and gets one executor per worker with all its cores;
              driver, executors and daemons are sized to fit the budget together.  The daemons are children of the
              engine process (inside the budget's cgroup and the runner's telemetry) and die with it; stop() ends
              them;
  external    a standalone cluster that already runs elsewhere (option master): one executor per ALIVE worker,
              the driver reachable from the workers on fixed ports.

`SparkDeploy` holds how this engine process runs Spark: the steps around the session (`start` before it, `await_
executors` after it, so that no executor's JVM start is part of the compaction), and what Spark granted, as it
reports it (`settings`, `deployment`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from bench.core.iceberg_java.spark_conf import log4j_option
from bench.core.records.engine_run import Deployment, DeployMode
from bench.engines.base import CompactionJob, PhaseClock
from bench.engines.spark import memory, session
from bench.engines.spark.cluster import ClusterView, StandaloneCluster, is_loopback
from bench.engines.spark.options import SparkOptions

EXECUTOR_READY_TIMEOUT_S = 120.0
# fixed driver ports towards a cluster on other machines (its security group admits exactly these)
DRIVER_PORT, BLOCK_MANAGER_PORT = 7078, 7079
RESERVED_SYSTEM_MEMORY = 300 * 1024 * 1024  # Spark's UnifiedMemoryManager keeps this much of a heap


def executor_summaries(spark: Any) -> list[dict[str, Any]]:
    """The driver's view of its executors (AppStatusStore, UI or not): id, cores, storage memory."""
    out = []
    summaries = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    for i in range(summaries.size()):
        e = summaries.apply(i)
        if str(e.id()) == "driver":
            continue
        out.append({"id": str(e.id()), "host_port": str(e.hostPort()), "cores": int(e.totalCores()),
                    "max_storage_memory_bytes": int(e.maxMemory())})
    return out


def registered(spark: Any) -> list[dict[str, Any]]:
    """The executors registered, and their block managers too (they report the memory each was granted)."""
    return [e for e in executor_summaries(spark) if e["max_storage_memory_bytes"] > 0]


class SparkDeploy:
    """How Spark runs in this engine process: the deploy mode, the master, the task slots, the cluster (none in
    local mode) and the executors as Spark reports them."""

    def __init__(self) -> None:
        self.mode: DeployMode = "local"
        self.master = ""
        self.cores = 1  # task slots
        self.cluster: ClusterView | None = None
        self.executors: dict[str, Any] = {}  # standalone, external: the executors as Spark reports them
        self.driver_host = "127.0.0.1"

    def configure(self, job: CompactionJob, opts: SparkOptions) -> None:
        """The mode and the task slots; in local mode the master URL (a cluster's is set once it runs)."""
        self.mode = opts.deploy
        self.cores = max(1, int(job.cores)) * opts.slots_per_core
        self.master = f"local[{self.cores}]" if opts.deploy == "local" else ""

    def worker_cores(self, opts: SparkOptions) -> int:
        """Standalone on this node: each worker's (and its executor's) cores, the task slots split evenly."""
        return max(1, self.cores // opts.workers)

    # -- before the session ------------------------------------------------------------------------
    def start(self, job: CompactionJob, opts: SparkOptions, plan: dict[str, Any], conf: dict[str, str],
              clock: PhaseClock, note: Callable[[str], None]) -> None:
        """Before the session: start the standalone cluster, or contact the external one; its master into `conf`."""
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # Spark binds the external interface otherwise
        if opts.deploy == "standalone":
            cluster = self._start_cluster(job, opts, plan, clock, note)
            conf["spark.master"] = self.master
            # names the run's cluster on the executor's command line too (the daemons carry it already)
            conf["spark.executor.extraJavaOptions"] += " " + cluster.marker()
        elif opts.deploy == "external":
            with clock.phase("cluster contact", f"the master's web UI: its ALIVE workers ({opts.master})"):
                self._external_cluster(opts, plan, conf, note)
            conf["spark.master"] = self.master
            os.environ["SPARK_LOCAL_IP"] = self.driver_host

    def _start_cluster(self, job: CompactionJob, opts: SparkOptions, plan: dict[str, Any], clock: PhaseClock,
                       note: Callable[[str], None]) -> StandaloneCluster:
        root = os.path.join(job.work_dir or os.getcwd(), "spark-standalone")
        n, cores = opts.workers, self.worker_cores(opts)
        cluster = StandaloneCluster(root, cores=cores, worker_memory_mib=plan["worker_memory_mib"],
                                    daemon_memory=plan["daemon_memory"],
                                    daemon_java_options=plan["daemon_java_options"], workers=n)
        self.cluster = cluster
        what = "one worker" if n == 1 else f"{n} workers"
        with clock.phase("cluster start", f"standalone master and {what} on 127.0.0.1, until every worker is "
                                          "ALIVE at the master"):
            cluster.start()
        self.master = cluster.master_url
        note(f"standalone cluster: master {self.master}, {what} with {cores} cores and "
             f"{plan['worker_memory_mib']} MiB each (logs in {root})")
        return cluster

    def _external_cluster(self, opts: SparkOptions, plan: dict[str, Any], conf: dict[str, str],
                          note: Callable[[str], None]) -> None:
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
                                                                   log4j_option()]))
        conf.update({"spark.executor.memory": memory.fmt_mib(heap),
                     "spark.executor.memoryOverhead": memory.fmt_mib(overhead)})
        host = session.driver_address(opts.master_host)
        conf.update({"spark.driver.host": host, "spark.driver.bindAddress": host})
        if not is_loopback(opts.master_host):  # the cluster's security group admits these ports only
            conf.update({"spark.driver.bindAddress": "0.0.0.0", "spark.driver.port": str(DRIVER_PORT),
                         "spark.blockManager.port": str(BLOCK_MANAGER_PORT)})
        plan.update({"executor_heap_requested_bytes": heap, "executor_overhead_bytes": overhead,
                     "external_workers": [{k: w.get(k) for k in ("id", "host", "cores", "memory")} for w in workers]})
        self.driver_host = host
        note(f"external standalone cluster: master {opts.master}, {len(workers)} ALIVE worker(s) on "
             f"{', '.join(view.hosts())}; one executor each with {cores} cores, {memory.fmt_mib(heap)} heap + "
             f"{memory.fmt_mib(overhead)} overhead; driver on {host}")

    # -- after the session -------------------------------------------------------------------------
    def await_executors(self, spark: Any, conf: dict[str, str], clock: PhaseClock,
                        timeout_s: float = EXECUTOR_READY_TIMEOUT_S) -> None:
        """A cluster: until each executor has registered with the driver (its JVM start is not the compaction's)."""
        if self.mode == "local":
            return
        expected = int(conf["spark.executor.instances"])
        with clock.phase("executor start", f"the workers launch {expected} executor(s); until each has "
                                           "registered with the driver"):
            self.executors = self.granted(spark, conf, self._wait_for_executors(spark, expected, timeout_s))

    def _wait_for_executors(self, spark: Any, expected: int, timeout_s: float) -> list[dict[str, Any]]:
        assert self.cluster is not None
        app_id = spark.sparkContext.applicationId
        deadline = time.monotonic() + timeout_s
        next_check = time.monotonic() + 1.0
        while True:
            execs = registered(spark)
            if len(execs) >= expected:
                return execs
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

    def granted(self, spark: Any, conf: dict[str, str], execs: list[dict[str, Any]]) -> dict[str, Any]:
        """Executors, cores and memory as Spark reports them: the driver's status store, the master's
        entry of the application and the worker's executor list."""
        assert self.cluster is not None
        app_id = spark.sparkContext.applicationId
        app = self.cluster.app(app_id) or {}
        workers = self.cluster.workers_json()
        on_worker = [e for w in workers for e in w.get("executors", []) if e.get("appid") == app_id]
        fraction = float(conf.get("spark.memory.fraction", "0.6"))
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

    # -- what is recorded --------------------------------------------------------------------------
    def settings(self, spark: Any, conf: dict[str, str]) -> dict[str, Any]:
        """The mode, master, cluster and executors (as Spark reports them now, after the compaction: a lost
        executor is replaced), for the run's settings."""
        s: dict[str, Any] = {"mode": self.mode, "master": self.master}
        if self.mode != "local" and self.cluster is not None:
            s["cluster"] = self.cluster.describe()
            try:
                execs = registered(spark)
                if execs:
                    self.executors = self.granted(spark, conf, execs)
            except Exception:  # noqa: BLE001 - keep what open() saw
                pass
            s.update(self.executors)
            s["cores"] = self.executors.get("cores_total")
        else:  # local[N]: the driver's JVM is the one executor, with N task slots
            s["executor_count"], s["executor_cores"], s["cores"] = 1, [self.cores], self.cores
        return s

    def nodes(self) -> int:
        """Machines the run used: this one, plus the hosts of an external cluster's workers."""
        if self.mode != "external" or self.cluster is None:
            return 1
        return len(set(self.cluster.hosts()) | {self.driver_host})

    def deployment(self) -> Deployment:
        """How Spark ran, as it reported it (after `settings`, which refreshes the executors)."""
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

    def stop(self) -> None:
        """Stop the cluster this process started (a standalone one: its workers, then its master)."""
        cluster, self.cluster = self.cluster, None
        if cluster is not None:
            cluster.stop()
