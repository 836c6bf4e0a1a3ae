"""repark (PyPI `repark`): a pure-Rust engine with a PySpark-like API on a fork of iceberg-rust and DataFusion, and
a port of Iceberg's `CALL <catalog>.system.rewrite_data_files(...)` procedure.  It runs in its own environment
(Python 3.12, its pinned pyarrow: bench.engines.environment), built by `bench setup --engines repark`.

repark's catalogs are glue, s3tables, memory and hadoop (no REST, no JDBC), so it reaches the harness's table
through its in-memory catalog, and the harness's catalog moves only by compare-and-swap:
  open()     `session` (a ReparkSession, its memory pool `repark.memory.limit.gb` sized from the budget, its
             DataFusion partitions = the job's cores) and `catalog` (a memory catalog over the warehouse);
  compact()  `register`: the table's current metadata file, read from the harness's catalog (catalog.db), is
             registered in the memory catalog (`CALL <cat>.system.register_table`);
             `rewrite_data_files`: the procedure with the options the job's intent asks (the same derivation as
             Spark's: bench.engines.procedure), the scenario's `rewrite_options` over them; it writes the new data
             files and a new metadata file (a `replace` snapshot) beside the table's;
             deletes only: `inspect` (live delete files, from its `delete_files` metadata table) and, when some are
             left, `second pass`: on an unpartitioned table remove-dangling-deletes leaves the equality deletes the
             first pass made dangling live (as Iceberg Java does); a rewrite of every file (rewrite-all) drops them;
             `commit`: the harness's catalog pointer is swapped from the metadata file registered to repark's last
             one, only if it still names the one registered (compare-and-swap in one SQLite statement, as Iceberg's
             JdbcCatalog commits: bench.core.catalog.pointer): when another writer committed meanwhile, the commit
             fails as a conflict and the rewrite is not published.
The scenario's strategy reaches the same call as Spark's (bench.engines.procedure): `strategy => 'sort'` (the table's
sort order) or `sort_order => 'zorder(c1,c2)'`.
Maintenance steps (streaming scenarios): each operation its own round trip, as each of Spark's procedures is its own
commit: register, then `CALL <cat>.system.expire_snapshots(table, older_than, retain_last)` (repark reads a
TIMESTAMP literal as UTC) or `rewrite_manifests(table)` or `rewrite_position_delete_files(table, options =>
map('rewrite-all', 'true'))` or `remove_orphan_files(table, older_than, dry_run => false)` (it commits nothing: no
swap) or the compaction above, then the compare-and-swap.  repark's
expire_snapshots deletes the files only the expired snapshots referenced inside the procedure, before the harness can
swap the pointer: when the swap is refused (a writer committed meanwhile), the catalog keeps listing the snapshots
repark expired while their files are gone (the current snapshot is intact: it is never expired); so under a writer
that commits meanwhile its expiry is declared unsupported (`expire-under-writer`).
What it cannot do here is declared: an S3 warehouse or an external REST catalog (`option_problems`: the pointer swap
needs the local SQLite catalog); branches (`not_supported`: repark refuses them with remove-dangling-deletes); a
partition filter (`not_supported`: its `where` parser refuses a predicate on a date column, the harness's filters'
kind; the `where` argument is passed as Spark's, for the day it parses one).
"""

from __future__ import annotations

import importlib.metadata
import json
import math
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from bench.core.catalog import CatalogSettings, pointer
from bench.core.records.engine_run import Deployment
from bench.core.records.telemetry import MemoryCap
from bench.core.requirements import Requirement
from bench.core.sql import spark_literal
from bench.core.uri import local_path
from bench.engines import environment as envs
from bench.engines.base import Capabilities, CompactionJob, Engine, EngineOutcome, MaintenanceOp, PhaseClock
from bench.engines.procedure import Scalar, derived_options, spark_map, strategy_args, where_arg

DISTRIBUTION = "repark"
PINNED_VERSION = "1.5.5"
ENVIRONMENT = envs.EngineEnvironment(
    python="3.12",
    requirements=("repark==1.5.5", "pyarrow==26.0.1", "pydantic==2.14.4", "pydantic-core==2.50.5",
                  "typing-extensions==4.16.0", "typing-inspection==0.4.5", "annotated-types==0.8.0"),
    why="repark 1.5.5 needs Python >= 3.12 and pyarrow >= 25.0.1; the harness runs on Python 3.11")
