"""RisingWave's Rust compaction engine: PyPI `iceberg-compaction` (PyO3 binding of
iceberg-compaction-core: iceberg-rust + DataFusion), driven through the loopback REST catalog.

The engine speaks only REST (its MemoryCatalog cannot create or register tables), so the runner
serves the embedded SQLite catalog over REST and puts the URI into `job.catalog.rest_uri`.

Settings mirror the published run (RisingWave docs `iceberg/compaction-benchmark`):
  * max_input_parallelism = max_output_parallelism = 4 x job.cores (published: 64 on 16 cores);
  * target_file_size_bytes = job.target_file_size_bytes;
  * kind "binpack": strategy `small_files`, grouping `bin_pack`, small_file_threshold_bytes =
    job.small_file_threshold_bytes (the harness gives every engine the same threshold);
  * kind "deletes": strategy `files_with_deletes` with min_delete_file_count_threshold = 1 (every
    data file with at least one delete file).
Any CompactionConfig field can be set in the scenario's engine options (`Options` below); they win.

Steps (each a timed phase of the run):
  1. `compaction`: one `Compaction(...).run()` call (plan, rewrite and commit happen inside it);
  2. deletes only: `inspect`: count live delete files from the table's manifests (pyiceberg over REST);
  3. deletes only, when some are left: `second pass`: the engine's first compaction after a delete
     commit leaves the equality deletes it made dangling live (a known pitfall, reproduced here on
     every run, since the input's last commit is an equality-delete commit); its own way to drop
     them is a second compaction (strategy `full`), which rewrites the compacted files once more.
     Every engine must reach the same end state (no live delete file), so this step is part of its run.

Not configurable in this engine (recorded in every outcome's settings): a memory limit / spill (the
harness enforces the budget from outside), the output codec (always Snappy, one row group per file),
sort order.  Known pitfalls (FIELD-NOTES): snapshot summaries of its `replace` commits omit
deleted-file and record counts (count from manifests); `small_files`/`full` rewrite even a single file
(only `auto` skips); a concurrent delete commit during its retry is lost (correctness bug).
"""

from __future__ import annotations

import importlib.metadata
import inspect
import math
import time
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from bench.core.catalog import CatalogSettings
from bench.core.errors import UserError
from bench.core.records.engine_run import Deployment
from bench.core.requirements import Requirement, module_requirement
from bench.engines.base import (
    REPRODUCER_REST_CATALOG,
    Capabilities,
    CompactionJob,
    Engine,
    EngineOutcome,
    Knob,
    MaintenanceOp,
    PhaseClock,
)

DISTRIBUTION = "iceberg-compaction"
PINNED_VERSION = "202604.9.0rc0"
PARALLELISM_PER_CORE = 4  # published: 64 = 4 x 16 cores, for both input and output parallelism
OUTPUT_CODEC = "snappy"
PITFALLS = [
    "the first compaction after a delete commit leaves the (now dangling) delete files live: a second "
    "pass removes them",
    "snapshot summaries of its replace commits omit deleted-file/record counts: count from manifests",
    "strategies small_files and full rewrite even a single file (only auto skips)",
]
FIX = "make setup (installs iceberg-compaction==202604.9.0rc0 into .venv)"
KNOBS = (
    Knob("max_input_parallelism", "max_input_parallelism", (1, 2, 4, 8), published=PARALLELISM_PER_CORE, per_core=True,
         note="read tasks in flight (x cores)"),
    Knob("max_output_parallelism", "max_output_parallelism", (1, 2, 4, 8), published=PARALLELISM_PER_CORE,
         per_core=True, note="writers in flight (x cores)"),
    Knob("max_record_batch_rows", "max_record_batch_rows", (1024, 4096, 16384, 65536), published=1024,
         note="rows per Arrow batch through DataFusion (engine default 1024)"),
    Knob("max_concurrent_closes", "max_concurrent_closes", (1, 2, 4, 8), published=4,
         note="output files finished (footer written, closed) at once (engine default 4)"),
    Knob("enable_prefetch", "enable_prefetch", (False, True), published=False,
         note="prefetch input files while the previous ones are read (engine default off)"),
)


