"""RisingWave's Rust compaction engine: PyPI `iceberg-compaction` (PyO3 binding of
iceberg-compaction-core: iceberg-rust + DataFusion), driven through the loopback REST catalog.

The engine speaks only REST (its MemoryCatalog cannot create or register tables), so the runner
serves the embedded SQLite catalog with `bench.catalog.rest.serve()` and puts the URI into
`job.catalog["rest_uri"]`.

Settings mirror the published run (RisingWave docs `iceberg/compaction-benchmark`):
  * max_input_parallelism = max_output_parallelism = 4 x job.cores (published: 64 on 16 cores);
  * target_file_size_bytes = job.target_file_size_bytes;
  * kind "binpack": strategy `small_files` (or job.options["strategy"]), grouping `bin_pack`,
    small_file_threshold_bytes = 0.75 x target -- our choice, mirroring Spark binpack's default
    `min-file-size-bytes` (75 % of the target) so both engines select the same files;
  * kind "deletes": strategy `files_with_deletes` with min_delete_file_count_threshold = 1 (every
    data file with at least one delete file), or `full` when job.options["strategy"] == "full".
Any CompactionConfig field can be set in the scenario's engine options, either at top level
(e.g. `grouping_strategy: bin_pack`) or under `config:`; `config:` wins.  Unknown keys are an error.

Not configurable in this engine (recorded in every outcome's settings): a memory limit / spill (the
harness enforces the budget from outside), the output codec (always Snappy, one row group per file),
sort order.  Known pitfalls (FIELD-NOTES): the first compaction after a delete commit can leave the now
dangling delete files live; the snapshot summaries of its `replace` commits omit deleted-file and
record counts (count from manifests); `small_files`/`full` rewrite even a single file (only `auto`
skips); a concurrent delete commit during its retry is lost (correctness bug).
"""

from __future__ import annotations

import importlib.metadata
import inspect
from typing import Any, ClassVar

from bench.catalog import CatalogSettings
from bench.engines.base import CompactionJob, EngineOutcome, Requirement, module_requirement
from bench.errors import UserError

DISTRIBUTION = "iceberg-compaction"
PINNED_VERSION = "202604.9.0rc0"
PARALLELISM_PER_CORE = 4  # published: 64 = 4 x 16 cores, for both input and output parallelism
SMALL_FILE_RATIO = 0.75  # Spark binpack's default min-file-size-bytes = 75 % of the target size
OUTPUT_CODEC = "snappy"
PITFALLS = [
    "the first compaction after a delete commit can leave the (now dangling) delete files live: "
    "count delete files from manifests",
    "snapshot summaries of its replace commits omit deleted-file/record counts: count from manifests",
    "strategies small_files and full rewrite even a single file (only auto skips)",
]
FIX = "make setup (installs iceberg-compaction==202604.9.0rc0 into .venv)"


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


