"""Scenarios are declarative data: scenarios/<name>.yaml, validated by this schema on load.

A scenario names its table recipe (datagen.recipes, a union by kind), the target file size, the
small-file threshold and output codec every engine is held to, each engine's options (validated by
that engine's own Options model, before any data is generated) and the published figures.  Adding a
scenario is adding a file.  Each result records the scenario exactly as it was run (`record()`).

Profiles are declarative too: scenarios/profiles/ENGINE/PROFILE.yaml names a set of engine options
(`options`, for every scenario, and `scenarios: {name: options}` per scenario, over them) that
`--engines ENGINE:PROFILE` runs.  An engine run's options are, each over the one before:
the scenario's `engines: ENGINE:`, the profile's `options`, the profile's `scenarios: SCENARIO:`,
and `--option ENGINE.KEY=VALUE` from the command line; the engine's Options model validates the
result, and every result records it (`engine_options`) with the profile it came from.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from bench.core.errors import UserError
from bench.core.partition_filter import parse_filter
from bench.core.records.scenario import Published, ScenarioRecord
from bench.core.settings import env_settings
from bench.core.work import Work, WorkIntent, default_work
from bench.engines import REGISTRY, engine_class, split_label
from bench.engines.base import MaintenanceOp
from datagen.recipes import TIME_SPECS, TableRecipe
from datagen.schema import PARTITIONED_SCHEMA
from datagen.sink import AppendSink

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
PROFILE_DIR = SCENARIO_DIR / "profiles"  # $BENCH_PROFILE_DIR instead when set (see profile_dir())
KIND_OF_RECIPE = {"binpack": "smallfiles", "deletes": "deletes"}


class Output(BaseModel):
    """What every file an engine writes must be."""

    model_config = ConfigDict(extra="forbid")

    codec: Literal["snappy", "zstd", "gzip", "lz4", "uncompressed", "brotli"] = "snappy"
    level: int | None = None
    # table properties the compaction may set (not compared by the integrity check `same_properties`)
    sets_properties: list[str] = Field(default_factory=list)


class LiveWriter(BaseModel):
    """A writer that commits to the table while each engine compacts it (datagen.live): each case is
    its own engine run, held between the engine's planning and its commit (bench.runner.live)."""

    model_config = ConfigDict(extra="forbid")

    cases: list[Literal["append", "position-delete", "equality-delete"]] = Field(
        default=["append", "position-delete", "equality-delete"], min_length=1)  # pydantic copies it per instance
    rows: int = Field(100, ge=1)  # rows each case appends or deletes (not scaled)


StreamMode = Literal["sequential", "concurrent", "branch"]
CDC_ONLY = {"commits_per_cycle", "rows_per_commit", "update_share", "delete_share", "in_batch_delete_share",
            "append_only_share", "cadence_s"}  # the CDC writer's fields (a sink has its own)


class Streaming(BaseModel):
    """A table that is never done being written (bench.runner.streaming): the writer (datagen.streaming)
    commits `commits_per_cycle` micro-batches, then each engine runs one maintenance step (`maintenance`, in
    order), for `cycles` cycles; the table is verified against the generator after every cycle.  Scale rule:
    `rows_per_commit` is for `local_scale` and grows linearly with --scale (at least 40); cycles, commits and
    shares are not scaled.  With `sink`, the writer is an append sink (datagen.sink) instead of the CDC writer:
    its flushes per cycle, rows per flush and cadence come from the sink's figures by its time-compression rule,
    and the CDC fields (commits_per_cycle, rows_per_commit, the shares, cadence_s) are not used."""

    model_config = ConfigDict(extra="forbid")

    cycles: int = Field(20, ge=1)
    commits_per_cycle: int = Field(3, ge=1)
    rows_per_commit: int = Field(1000, ge=10)  # at local_scale
    update_share: float = Field(0.1, ge=0.0, le=1.0)  # rows per commit that are new versions of earlier rows
    delete_share: float = Field(0.05, ge=0.0, le=1.0)  # earlier rows deleted per commit (equality deletes)
    in_batch_delete_share: float = Field(0.05, ge=0.0, le=1.0)  # new rows deleted again in their commit (position)
    append_only_share: float = Field(0.25, ge=0.0, le=1.0)  # commits with new rows only
    cadence_s: float = Field(0.5, ge=0.0)  # concurrent and branch modes: the writer's pause between commits
    mode: StreamMode = "sequential"  # `bench run --stream-mode` overrides
    sink: AppendSink | None = None  # the writer: an append sink (datagen.sink); None: the CDC writer
    maintenance: list[MaintenanceOp] = Field(min_length=1, default_factory=lambda: [
        MaintenanceOp.model_validate({"op": op}) for op in ("expire_snapshots", "compact", "rewrite_manifests")])

    @model_validator(mode="after")
    def _shares(self) -> Streaming:
        if self.update_share + self.delete_share > 1.0:
            raise ValueError("update_share + delete_share must not exceed 1")
        cdc_only = sorted(self.model_fields_set & CDC_ONLY)
        if self.sink is not None and cdc_only:
            raise ValueError(f"{', '.join(cdc_only)}: the CDC writer's, not used with a sink (its flushes, rows and "
                             "cadence come from its own figures)")
        return self

    def rows_at(self, scale: float, local_scale: float) -> int:
        """Rows per commit at `scale` (the scale rule; the sink's own with a sink)."""
        if self.sink is not None:
            return self.sink.at(scale).rows_per_flush
        return max(40, int(round(self.rows_per_commit * scale / local_scale)))

    def commits_at(self, scale: float) -> int:
        """The writer's commits per cycle (a sink's flushes per cycle)."""
        return self.sink.at(scale).flushes_per_cycle if self.sink is not None else self.commits_per_cycle

    def cadence_at(self, scale: float) -> float:
        """Wall seconds between two writer commits in concurrent and branch modes."""
        return self.sink.at(scale).cadence_s if self.sink is not None else self.cadence_s