class RisingWaveOptions(BaseModel):
    """CompactionConfig fields of iceberg-compaction 202604.9.0rc0 a scenario may set (None: the
    harness's choice above, or the engine's default)."""

    model_config = ConfigDict(extra="forbid")

    strategy: Literal["auto", "small_files", "full", "files_with_deletes"] | None = None
    target_file_size_bytes: int | None = None
    small_file_threshold_bytes: int | None = None
    min_size_per_partition: int | None = None
    max_file_count_per_partition: int | None = None
    max_input_parallelism: int | None = None
    max_output_parallelism: int | None = None
    grouping_strategy: Literal["single", "bin_pack"] | None = None
    bin_pack_target_size_bytes: int | None = None
    min_group_size_bytes: int | None = None
    min_group_file_count: int | None = None
    min_delete_file_count_threshold: int | None = None
    data_file_prefix: str | None = None
    max_record_batch_rows: int | None = None
    max_concurrent_closes: int | None = None
    enable_validate_compaction: bool | None = None
    enable_prefetch: bool | None = None
    auto_min_small_files_count: int | None = None
    auto_min_delete_heavy_files_count: int | None = None
    max_auto_plans_per_run: int | None = None


def _plain(value: Any) -> Any:
    """A PyO3 result object -> JSON-friendly data (its public, non-callable attributes)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    out = {}
    for name in dir(value):
        if name.startswith("_"):
            continue
        attr = getattr(value, name)
        if not callable(attr):
            out[name] = _plain(attr)
    return out or repr(value)


def max_age_secs(op: MaintenanceOp) -> int:
    """The op's cutoff as the binding takes it, an age in whole seconds from when it runs: the op's age, or for a
    point in time its age now rounded up, so that its cutoff is never later than the op's (a snapshot or file of the
    cutoff's second is kept, not removed)."""
    if op.older_than_ms is None:
        return int(op.older_than_s)
    return max(0, math.ceil(time.time() - op.cutoff_unix()))


def _result(result: Any) -> dict[str, Any]:
    if result is None:
        return {"noop": True}
    return {"input_files_count": result.input_files_count, "output_files_count": result.output_files_count,
            "input_bytes_total": result.input_bytes_total, "output_bytes_total": result.output_bytes_total,
            "manifest_rewrite": _plain(result.manifest_rewrite)}