class RisingWaveEngine:
    name: ClassVar[str] = "risingwave"
    description: ClassVar[str] = ("RisingWave's Rust compaction engine (PyPI iceberg-compaction, "
                                  "DataFusion), through the loopback REST catalog")

    def __init__(self) -> None:
        self._catalog = None
        self._rest_uri: str | None = None
        self._warehouse: str | None = None

    # -- doctor -------------------------------------------------------------------------------
    def requirements(self) -> list[Requirement]:
        reqs = [module_requirement("iceberg_compaction", FIX)]
        try:
            found = importlib.metadata.version(DISTRIBUTION)
        except importlib.metadata.PackageNotFoundError:
            found = None
        reqs.append(Requirement(
            f"{DISTRIBUTION}=={PINNED_VERSION}", found == PINNED_VERSION,
            f"found {found}" if found else "not installed", FIX))
        return reqs

    # -- life cycle ---------------------------------------------------------------------------
    def open(self, job: CompactionJob) -> None:
        import iceberg_compaction as ic

        settings = CatalogSettings.from_dict(job.catalog)
        if not settings.rest_uri:
            raise UserError("the risingwave engine needs a REST catalog but job.catalog has no rest_uri "
                            "(the runner serves one with bench.catalog.rest.serve)")
        # S3 warehouse: FileIO settings (endpoint, region, credentials) from this process's environment;
        # the loopback server hands the same out in LoadTableResult.config
        properties = {**settings.file_io_properties(),
                      **{str(k): str(v) for k, v in settings.properties.items()}}
        if settings.external_rest:
            warehouse = properties.get("warehouse")
        else:
            warehouse = settings.rest_warehouse  # the loopback server accepts its path or S3 URI
        self._rest_uri = settings.rest_uri
        self._warehouse = settings.warehouse
        self._catalog = ic.RestCatalog(settings.name, uri=settings.rest_uri, warehouse=warehouse,
                                       properties=properties)

    def close(self) -> None:
        self._catalog = None

    # -- the compaction -----------------------------------------------------------------------
    def config_values(self, job: CompactionJob) -> tuple[dict[str, Any], list[str]]:
        """The CompactionConfig arguments for `job` and notes on where non-defaults came from."""
        import iceberg_compaction as ic

        fields = list(inspect.signature(ic.CompactionConfig).parameters)
        opts = dict(job.options or {})
        overrides = dict(opts.pop("config", None) or {})
        unknown = sorted(set(opts) - set(fields)) + sorted(f"config.{k}" for k in set(overrides) - set(fields))
        if unknown:
            raise UserError(f"unknown risingwave option(s) {', '.join(unknown)}; valid: config, "
                            f"{', '.join(fields)}")
        parallelism = PARALLELISM_PER_CORE * max(1, int(job.cores))
        values: dict[str, Any] = {
            "target_file_size_bytes": int(job.target_file_size_bytes),
            "max_input_parallelism": parallelism,
            "max_output_parallelism": parallelism,
        }
        notes = [f"max_input_parallelism = max_output_parallelism = {PARALLELISM_PER_CORE} x "
                 f"{job.cores} cores = {parallelism} (published: 64 on 16 cores)"]
        if job.kind == "binpack":
            values.update(strategy="small_files", grouping_strategy="bin_pack",
                          small_file_threshold_bytes=int(SMALL_FILE_RATIO * job.target_file_size_bytes))
            notes.append(f"small_file_threshold_bytes = {SMALL_FILE_RATIO} x target (mirrors Spark "
                         "binpack's default min-file-size-bytes)")
        elif job.kind == "deletes":
            # `strategy: full` in the options (applied below) rewrites every data file instead
            values.update(strategy="files_with_deletes", min_delete_file_count_threshold=1)
            notes.append("min_delete_file_count_threshold = 1 (every data file with a delete file)")
        else:
            raise UserError(f"risingwave engine: unknown job kind {job.kind!r} (binpack | deletes)")
        values.update(opts)
        values.update(overrides)
        if opts or overrides:
            notes.append(f"from the scenario's options: {sorted({**opts, **overrides})}")
        return values, notes

    def compact(self, job: CompactionJob) -> EngineOutcome:
        import iceberg_compaction as ic

        if self._catalog is None:
            raise RuntimeError("open() was not called")
        values, notes = self.config_values(job)
        try:
            config = ic.CompactionConfig(**values)
        except (ic.ConfigError, TypeError, ValueError) as e:
            raise UserError(f"invalid risingwave CompactionConfig {values}: {e}") from None
        used = {f: getattr(config, f) for f in inspect.signature(ic.CompactionConfig).parameters}
        call = (f"Compaction(RestCatalog({self._rest_uri!r}), {job.table!r}, "
                f"CompactionConfig({', '.join(f'{k}={v!r}' for k, v in values.items())}), "
                f"to_branch='main').run()")
        result = ic.Compaction(self._catalog, job.table, config, to_branch="main").run()

        if result is None:
            engine_result: dict[str, Any] = {"noop": True}
        else:
            engine_result = {
                "input_files_count": result.input_files_count,
                "output_files_count": result.output_files_count,
                "input_bytes_total": result.input_bytes_total,
                "output_bytes_total": result.output_bytes_total,
                "manifest_rewrite": _plain(result.manifest_rewrite),
            }
        settings = {
            **used,
            "to_branch": "main",
            "catalog": "rest",
            "rest_uri": self._rest_uri,
            "warehouse": self._warehouse,
            "output_codec": f"{OUTPUT_CODEC} (fixed by iceberg-compaction: not configurable)",
            "memory_limit": "not configurable; enforced by the harness from outside",
            "memory_budget_bytes": job.memory_budget_bytes,
            "cores": job.cores,
            "notes": notes,
            "known_pitfalls": PITFALLS,
        }
        versions = {DISTRIBUTION: importlib.metadata.version(DISTRIBUTION)}
        module_version = getattr(ic, "__version__", None)
        versions["iceberg_compaction.__version__"] = str(module_version) if module_version else "not reported"
        actions = [f"strategy={used['strategy']} grouping_strategy={used['grouping_strategy']}", call]
        if result is None:
            actions.append("run() returned None: nothing to compact (no-op)")
        return EngineOutcome(engine_result=engine_result, settings=settings, versions=versions,
                             actions=actions, output_codec=OUTPUT_CODEC)