MEMORY_SHARE = 0.75  # of the budget, for repark's memory pool (whole GB): the rest is the process's own
GIB = 1024**3
# the Rust crates of repark's build that change a measurement, from the wheel's CycloneDX SBOM
SBOM_CRATES = ("iceberg", "repark-iceberg", "datafusion", "parquet", "arrow")
COMMIT_CONFLICT = "CommitConflict"
# found with a table partitioned by a date column, as daily-recent's
PARTITION_FILTER = (
    "repark 1.5.5's rewrite_data_files cannot parse a `where` on a date column: \"Error during planning: Cannot parse "
    "predicates in where option: event_date >= '2025-12-25'\" (the same for DATE '...', CAST(... AS date), date(...), "
    "a TIMESTAMP literal and an integer of days), while it parses bigint and string comparisons; the harness's "
    "partition filters select day partitions (daily-recent)")
FORMAT_PROPERTY = "write.format.default"  # the data file format a writer uses (Iceberg's default: parquet)


def codec_properties(file_format: str) -> tuple[str, str]:
    """The table properties that set the codec and its level of the format's writer (Iceberg's names)."""
    fmt = (file_format or "parquet").lower()
    return f"write.{fmt}.compression-codec", f"write.{fmt}.compression-level"


class ReparkOptions(BaseModel):
    """What a scenario may set under `engines: repark:`."""

    model_config = ConfigDict(extra="forbid")

    rewrite_options: dict[str, Scalar] = Field(default_factory=dict)  # over the derived rewrite_data_files options
    memory_limit_gb: int | None = Field(None, ge=0)  # repark.memory.limit.gb (0: unbounded); None: from the budget
    target_partitions: int | None = Field(None, ge=1)  # repark.target.partitions; None: the job's cores


class CommitConflict(RuntimeError):
    """The harness's catalog no longer names the metadata file repark compacted (another commit came first)."""


def memory_limit_gb(budget_bytes: int | None, explicit: int | None) -> int:
    """repark's memory pool in whole GB: the scenario's, or MEMORY_SHARE of the budget (at least 1)."""
    if explicit is not None:
        return explicit
    if budget_bytes is None:
        return 0
    return max(1, math.floor(budget_bytes * MEMORY_SHARE / GIB))


def current_location(settings: CatalogSettings, table: str) -> str:
    """The metadata file the harness's catalog names for `table` ('ns.t')."""
    return pointer.current_location(settings.sqlite_path, settings.name, table)


def swap_location(settings: CatalogSettings, table: str, expected: str, new: str) -> None:
    """Point the harness's catalog at `new` only if it still names `expected` (bench.core.catalog.pointer's
    compare-and-swap); CommitConflict otherwise."""
    try:
        pointer.swap_location(settings.sqlite_path, settings.name, table, expected, new)
    except pointer.PointerMoved as e:
        raise CommitConflict(f"the catalog's pointer of {table} moved while repark compacted "
                             f"(it no longer names {expected}); the rewrite ({new}) is not published") from e


def sbom_versions(dist: importlib.metadata.Distribution) -> dict[str, str]:
    """The versions (and the fork's source) of SBOM_CRATES in the wheel's CycloneDX SBOM."""
    out: dict[str, str] = {}
    for f in dist.files or []:
        if f.name.endswith(".cyclonedx.json"):
            for c in json.loads(Path(str(dist.locate_file(f))).read_text()).get("components", []):
                if c.get("name") in SBOM_CRATES:
                    purl = str(c.get("purl", ""))
                    src = purl.split("vcs_url=", 1)[1] if "vcs_url=" in purl else ""
                    src = src.replace("%2B", "+").replace("%40", "@")
                    out[f"crate {c['name']}"] = f"{c.get('version')}" + (f" ({src})" if src else "")
    return out


