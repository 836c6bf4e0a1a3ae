"""What one `bench run` resolves before anything runs: options, the run context shared by its engine
runs, the schedule (engine order per repetition from a Williams design), and the checks that turn bad
input into one UserError with nothing written."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from pyiceberg.catalog import Catalog

from bench.core.catalog import CatalogSettings, load_catalog
from bench.core.catalog.rest import ServedCatalog, check_rest_uri
from bench.core.catalog.s3 import S3Connection
from bench.core.cost import parse_instance
from bench.core.dataset import GeneratedTable
from bench.core.errors import UserError
from bench.core.expected import Expected
from bench.core.fileio import check_writable
from bench.core.lock import WarehouseLock
from bench.core.machine import DROP_CACHES, node_ram_bytes, usable_cores
from bench.core.pin import SourceFingerprint, SourceWatch
from bench.core.progress import Progress
from bench.core.records.environment import Environment
from bench.core.records.reads import ReadQuery
from bench.core.records.scenario import SourceRecord
from bench.core.settings import env_settings
from bench.core.source import SourceRef, check_storage, load_source
from bench.core.units import check_scale, parse_size
from bench.engines import default_engines, engine_class, parse_engines
from bench.scenario import Scenario, load_scenario
from bench.telemetry.confine import CapSpec, check_cores, check_local_cap, parse_storage_cap
from bench.telemetry.netcap import check_shaper
from datagen.dataset import check_file_scale, decoupled, prepare, storage_requirements
from datagen.queries import reads_plan

CACHE_MODES = ("cold", "warm")


@dataclass(kw_only=True)
class CommonOptions:
    """The options every command that runs engines takes (run, sweep, frontier, tune), written once: their
    option records extend it, and a campaign passes its own on to each run it makes (`common`)."""

    scenario: str
    seed: int = 42
    warehouse: str | None = None
    results_dir: str | None = None
    run_id: str | None = None
    timeout_s: int = 3600  # time limit of one engine run
    cache: str | None = None  # cold | warm | None (cold where permitted, else warm)
    wait: bool = True  # wait for the warehouse lock (False: exit 2 when it is held)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # --option ENGINE.KEY=VALUE, parsed
    source: SourceRef | None = None  # --source-table: a clone of the user's own table instead of a generated one
    file_scale: float | None = None  # --file-scale: the file counts of this scale, the bytes of --scale (None: equal)

    def common(self, **changes: Any) -> dict[str, Any]:
        """The shared part as keyword arguments, with `changes` over it."""
        return {f.name: getattr(self, f.name) for f in fields(CommonOptions)} | changes


@dataclass(kw_only=True)
class RunOptions(CommonOptions):
    scale: float | None = None
    engines: str | None = None
    reps: int = 1
    warmup: bool = False
    memory_budget: str | None = None
    catalog_uri: str | None = None
    target_file_size: str | None = None
    instance_type: str | None = None
    readers: bool = True  # time the reader queries before and after each compaction (bench.reads)
    reader: str = "auto"  # auto (DuckDB, Spark SQL where DuckDB cannot) | spark-sql
    cow_branch: bool = False  # live writer: the writer and the compactor work on a branch, published to main
    cases: list[str] | None = None  # live writer: only these of the scenario's cases
    strategy: str | None = None  # --strategy: binpack | sort | zorder instead of the scenario's rewrite.strategy
    partitions: int | None = None  # the table reshaped to this many partitions (Scenario.with_partitions)
    where: str | None = None  # --where: the partition filter, over the scenario's
    storage_cap: str | None = None  # --storage-cap READ[,WRITE]: throttle the engine on the warehouse's device
    cores: int | None = None  # --cores N: confine the engine to N cores and tell it N
    stream_mode: str | None = None  # --stream-mode: sequential | concurrent | branch over the scenario's
    cycles: int | None = None  # --cycles: a streaming scenario's cycles
    # bench conformance: the engines' shared processes and served catalog (bench.runner.session), or None
    shared: Any = None
    expected: Expected | None = None  # bench conformance: the rows the case states its table holds
    # bench conformance: the branch of the source table every engine compacts (the source pinned at its head), or None
    branch: str | None = None
    # bench conformance: a maintenance case's operation and expected outcome (bench.runner.maintenance.MaintenanceRun):
    # the source is the suite's own case table, used in place, never cloned; None: a compaction
    maintenance: Any = None
    # bench conformance: a case's concurrent commit (datagen.conformance.During steps, committed by the live writer
    # between each engine's planning and its commit; `expected` then states the end state), or None
    during: list[Any] | None = None
    written: Expected | None = None  # ... and the rows of the table as written, before that commit


@dataclass(frozen=True)
class RunContext:
    """Everything resolved for one `bench run`, shared by its engine runs: what its options say (`resolve`, before
    anything runs), then what the run prepares once before its first engine run (`bench.runner.run.prepare_run`:
    the environment, the served catalog, the catalog, the dataset and what is resolved against it), each stage a
    new context (dataclasses.replace), never one changed."""

    run_id: str
    scenario: Scenario
    scale: float
    seed: int
    engines: list[str]
    settings: CatalogSettings
    results_dir: Path
    target: int
    threshold: int
    budget: int
    timeout_s: int
    cache_mode: str
    cache_requested: str
    instance_type: str | None
    progress: Progress
    engine_options: dict[str, dict[str, Any]] = field(default_factory=dict)  # label -> its options
    shared: Any = None  # bench.runner.session.SharedProcesses: the engine runs go to shared processes
    expected: Expected | None = None  # a conformance case's expected rows: every output is held to them
    maintenance: Any = None  # a maintenance case's (RunOptions.maintenance)
    during: list[Any] | None = None  # a conformance case's concurrent commit (RunOptions.during)
    written: Expected | None = None  # its table's rows before that commit (RunOptions.written)
    readers: bool = True
    reader: str = "auto"
    cow_branch: bool = False
    source: SourceRef | None = None  # the user's own table: the dataset is its clone (bench.runner.source)
    storage_cap: CapSpec | None = None  # --storage-cap, parsed
    cap_device: tuple[str, int, int] | None = None  # (name, major, minor) of the warehouse's disk
    cap_port: int | None = None  # --storage-cap on an S3 warehouse: its server's port on the loopback
    cpus: list[int] | None = None  # --cores: the CPUs the engine is confined to
    file_scale: float | None = None  # --file-scale when it is not the scale (datagen.dataset.decoupled), else None
    # prepared by the run (bench.runner.run.prepare_run), None until then
    environment: Environment = field(default_factory=Environment)
    versions: dict = field(default_factory=dict)
    served: ServedCatalog | None = None
    catalog: Catalog | None = None
    dataset: GeneratedTable | None = None
    partition_filter: str | None = None  # the scenario's filter resolved against the dataset (resolve_filter)
    source_before: SourceFingerprint | None = None  # the source's pin, taken before the run (bench.core.pin)
    # the watch over the source, made with its pin: it records what each look after an engine run sees
    source_watch: SourceWatch | None = None
    source_shape: SourceRecord | None = None  # its shape and the conformance cases it touches (source.source_shape)

    @cached_property
    def reads_plan(self) -> tuple[list[ReadQuery], dict[str, list[str]]]:
        """(queries, truth) of the reader queries (datagen.queries), computed on first use, once per run: a run
        whose engines never read pays nothing for them."""
        assert self.dataset is not None
        return reads_plan(self.dataset)

    @property
    def counts_scale(self) -> float:
        """The scale of the table's file counts (--file-scale, else --scale)."""
        return self.scale if self.file_scale is None else self.file_scale

    @property
    def cores(self) -> int:
        """The cores an engine is given (and told): --cores, else every core this process may use."""
        return len(self.cpus) if self.cpus else usable_cores()

    @property
    def run_dir(self) -> Path:
        return self.results_dir / self.run_id

    @property
    def serves_catalog(self) -> bool:
        """Whether this run serves its catalog over loopback REST (if not, no server is started: about 2 s of CPU
        saved per run).  It does for an engine that commits through REST, the reader queries and every
        delete-aware check (DuckDB's iceberg extension reads through REST), a streaming or a live-writer run (their
        verdicts read through it; the commit conflicts come from its log), a cloned table (its truth readers), and
        an external REST catalog (probed, not started)."""
        sc = self.scenario
        return (any(engine_class(e).capabilities.commits_through_rest for e in self.engines) or self.readers
                or sc.streaming is not None or sc.live_writer is not None or self.source is not None
                or sc.kind == "deletes" or sc.table.kind != "smallfiles" or self.settings.external_rest)

    @property
    def catalog_settings(self) -> CatalogSettings:
        """The catalog as engines, readers and the verifier reach it: the served one (REST URI set)
        while the run serves it."""
        return self.served.settings if self.served else self.settings


