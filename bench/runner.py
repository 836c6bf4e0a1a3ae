"""The runner: datagen -> reset -> engine subprocess (sampled) -> verification -> result record.

For each repetition, engines run one after another on the identical input (the table is reset to the
dataset's snapshot and the previous engine's files are removed first).  Each engine runs in its own
subprocess (its own session, so memory is per engine and a crash, OOM or hang cannot take the harness
down); the runner measures it from outside the same way for every engine.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
import traceback
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psutil

from bench.catalog import CatalogSettings, load_catalog
from bench.engines import get_engine, parse_engines
from bench.engines.base import CompactionJob
from bench.errors import UserError
from bench.memory import parse_size
from bench.results import RunResult, TableStats, save, write_atomic
from bench.scenario import Scenario, load_scenario

Echo = Callable[[str], None]
GiB = 1024**3
LOG_TAIL_LINES = 40


@dataclass
class RunOptions:
    scenario: str
    scale: float | None = None
    seed: int = 42
    warehouse: str | None = None
    engines: str = "spark,risingwave"
    reps: int = 1
    warmup: bool = False
    results_dir: str | None = None
    run_id: str | None = None
    timeout_s: int = 3600
    memory_budget: str | None = None
    catalog_uri: str | None = None
    target_file_size: str | None = None
    instance_type: str | None = None


def default_memory_budget() -> int:
    """The published node's 64 GB scaled to this node: on the published m5.4xlarge each engine had the
    whole node's RAM, so here it gets the whole of this node's RAM."""
    return int(psutil.virtual_memory().total)


def resolve_warehouse(warehouse: str | None) -> CatalogSettings:
    """--warehouse (a directory, file:// URI or s3://bucket/prefix; default $BENCH_WAREHOUSE or
    ./warehouse) -> the catalog settings (an S3 warehouse keeps its catalog in a local state dir)."""
    return CatalogSettings.for_warehouse(warehouse)


def check_results_dir(results_dir: str | None) -> Path:
    path = Path(results_dir or os.environ.get("BENCH_RESULTS") or Path.cwd() / "results").resolve()
    probe_dir = path
    while not probe_dir.exists():
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir() or not os.access(probe_dir, os.W_OK | os.X_OK):
        raise UserError(f"results directory {path} is not writable; choose another with --results-dir")
    return path


def prepare_dataset(scenario: str | Scenario, scale: float | None, seed: int, warehouse: str | None,
                    echo: Echo = print, settings: CatalogSettings | None = None):
    from datagen.dataset import prepare

    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    scale = sc.local_scale if scale is None else scale
    if not scale > 0:
        raise UserError("--scale must be a positive number (1.0 = the published size)")
    settings = settings or resolve_warehouse(warehouse)
    catalog = load_catalog(settings)
    return prepare(catalog, settings.state_path, settings.namespace, sc.table.model_dump(), scale,
                   seed, echo=echo)


def storage_problems(sc: Scenario, scale: float, seed: int, engines: list[str],
                     settings: CatalogSettings) -> list[str]:
    """What cannot reach this warehouse (e.g. Spark on S3 offline), as one-line items."""
    from bench.engines.base import storage_requirements
    from datagen.dataset import storage_requirements as datagen_storage

    if settings.is_remote:
        settings.storage_description()  # bad S3 settings in the environment -> UserError now
    out = [f"datagen: {r.detail} -> {r.fix}"
           for r in datagen_storage(sc.table.model_dump(), scale, seed, settings) if not r.ok]
    out += [f"{e}: {r.detail} -> {r.fix}" for e in engines
            for r in storage_requirements(get_engine(e), settings) if not r.ok]
    return out


def baseline_stats(catalog, ds, state: Path, settings: CatalogSettings | None = None) -> TableStats:
    """Stats of the dataset's snapshot, read once from the real table and cached beside its manifest
    (in the local state directory: the warehouse itself when it is local)."""
    from bench.verify import table_stats

    cache = state / "datasets" / f"{ds.table.split('.')[-1]}.baseline.json"
    if cache.exists():
        st = TableStats.model_validate_json(cache.read_text())
        if st.snapshot_id == ds.snapshot_id:
            return st
    st = table_stats(catalog.load_table(ds.table), ds.snapshot_id, settings=settings)
    write_atomic(cache, st.model_dump_json(indent=1))
    return st


def new_run_id(results: Path, scenario: str, requested: str | None) -> str:
    base = requested or time.strftime("%Y%m%d-%H%M%S") + f"-{scenario}"
    if not re.fullmatch(r"[A-Za-z0-9._-]+", base):
        raise UserError(f"--run-id {base!r} may only contain letters, digits, '.', '_' and '-'")
    run_id, n = base, 1
    while (results / run_id).exists():  # never write into an earlier run
        n += 1
        run_id = f"{base}-{n}"
    return run_id


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
    record: dict
    log: Path
    telemetry: object | None
    samples_file: str | None
    enforcement: str


def run_engine_process(engine: str, job: CompactionJob, work: Path, timeout_s: int,
                       budget: int | None) -> EngineRun:
    """Spawn the engine worker in its own process group, sample it, enforce time and memory limits."""
    from bench import memory
    from bench.telemetry import Sampler

    work.mkdir(parents=True, exist_ok=True)
    job_file, out_file, log_file = work / "job.json", work / "outcome.json", work / "engine.log"
    job_file.write_text(json.dumps(job.to_dict(), indent=2))
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1")
    limiter = memory.Limiter(budget)
    with open(log_file, "wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "bench.engines.worker", str(job_file),
                                 str(out_file), engine], stdout=log, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True, preexec_fn=limiter.preexec)
        limiter.attach(proc.pid)
        timed_out = False
        with Sampler(proc.pid, interval_s=0.1, on_sample=limiter.on_sample) as sampler:
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            if timed_out or limiter.exceeded:
                kill_tree(proc)
                proc.wait()
        wall = time.perf_counter() - t0
        kill_tree(proc)  # nothing the engine started may outlive it
    samples = work / "samples.parquet"
    sampler.write_samples(samples)
    record = json.loads(out_file.read_text()) if out_file.exists() else {}
    oom_evidence = limiter.evidence(proc.returncode)
    if timed_out:
        status = "timeout"
        record.setdefault("error", f"time limit of {timeout_s} s exceeded; process tree killed")
    elif oom_evidence:
        status = "oom"
        record["error"] = oom_evidence + (f"; engine said: {record['error']}" if record.get("error") else "")
    elif record:
        status = record.get("status", "failed")
    else:
        status = "failed"
        record["error"] = f"engine process exited with status {proc.returncode} and wrote no outcome"
    limiter.release()
    return EngineRun(status, wall, record, log_file, sampler.summary, str(samples), limiter.description)


def run_scenario(opts: RunOptions, echo: Echo = print) -> list[RunResult]:
    from bench.catalog.rest import check_rest_uri, serve
    from bench.cost import parse_instance
    from bench.environment import environment, package_versions

    sc = load_scenario(opts.scenario)
    engines = parse_engines(opts.engines)
    scale = sc.local_scale if opts.scale is None else opts.scale
    if not scale > 0:
        raise UserError("--scale must be a positive number (1.0 = the published size)")
    budget = parse_size(opts.memory_budget, "--memory-budget") if opts.memory_budget else default_memory_budget()
    target = parse_size(opts.target_file_size, "--target-file-size") if opts.target_file_size else sc.target_file_size_bytes
    parse_instance(opts.instance_type)  # an unknown instance type is bad input, before anything runs
    results = check_results_dir(opts.results_dir)
    settings = resolve_warehouse(opts.warehouse)
    if opts.catalog_uri:
        check_rest_uri(opts.catalog_uri)
    missing = [f"{e}: {r.name} ({r.detail}) -> {r.fix}" for e in engines
               for r in get_engine(e).requirements() if not r.ok]
    if missing:
        raise UserError("missing prerequisites: " + "; ".join(missing) + " (see `bench doctor`)")
    unreachable = storage_problems(sc, scale, opts.seed, engines, settings)
    if unreachable:
        raise UserError(f"warehouse {settings.warehouse}: " + "; ".join(unreachable))
    run_id = new_run_id(results, sc.name, opts.run_id)

    if opts.catalog_uri:
        settings = dataclasses.replace(settings, rest_uri=opts.catalog_uri, external_rest=True)
    # the disk facts are those of the local state (catalog, manifests) when the warehouse is on S3
    env_info = environment(settings.state_path if settings.is_remote else settings.warehouse_path)
    env_info["warehouse"] = settings.storage_description()
    versions = package_versions()
    out: list[RunResult] = []
    with ExitStack() as stack:
        if not settings.external_rest:
            settings = stack.enter_context(serve(settings))
        ds = prepare_dataset(sc, scale, opts.seed, None, echo=echo, settings=settings)
        echo(f"dataset {ds.table}: {ds.files} files, {ds.bytes / 1e6:.1f} MB, {ds.rows} rows "
             f"({'reused' if ds.reused else f'generated in {ds.generation_s:.1f} s'})")
        catalog = load_catalog(settings)
        before = baseline_stats(catalog, ds, settings.state_path, settings)
        plan = [(rep, True) for rep in range(1)] if opts.warmup else []
        plan += [(rep, False) for rep in range(opts.reps)]
        for rep, warmup in plan:
            for engine in engines:
                r = run_one(sc, engine, rep, warmup, run_id, scale, opts, ds, before, settings, catalog,
                            target, budget, results, env_info, versions, echo)
                out.append(r)
    echo(summary_table(out, engines))
    echo(f"results: {results / run_id}")
    return out


def run_one(sc: Scenario, engine: str, rep: int, warmup: bool, run_id: str, scale: float,
            opts: RunOptions, ds, before: TableStats, settings: CatalogSettings, catalog, target: int,
            budget: int, results: Path, env_info: dict, versions: dict, echo: Echo) -> RunResult:
    from datagen.dataset import reset
    from bench.cost import run_cost
    from bench.verify import VERIFIERS, table_stats

    tag = "warmup" if warmup else f"rep{rep}"
    echo(f"[{engine} {tag}] resetting {ds.table} to snapshot {ds.snapshot_id}")
    r = RunResult(run_id=run_id, scenario=sc.name, engine=engine, rep=rep, warmup=warmup, scale=scale,
                  seed=opts.seed, dataset=ds.table, dataset_recipe_hash=ds.recipe_hash, status="failed",
                  started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  files_in=before.data_files + before.delete_files, bytes_in=before.data_bytes + before.delete_bytes,
                  rows=before.rows, before=before, target_file_size_bytes=target,
                  memory_budget_bytes=budget, environment=env_info, versions=dict(versions))
    work = results / run_id / "work" / f"{sc.name}--{engine}--{tag}"
    try:
        reset(catalog, ds)
        job = CompactionJob(table=ds.table, catalog=settings.to_dict(), scenario=sc.name, kind=sc.kind,
                            target_file_size_bytes=target, options=dict(sc.engines.get(engine, {})),
                            memory_budget_bytes=budget, cores=os.cpu_count() or 1, work_dir=str(work))
        echo(f"[{engine} {tag}] compacting ...")
        er = run_engine_process(engine, job, work, opts.timeout_s, budget)
        rec = er.record
        outcome = rec.get("outcome", {})
        r.status = er.status
        r.process_wall_s = er.process_wall_s
        r.duration_s = rec.get("duration_s")
        r.setup_s = rec.get("setup_s")
        r.error = rec.get("error")
        r.engine_result = outcome.get("engine_result", {})
        r.engine_settings = outcome.get("settings", {})
        r.engine_actions = outcome.get("actions", [])
        r.versions.update(outcome.get("versions", {}))
        r.memory_enforcement = er.enforcement
        r.telemetry = er.telemetry
        r.samples_file = os.path.relpath(er.samples_file, results / run_id) if er.samples_file else None
        if r.status != "ok":
            r.log_tail = tail(er.log)
        else:
            tbl = catalog.load_table(ds.table)
            r.after = table_stats(tbl, settings=settings)
            r.files_out = r.after.data_files + r.after.delete_files
            r.bytes_out = r.after.data_bytes + r.after.delete_bytes
            r.verification = VERIFIERS[sc.kind](before, r.after, ds.ground_truth, table=tbl, settings=settings)
            r.verified = r.verification.verified
    except Exception as exc:  # noqa: BLE001 - a harness-side failure is still a recorded result
        r.status = "failed"
        r.error = f"harness: {type(exc).__name__}: {exc}"
        r.log_tail = traceback.format_exc().splitlines()[-LOG_TAIL_LINES:]
    r.cost = run_cost(r.duration_s, opts.instance_type)
    path = save(results, r)
    dur = f"{r.duration_s:.2f} s" if r.duration_s is not None else "-"
    echo(f"[{engine} {tag}] {r.status}, {dur}, files {r.files_in} -> {r.files_out if r.files_out is not None else '-'}"
         f", verified={r.verified}" + (f", error: {r.error}" if r.error else "") + f" ({path.name})")
    return r


def summary_table(results: list[RunResult], engines: list[str]) -> str:
    from bench.stats import paired_speedup

    rows = [f"{'engine':<12} {'rep':<7} {'status':<8} {'duration':>10} {'files in -> out':>18} {'verified':>9}"]
    for r in results:
        dur = f"{r.duration_s:.2f} s" if r.duration_s is not None else "-"
        files = f"{r.files_in} -> {r.files_out if r.files_out is not None else '-'}"
        rows.append(f"{r.engine:<12} {'warmup' if r.warmup else r.rep:<7} {r.status:<8} {dur:>10} "
                    f"{files:>18} {str(r.verified):>9}")
    base = engines[0]
    for e in engines[1:]:
        sp = paired_speedup(results, base, e)
        if sp.pairs:
            rng = (f" (min {sp.ratio.min:.2f}x, max {sp.ratio.max:.2f}x over {len(sp.pairs)} paired reps)"
                   if len(sp.pairs) > 1 else "")
            rows.append(f"speedup: {sp.faster} is {sp.ratio.median:.2f}x faster than {sp.slower}"
                        f" (compaction wall time){rng}")
        else:
            rows.append(f"speedup: {e} vs {base}: not available (needs ok, verified runs of both)")
    return "\n".join(rows)