# A conformance reproducer's operation (Engine.reproducer): the table registered in a memory catalog at its metadata
# file, the procedure as the engine calls it (a TIMESTAMP literal read as UTC; orphan removal not a dry run)
REPRODUCER = r'''
def operate(table, metadata_file, warehouse, op):
    import time
    from pathlib import Path
    from repark import ReparkSession

    def utc(t):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + f".{int(round(t * 1000)) % 1000:03d}"

    spark = ReparkSession.builder.getOrCreate()
    spark.register_memory_catalog("repro", warehouse)
    spark.sql(f"CREATE NAMESPACE repro.{table.split('.')[0]}").collect()
    spark.sql(f"CALL repro.system.register_table(table => '{table}', metadata_file => '{metadata_file}')").collect()
    if op["op"] == "expire_snapshots":
        retain = "" if op["retain_last"] is None else f", retain_last => {op['retain_last']}"
        cutoff = op["older_than_ms"] / 1000 if op["older_than_ms"] is not None else time.time() - op["older_than_s"]
        call = f"expire_snapshots(table => '{table}', older_than => TIMESTAMP '{utc(cutoff)}'{retain})"
    elif op["op"] == "remove_orphan_files":
        cutoff = time.time() - op["older_than_s"]
        call = f"remove_orphan_files(table => '{table}', older_than => TIMESTAMP '{utc(cutoff)}', dry_run => false)"
    elif op["op"] == "rewrite_position_deletes":
        call = f"rewrite_position_delete_files(table => '{table}', options => map('rewrite-all', 'true'))"
    else:
        call = f"rewrite_manifests(table => '{table}')"
    print(f"CALL repro.system.{call}")
    rows = [r.asDict() for r in spark.sql(f"CALL repro.system.{call}").collect()]
    log = spark.sql(f"SELECT file FROM repro.{table}.metadata_log_entries").toArrow().to_pylist()
    return str(max(log, key=lambda r: Path(str(r["file"])).name.split("-", 1)[0])["file"]), rows
'''


