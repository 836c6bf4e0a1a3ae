"""Spark's `rewrite_data_files` (Apache Iceberg's Spark procedures) as a benchmark engine.

Runs inside the engine subprocess (`bench.engines.worker`), so the SparkSession it builds is the first
in the process and every setting, including the driver heap, reaches a fresh JVM.  Memory settings
come from a named profile and the memory budget (`bench.engines.spark.memory`); the deploy modes (local,
standalone on this node, an external cluster) are `bench.engines.spark.deploy`'s.

Steps:
  open()     [`cluster start` (standalone: master and worker, until the worker is ALIVE)], `session start`
             (the driver JVM), [`executor start` (standalone: until the one executor has registered with
             the driver, so its JVM start is not part of the compaction)], `catalog warm-up` (Iceberg's
             JdbcCatalog is loaded lazily by Spark: listing the namespace's tables initializes it without
             loading the table to compact, whose metadata read belongs to the compaction);
  compact()  `rewrite_data_files` (bin-pack, or strategy sort by the table's sort order, or sort with
             sort_order => 'zorder(...)' for z-order; plan, rewrite and commit inside one procedure call); for
             deletes also the delete steps (`bench.engines.spark.deletes`): `rewrite_position_delete_files`
             (rewrite-all) and `remove dangling deletes` (a metadata-only commit through Iceberg's Java API), so
             that no delete file stays live.
Why a Spark run failed (`classify`): a java.lang.OutOfMemoryError ends the driver JVM at once
(-XX:+ExitOnOutOfMemoryError, exit code 3) and is raised as EngineOOM (status heap-oom: the JVM's own limit, below the
budget), so the runner does not wait on a half-dead JVM.  In standalone mode an executor's OutOfMemoryError reaches
the driver as a task or stage failure (the error text, or ExecutorLostFailure with Spark's OOM exit code 52):
heap-oom too.  A JVM that died otherwise (a signal, another exit code) is said as such.
What Spark's status store says of the rewrite's jobs is recorded too: Iceberg's rewrite runs each file group as a
Spark job described "Rewriting N files (..., file group i/T, ...)" (RewriteDataFilesSparkAction.jobDesc; the
position-delete rewrite's say "position delete files" and are not matched).  Each task of those jobs reads its share
of the group's data files and opens the delete files that apply to them (`rewrite_jobs`, `rewrite_tasks`).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, ClassVar

from pydantic import BaseModel

from bench.core.catalog import CatalogSettings
from bench.core.errors import UserError
from bench.core.iceberg_java import runtime as iceberg_runtime
from bench.core.iceberg_java.spark_conf import base_conf, log4j_option
from bench.core.iceberg_java.spark_conf import session as spark_session
from bench.core.records.telemetry import CapRole, MemoryCap
from bench.core.requirements import Requirement, module_requirement
from bench.core.sql import spark_literal
from bench.engines import environment as envs
from bench.engines.base import (
    Capabilities,
    CompactionJob,
    Engine,
    EngineOOM,
    EngineOutcome,
    Knob,
    MaintenanceOp,
    PhaseClock,
)
from bench.engines.procedure import derived_options, row_dict, spark_map, strategy_args, where_arg
from bench.engines.spark import deletes, memory, session
from bench.engines.spark.cluster import is_loopback
from bench.engines.spark.deploy import SparkDeploy
from bench.engines.spark.options import KNOBS, SparkOptions

__all__ = ["SparkEngine"]

LINE = iceberg_runtime.HARNESS_LINE  # the harness's Spark line: its pyspark is the harness's
ICEBERG_MAX_CONCURRENT_GROUPS = 5  # max-concurrent-file-group-rewrites: Iceberg's default (RewriteDataFiles)

# Iceberg's Spark procedures on every line the engine runs (Iceberg 1.10 and newer): rewrite_data_files with
# strategy => 'sort' sorts each file group by the table's sort order (range-partitioned: output files of a group do
# not overlap), sort_order => 'zorder(c1,c2)' z-orders; rewrite_data_files and rewrite_position_delete_files take
# `where`; expire_snapshots(table, older_than, retain_last), remove_orphan_files(table, older_than),
# rewrite_manifests(table) and rewrite_position_delete_files(table, options); format v3 (deletion vectors)
# read and written: verified on a Spark-written v3 table with one (tests/runner/test_work_intent.py)
SUPPORTS = frozenset({"sort", "zorder", "partition-filter", "partition-filter-deletes", "maintenance",
                      "expire-snapshots", "expire-under-writer", "rewrite-manifests", "remove-orphan-files",
                      "rewrite-position-deletes", "format-v3"})
# the first Iceberg release this engine compacts a branch with: its rewrite_data_files takes `branch`
# (RewriteDataFilesProcedure's BRANCH_PARAM: the action plans from the branch's head, commits to it, and removes the
# dangling deletes on it; "Cannot rewrite data files for branch %s: branch does not exist"); 1.10.2's has none
BRANCH_SINCE = "1.12.0"


def line_supports(line: iceberg_runtime.SparkLine) -> frozenset[str]:
    """What the engine does on `line` beyond a plain compaction of main (FEATURES)."""
    return SUPPORTS | ({"branch"} if line.iceberg_at_least(BRANCH_SINCE) else frozenset())


# no line rewrites manifests on a branch: the procedure has no branch parameter, and Iceberg Java's RewriteManifests
# has no toBranch (SnapshotUpdate's default refuses: "Cannot commit to branch %s: %s does not support
# branch commits"); it would rewrite main's manifests and commit to main (checked in the 1.12.0 and 1.10.2 runtime jars)
MANIFESTS_ON_BRANCH = (
    "Iceberg {iceberg}'s rewrite_manifests cannot work on a branch: the procedure has no branch parameter and Iceberg "
    "Java's RewriteManifests commits to main only (it has no toBranch: 'Cannot commit to branch %s: %s does not "
    "support branch commits'), so it would rewrite main's manifests")


def line_refusals(line: iceberg_runtime.SparkLine) -> dict[str, str]:
    """Why the engine on `line` cannot do what line_supports leaves out."""
    refusals = {"rewrite-manifests-branch": MANIFESTS_ON_BRANCH.format(iceberg=line.iceberg)}
    if line.iceberg_at_least(BRANCH_SINCE):
        return refusals
    return refusals | {"branch": (
        f"Iceberg {line.iceberg}'s rewrite_data_files cannot compact a branch (its procedure has no branch parameter; "
        f"Iceberg {BRANCH_SINCE}'s has one): the action plans from the table's current snapshot (main); named as "
        "table => 'ns.t.branch_ingest', or with spark.wap.branch set, it silently compacts main instead, and a "
        "'branch' option is rejected ('Cannot use options [branch], they are not supported by the action or the "
        "rewriter BIN-PACK'); established on this machine with Iceberg 1.10.2 on Spark 3.5.9")}


class SparkEngine(Engine):
    name: ClassVar[str] = "spark"
    # the Spark line (bench/core/iceberg_java/maven.lock.toml): its pyspark and its Iceberg runtime jar; a line
    # other than the harness's runs in an engine environment with that line's pyspark (spark-3.5)
    line: ClassVar[iceberg_runtime.SparkLine] = LINE
    description: ClassVar[str] = (f"Apache {LINE.describe()} rewrite_data_files (bin-pack, sort, z-order), local "
                                  "mode (one JVM) or standalone mode (a master, one worker and one executor on "
                                  "127.0.0.1; option mode), through the harness's REST catalog")
    color: ClassVar[str] = "#E25A1C"
    # Iceberg Java's and Spark's own refusals (UnsupportedOperationException: "Cannot ... unsupported ...")
    refusal_pattern: ClassVar[str] = r"UnsupportedOperationException|[Nn]ot (yet )?supported"
    packages: ClassVar[tuple[str, ...]] = ("pyspark",)
    # Iceberg Java's commit retries (Tasks) and the exceptions a lost commit race raises
    conflict_log_pattern: ClassVar[str] = r"Retrying task after failure|CommitFailedException|ValidationException"
    Options: ClassVar[type[BaseModel]] = SparkOptions
    output_codecs: ClassVar[frozenset[str] | None] = frozenset(
        {"snappy", "zstd", "gzip", "lz4", "uncompressed", "brotli"})
    min_budget_bytes: ClassVar[int] = memory.min_budget_bytes()  # the heap Spark accepts, plus non-heap
    knobs: ClassVar[tuple[Knob, ...]] = KNOBS
    # what the line's Iceberg release can do (line_supports, line_refusals); a subclass that declares another `line`
    # gets that line's (__init_subclass__), unless it declares its own capabilities.  Iceberg's REST client
    # (RESTCatalog), against the loopback server as every engine: catalog round trips are the same for every
    # engine; the live writer's commit gate holds its commits too
    capabilities: ClassVar[Capabilities] = Capabilities(supports=line_supports(LINE), not_supported=line_refusals(LINE),
                                                        commits_through_rest=True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "line" in cls.__dict__ and "capabilities" not in cls.__dict__:
            cls.capabilities = replace(cls.capabilities, supports=line_supports(cls.line),
                                       not_supported=line_refusals(cls.line))

    @classmethod
    def declared_runtime(cls) -> str:
        return cls.line.describe()

    def __init__(self) -> None:
        self.spark: Any = None
        self.plan: dict[str, Any] = {}
        self.actions: list[str] = []
        self.jars: list[str] = []
        self.conf: dict[str, str] = {}
        self.deploy = SparkDeploy()
        self.delete_steps: deletes.DeleteSteps | None = None

    # -- bench doctor ----------------------------------------------------------------------------
    def requirements(self) -> list[Requirement]:
        own = [envs.requirement(self.name, self.environment)] if self.environment else [
            module_requirement("pyspark", f"pip install pyspark=={self.line.pyspark} (or `make setup`)")]
        return [iceberg_runtime.java_requirement(self.line), *iceberg_runtime.jar_requirements(self.line), *own]

    def storage_requirements(self, settings: CatalogSettings) -> list[Requirement]:
        """An S3 warehouse needs the line's iceberg-aws-bundle (the AWS SDK) beside the runtime's S3FileIO."""
        return [iceberg_runtime.s3_requirement(self.line)] if settings.is_remote else []

    def option_problems(self, options: dict[str, Any], settings: CatalogSettings) -> list[str]:
        """A cluster on other machines cannot read a warehouse on this node's disk."""
        opts = SparkOptions.model_validate(options)
        if opts.master and not is_loopback(opts.master_host) and not settings.is_remote:
            return [f"master {opts.master} is a cluster on other machines: its executors cannot read the local "
                    f"warehouse {settings.warehouse}; use a shared one (--warehouse s3://bucket/prefix)"]
        return []

    def min_budget(self, options: dict[str, Any]) -> int:
        """Standalone needs room for the driver, the executors and the daemons."""
        opts = SparkOptions.model_validate(options)
        return memory.min_budget_bytes(opts.deploy, opts.workers)

    # -- life cycle ------------------------------------------------------------------------------
    def _conf(self, job: CompactionJob, opts: SparkOptions) -> dict[str, str]:
        """The session's conf; for a cluster, the master URL is set once it runs (`SparkDeploy.start`)."""
        self.deploy.configure(job, opts)
        self.plan = memory.memory_plan(opts.profile, job.memory_budget_bytes, mode=opts.deploy, workers=opts.workers)
        conf = base_conf(job.catalog, self.deploy.master, app_name=f"bench-{job.scenario}",
                                 jars=self.engine_jars(job.catalog),
                                 rest=self.capabilities.commits_through_rest and opts.catalog == "rest")
        self.jars = conf["spark.jars"].split(",")
        conf.update(self.plan["conf"])
        if opts.memory_fraction is not None:
            conf["spark.memory.fraction"] = str(opts.memory_fraction)
        conf["spark.driver.extraJavaOptions"] = " ".join([*self.plan["java_options"], log4j_option()])
        if opts.deploy == "standalone":
            conf.update(session.standalone_conf(self.deploy.worker_cores(opts), opts.workers,
                                                [*self.plan["executor_java_options"], log4j_option()]))
        if job.work_dir:
            local_dir = os.path.join(job.work_dir, "spark-local")
            os.makedirs(local_dir, exist_ok=True)
            conf["spark.local.dir"] = local_dir
        if job.shared_process:  # the next job's table may have the same name: load every table afresh
            conf[f"spark.sql.catalog.{job.catalog.name}.cache-enabled"] = "false"
        conf.update(session.scenario_conf(opts.spark_conf))  # the scenario's Spark settings, applied last (recorded)
        return conf

    def engine_jars(self, settings: CatalogSettings) -> list[str]:
        """The session's jars: the line's Iceberg runtime and the JDBC driver, with the AWS SDK bundle for an S3
        warehouse (bench.core.iceberg_java.runtime); gluten names its own."""
        return iceberg_runtime.iceberg_jars(remote=settings.is_remote, line=self.line.name)

    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        opts = self.options(job)
        for req in self.storage_requirements(job.catalog):
            if not req.ok:
                raise UserError(f"{req.detail}; {req.fix}")
        conf = self._conf(job, opts)
        self.deploy.start(job, opts, self.plan, conf, clock, self.actions.append)
        with clock.phase("session start", f"driver JVM and SparkSession, {self.deploy.master}"):
            self.conf = conf
            self.spark = spark_session(conf)
            self.spark.sparkContext.setLogLevel("WARN")
            # the output codec, for Spark's writes (session conf beats the table default)
            self._set("spark.sql.iceberg.compression-codec", job.output_codec)
            if job.output_codec_level is not None:
                self._set("spark.sql.iceberg.compression-level", str(int(job.output_codec_level)))
        self.deploy.await_executors(self.spark, conf, clock)
        with clock.phase("catalog warm-up", "SHOW TABLES: initializes Iceberg's catalog client, loads no table"):
            namespace = job.table.rsplit(".", 1)[0]
            self.spark.sql(f"SHOW TABLES IN {job.catalog.name}.{namespace}").collect()
        if job.intent().applies_deletes:
            self.delete_steps = deletes.DeleteSteps(self.spark, self._sql, self.actions.append, clock, job)

    def memory_caps(self) -> list[MemoryCap]:
        """The JVM's limits as it reports them: heap (Runtime.maxMemory), direct memory and metaspace
        (HotSpotDiagnosticMXBean)."""
        jvm = self._jvm()
        local = self.deploy.mode == "local"
        caps = [MemoryCap(name="JVM heap" if local else "driver JVM heap", role="heap",
                          bytes=int(jvm.java.lang.Runtime.getRuntime().maxMemory()),
                          source="Runtime.maxMemory() of the Spark JVM"
                                 + ("" if local else " (the driver; the executor's heap is listed apart)"))]
        if not local:
            heaps = self.deploy.executors.get("executor_heap_granted_bytes") or [None]
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

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        if self.spark is None:
            raise RuntimeError("spark engine: compact() before open()")
        opts = self.options(job)
        cat = job.catalog
        # Fully qualified: the namespace "bench" is also the catalog's name, so 'bench.t' would be
        # read as table t in catalog bench.
        table = self._table(job)
        asked = self.asked(job)
        options: dict[str, Any] = asked["rewrite_data_files"]
        result: dict[str, Any] = {}
        # a partition filter: both procedures take it as `where` (Spark SQL; pyiceberg's syntax is a subset)
        where = where_arg(job)
        try:
            with clock.phase("rewrite_data_files", "one procedure call: plan, rewrite and commit"):
                rows = self._sql(f"CALL {cat.name}.system.rewrite_data_files(table => {spark_literal(table)}, "
                                 f"{strategy_args(job)}options => {spark_map(options)}{where}{self._branch_arg(job)})")
            result = row_dict(rows)
            if job.intent().applies_deletes:
                assert self.delete_steps is not None
                self.delete_steps.finish(job, clock, table, where, result)
        except Exception as exc:  # noqa: BLE001 - classified below
            raise self._classify(exc) from exc
        settings = self._settings(job)
        settings["work"] = {k: v for k, v in asked.items() if k != "rewrite_data_files"}
        deployment = self.deploy.deployment()
        deployment.writes_at_once = self._writes_at_once(opts.rewrite_options)
        return EngineOutcome(engine_result=result, settings=settings, versions=self.versions(),
                             actions=list(self.actions), deployment=deployment,
                             read_tasks=rewrite_tasks(self.spark))

    def asked(self, job: CompactionJob) -> dict[str, Any]:
        """What Spark is asked for `job` (derived_options), the scenario's explicit rewrite_options over it
        (they win; each one that differs from the derived value is recorded under `overridden`)."""
        derived = derived_options(job)
        explicit = dict(self.options(job).rewrite_options)
        steps = ["rewrite_data_files", *(deletes.STEPS if job.intent().applies_deletes else [])]
        return {"intent": job.intent().describe(), "stated_by": job.intent().stated_by,
                "rewrite_data_files": {**derived, **explicit}, "steps": steps,
                "overridden": {k: {"derived": derived[k], "explicit": v} for k, v in explicit.items()
                               if k in derived and derived[k] != v}}

    def expire_snapshots(self, job: CompactionJob, op: MaintenanceOp, clock: PhaseClock) -> dict[str, Any]:
        older = op.cutoff_text()
        with self._maintenance_shuffles(job) as shuffles, clock.phase(
                "expire_snapshots", f"procedure expire_snapshots(older_than {older}, retain_last {op.retain_text()}): "
                                    f"one commit, then it deletes unreachable files ({shuffles})"):
            rows = self._sql(f"CALL {job.catalog.name}.system.expire_snapshots(table => "
                             f"{spark_literal(self._table(job))}, older_than => TIMESTAMP '{older}'"
                             f"{op.retain_argument()})")
        return row_dict(rows)

    def remove_orphan_files(self, job: CompactionJob, op: MaintenanceOp, clock: PhaseClock) -> dict[str, Any]:
        older = op.cutoff_text()
        with self._maintenance_shuffles(job) as shuffles, clock.phase(
                "remove_orphan_files", f"procedure remove_orphan_files(older_than {older}): lists the table's "
                                       f"location, deletes what no metadata reaches ({shuffles})"):
            rows = self._sql(f"CALL {job.catalog.name}.system.remove_orphan_files(table => "
                             f"{spark_literal(self._table(job))}, older_than => TIMESTAMP '{older}')")
        # one row per deleted file (orphan_file_location): the paths, few as they are in a conformance case
        return {"orphan_file_location": [r["orphan_file_location"] for r in rows]}

    @contextmanager
    def _maintenance_shuffles(self, job: CompactionJob) -> Iterator[str]:
        """One shuffle partition per core for an expiry's or orphan removal's Spark jobs, unless the scenario's
        spark_conf sets them: Iceberg's actions join the table's file lists with shuffles, and at the profiles' 1000
        partitions (the published compaction's) a small table's expiry spends most of its time scheduling empty tasks
        (measured here on a warm session: 50 s against 6.5 s with 2).  Unset again after the procedure (the session's
        own value returns for the next job)."""
        key = "spark.sql.shuffle.partitions"
        if key in self.options(job).spark_conf:
            yield f"{key} {self.options(job).spark_conf[key]}, the scenario's"
            return
        self._set(key, str(max(1, job.cores)))
        try:
            yield f"{key} {max(1, job.cores)}, one per core"
        finally:
            self.spark.conf.unset(key)
            self.actions.append(f"RESET {key}")

    def rewrite_manifests(self, job: CompactionJob, clock: PhaseClock) -> dict[str, Any]:
        if job.branch != "main":  # the runner records such a run unsupported before it starts (why_not)
            raise UserError(self.why_not("rewrite-manifests-branch") or "rewrite_manifests on a branch")
        with clock.phase("rewrite_manifests", "procedure rewrite_manifests: metadata only"):
            rows = self._sql(f"CALL {job.catalog.name}.system.rewrite_manifests(table => "
                             f"{spark_literal(self._table(job))})")
        return row_dict(rows)

    def rewrite_position_deletes(self, job: CompactionJob, clock: PhaseClock) -> dict[str, Any]:
        # the procedure has no branch parameter: its action plans from main and commits to main
        if job.branch != "main":
            raise UserError(f"rewrite_position_delete_files cannot work on branch {job.branch}: its procedure has no "
                            "branch parameter and its action rewrites main's delete files")
        with self._maintenance_shuffles(job) as shuffles, clock.phase(
                "rewrite_position_delete_files", "procedure rewrite_position_delete_files(rewrite-all): every position "
                                                 f"delete file rewritten, dangling records dropped ({shuffles})"):
            rows = self._sql(f"CALL {job.catalog.name}.system.rewrite_position_delete_files(table => "
                             f"{spark_literal(self._table(job))}, options => map('rewrite-all', 'true'))")
        return row_dict(rows)

    def close(self) -> None:
        """Stop the session, then (standalone) the worker and the master; safe after a failed open()."""
        spark, self.spark = self.spark, None
        try:
            if spark is not None and jvm_exit_code(spark, 0.0) is None:  # a dead JVM: nothing to stop
                spark.stop()
        finally:
            self.deploy.stop()

    # -- helpers -----------------------------------------------------------------------------------
    def _table(self, job: CompactionJob) -> str:
        return f"{job.catalog.name}.{job.catalog.qualified(job.table)}"

    def _branch_arg(self, job: CompactionJob) -> str:
        """rewrite_data_files' branch argument (`, branch => 'b'`) for a branch other than main, or ""."""
        if job.branch == "main":
            return ""
        why = self.why_not("branch")
        if why:  # the runner records such a run unsupported before it starts
            raise UserError(why)
        return f", branch => {spark_literal(job.branch)}"

    def _set(self, key: str, value: str) -> None:
        self.spark.conf.set(key, value)
        self.actions.append(f"SET {key}={value}")

    def _sql(self, statement: str) -> list:
        self.actions.append(statement)
        return self.spark.sql(statement).collect()

    def _jvm(self) -> Any:
        return self.spark.sparkContext._jvm

    def jvm_exit_code(self, wait_s: float = 0.0) -> int | None:
        """The JVM's exit code if it has died (waiting up to `wait_s` for it to finish dying)."""
        return jvm_exit_code(self.spark, wait_s)

    def _classify(self, exc: BaseException) -> BaseException:
        return classify(exc, self.spark)

    # -- what is recorded ----------------------------------------------------------------------------
    def _writes_at_once(self, rewrite_options: dict[str, Any]) -> dict[str, int]:
        """File groups rewritten at once (the option, or Iceberg's default) and the file groups Iceberg
        planned, as its rewrite jobs describe themselves in Spark's status store (absent when none says)."""
        key = "max-concurrent-file-group-rewrites"
        out = ({key: int(rewrite_options[key])} if key in rewrite_options
               else {f"{key} (Iceberg's default)": ICEBERG_MAX_CONCURRENT_GROUPS})
        try:  # the file groups Iceberg planned, as its rewrite jobs describe themselves
            totals = {groups for groups, _ in rewrite_jobs(self.spark)}
            if totals:
                out["file groups"] = max(totals)
        except Exception:  # noqa: BLE001 - the setting is still known
            pass
        return out

    def _settings(self, job: CompactionJob) -> dict[str, Any]:
        s: dict[str, Any] = {k: v for k, v in self.plan.items() if k != "conf"}
        s.update(self.deploy.settings(self.spark, self.conf))
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

    def versions(self) -> dict[str, str]:
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