@dataclass(frozen=True)
class Slot:
    """One engine run in the schedule."""

    engine: str
    rep: int
    warmup: bool
    order: tuple[str, ...]  # the engines' order in this repetition
    case: str | None = None  # a live-writer scenario's case (datagen.live.CASES)
    branch: str | None = None  # --cow-branch: the branch the writer and the compactor work on

    @property
    def tag(self) -> str:
        base = "warmup" if self.warmup else f"rep{self.rep}"
        return (f"{base}-{self.case}" + (f"-{self.branch}" if self.branch else "")) if self.case else base

    @property
    def position(self) -> int:
        return self.order.index(self.engine)


def williams_orders(n: int) -> list[list[int]]:
    """A Williams design: n orders of 0..n-1 (2n when n is odd) in which every index is in every position
    equally often and follows every other index equally often.  A plain rotation keeps each engine's
    predecessor the same in every repetition (measured: an engine that always ran right after a Spark JVM
    was ~8 % slower than the same configuration run after it)."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + r) % n for x in first] for r in range(n)]
    return rows + ([row[::-1] for row in rows] if n % 2 else [])


def schedule(engines: list[str], reps: int, warmup: bool, cases: Sequence[str] | None = None) -> list[Slot]:
    """Repetition r runs the engines in row r of a Williams design (cycling through its rows): each
    engine goes first, and comes right after each other engine, as often as the others over a full
    cycle (n repetitions, 2n for an odd n).  Two engines simply alternate.  The warm-up round, when
    asked, runs first in the given order.  A live-writer scenario runs every case in each repetition,
    each case with the engines in that repetition's order."""
    out: list[Slot] = []
    rows = williams_orders(len(engines))
    rounds = ([(0, True)] if warmup else []) + [(r, False) for r in range(reps)]
    for rep, is_warmup in rounds:
        order = tuple(engines) if is_warmup else tuple(engines[i] for i in rows[rep % len(rows)])
        out += [Slot(e, rep, is_warmup, order, case) for case in (cases or (None,)) for e in order]
    return out