def derived_values(job: CompactionJob, strategy: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """CompactionConfig arguments from the job's sizes, cores and intent (bench.core.work), with notes: small
    files are work (strategy small_files, bin-packed, the harness's threshold), the files with deletes
    (files_with_deletes) or every file (full); applying
    deletes: a data file with one delete file qualifies (min_delete_file_count_threshold 1), and a second pass
    (compact(): strategy full) drops the delete files the first leaves live.  `strategy`: the scenario's explicit
    strategy, when it gives one (then the small-file settings only go with small_files)."""
    work = job.intent()
    parallelism = PARALLELISM_PER_CORE * max(1, int(job.cores))
    values: dict[str, Any] = {"target_file_size_bytes": int(job.target_file_size_bytes),
                              "max_input_parallelism": parallelism, "max_output_parallelism": parallelism,
                              "strategy": {"all": "full", "with-deletes": "files_with_deletes"}.get(work.files,
                                                                                                    "small_files")}
    notes = [f"max_input_parallelism = max_output_parallelism = {PARALLELISM_PER_CORE} x "
             f"{job.cores} cores = {parallelism} (published: 64 on 16 cores)",
             f"strategy {values['strategy']}: {work.describe()} ({work.stated_by or 'intent'})"]
    if (strategy or values["strategy"]) in ("small_files", "full"):
        values["grouping_strategy"] = "bin_pack"
    if (strategy or values["strategy"]) == "small_files":
        values["small_file_threshold_bytes"] = int(job.small_file_threshold_bytes)
        notes.append("small_file_threshold_bytes = the harness's threshold, the same for every engine; "
                     f"min_group_file_count not set: it skips any bin-packed group of fewer files, which could leave "
                     f"{work.min_files} small files of one partition in separate groups (a lone small file is "
                     "rewritten too)")
    if work.applies_deletes:
        values["min_delete_file_count_threshold"] = 1
        notes.append("min_delete_file_count_threshold = 1 (every data file with a delete file)")
    return values, notes


# A conformance reproducer's operation (Engine.reproducer): the binding reaches a local table only through a REST
# catalog, so the script serves the SQLite catalog with the harness's loopback server (the catalog only: the
# operation is the binding's own call, with the cutoff as the engine takes it: an age in whole seconds, rounded up)
REPRODUCER = r'''
def operate(table, metadata_file, warehouse, op):
    import math, sqlite3, time
    from pathlib import Path
    import iceberg_compaction as ic

    if op["op"] == "rewrite_position_deletes":  # the binding's operations: its classes with a run(), not the protocol
        ops = sorted(n for n, c in vars(ic).items() if isinstance(c, type) and hasattr(c, "run")
                     and not getattr(c, "_is_protocol", False))
        raise NotImplementedError(f"iceberg-compaction has no position-delete rewrite; its operations: "
                                  f"{', '.join(ops)}")
    with rest_catalog(warehouse) as uri:
        catalog = ic.RestCatalog("bench", uri=uri, warehouse=warehouse, properties={})
        cutoff = op["older_than_ms"] / 1000 if op["older_than_ms"] is not None else time.time() - op["older_than_s"]
        age = max(0, math.ceil(time.time() - cutoff))
        if op["op"] == "expire_snapshots":
            kept = {} if op["retain_last"] is None else {"retain_last": op["retain_last"]}
            print(f"ExpireSnapshots(ExpireSnapshotsConfig({kept}, max_snapshot_age_secs={age})).run()")
            config = ic.ExpireSnapshotsConfig(**kept, max_snapshot_age_secs=age)
            result = ic.ExpireSnapshots(catalog, table, config).run()
        elif op["op"] == "remove_orphan_files":
            print(f"RemoveOrphanFiles(RemoveOrphanFilesConfig(older_than_secs={age})).run()")
            result = ic.RemoveOrphanFiles(catalog, table, ic.RemoveOrphanFilesConfig(older_than_secs=age)).run()
        else:
            print("RewriteManifests(RewriteManifestsConfig()).run()")
            result = ic.RewriteManifests(catalog, table, ic.RewriteManifestsConfig()).run()
    ns, name = table.split(".")
    with sqlite3.connect(Path(warehouse) / "catalog.db") as db:
        (now,) = db.execute("SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND table_name = ?",
                            (ns, name)).fetchone()
    return now, repr(result)
'''


class RisingWaveEngine(Engine):
    name: ClassVar[str] = "risingwave"
    description: ClassVar[str] = ("RisingWave's Rust compaction engine (PyPI iceberg-compaction, "
                                  "DataFusion), through the loopback REST catalog")
    color: ClassVar[str] = "#2F5BEA"
    packages: ClassVar[tuple[str, ...]] = (DISTRIBUTION,)
    Options: ClassVar[type[BaseModel]] = RisingWaveOptions
    conflict_log_pattern: ClassVar[str] = r"CommitConflict|[Cc]onflict"  # iceberg-rust's commit-conflict errors
    reproducer: ClassVar[str] = REPRODUCER_REST_CATALOG + REPRODUCER
    # iceberg-rust's ErrorKind::FeatureUnsupported ("FeatureUnsupported => ..."), DataFusion's NotImplemented
    refusal_pattern: ClassVar[str] = r"FeatureUnsupported|NotImplemented|[Nn]ot (yet )?supported"
    # Compaction(..., to_branch=B) plans from B and commits to B
    # ExpireSnapshots(catalog, table, ExpireSnapshotsConfig(retain_last, max_snapshot_age_secs, ...)) and
    # RewriteManifests(catalog, table, RewriteManifestsConfig(clustering_strategy, ...)), each with to_branch
    # format-v3: it is served a v3 table (the harness's catalog writes v3 metadata: bench.core.catalog.v3); what it
    # does with one (deletion vectors, row lineage) is its own behaviour, judged like any other
    # iceberg-compaction speaks REST only
    capabilities: ClassVar[Capabilities] = Capabilities(commits_through_rest=True, supports=frozenset({
        "branch", "maintenance", "expire-snapshots", "expire-under-writer", "rewrite-manifests",
        "rewrite-manifests-branch", "remove-orphan-files", "format-v3"}), not_supported={
        **{feature: (f"iceberg-compaction {PINNED_VERSION} cannot {what}: its CompactionConfig has no sort order or "
                     "clustering field (its parameters: strategy auto | small_files | full | files_with_deletes, "
                     "grouping_strategy single | bin_pack, sizes, parallelism, batch rows, prefetch, validation), and "
                     "Compaction(catalog, table, config, to_branch, retry_config) takes none either (inspected "
                     "signatures of the installed binding)")
           for feature, what in (("sort", "sort its output"), ("zorder", "z-order its output"))},
        "partition-filter": (
            f"iceberg-compaction {PINNED_VERSION} has no partition filter: CompactionConfig's parameters (strategy, "
            "target_file_size_bytes, small_file_threshold_bytes, min_size_per_partition, max_file_count_per_partition, "
            "parallelism, grouping, delete thresholds, data_file_prefix, batch rows, closes, validation, prefetch, "
            "auto thresholds, max_auto_plans_per_run) select no partitions, and Compaction(catalog, table, config, "
            "to_branch, retry_config).run() takes no predicate: it plans over every partition"),
        "partition-filter-deletes": "no partition filter at all (see partition-filter)",
        "rewrite-position-deletes": (
            f"iceberg-compaction {PINNED_VERSION} has no position-delete rewrite: its operations are Compaction, "
            "ExpireSnapshots, RemoveOrphanFiles and RewriteManifests (the installed binding's module), and "
            "Compaction's strategies rewrite data files (files_with_deletes applies the deletes to new data files), "
            "never the delete files themselves")})
    output_codecs: ClassVar[frozenset[str] | None] = frozenset({OUTPUT_CODEC})
    knobs: ClassVar[tuple[Knob, ...]] = KNOBS

    def __init__(self) -> None:
        self._catalog: Any = None
        self._inspector: Any = None
        self._settings: CatalogSettings | None = None
        self._properties: dict[str, str] = {}

    # -- doctor -------------------------------------------------------------------------------
    def requirements(self) -> list[Requirement]:
        reqs = [module_requirement("iceberg_compaction", FIX)]
        try:
            found = importlib.metadata.version(DISTRIBUTION)
        except importlib.metadata.PackageNotFoundError:
            found = None
        reqs.append(Requirement(f"{DISTRIBUTION}=={PINNED_VERSION}", found == PINNED_VERSION,
                                f"found {found}" if found else "not installed", FIX))
        return reqs

    # -- life cycle ---------------------------------------------------------------------------
    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        if job.output_codec != OUTPUT_CODEC:
            raise UserError(f"risingwave cannot write {job.output_codec} (iceberg-compaction always writes "
                            f"{OUTPUT_CODEC})")
        settings = job.catalog
        if not settings.rest_uri:
            raise UserError("the risingwave engine needs a REST catalog but the job's catalog has no rest_uri")
        with clock.phase("catalog client", "iceberg-rust REST client (it fetches /v1/config lazily)"):
            import iceberg_compaction as ic

            # S3 warehouse: FileIO settings (endpoint, region, credentials) from this process's
            # environment; the loopback server hands the same out in LoadTableResult.config
            self._properties = {**settings.file_io_properties(),
                                **{str(k): str(v) for k, v in settings.properties.items()}}
            warehouse = self._properties.get("warehouse") if settings.external_rest else settings.rest_warehouse
            self._settings = settings
            self._catalog = ic.RestCatalog(settings.name, uri=settings.rest_uri, warehouse=warehouse,
                                           properties=self._properties)
        if job.intent().applies_deletes:
            with clock.phase("inspector", "pyiceberg REST client, for counting live delete files afterwards"):
                import pyiceberg.io.pyarrow  # noqa: F401
                from pyiceberg.catalog.rest import RestCatalog

                import bench.core.table.entries  # noqa: F401

                self._inspector = RestCatalog(settings.name, uri=str(settings.rest_uri), **self._properties)

    def close(self) -> None:
        self._catalog = None

    # -- the compaction -----------------------------------------------------------------------
    def config_values(self, job: CompactionJob) -> tuple[dict[str, Any], list[str]]:
        """The CompactionConfig arguments for `job` and notes on where non-defaults came from."""
        opts = {k: v for k, v in self.options(job).model_dump().items() if v is not None}
        values, notes = derived_values(job, opts.get("strategy"))
        values.update(opts)
        if opts:
            notes.append(f"from the scenario's options: {sorted(opts)}")
        return values, notes

    def asked(self, job: CompactionJob) -> dict[str, Any]:
        """What the engine is asked for `job` (derived_values), the scenario's explicit options over it (they
        win; each one that differs from the derived value is recorded under `overridden`)."""
        explicit = {k: v for k, v in self.options(job).model_dump().items() if v is not None}
        derived, _ = derived_values(job)  # what the intent alone asks
        values, notes = self.config_values(job)
        steps = ["Compaction.run()"]
        if job.intent().applies_deletes:
            steps.append("a second pass (strategy full) where delete files are still live after the first")
        return {"intent": job.intent().describe(), "stated_by": job.intent().stated_by, "config": values,
                "steps": steps, "notes": notes,
                "overridden": {k: {"derived": derived[k], "explicit": v} for k, v in explicit.items()
                               if k in derived and derived[k] != v}}

    def _config(self, values: dict[str, Any]) -> Any:
        import iceberg_compaction as ic

        try:
            return ic.CompactionConfig(**values)
        except (ic.ConfigError, TypeError, ValueError) as e:
            raise UserError(f"invalid risingwave CompactionConfig {values}: {e}") from None

    def _run(self, job: CompactionJob, values: dict[str, Any], actions: list[str]) -> Any:
        import iceberg_compaction as ic

        config = self._config(values)
        actions.append(f"Compaction(RestCatalog({job.catalog.rest_uri!r}), {job.table!r}, CompactionConfig("
                       f"{', '.join(f'{k}={v!r}' for k, v in values.items())}), to_branch={job.branch!r}).run()")
        return ic.Compaction(self._catalog, job.table, config, to_branch=job.branch).run()

    def live_delete_files(self, job: CompactionJob) -> int:
        """Live delete files of the compacted branch's head, from its manifests (pyiceberg, REST)."""
        from bench.core.table.entries import live_files

        tbl = self._inspector.load_table(job.table)
        ref = tbl.metadata.refs.get(job.branch)
        return len(live_files(tbl, ref.snapshot_id if ref is not None else None).deletes)

    def finish_deletes(self, job: CompactionJob, clock: PhaseClock, values: dict[str, Any],
                       actions: list[str], result: dict[str, Any]) -> None:
        """Reach the end state of a deletes compaction: no live delete file (step 2 and 3 above)."""
        with clock.phase("inspect", "count live delete files in the manifests (pyiceberg over REST)"):
            left = self.live_delete_files(job)
        result["delete_files_left_after_compaction"] = left
        if left:
            with clock.phase("second pass", f"strategy full: drops the {left} dangling delete file(s) the "
                                            "first pass left live"):
                second = {**values, "strategy": "full"}
                result["second_pass"] = _result(self._run(job, second, actions))

    def versions(self) -> dict[str, str]:
        import iceberg_compaction as ic

        module_version = getattr(ic, "__version__", None)
        return {DISTRIBUTION: importlib.metadata.version(DISTRIBUTION),
                "iceberg_compaction.__version__": str(module_version) if module_version else "not reported"}

    def expire_snapshots(self, job: CompactionJob, op: MaintenanceOp, clock: PhaseClock) -> dict[str, Any]:
        import iceberg_compaction as ic

        age = max_age_secs(op)
        # the binding takes no table property: without a stated retain_last it keeps its own default (1)
        kept = {} if op.retain_last is None else {"retain_last": op.retain_last}
        config = ic.ExpireSnapshotsConfig(**kept, max_snapshot_age_secs=age)
        with clock.phase("ExpireSnapshots", f"ExpireSnapshots(retain_last={config.retain_last}, max_snapshot_age_secs="
                                            f"{age}).run(): one commit"):
            result = ic.ExpireSnapshots(self._catalog, job.table, config, to_branch=job.branch).run()
        return {"noop": True} if result is None else {"expired_snapshot_count": result.expired_snapshot_count}

    def remove_orphan_files(self, job: CompactionJob, op: MaintenanceOp, clock: PhaseClock) -> dict[str, Any]:
        import iceberg_compaction as ic

        age = max_age_secs(op)
        with clock.phase("RemoveOrphanFiles", f"RemoveOrphanFiles(older_than_secs={age}).run(): lists the table's "
                                              "location, deletes what no metadata reaches"):
            result = ic.RemoveOrphanFiles(self._catalog, job.table, ic.RemoveOrphanFilesConfig(
                older_than_secs=age)).run()
        return _plain(result)

    def rewrite_manifests(self, job: CompactionJob, clock: PhaseClock) -> dict[str, Any]:
        import iceberg_compaction as ic

        with clock.phase("RewriteManifests", "RewriteManifests(RewriteManifestsConfig()).run(): metadata only"):
            result = ic.RewriteManifests(self._catalog, job.table, ic.RewriteManifestsConfig(),
                                         to_branch=job.branch).run()
        return {"noop": True} if result is None else _plain(result)

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        if self._catalog is None:
            raise RuntimeError("open() was not called")
        values, notes = self.config_values(job)
        actions: list[str] = []
        with clock.phase("compaction", "one Compaction.run() call: plan, rewrite and commit"):
            result = _result(self._run(job, values, actions))
        if job.intent().applies_deletes:
            self.finish_deletes(job, clock, values, actions, result)
        import iceberg_compaction as ic

        used = {f: getattr(self._config(values), f) for f in inspect.signature(ic.CompactionConfig).parameters}
        settings = {
            **used, "to_branch": job.branch, "catalog": "rest", "rest_uri": job.catalog.rest_uri,
            "warehouse": job.catalog.warehouse,
            "output_codec": f"{OUTPUT_CODEC} (fixed by iceberg-compaction: not configurable)",
            "memory_limit": "not configurable; enforced by the harness from outside",
            "memory_budget_bytes": job.memory_budget_bytes, "cores": job.cores, "notes": notes,
            "known_pitfalls": PITFALLS,
            "work": {k: v for k, v in self.asked(job).items() if k != "config"},
        }
        if result.get("noop"):
            actions.append("run() returned None: nothing to compact (no-op)")
        return EngineOutcome(engine_result=result, settings=settings, versions=self.versions(), actions=actions,
                             deployment=Deployment(mode="embedded", cores=job.cores, writes_at_once={
                                 "max_output_parallelism": int(used["max_output_parallelism"])}))