FILE_GROUP_DESC = re.compile(r"^Rewriting \d+ files \(.*?file group \d+/(\d+)")


def rewrite_jobs(spark: Any) -> list[tuple[int, int]]:
    """(file groups planned, tasks) of every rewrite job in the status store."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    out = []
    for i in range(jobs.size()):
        job = jobs.apply(i)
        desc = job.description()
        m = FILE_GROUP_DESC.search(str(desc.get())) if desc.isDefined() else None
        if m:
            out.append((int(m.group(1)), int(job.numTasks())))
    return out


def rewrite_tasks(spark: Any) -> int | None:
    """The tasks of the rewrite's jobs (None: no such job, or the status store could not be read)."""
    try:
        jobs = rewrite_jobs(spark)
    except Exception:  # noqa: BLE001 - not reported, not guessed
        return None
    return sum(t for _, t in jobs) if jobs else None


# Exit codes of a JVM that died of an OutOfMemoryError: -XX:+ExitOnOutOfMemoryError exits with 3,
# Spark's executor exits with SparkExitCode.OOM = 52.
OOM_EXIT_CODES = {3: "-XX:+ExitOnOutOfMemoryError", 52: "Spark executor OOM exit"}
OOM_TEXT = re.compile(r"(java\.lang\.OutOfMemoryError|SparkOutOfMemoryError|OutOfDirectMemoryError"
                      r"|Java heap space|GC overhead limit exceeded|Direct buffer memory)")