def check_results_dir(results_dir: str | None) -> Path:
    path = Path(results_dir or env_settings().results_dir or Path.cwd() / "results")
    try:
        return check_writable(path, "results directory", is_dir=True)
    except UserError as e:
        raise UserError(f"{e}; choose another with --results-dir") from None


def new_run_id(results: Path, scenario: str, requested: str | None) -> str:
    base = requested or time.strftime("%Y%m%d-%H%M%S") + f"-{scenario}"
    if not re.fullmatch(r"[A-Za-z0-9._-]+", base):
        raise UserError(f"--run-id {base!r} may only contain letters, digits, '.', '_' and '-'")
    run_id, n = base, 1
    while (results / run_id).exists():  # never write into an earlier run
        n += 1
        run_id = f"{base}-{n}"
    return run_id


def can_drop_caches() -> bool:
    try:
        with open(DROP_CACHES, "w"):
            return True
    except OSError:
        return False


def resolve_cache(requested: str | None, settings: CatalogSettings) -> tuple[str, str]:
    """(mode, note): cold where the harness may drop the page cache, else warm."""
    if requested is not None and requested not in CACHE_MODES:
        raise UserError(f"--cache {requested!r}: use cold or warm")
    if settings.is_remote:
        return "none", "S3 warehouse: the page cache holds no input"
    if requested == "cold" and not can_drop_caches():
        raise UserError(f"--cache cold needs to write {DROP_CACHES} (root); use --cache warm")
    if requested:
        return requested, ""
    if can_drop_caches():
        return "cold", ""
    return "warm", f"cold was not possible ({DROP_CACHES} is not writable): warm instead"


def storage_problems(sc: Scenario, scale: float, seed: int, engines: list[str],
                     settings: CatalogSettings, datagen: bool = True, file_scale: float | None = None) -> list[str]:
    """What cannot reach this warehouse (e.g. a JVM on S3 without its AWS SDK bundle in the jar cache), as one-line
    items (`datagen`: the generator's needs too; not for the clone of a source table)."""
    if settings.is_remote:
        settings.storage_description()  # bad S3 settings in the environment -> UserError now
    out = [f"datagen: {r.detail} -> {r.fix}" for r in storage_requirements(sc.table, scale, seed, settings, file_scale)
           if not r.ok] if datagen else []
    out += [f"{e}: {r.detail} -> {r.fix}" for e in engines
            for r in engine_class(e)().storage_requirements(settings) if not r.ok]
    return out


