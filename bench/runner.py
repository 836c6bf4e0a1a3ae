"""The runner: datagen -> (for each repetition, each engine: restore -> cache -> engine subprocess,
sampled -> verification) -> result records.

Fairness, by construction:
- every engine run starts from the byte-identical table (the dataset's metadata file and exactly its
  files: bench.core.table.state), measured after the reset (input fingerprint in every result);
- the engines' order rotates from one repetition to the next (recorded per result);
- before each engine run the warehouse is synced to disk and the page cache dropped (`cold`, default
  where the harness may: root) or the input read once (`warm`); recorded per result;
- each engine runs in its own subprocess (own process group, memory cgroup, time limit) and is
  measured from outside the same way; the loopback REST catalog server's work during the run (it
  commits for REST clients, outside the engine's tree) is measured and recorded beside it;
- every run is verified by `bench.verify` against the generator's ground truth.
One `bench run` at a time per warehouse (bench.core.lock).  `results/<run-id>/run.json` says whether
the run completed; results are written atomically and never overwritten.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import traceback
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from pyiceberg.catalog import Catalog

from bench.core.catalog import CatalogSettings, load_catalog
from bench.core.catalog.rest import ServedCatalog, check_rest_uri, serve
from bench.core.cost import parse_instance, run_cost
from bench.core.dataset import GeneratedTable, manifest_path
from bench.core.errors import UserError
from bench.core.fileio import write_atomic
from bench.core.lock import WarehouseLock
from bench.core.machine import HARNESS_PACKAGES, environment, node_ram_bytes, package_versions, usable_cores
from bench.core.progress import Progress
from bench.core.results import (
    CacheState,
    CatalogServerUsage,
    InputState,
    RunResult,
    RunState,
    TableStats,
    now_iso,
    save,
    write_run_state,
)
from bench.core.table import LiveFiles, live_files
from bench.core.table.state import fingerprint, restore
from bench.core.units import check_scale, fmt_bytes, parse_size
from bench.engines import default_engines, engine_class, parse_engines
from bench.engines.base import CompactionJob, WorkerRecord
from bench.scenario import Scenario, load_scenario
from bench.telemetry.limits import Limiter, remove_stale_cgroups
from bench.telemetry.sampler import Sampler
from bench.verify import VerifyInput, table_stats, verify
from datagen.dataset import prepare, recipe_hash, storage_requirements, table_name

LOG_TAIL_LINES = 40
CACHE_MODES = ("cold", "warm")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
HEARTBEAT_S = 5.0


@dataclass
class RunOptions:
    scenario: str
    scale: float | None = None
    seed: int = 42
    warehouse: str | None = None
    engines: str | None = None
    reps: int = 1
    warmup: bool = False
    results_dir: str | None = None
    run_id: str | None = None
    timeout_s: int = 3600
    memory_budget: str | None = None
    catalog_uri: str | None = None
    target_file_size: str | None = None
    instance_type: str | None = None
    cache: str | None = None  # cold | warm | None (cold where permitted, else warm)
    wait: bool = True  # wait for the warehouse lock (False: exit 2 when it is held)


@dataclass
class RunContext:
    """Everything resolved for one `bench run`, shared by its engine runs."""

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
    served: ServedCatalog | None = None
    catalog: Catalog | None = None
    dataset: GeneratedTable | None = None
    environment: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)

    @property
    def run_dir(self) -> Path:
        return self.results_dir / self.run_id


@dataclass(frozen=True)
class Slot:
    """One engine run in the schedule."""

    engine: str
    rep: int
    warmup: bool
    order: tuple[str, ...]  # the engines' order in this repetition

    @property
    def tag(self) -> str:
        return "warmup" if self.warmup else f"rep{self.rep}"

    @property
    def position(self) -> int:
        return self.order.index(self.engine)


def schedule(engines: list[str], reps: int, warmup: bool) -> list[Slot]:
    """Repetition r runs the engines rotated by r (so each engine goes first as often as the others);
    the warm-up round, when asked, runs first in the given order."""
    out: list[Slot] = []
    rounds = ([(0, True)] if warmup else []) + [(r, False) for r in range(reps)]
    for rep, is_warmup in rounds:
        k = 0 if is_warmup else rep % len(engines)
        order = tuple(engines[k:] + engines[:k])
        out += [Slot(e, rep, is_warmup, order) for e in order]
    return out


# --- checks before anything runs ----------------------------------------------------------------
def check_results_dir(results_dir: str | None) -> Path:
    path = Path(results_dir or os.environ.get("BENCH_RESULTS") or Path.cwd() / "results").resolve()
    probe_dir = path
    while not probe_dir.exists():
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir() or not os.access(probe_dir, os.W_OK | os.X_OK):
        raise UserError(f"results directory {path} is not writable; choose another with --results-dir")
    return path


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
                     settings: CatalogSettings) -> list[str]:
    """What cannot reach this warehouse (e.g. a JVM on S3 offline), as one-line items."""
    if settings.is_remote:
        settings.storage_description()  # bad S3 settings in the environment -> UserError now
    out = [f"datagen: {r.detail} -> {r.fix}" for r in storage_requirements(sc.table, scale, seed, settings)
           if not r.ok]
    out += [f"{e}: {r.detail} -> {r.fix}" for e in engines
            for r in engine_class(e)().storage_requirements(settings) if not r.ok]
    return out


def resolve(opts: RunOptions, progress: Progress) -> RunContext:
    """Validate every input before anything runs (bad input: one UserError, nothing written)."""
    sc = load_scenario(opts.scenario)
    engines = parse_engines(opts.engines or default_engines())
    scale = check_scale(sc.local_scale if opts.scale is None else opts.scale)
    budget = parse_size(opts.memory_budget, "--memory-budget") if opts.memory_budget else node_ram_bytes()
    target = (parse_size(opts.target_file_size, "--target-file-size") if opts.target_file_size
              else sc.target_file_size_bytes)
    parse_instance(opts.instance_type)  # an unknown instance type is bad input, before anything runs
    results = check_results_dir(opts.results_dir)
    settings = CatalogSettings.for_warehouse(opts.warehouse)
    if opts.catalog_uri:
        check_rest_uri(opts.catalog_uri)
    missing = [f"{e}: {r.line()}" for e in engines for r in engine_class(e)().requirements() if not r.ok]
    if missing:
        raise UserError("missing prerequisites: " + "; ".join(missing) + " (see `bench doctor`)")
    for e in engines:
        codecs = engine_class(e).output_codecs
        if codecs is not None and sc.output.codec not in codecs:
            raise UserError(f"{e} cannot write {sc.output.codec} (it writes {', '.join(sorted(codecs))}); "
                            f"the scenario's output.codec applies to every engine")
    unreachable = storage_problems(sc, scale, opts.seed, engines, settings)
    if unreachable:
        raise UserError(f"warehouse {settings.warehouse}: " + "; ".join(unreachable))
    cache_mode, cache_note = resolve_cache(opts.cache, settings)
    if opts.catalog_uri:
        settings = settings.with_rest(opts.catalog_uri, external=True)
    ctx = RunContext(run_id=new_run_id(results, sc.name, opts.run_id), scenario=sc, scale=scale, seed=opts.seed,
                     engines=engines, settings=settings, results_dir=results, target=target,
                     threshold=sc.small_file_threshold(target), budget=budget, timeout_s=opts.timeout_s,
                     cache_mode=cache_mode, cache_requested=opts.cache or f"default ({cache_mode})",
                     instance_type=opts.instance_type, progress=progress)
    if cache_note:
        progress.info(f"cache: {cache_note}")
    return ctx


# --- the dataset and the input ----------------------------------------------------------------
def prepare_dataset(scenario: str | Scenario, scale: float | None, seed: int, warehouse: str | None,
                    progress: Progress, wait: bool = True) -> GeneratedTable:
    """`bench datagen`: the dataset of a scenario (generated unless it exists), under the lock."""
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    scale = check_scale(sc.local_scale if scale is None else scale)
    settings = CatalogSettings.for_warehouse(warehouse)
    problems = storage_problems(sc, scale, seed, [], settings)
    if problems:
        raise UserError(f"warehouse {settings.warehouse}: " + "; ".join(problems))
    with WarehouseLock(settings.lock_path, wait=wait, say=progress.info):
        return prepare(load_catalog(settings), settings, sc.table, scale, seed, progress=progress)


def baseline_cache_path(ctx: RunContext) -> Path:
    ds = ctx.dataset
    assert ds is not None
    return manifest_path(ctx.settings.state_path, ds.table.split(".")[-1]).with_suffix(".baseline.json")


def input_stats(ctx: RunContext, files: LiveFiles, fp: str) -> TableStats:
    """The input's stats: manifest facts read now; footers and content (the slow part) cached beside
    the dataset's manifest, keyed by the input fingerprint (the same files and metadata give the same
    content)."""
    assert ctx.catalog is not None and ctx.dataset is not None
    tbl = ctx.catalog.load_table(ctx.dataset.table)
    fresh = table_stats(tbl, content=False, footers_too=False, files=files, settings=ctx.settings)
    cache = baseline_cache_path(ctx)
    try:
        cached = json.loads(cache.read_text())
        if cached.get("fingerprint") == fp:
            full = TableStats.model_validate(cached["stats"])
            return full.model_copy(update={k: getattr(fresh, k) for k in (
                "snapshot_id", "metadata_location", "data_files", "delete_files", "position_delete_files",
                "equality_delete_files", "data_bytes", "delete_bytes")})
    except (OSError, ValueError, KeyError):
        pass
    with ctx.progress.task("reading the input once (cached)", unit="step"):
        full = table_stats(tbl, files=files, settings=ctx.settings)
    write_atomic(cache, json.dumps({"fingerprint": fp, "stats": full.model_dump()}, indent=1))
    return full


def reset_input(ctx: RunContext) -> tuple[InputState, TableStats, set[str]]:
    """Restore the dataset byte for byte and measure what the engine will get."""
    ds = ctx.dataset
    assert ctx.catalog is not None and ds is not None
    _, listing = restore(ctx.catalog, ds.table, ds.metadata_location, ds.location, ds.table_files)
    tbl = ctx.catalog.load_table(ds.table)
    fp = fingerprint(listing, tbl.metadata_location)
    identical = (listing == ds.table_files and tbl.metadata_location == ds.metadata_location)
    files = live_files(tbl)
    state = InputState(fingerprint=fp, identical_to_dataset=identical, metadata_location=tbl.metadata_location,
                       files=len(listing))
    return state, input_stats(ctx, files, fp), set(LiveFiles.paths(files.all))


def prepare_cache(ctx: RunContext) -> CacheState:
    """Sync the warehouse; drop the page cache (cold) or read the input once (warm)."""
    st = CacheState(mode=ctx.cache_mode, requested=ctx.cache_requested)  # type: ignore[arg-type]
    if ctx.cache_mode == "none":
        st.note = "S3 warehouse: no local page cache of the input"
        return st
    os.sync()
    st.synced = True
    if ctx.cache_mode == "cold":
        with open(DROP_CACHES, "w") as f:
            f.write("3\n")
        st.dropped = True
        st.note = "sync, then echo 3 > /proc/sys/vm/drop_caches"
    else:
        ds = ctx.dataset
        assert ds is not None
        from bench.core.table import local_path

        buf = bytearray(1 << 20)
        for path in ds.live_files:
            with open(local_path(path), "rb", buffering=0) as fh:
                while n := fh.readinto(buf):
                    st.warmed_bytes += n
        st.note = "sync, then every input file read once"
    return st


# --- one engine run ---------------------------------------------------------------------------
def tail(path: Path, n: int = LOG_TAIL_LINES) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    return [ln[:500] for ln in lines[-n:]]


def kill_tree(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@dataclass
class EngineRun:
    status: str
    process_wall_s: float
    record: WorkerRecord | None
    log: Path
    telemetry: object
    samples_file: str
    enforcement: str
    error: str | None = None
    server: CatalogServerUsage | None = None


def server_usage(served: ServedCatalog | None, sampler: Sampler | None, t0: float,
                 t1: float) -> CatalogServerUsage | None:
    """What the loopback catalog server did between unix times t0 and t1: CPU and peak RSS from its
    samples, requests and commits from its request log."""
    if served is None or served.pid is None or sampler is None:
        return None
    s = sampler.summary
    rows = sampler.samples
    use = CatalogServerUsage(pid=served.pid, peak_rss_bytes=s.peak_rss_bytes,
                             cpu_s=round(rows[-1]["cpu_s"], 3) if rows else None)
    if served.log_file and served.log_file.exists():
        for line in served.log_file.read_text(errors="replace").splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if "t" not in e or not (t0 <= e["t"] <= t1):
                continue
            use.requests += 1
            use.request_s += e.get("ms", 0.0) / 1000
            if e.get("method") == "POST" and re.fullmatch(r"/v1/namespaces/[^/]+/tables/[^/]+", e.get("path", "")):
                use.commits += 1
                use.commit_s += e.get("ms", 0.0) / 1000
    use.request_s, use.commit_s = round(use.request_s, 4), round(use.commit_s, 4)
    return use


def run_engine_process(ctx: RunContext, slot: Slot, job: CompactionJob, work: Path) -> EngineRun:
    """Spawn the engine worker in its own process group and memory cgroup, sample it (and the catalog
    server), enforce the time and memory limits."""
    work.mkdir(parents=True, exist_ok=True)
    job_file, out_file, log_file = work / "job.json", work / "outcome.json", work / "engine.log"
    write_atomic(job_file, job.model_dump_json(indent=2))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    limiter = Limiter(ctx.budget)
    label = f"[{slot.engine} {slot.tag}]"
    last_beat = [time.monotonic()]  # the first heartbeat after one interval, not at the fork

    def on_sample(rss: int) -> None:
        limiter.on_sample(rss)
        now = time.monotonic()
        if now - last_beat[0] >= (1.0 if ctx.progress.live else HEARTBEAT_S):
            last_beat[0] = now
            row = sampler.last or {}
            ctx.progress.status(f"{label} compacting: {row.get('t_s', 0):.0f} s, RSS {fmt_bytes(rss)} of "
                                f"{fmt_bytes(ctx.budget)} budget, {row.get('cores') or 0:.1f} cores busy")

    server_sampler = None
    if ctx.served is not None and ctx.served.pid is not None:
        server_sampler = Sampler(ctx.served.pid, interval_s=0.1).start()
    with open(log_file, "wb") as log:
        t0, unix0 = time.perf_counter(), time.time()
        proc = subprocess.Popen([sys.executable, "-m", "bench.engines.worker", str(job_file), str(out_file),
                                 slot.engine], stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, preexec_fn=limiter.preexec)
        limiter.attach(proc.pid)
        timed_out = False
        sampler = Sampler(proc.pid, interval_s=0.1, on_sample=on_sample)
        with sampler:
            try:
                proc.wait(timeout=ctx.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            if timed_out or limiter.exceeded:
                kill_tree(proc)
                proc.wait()
        wall = time.perf_counter() - t0
        kill_tree(proc)  # nothing the engine started may outlive it
    if server_sampler is not None:
        server_sampler.stop()
    server = server_usage(ctx.served, server_sampler, unix0, time.time())
    ctx.progress.done()
    samples = work / "samples.parquet"
    sampler.write_samples(samples)
    record = None
    if out_file.exists():
        try:
            record = WorkerRecord.model_validate_json(out_file.read_text())
        except ValueError:
            record = None
    oom_evidence = limiter.evidence(proc.returncode)
    error = record.error if record else None
    if timed_out:
        status, error = "timeout", f"time limit of {ctx.timeout_s} s exceeded; process tree killed"
    elif oom_evidence:
        status, error = "oom", oom_evidence + (f"; engine said: {error}" if error else "")
    elif record is not None:
        status = record.status
    else:
        status, error = "failed", f"engine process exited with status {proc.returncode} and wrote no outcome"
    limiter.release()
    return EngineRun(status, wall, record, log_file, sampler.summary, str(samples), limiter.description, error,
                     server)


def run_one(ctx: RunContext, slot: Slot) -> RunResult:
    sc, ds = ctx.scenario, ctx.dataset
    assert ds is not None and ctx.catalog is not None
    engine_cls = engine_class(slot.engine)
    label = f"[{slot.engine} {slot.tag}]"
    r = RunResult(run_id=ctx.run_id, scenario=sc.name, engine=slot.engine, rep=slot.rep, warmup=slot.warmup,
                  scale=ctx.scale, seed=ctx.seed, dataset=ds.table, dataset_recipe_hash=ds.recipe_hash,
                  scenario_record=sc.record(), status="failed", started_at=now_iso(),
                  engine_order=list(slot.order), order_position=slot.position, engine_color=engine_cls.color,
                  target_file_size_bytes=ctx.target, small_file_threshold_bytes=ctx.threshold,
                  output_codec=sc.output.codec, memory_budget_bytes=ctx.budget, environment=ctx.environment,
                  versions=dict(ctx.versions))
    work = ctx.run_dir / "work" / f"{sc.name}--{slot.engine}--{slot.tag}"
    try:
        ctx.progress.info(f"{label} restoring {ds.table} to its dataset state (position {slot.position + 1} of "
                          f"{len(slot.order)}: {' -> '.join(slot.order)})")
        r.input, r.before, before_paths = reset_input(ctx)
        r.files_in = r.before.data_files + r.before.delete_files
        r.bytes_in = r.before.data_bytes + r.before.delete_bytes
        r.rows = r.before.rows
        r.cache = prepare_cache(ctx)
        job = CompactionJob(table=ds.table, catalog=ctx.served.settings if ctx.served else ctx.settings,
                            scenario=sc.name, kind=sc.kind, target_file_size_bytes=ctx.target,
                            small_file_threshold_bytes=ctx.threshold, output_codec=sc.output.codec,
                            output_codec_level=sc.output.level, options=sc.options_for(slot.engine),
                            memory_budget_bytes=ctx.budget, cores=usable_cores(), work_dir=str(work))
        ctx.progress.info(f"{label} compacting (cache {r.cache.mode}, budget {fmt_bytes(ctx.budget)}, "
                          f"time limit {ctx.timeout_s} s)")
        er = run_engine_process(ctx, slot, job, work)
        r.status = er.status  # type: ignore[assignment]
        r.error = er.error
        r.process_wall_s = er.process_wall_s
        r.memory_enforcement = er.enforcement
        r.telemetry = er.telemetry  # type: ignore[assignment]
        r.catalog_server = er.server
        r.samples_file = os.path.relpath(er.samples_file, ctx.run_dir)
        rec = er.record
        if rec is not None:
            r.setup_s, r.setup_phases, r.memory_caps = rec.setup_s, rec.setup_phases, rec.memory_caps
            r.phases = rec.phases
            r.duration_s = rec.duration_s if r.status == "ok" else None
            if rec.outcome is not None:
                r.engine_result, r.engine_settings = rec.outcome.engine_result, rec.outcome.settings
                r.engine_actions = rec.outcome.actions
                r.versions.update(rec.outcome.versions)
        if r.status != "ok":
            r.log_tail = tail(er.log)
        else:
            with ctx.progress.task(f"{label} verifying", unit="step"):
                tbl = ctx.catalog.load_table(ds.table)
                vi = VerifyInput(kind=sc.kind, table=tbl, before=r.before, before_paths=before_paths,
                                 ground_truth=ds.ground_truth, target_file_size_bytes=ctx.target,
                                 small_file_threshold_bytes=ctx.threshold, output_codec=sc.output.codec,
                                 input_fingerprint=r.input.fingerprint,
                                 input_identical=r.input.identical_to_dataset,
                                 settings=ctx.served.settings if ctx.served else ctx.settings)
                r.after, r.verification = verify(vi)
            r.files_out = r.after.data_files + r.after.delete_files
            r.bytes_out = r.after.data_bytes + r.after.delete_bytes
            r.verified = r.verification.verified
    except Exception as exc:  # noqa: BLE001 - a harness-side failure is still a recorded result
        r.status, r.verified = "failed", False
        r.error = f"harness: {type(exc).__name__}: {exc}"
        r.log_tail = traceback.format_exc().splitlines()[-LOG_TAIL_LINES:]
    r.cost = run_cost(r.duration_s if r.status == "ok" else None, ctx.instance_type,
                      ran_on=ctx.environment.get("instance_type"))
    path = save(ctx.results_dir, r)
    dur = f"{r.duration_s:.2f} s" if r.duration_s is not None else "-"
    phases = ", ".join(f"{p.name} {p.seconds:.2f} s" for p in r.phases) if r.status == "ok" else ""
    ctx.progress.info(f"{label} {r.status}, {dur}{f' ({phases})' if phases else ''}, files {r.files_in} -> "
                      f"{r.files_out if r.files_out is not None else '-'}, verified={r.verified}"
                      + (f", error: {r.error}" if r.error else "") + f" ({path.name})")
    for d in r.verification.differences[:5] if r.status == "ok" else []:
        ctx.progress.info(f"{label}   {d}")
    return r


# --- the run ----------------------------------------------------------------------------------
def run_scenario(opts: RunOptions, progress: Progress) -> list[RunResult]:
    ctx = resolve(opts, progress)
    slots = schedule(ctx.engines, opts.reps, opts.warmup)
    ctx.environment = environment(ctx.settings.state_path if ctx.settings.is_remote else ctx.settings.warehouse_path,
                                  packages=HARNESS_PACKAGES + tuple(p for e in ctx.engines
                                                                    for p in engine_class(e).packages))
    ctx.environment["warehouse"] = ctx.settings.storage_description()
    ctx.versions = package_versions(HARNESS_PACKAGES + tuple(p for e in ctx.engines for p in engine_class(e).packages))
    state = RunState(run_id=ctx.run_id, pid=os.getpid(), started_at=now_iso(), scenario=ctx.scenario.name,
                     scale=ctx.scale, engines=ctx.engines, reps=opts.reps, expected_results=len(slots),
                     command=" ".join(sys.argv)[:500])
    out: list[RunResult] = []
    with ExitStack() as stack:
        stack.enter_context(WarehouseLock(ctx.settings.lock_path, wait=opts.wait, say=progress.info))
        stale = remove_stale_cgroups()
        if stale:
            progress.info(f"removed {len(stale)} memory cgroup(s) left by a killed run")
        write_run_state(ctx.run_dir, state)
        try:
            log = ctx.run_dir / "work" / "catalog-server.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            ctx.served = stack.enter_context(serve(ctx.settings, log_file=log))
            ctx.catalog = load_catalog(ctx.settings)
            ds = ctx.dataset = prepare(ctx.catalog, ctx.settings, ctx.scenario.table, ctx.scale, ctx.seed,
                                       progress=progress)
            progress.info(f"dataset {ds.table}: {ds.files} files, {ds.bytes / 1e6:.1f} MB, {ds.rows} rows "
                          f"({'reused' if ds.reused else f'generated in {ds.generation_s:.1f} s'})")
            for slot in slots:
                out.append(run_one(ctx, slot))
            state.state = "complete"
        except BaseException as exc:
            state.state, state.note = "interrupted", f"{type(exc).__name__}: {exc}"[:500]
            raise
        finally:
            state.ended_at = now_iso()
            write_run_state(ctx.run_dir, state)
    progress.block(summary_table(out, ctx.engines))
    progress.info(f"results: {ctx.run_dir}")
    return out


def summary_table(results: list[RunResult], engines: list[str]) -> str:
    from bench.core.stats import paired_speedup

    rows = [f"{'engine':<12} {'rep':<7} {'order':<6} {'status':<9} {'duration':>10} {'files in -> out':>18} "
            f"{'verified':>9}"]
    for r in results:
        dur = f"{r.duration_s:.2f} s" if r.duration_s is not None else "-"
        files = f"{r.files_in} -> {r.files_out if r.files_out is not None else '-'}"
        rows.append(f"{r.engine:<12} {'warmup' if r.warmup else r.rep:<7} {r.order_position + 1:<6} {r.status:<9} "
                    f"{dur:>10} {files:>18} {str(r.verified):>9}")
    base = engines[0]
    for e in engines[1:]:
        sp = paired_speedup(results, base, e)
        if sp.pairs:
            rng = (f" (min {sp.ratio.min:.2f}x, max {sp.ratio.max:.2f}x over {len(sp.pairs)} paired reps)"
                   if len(sp.pairs) > 1 else "")
            rows.append(f"speedup: {sp.faster} is {sp.ratio.median:.2f}x faster than {sp.slower}"
                        f" (compaction wall time, verified runs){rng}")
        else:
            rows.append(f"speedup: {e} vs {base}: not available (needs verified runs of both)")
    return "\n".join(rows)


__all__ = ["RunOptions", "run_scenario", "prepare_dataset", "schedule", "summary_table", "recipe_hash", "table_name"]