Strategy = Literal["binpack", "sort", "zorder"]


class Rewrite(BaseModel):
    """How the compaction lays out what it rewrites: binpack (concatenate into target-sized files), sort
    (sorted by the table's sort order: engine feature 'sort') or zorder (clustered by a z-order curve of
    `zorder_columns`: feature 'zorder').  `bench run --strategy` overrides `strategy`."""

    model_config = ConfigDict(extra="forbid")

    strategy: Strategy = "binpack"
    zorder_columns: list[str] = Field(default_factory=list)  # for zorder: two or more columns
class PartitionFilter(BaseModel):
    """Compact only some partitions (bench.core.partition_filter): the newest `recent_periods` periods of the
    table's time partition (resolved against the generated table at run time), or the partitions an Iceberg
    expression selects (`where`, pyiceberg's syntax, e.g. "event_date >= '2025-12-25'")."""

    model_config = ConfigDict(extra="forbid")

    recent_periods: int | None = Field(None, ge=1)
    where: str | None = None

    @model_validator(mode="after")
    def _one(self) -> PartitionFilter:
        if (self.recent_periods is None) == (self.where is None):
            raise ValueError("give exactly one of recent_periods and where")
        if self.where is not None:
            parse_filter(self.where)  # ValueError in one line
        return self


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    kind: Literal["binpack", "deletes"]
    table: TableRecipe
    target_file_size_bytes: int = Field(512 * 1024 * 1024, ge=1)
    # a data file below small_file_ratio x target is small: bin-packing must rewrite it (both engines
    # are told this threshold; Spark's own default min-file-size-bytes is 75 % of the target too)
    small_file_ratio: float = Field(0.75, gt=0.0, le=1.0)
    output: Output = Field(default_factory=Output)
    local_scale: float = Field(0.005, gt=0.0)  # the default scale of `bench run` on one machine
    engines: dict[str, dict[str, Any]] = Field(default_factory=dict)  # engine -> its options
    published: Published | None = None
    live_writer: LiveWriter | None = None  # the live-writer-* family: a writer commits during compaction
    rewrite: Rewrite = Field(default_factory=Rewrite)  # binpack unless the scenario asks for sorted output
    partition_filter: PartitionFilter | None = None  # compact only these partitions (`bench run --where` overrides)
    streaming: Streaming | None = None  # the streaming-* family: micro-batch commits and a maintenance step per cycle
    # the work asked of every engine and checked by the verifier (bench.core.work): which data files and partitions
    # are work, what becomes of delete files; None: the default of its kind (bench.core.work.default_work: small
    # files in partitions of two or more, or for a deletes scenario the data files its deletes apply to; deletes
    # applied)
    work: Work | None = None
    # engine features the table this scenario runs on needs (e.g. format-v3 for a v3 source table: on_table())
    _table_needs: set[str] = PrivateAttr(default_factory=set)

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        if KIND_OF_RECIPE[self.kind] != self.table.kind:
            raise ValueError(f"a {self.kind} scenario needs a {KIND_OF_RECIPE[self.kind]} table, "
                             f"not {self.table.kind}")
        problem = self.strategy_problem()
        if problem:
            raise ValueError(f"rewrite: {problem}")
        for engine, options in self.engines.items():
            if engine not in REGISTRY:
                raise ValueError(f"engines.{engine}: unknown engine (known: {', '.join(REGISTRY)})")
            try:
                engine_class(engine).Options.model_validate(options or {})
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(str(x) for x in err["loc"])
                raise ValueError(f"engines.{engine}{'.' + where if where else ''}: {err['msg']}") from None
        if self.work is not None and self.work.deletes == "keep" and (self.kind == "deletes"
                                                                      or self.work.files == "with-deletes"):
            raise ValueError("work.deletes keep: a deletes scenario's work (or files with-deletes) is applying "
                             "its delete files")
        if self.streaming is not None and self.live_writer is not None:
            raise ValueError("streaming and live_writer are two writers: give one")
        if self.streaming is not None and self.streaming.sink is None and self.kind != "deletes":
            raise ValueError("streaming with the CDC writer needs a deletes table (its writer commits CDC deletes); "
                             "an append sink (streaming.sink) writes to any table")
        pf, part = self.partition_filter, self.table.partitioning
        if pf is not None:
            if part is None:
                raise ValueError("partition_filter needs a partitioned table (table.partitioning)")
            if pf.recent_periods is not None and part.spec not in TIME_SPECS:
                raise ValueError(f"partition_filter.recent_periods needs a time partition, not spec {part.spec!r}")
            if pf.where is not None:
                parse_filter(pf.where, PARTITIONED_SCHEMA)  # its columns are the table's
        return self

    def needs(self) -> set[str]:
        """The engine features (bench.engines.base.FEATURES) every engine run of this scenario needs."""
        needs: set[str] = ({str(self.rewrite.strategy)} & {"sort", "zorder"}) | self._table_needs
        if self.partition_filter is not None:
            needs |= {"partition-filter"} | ({"partition-filter-deletes"} if self.kind == "deletes" else set())
        if self.streaming is None:
            needs.add("rewrite-data-files")
        else:  # each operation's feature is its name with dashes, but compact's is the compaction's
            needs |= {"maintenance"} | {"rewrite-data-files" if op.op == "compact" else op.op.replace("_", "-")
                                        for op in self.streaming.maintenance}
            if self.streaming.mode == "branch":
                needs |= {"branch"} | ({"rewrite-manifests-branch"} if "rewrite-manifests" in needs else set())
            if self.streaming.mode != "sequential" and any(op.op == "expire_snapshots"
                                                           for op in self.streaming.maintenance):
                needs |= {"expire-under-writer"}
        return needs

    def on_table(self, format_version: int) -> None:
        """Note what the table this scenario runs on (a source table's clone) needs of every engine: format v3 is
        the feature format-v3 (an engine without it is recorded `unsupported` with its reason, never run)."""
        if format_version >= 3:
            self._table_needs.add("format-v3")

    def with_stream_mode(self, mode: str | None, cycles: int | None = None) -> Scenario:
        """This streaming scenario run in `mode` for `cycles` cycles (`bench run --stream-mode/--cycles`);
        UserError when it is not a streaming scenario."""
        if self.streaming is None:
            flag = "--stream-mode" if mode else "--cycles"
            raise UserError(f"{flag}: {self.name} is not a streaming scenario (use a streaming-* scenario)")
        update: dict[str, Any] = {"mode": mode} if mode else {}
        update |= {"cycles": cycles} if cycles else {}
        return self.model_copy(update={"streaming": self.streaming.model_copy(update=update)})

    def strategy_problem(self, strategy: str | None = None) -> str | None:
        """Why this scenario's table cannot be compacted with `strategy` (its own by default), or None."""
        strategy = strategy or self.rewrite.strategy
        if strategy != "binpack" and self.kind != "binpack":
            return f"strategy {strategy} is for bin-packing scenarios, not {self.kind}"
        if strategy == "sort" and not getattr(self.table, "sort_order", None):
            return "strategy sort sorts by the table's sort order: the table recipe has no sort_order"
        if strategy == "zorder":
            cols = self.rewrite.zorder_columns
            if len(cols) < 2:
                return "strategy zorder needs zorder_columns: two or more columns"
            from datagen.schema import SCHEMA

            unknown = [c for c in cols if c not in [f.name for f in SCHEMA.fields]]
            if unknown:
                return f"zorder_columns: {', '.join(unknown)} not a column of the table"
        return None

    def with_strategy(self, strategy: str | None) -> Scenario:
        """This scenario compacted with `strategy` instead of its own (`bench run --strategy`); UserError
        when its table cannot be."""
        if not strategy or strategy == self.rewrite.strategy:
            return self
        problem = self.strategy_problem(strategy)
        if problem:
            raise UserError(f"--strategy {strategy}: {self.name}: {problem}")
        return self.model_copy(update={"rewrite": self.rewrite.model_copy(update={"strategy": strategy})})

    def with_where(self, where: str) -> Scenario:
        """This scenario with the partition filter `where` (`bench run --where`); UserError when it is bad."""
        try:
            return Scenario.model_validate({**self.model_dump(), "partition_filter": {"where": where}})
        except ValidationError as e:
            msg = e.errors()[0]["msg"].removeprefix("Value error, ")
            raise UserError(f"--where {where!r}: {msg}") from None

    def work_intent(self, delete_files: bool) -> WorkIntent:
        """The scenario's work resolved against the table it compacts: `delete_files`, whether the input holds live
        delete files (a table with delete files is a delete-compaction table: applying them is work unless the
        scenario says `deletes: keep`).  What the runner puts in CompactionJob.work and VerifyInput.work."""
        stated = f"scenario {self.name}" + ("" if self.work is not None else " (default work)")
        return (self.work or default_work(self.kind)).on(delete_files, stated_by=stated)

    def small_file_threshold(self, target: int | None = None) -> int:
        return int(self.small_file_ratio * (target or self.target_file_size_bytes))

    def options_for(self, label: str, overrides: dict[str, dict[str, Any]] | None = None,
                    profiles: Path | None = None) -> dict[str, Any]:
        """The options of engine run `label` (NAME or NAME:PROFILE): the scenario's, the profile's and
        the command line's, validated by the engine's Options model and dumped (defaults filled in)."""
        name, profile = split_label(label)
        layers: list[tuple[str, dict[str, Any]]] = [(f"scenario {self.name}", self.engines.get(name) or {})]
        if profile:
            prof = load_profile(name, profile, profiles or profile_dir())
            layers += prof.layers(self.name)
        if overrides and overrides.get(name):
            layers.append(("--option", overrides[name]))
        merged: dict[str, Any] = {}
        for _, layer in layers:
            merged = deep_merge(merged, layer)
        try:
            return engine_class(name).Options.model_validate(merged).model_dump(mode="json")
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            sources = ", ".join(src for src, layer in layers if layer)
            raise UserError(f"{label} options ({sources}): {where + ': ' if where else ''}{err['msg']}") from None

    def with_partitions(self, partitions: int, scale: float, file_scale: float | None = None) -> Scenario:
        """This scenario, its table reshaped to hold exactly `partitions` partitions at `scale` (file counts of
        `file_scale` when given; its own dataset: datagen.dataset.with_partitions says how); UserError when it
        cannot."""
        from datagen.dataset import with_partitions

        return self.model_copy(update={"table": with_partitions(self.table, partitions, scale, self.name,
                                                                 file_scale)})

    def record(self) -> ScenarioRecord:
        content = self.model_dump(mode="json")
        if self.rewrite == Rewrite():  # a plain bin-pack keeps the record (and digest) it had
            content.pop("rewrite")
        if self.streaming is None:  # likewise every scenario that is not a streaming one
            content.pop("streaming")
        elif self.streaming.sink is None:  # and a streaming one with the CDC writer
            content["streaming"].pop("sink")
        if self.work is None:  # and every scenario with the default work
            content.pop("work")
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]
        return ScenarioRecord(name=self.name, sha256=digest, content=content)


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`; nested mappings (e.g. spark_conf) merge key by key."""
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


class Profile(BaseModel):
    """scenarios/profiles/ENGINE/PROFILE.yaml: named engine options (`--engines ENGINE:PROFILE`)."""

    model_config = ConfigDict(extra="forbid")

    engine: str
    name: str
    description: str = ""
    options: dict[str, Any] = Field(default_factory=dict)  # for every scenario
    scenarios: dict[str, dict[str, Any]] = Field(default_factory=dict)  # per scenario, over `options`
    provenance: dict[str, Any] = Field(default_factory=dict)  # per scenario: where the settings come from

    def layers(self, scenario: str) -> list[tuple[str, dict[str, Any]]]:
        if self.scenarios and scenario not in self.scenarios and not self.options:
            raise UserError(f"profile {self.engine}:{self.name} has no settings for scenario {scenario} (it has "
                            f"{', '.join(self.scenarios)}); run `bench tune {self.engine} {scenario}` to make them")
        return [(f"profile {self.engine}:{self.name}", self.options),
                (f"profile {self.engine}:{self.name} for {scenario}", self.scenarios.get(scenario) or {})]


def profile_dir() -> Path:
    """Where profiles live: $BENCH_PROFILE_DIR, else scenarios/profiles."""
    return Path(env_settings().profile_dir or PROFILE_DIR)


def profile_path(engine: str, profile: str, directory: Path | None = None) -> Path:
    return Path(directory or profile_dir()) / engine / f"{profile}.yaml"


def profile_names(engine: str, directory: Path | None = None) -> list[str]:
    return sorted(p.stem for p in (Path(directory or profile_dir()) / engine).glob("*.yaml"))


def save_profile_entry(engine: str, profile: str, scenario: str, options: dict[str, Any],
                       provenance: dict[str, Any], description: str, directory: Path | None = None) -> Path:
    """Set profile ENGINE:PROFILE's options for `scenario` (other scenarios' entries are kept)."""
    from bench.core.fileio import write_atomic

    path = profile_path(engine, profile, directory)
    prof = (load_profile(engine, profile, directory) if path.exists()
            else Profile(engine=engine, name=profile, description=description))
    prof.scenarios[scenario] = options
    prof.provenance[scenario] = provenance
    engine_class(engine).Options.model_validate(deep_merge(prof.options, options))  # never write a bad profile
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# {engine}:{profile}, written by `bench tune`: per scenario, the best verified configuration the "
              f"search found\n# (options over the scenario's), and where it comes from. Run it with --engines "
              f"{engine}:{profile}.\n")
    write_atomic(path, header + yaml.safe_dump(prof.model_dump(mode="json"), sort_keys=False, width=110))
    return path


M = TypeVar("M", bound=BaseModel)


def load_yaml_model(model: type[M], path: Path, what: str) -> M:
    """A YAML file validated as `model`; a bad file is one UserError naming the first problem."""
    try:
        return model.model_validate(yaml.safe_load(path.read_text()))
    except yaml.YAMLError as e:
        raise UserError(f"invalid {what} file {path}: {' '.join(str(e).splitlines()[:2])}") from None
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise UserError(f"invalid {what} file {path}: {where + ': ' if where else ''}{err['msg']}") from None


def load_profile(engine: str, profile: str, directory: Path | None = None) -> Profile:
    p = profile_path(engine, profile, directory)
    if not p.exists():
        known = profile_names(engine, directory)
        raise UserError(f"unknown profile {engine}:{profile} (no {p}); {engine} has "
                        + (f"profiles: {', '.join(known)}" if known else "no profiles")
                        + (f"; `bench tune {engine} SCENARIO` writes {engine}:tuned" if profile == "tuned" else ""))
    prof = load_yaml_model(Profile, p, "profile")
    if (prof.engine, prof.name) != (engine, profile):
        raise UserError(f"profile file {p} says it is {prof.engine}:{prof.name}, not {engine}:{profile}")
    return prof


def parse_option_overrides(items: list[str] | tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """['spark.mode=standalone', 'spark.spark_conf.spark.sql.files.maxPartitionBytes=64m'] ->
    {'spark': {'mode': 'standalone', 'spark_conf': {'spark.sql.files.maxPartitionBytes': '64m'}}}.
    Values are YAML scalars (4 -> int, true -> bool)."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        engine, dot, rest = key.strip().partition(".")
        if not eq or not dot or not rest:
            raise UserError(f"--option {item!r}: write ENGINE.KEY=VALUE, e.g. spark.mode=standalone")
        if engine not in REGISTRY:
            raise UserError(f"--option {item!r}: unknown engine {engine!r}; known engines: {', '.join(REGISTRY)}")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        field, dot2, sub = rest.partition(".")
        layer = {field: {sub: value}} if dot2 else {field: value}
        out[engine] = deep_merge(out.get(engine, {}), layer)
    return out


def scenario_files(directory: Path = SCENARIO_DIR) -> dict[str, Path]:
    return {p.stem: p for p in sorted(Path(directory).glob("*.yaml"))}


def load_scenario(name_or_path: str, directory: Path = SCENARIO_DIR) -> Scenario:
    p = Path(name_or_path)
    if not (p.suffix in (".yaml", ".yml") and p.exists()):
        files = scenario_files(directory)
        if name_or_path not in files:
            raise UserError(f"unknown scenario {name_or_path!r}; known: {', '.join(files) or 'none'}"
                            f" (see `bench list`)")
        p = files[name_or_path]
    return load_yaml_model(Scenario, p, "scenario")


def list_scenarios(directory: Path = SCENARIO_DIR) -> list[Scenario]:
    return [load_scenario(str(p), directory) for p in scenario_files(directory).values()]