def resolve(opts: RunOptions, progress: Progress) -> RunContext:
    """Validate every input before anything runs (bad input: one UserError, nothing written)."""
    sc = load_scenario(opts.scenario).with_strategy(opts.strategy)
    if opts.source is not None:
        check_source_options(opts, sc)
    if opts.where is not None:
        sc = sc.with_where(opts.where)  # a bad expression: UserError now
    if opts.stream_mode or opts.cycles:
        sc = sc.with_stream_mode(opts.stream_mode, opts.cycles)
    spec = opts.engines or default_engines()
    if sc.streaming is not None:  # the baseline `none` (no maintenance) is part of every streaming run
        spec = ",".join(e for e in spec.split(",") if e.strip() not in ("", "none"))
    engines = parse_engines(spec) if spec or sc.streaming is None else []
    scale = check_scale(sc.local_scale if opts.scale is None else opts.scale) if opts.source is None else 0.0
    file_scale = resolve_file_scale(sc, scale, opts.file_scale, opts.seed)
    if opts.partitions is not None:
        sc = sc.with_partitions(opts.partitions, scale, file_scale)
    budget = parse_size(opts.memory_budget, "--memory-budget") if opts.memory_budget else node_ram_bytes()
    target = (parse_size(opts.target_file_size, "--target-file-size") if opts.target_file_size
              else sc.target_file_size_bytes)
    parse_instance(opts.instance_type)  # an unknown instance type is bad input, before anything runs
    results = check_results_dir(opts.results_dir)
    settings = CatalogSettings.for_warehouse(opts.warehouse)
    if opts.catalog_uri:
        check_rest_uri(opts.catalog_uri)
    engine_options = {e: sc.options_for(e, opts.options) for e in engines}  # bad options: UserError now
    missing = [f"{e}: {r.line()}" for e in engines for r in engine_class(e)().requirements() if not r.ok]
    if missing:
        raise UserError("missing prerequisites: " + "; ".join(missing) + " (see `bench doctor`)")
    for e in engines:
        codecs = engine_class(e).output_codecs
        if codecs is not None and sc.output.codec not in codecs:
            raise UserError(f"{e} cannot write {sc.output.codec} (it writes {', '.join(sorted(codecs))}); "
                            f"the scenario's output.codec applies to every engine")
    unreachable = storage_problems(sc, scale, opts.seed, engines, settings, datagen=opts.source is None,
                                   file_scale=file_scale)
    unreachable += [f"{e}: {p}" for e in engines
                    for p in engine_class(e)().option_problems(engine_options[e], settings)]
    if unreachable:
        raise UserError(f"warehouse {settings.warehouse}: " + "; ".join(unreachable))
    cap = parse_storage_cap(opts.storage_cap)
    device: tuple[str, int, int] | None = None
    port: int | None = None
    if cap is not None and settings.is_remote:  # an S3 server on the loopback: its traffic shaped
        port = check_shaper(S3Connection.from_env().endpoint)
    elif cap is not None:
        device = check_local_cap(cap, settings.warehouse_path)
    cpus = check_cores(opts.cores) if opts.cores is not None else None
    cache_mode, cache_note = resolve_cache(opts.cache, settings)
    if opts.catalog_uri:
        settings = settings.with_rest(opts.catalog_uri, external=True)
    ctx = RunContext(run_id=new_run_id(results, sc.name, opts.run_id), scenario=sc, scale=scale, seed=opts.seed,
                     engines=engines, settings=settings, results_dir=results, target=target,
                     threshold=sc.small_file_threshold(target), budget=budget, timeout_s=opts.timeout_s,
                     cache_mode=cache_mode, cache_requested=opts.cache or f"default ({cache_mode})",
                     instance_type=opts.instance_type, progress=progress, engine_options=engine_options,
                     readers=opts.readers and opts.source is None, reader=opts.reader, cow_branch=opts.cow_branch,
                     source=opts.source, storage_cap=cap, cap_device=device, cap_port=port, cpus=cpus,
                     shared=opts.shared, expected=opts.expected, file_scale=file_scale, maintenance=opts.maintenance,
                     during=opts.during, written=opts.written)
    if opts.source is not None:
        # an unreadable catalog file, unknown table or snapshot, a source on other storage: UserError now
        check_storage(load_source(opts.source), settings.warehouse)
        if opts.readers:
            progress.info("reader queries: off on a source table (their questions and answers come from datagen)")
    if cache_note:
        progress.info(f"cache: {cache_note}")
    return ctx