class ReparkEngine(Engine):
    name: ClassVar[str] = "repark"
    description: ClassVar[str] = ("repark 1.5.5: pure-Rust PySpark-like engine (iceberg-rust fork + DataFusion), "
                                  "its rewrite_data_files port (bin-pack, sort, z-order), expire_snapshots and "
                                  "rewrite_manifests; own environment (Python 3.12), memory catalog, each commit "
                                  "published to the harness's catalog by compare-and-swap")
    color: ClassVar[str] = "#8E44AD"
    Options: ClassVar[type[BaseModel]] = ReparkOptions
    environment: ClassVar[envs.EngineEnvironment | None] = ENVIRONMENT
    min_budget_bytes: ClassVar[int] = 2 * GIB  # a 1 GB pool (the least it takes) within MEMORY_SHARE
    conflict_log_pattern: ClassVar[str] = COMMIT_CONFLICT
    reproducer: ClassVar[str] = REPRODUCER
    # its own refusals: iceberg-rust's ErrorKind::FeatureUnsupported (e.g. "ORC compression codec 'snappy' is not
    # supported by the Rust ORC writer"), DataFusion's NotImplemented
    refusal_pattern: ClassVar[str] = r"FeatureUnsupported|NotImplemented|[Nn]ot (yet )?supported"
    # format v3: `bench conformance --cases format-v3-deletion-vectors` (a Spark-written v3 table with deletion
    # vectors) verified correct here, no delete file live afterwards; sort and z-order: its rewrite_data_files takes
    # strategy and sort_order (tests/engines/test_repark.py); maintenance: its expire_snapshots and rewrite_manifests
    # procedures (tests/runner/test_streaming.py), remove_orphan_files (`bench conformance` on the orphans cases) and
    # rewrite_position_delete_files (on the rewrite-position-deletes cases: it takes options, rewrite-all among them)
    capabilities: ClassVar[Capabilities] = Capabilities(supports=frozenset({
        "format-v3", "sort", "zorder", "maintenance", "expire-snapshots", "rewrite-manifests", "remove-orphan-files",
        "rewrite-position-deletes",
    }), not_supported={
        "branch": "repark 1.5.5 refuses 'branch' with remove-dangling-deletes ('the fork's dangling-delete pass "
                  "reads main's head'), and the harness swaps only the table's pointer (main) by compare-and-swap",
        "partition-filter": PARTITION_FILTER,
        "partition-filter-deletes": PARTITION_FILTER,
        "expire-under-writer": (
            "repark 1.5.5's expire_snapshots deletes the expired snapshots' files inside the procedure, before the "
            "harness's compare-and-swap can be refused (it has no option to keep them): under a concurrent writer a "
            "refused swap would leave the catalog listing snapshots whose files are gone"),
    })

    def __init__(self) -> None:
        self.spark: Any = None
        self.actions: list[str] = []
        self._jobs = 0
        self._pool_gb = 0
        self._partitions = 1

    def requirements(self) -> list[Requirement]:
        return [envs.requirement(self.name, ENVIRONMENT)]

    def option_problems(self, options: dict[str, Any], settings: CatalogSettings) -> list[str]:
        if settings.is_remote or settings.external_rest:
            return ["repark reaches the table through its memory catalog and publishes by swapping the pointer in "
                    "the harness's local SQLite catalog: an S3 warehouse or an external REST catalog is not wired"]
        return []

    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        opts = self.options(job)
        self.actions = []
        if self.spark is not None:  # a shared process (bench conformance): the session of its first job serves
            return
        self._pool_gb = memory_limit_gb(job.memory_budget_bytes, opts.memory_limit_gb)
        self._partitions = opts.target_partitions or max(1, int(job.cores))
        with clock.phase("session", f"ReparkSession (repark.memory.limit.gb {self._pool_gb}, "
                                    f"repark.target.partitions {self._partitions})"):
            from repark import ReparkSession

            self.spark = (ReparkSession.builder.config("repark.memory.limit.gb", str(self._pool_gb))
                          .config("repark.target.partitions", str(self._partitions)).getOrCreate())

    def memory_caps(self) -> list[MemoryCap]:
        return [MemoryCap(name="repark memory pool (repark.memory.limit.gb)", role="other",
                          bytes=self._pool_gb * GIB if self._pool_gb else None,
                          source=f"{MEMORY_SHARE:.0%} of the budget, whole GB (DataFusion's FairSpillPool)")]

    def _sql(self, statement: str) -> list:
        self.actions.append(statement)
        return self.spark.sql(statement).collect()

    def asked(self, job: CompactionJob) -> dict[str, Any]:
        derived = derived_options(job)
        explicit = dict(self.options(job).rewrite_options)
        steps = ["register_table (the catalog's current metadata file, in repark's memory catalog)",
                 "rewrite_data_files"]
        if job.intent().applies_deletes:
            steps.append("a second rewrite_data_files (rewrite-all) where delete files are still live after the first")
        steps.append("compare-and-swap of the harness's catalog pointer")
        return {"intent": job.intent().describe(), "stated_by": job.intent().stated_by,
                "rewrite_data_files": {**derived, **explicit}, "steps": steps,
                "overridden": {k: {"derived": derived[k], "explicit": v} for k, v in explicit.items()
                               if k in derived and derived[k] != v}}

    def _register(self, job: CompactionJob) -> tuple[str, str, str]:
        """(the metadata file registered, the memory catalog's name, the table there)."""
        self._jobs += 1
        cat = f"repark_{self._jobs}"  # a fresh catalog per job: nothing outlives it in a shared process
        self.spark.register_memory_catalog(cat, job.catalog.warehouse_path)
        table = job.catalog.qualified(job.table)
        registered = current_location(job.catalog, table)
        self._sql(f"CREATE NAMESPACE {cat}.{table.split('.')[0]}")
        self._sql(f"CALL {cat}.system.register_table(table => {spark_literal(table)}, "
                  f"metadata_file => {spark_literal(registered)})")
        return registered, cat, table

    def _rewrite(self, job: CompactionJob, cat: str, table: str, options: dict[str, Any]) -> dict[str, Any]:
        """rewrite_data_files with the job's strategy (bin-pack, sort, z-order) and partition filter, as Spark's."""
        rows = self._sql(f"CALL {cat}.system.rewrite_data_files(table => {spark_literal(table)}, "
                         f"{strategy_args(job)}options => {spark_map(options)}{where_arg(job)})")
        return rows[0].asDict() if rows else {}

    @staticmethod
    def _properties(metadata_file: str) -> dict[str, str]:
        """The table's own properties, from its metadata file (repark's SHOW TBLPROPERTIES also lists defaults,
        e.g. the codec zstd, that the table does not set: restoring those would add them)."""
        path = local_path(metadata_file)  # stdlib only: repark's environment has no pyiceberg
        return {str(k): str(v) for k, v in (json.loads(Path(path).read_text()).get("properties") or {}).items()}

    def _set_codec(self, job: CompactionJob, cat: str, table: str, registered: str) -> dict[str, str | None]:
        """The output codec as table properties (repark's writer reads only those: a session setting or a
        rewrite option does not reach it); returns what to restore afterwards (None: unset)."""
        before = self._properties(registered)
        codec, level = codec_properties(before.get(FORMAT_PROPERTY, "parquet"))  # ORC and Avro tables too
        want = {codec: job.output_codec}
        if job.output_codec_level is not None:
            want[level] = str(int(job.output_codec_level))
        changed = {k: v for k, v in want.items() if before.get(k) != v}
        if changed:
            self._sql(f"ALTER TABLE {cat}.{table} SET TBLPROPERTIES ("
                      + ", ".join(f"{spark_literal(k)} = {spark_literal(v)}" for k, v in changed.items()) + ")")
        return {k: before.get(k) for k in changed}

    def _restore(self, cat: str, table: str, restore: dict[str, str | None]) -> None:
        back = {k: v for k, v in restore.items() if v is not None}
        if back:
            self._sql(f"ALTER TABLE {cat}.{table} SET TBLPROPERTIES ("
                      + ", ".join(f"{spark_literal(k)} = {spark_literal(v)}" for k, v in back.items()) + ")")
        gone = [k for k, v in restore.items() if v is None]
        if gone:
            self._sql(f"ALTER TABLE {cat}.{table} UNSET TBLPROPERTIES (" + ", ".join(map(spark_literal, gone)) + ")")

    def _live_deletes(self, cat: str, table: str) -> int:
        return int(self.spark.sql(f"SELECT count(*) AS n FROM {cat}.{table}.delete_files").collect()[0][0])

    def _current(self, cat: str, table: str) -> str:
        """repark's current metadata file of the table: the newest entry of its metadata log."""
        rows = self.spark.sql(f"SELECT file FROM {cat}.{table}.metadata_log_entries").toArrow().to_pylist()
        return str(max(rows, key=lambda r: Path(str(r["file"])).name.split("-", 1)[0])["file"])

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        if self.spark is None:
            raise RuntimeError("repark engine: compact() before open()")
        options = self.asked(job)["rewrite_data_files"]
        result: dict[str, Any] = {}
        with clock.phase("register", "the catalog's metadata file registered in repark's memory catalog"):
            registered, cat, table = self._register(job)
        with clock.phase("codec", "the output codec as table properties, in repark's memory catalog"):
            restore = self._set_codec(job, cat, table, registered)
        with clock.phase("rewrite_data_files", "one procedure call: plan, rewrite, commit to the memory catalog"):
            result = self._rewrite(job, cat, table, options)
        if job.intent().applies_deletes:
            with clock.phase("inspect", "live delete files, from repark's delete_files metadata table"):
                left = self._live_deletes(cat, table)
            result["delete_files_left_after_rewrite"] = left
            if left:
                with clock.phase("second pass", f"rewrite-all: drops the {left} delete file(s) the first left live"):
                    result["second_pass"] = self._rewrite(job, cat, table, {**options, "rewrite-all": True})
        if restore:
            with clock.phase("codec", "the table's own codec properties back, as they were"):
                self._restore(cat, table, restore)
        result["metadata"] = self._publish(job, clock, cat, table, registered)
        return EngineOutcome(engine_result=result, settings=self._settings(job), versions=self.versions(),
                             actions=list(self.actions),
                             deployment=Deployment(mode="embedded", cores=self._partitions))

    def _publish(self, job: CompactionJob, clock: PhaseClock, cat: str, table: str, registered: str) -> dict[str, Any]:
        """The compare-and-swap of the harness's catalog pointer from `registered` to repark's current metadata file
        (CommitConflict when it moved meanwhile); nothing when repark made no new metadata."""
        with clock.phase("commit", "compare-and-swap of the harness's catalog pointer (SQLite)"):
            new = self._current(cat, table)
            if new != registered:
                swap_location(job.catalog, table, registered, new)
        if new == registered:
            self.actions.append("nothing to commit: repark made no new metadata (no-op)")
        else:
            self.actions.append(f"catalog pointer swapped {registered} -> {new} (compare-and-swap)")
        return {"registered": registered, "committed": new if new != registered else None}

    def _procedure(self, job: CompactionJob, clock: PhaseClock, name: str, args: str, detail: str
                   ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """One maintenance procedure as its own round trip: register, `CALL <cat>.system.<name>(table => ...<args>)`
        (phase `name`), compare-and-swap; its result rows, and the metadata files registered and committed."""
        if self.spark is None:
            raise RuntimeError(f"repark engine: {name} before open()")
        with clock.phase("register", "the catalog's metadata file registered in repark's memory catalog"):
            registered, cat, table = self._register(job)
        with clock.phase(name, detail):
            rows = self._sql(f"CALL {cat}.system.{name}(table => {spark_literal(table)}{args})")
        return [r.asDict() for r in rows], self._publish(job, clock, cat, table, registered)

    def expire_snapshots(self, job: CompactionJob, op: MaintenanceOp, clock: PhaseClock) -> dict[str, Any]:
        older = op.cutoff_text(utc=True)  # its session reads a TIMESTAMP literal as UTC
        rows, metadata = self._procedure(
            job, clock, "expire_snapshots", f", older_than => TIMESTAMP '{older}'{op.retain_argument()}",
            f"procedure expire_snapshots(older_than {older} UTC, retain_last {op.retain_text()}): commits to the "
            "memory catalog and deletes the files only expired snapshots referenced")
        return {**(rows[0] if rows else {}), "metadata": metadata}

    def rewrite_manifests(self, job: CompactionJob, clock: PhaseClock) -> dict[str, Any]:
        rows, metadata = self._procedure(job, clock, "rewrite_manifests", "", "procedure rewrite_manifests: "
                                         "metadata only, committed to the memory catalog")
        return {**(rows[0] if rows else {}), "metadata": metadata}

    def rewrite_position_deletes(self, job: CompactionJob, clock: PhaseClock) -> dict[str, Any]:
        rows, metadata = self._procedure(
            job, clock, "rewrite_position_delete_files", ", options => map('rewrite-all', 'true')",
            "procedure rewrite_position_delete_files(rewrite-all): every position delete file rewritten, committed to "
            "the memory catalog")
        return {**(rows[0] if rows else {}), "metadata": metadata}

    def remove_orphan_files(self, job: CompactionJob, op: MaintenanceOp, clock: PhaseClock) -> dict[str, Any]:
        # repark's procedure is a dry run unless told otherwise; it commits nothing, so the pointer is not swapped
        older = op.cutoff_text(utc=True)
        rows, metadata = self._procedure(
            job, clock, "remove_orphan_files", f", older_than => TIMESTAMP '{older}', dry_run => false",
            f"procedure remove_orphan_files(older_than {older} UTC, dry_run false): lists the table's location, "
            "deletes what no metadata reaches")
        return {"orphan_file_location": [r.get("orphan_file_location") for r in rows], "metadata": metadata}

    def _settings(self, job: CompactionJob) -> dict[str, Any]:
        return {"repark.memory.limit.gb": self._pool_gb, "repark.target.partitions": self._partitions,
                "catalog": "memory (register_table), published by compare-and-swap in the harness's SQLite catalog",
                "memory_budget_bytes": job.memory_budget_bytes, "cores": job.cores,
                "work": {k: v for k, v in self.asked(job).items() if k != "rewrite_data_files"},
                "rewrite_data_files": self.asked(job)["rewrite_data_files"]}

    def versions(self) -> dict[str, str]:
        """repark, its environment's Python and pyarrow, and the Rust crates of its build (SBOM)."""
        import platform

        dist = importlib.metadata.distribution(DISTRIBUTION)
        return {DISTRIBUTION: dist.version, "repark env: python": platform.python_version(),
                "repark env: pyarrow": importlib.metadata.version("pyarrow"), **sbom_versions(dist)}

    def close(self) -> None:
        if self.spark is not None:
            try:
                self.spark.stop()
            finally:
                self.spark = None