# standalone: an executor that died of an OutOfMemoryError, as the driver reports the lost executor
EXECUTOR_OOM_TEXT = re.compile(r"ExecutorLostFailure[^\n]*?(?:exit(?:ed)? (?:with )?code|exit status)\D{0,3}52\b")
EXECUTOR_TASK_OOM = re.compile(r"\(\S+ executor (\w+)\): (?:java\.lang\.OutOfMemoryError|\S*SparkOutOfMemoryError)")
LOST_JVM_WAIT_S = 15.0  # a lost connection to the JVM: how long it may take to finish dying


def jvm_exit_code(spark: Any, wait_s: float = 0.0) -> int | None:
    """Exit code of the JVM behind `spark` (the spark-submit process PySpark launched, which execs the JVM), or None
    while it runs (waiting up to `wait_s` for it to finish dying)."""
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


def classify(exc: BaseException, spark: Any) -> BaseException:
    """What `exc`, raised by a Spark call, means: EngineOOM, a RuntimeError naming how the JVM died, or `exc`."""
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
    code = jvm_exit_code(spark, wait_s=LOST_JVM_WAIT_S if lost else 0.0)
    if code in OOM_EXIT_CODES:
        return EngineOOM(f"the Spark JVM exited with code {code} ({OOM_EXIT_CODES[code]}) after a "
                         f"java.lang.OutOfMemoryError")
    if code is not None and code < 0:
        return RuntimeError(f"the Spark JVM was killed by signal {-code} ({type(exc).__name__}); "
                            f"a kernel OOM kill or a time limit look like this")
    if code is not None:
        return RuntimeError(f"the Spark JVM exited with code {code} ({type(exc).__name__})")
    return exc