def check_source_options(opts: RunOptions, sc: Scenario) -> None:
    """What a source table replaces (the generator) cannot be asked for with it."""
    given = [flag for flag, v in (("--scale", opts.scale), ("--file-scale", opts.file_scale),
                                  ("--partitions", opts.partitions),
                                  ("--cases", opts.cases), ("--cow-branch", opts.cow_branch or None)) if v is not None]
    if given:
        raise UserError(f"{', '.join(given)}: shape the generated table; with --source-table your table is the input")
    if sc.live_writer is not None or sc.streaming is not None:
        raise UserError(f"{sc.name}: a {'live-writer' if sc.live_writer else 'streaming'} scenario writes generated "
                        "rows into the table" + (" and its maintenance expires snapshots, whose files on a zero-copy "
                                                 "clone are your table's" if sc.streaming else "")
                        + "; use a compaction scenario (e.g. bin-packing) with --source-table")


def resolve_filter(sc: Scenario, catalog: Catalog, dataset: GeneratedTable) -> str | None:
    """The scenario's partition filter as an expression over the generated table (`recent_periods`: its
    newest periods); UserError when it selects part of a partition, or none of them."""
    from bench.core.partition_filter import recent_filter, selector
    from bench.core.table.deletes import scope
    from bench.core.table.entries import live_files

    pf = sc.partition_filter
    if pf is None:
        return None
    tbl = catalog.load_table(dataset.table)
    keys = {scope(e.data_file) for e in live_files(tbl).all}
    spec = tbl.spec()
    text = pf.where or recent_filter(int(pf.recent_periods or 1), spec, tbl.schema(),
                                     [v for sid, v in keys if sid == spec.spec_id])
    selected = selector(text, tbl.schema(), tbl.specs(), keys)
    if not any(selected(k) for k in keys):
        raise UserError(f"partition filter {text!r} selects none of the table's {len(keys)} partitions")
    return text


def resolve_file_scale(sc: Scenario, scale: float, file_scale: float | None, seed: int) -> float | None:
    """--file-scale checked against the scenario's table at `scale` (UserError: not positive, or files that would
    hold less than one row); None when it is not given or equals the scale (today's table)."""
    if file_scale is None:
        return None
    file_scale = check_scale(file_scale, "--file-scale")
    if sc.streaming is not None or sc.live_writer is not None:
        raise UserError(f"--file-scale: {sc.name} is a {'streaming' if sc.streaming else 'live-writer'} scenario; "
                        "file counts apart from bytes are for compaction scenarios (e.g. deletes-high, bin-packing)")
    check_file_scale(sc.table, scale, file_scale, seed)
    return decoupled(scale, file_scale)


def prepare_dataset(scenario: str | Scenario, scale: float | None, seed: int, warehouse: str | None,
                    progress: Progress, wait: bool = True, file_scale: float | None = None) -> GeneratedTable:
    """`bench datagen`: the dataset of a scenario (generated unless it exists), under the lock."""
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    scale = check_scale(sc.local_scale if scale is None else scale)
    file_scale = resolve_file_scale(sc, scale, file_scale, seed)
    settings = CatalogSettings.for_warehouse(warehouse)
    problems = storage_problems(sc, scale, seed, [], settings, file_scale=file_scale)
    if problems:
        raise UserError(f"warehouse {settings.warehouse}: " + "; ".join(problems))
    with WarehouseLock(settings.lock_path, wait=wait, say=progress.info):
        return prepare(load_catalog(settings), settings, sc.table, scale, seed, progress=progress,
                       file_scale=file_scale)


def flush_dir(ctx: RunContext) -> str | None:
    """--storage-cap: the table's directory, whose files the engine writes are fsynced inside its timed window."""
    if ctx.storage_cap is None or ctx.catalog is None or ctx.dataset is None:
        return None
    location = ctx.catalog.load_table(ctx.dataset.table).location()
    return location.removeprefix("file://") if "://" not in location.removeprefix("file://") else None
