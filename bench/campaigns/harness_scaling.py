"""`bench selfcheck scaling`: how the harness's own steps divide over cores, measured as the engines' are.

`bench plan` carries datagen, the input read once per dataset and verification from this node's cores to the
target's.  This times each of them on 1 and on 2 cores of this node.  Every (round, cores, step) runs in a fresh
subprocess confined to the first N CPUs this process may use (bench.telemetry.confine.Confiner, as an engine run
under `--cores N`: a cpuset cgroup, else CPU affinity, set between fork and exec, before any import) and told N:
datagen N writer processes, DuckDB N threads ($BENCH_DUCKDB_THREADS), pyarrow N CPU threads, pyiceberg N workers
($PYICEBERG_MAX_WORKERS).  The child checks that it sees exactly its N CPUs and was told N, or fails.  The order
of the core counts alternates between rounds (1, 2 then 2, 1 ...), so that drift of a shared machine hits both.

    datagen       datagen.dataset.prepare of the small-files recipe of `bench selfcheck datagen` (the bin-packing
                  table's kind) into a fresh warehouse with its SQLite catalog, after os.sync()
    input read    bench.verify.stats.table_stats(content=True) of that table, as bench.runner.inputs.input_stats reads
                  the input once per dataset; the page cache warm
    verification  the content readers verification runs on a table without delete files
                  (bench.verify.checks.READERS_FOR["binpack"]: DuckDB read_parquet by name, pyiceberg's scan by
                  field id); the page cache warm

Warm: every file of the table read once just before the clock starts (the plan accounts for the bytes at the
target's storage separately; this measures how the CPU work divides).  Each child times its step alone: the wall
and the CPU it used (user + sys of itself and of its reaped children, datagen's writer processes), so cores busy
= CPU / wall.  The result, a HarnessScalingSummary (bench.core.campaign) with one CoreScaling per step (medians
over the rounds), goes to <results>/<run-id>/harness-scaling.json, which `bench plan --from` reads.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.core import children
from bench.core.campaign import HARNESS_STEPS, HarnessScalingSummary, recorded, write_summary
from bench.core.errors import UserError
from bench.core.fileio import read_once, write_atomic
from bench.core.fit import MIN_BUSY, CoreScaling
from bench.core.machine import environment, usable_cores
from bench.core.published import PUBLISHED_VCPU
from bench.core.results import now_iso
from bench.core.settings import env_name, env_settings
from bench.runner.context import check_results_dir, new_run_id
from bench.telemetry.confine import Confiner, check_cores

CORES = (1, 2)
TARGET_CORES = PUBLISHED_VCPU  # the published node's: the speedup the table shows
SEED = 42
STEP_TIMEOUT_S = 3600
CACHE = ("datagen: os.sync() before the clock, its writes buffered as in a run; input read and verification: "
         "warm, every file of the table read once just before the clock (the plan counts the bytes at the "
         "target's storage separately)")


@dataclass(frozen=True)
class Options:
    files: int = 87
    file_mb: float = 11.0
    codec: str = "uncompressed"
    rounds: int = 3
    results_dir: str | None = None
    run_id: str | None = None
    work_dir: str | None = None  # where the temporary warehouses go (default: $BENCH_SELFCHECK_DIR, else /tmp)

    def check(self) -> None:
        if self.files < 2:
            raise UserError(f"--files {self.files}: give at least 2")
        if not self.file_mb > 0:
            raise UserError(f"--file-mb {self.file_mb:g}: give a size above 0 MB")
        if self.codec not in ("uncompressed", "zstd"):
            raise UserError(f"--codec {self.codec}: give uncompressed or zstd")
        if self.rounds < 1:
            raise UserError(f"--rounds {self.rounds}: give at least 1")


@dataclass
class Sample:
    """One step, on n cores, in one round: the child's own measurement."""

    step: str
    cores: int
    round: int
    wall_s: float
    cpu_s: float
    cpus: list[int]  # what the child saw (os.sched_getaffinity)
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def busy(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0


def table_text(files: int, opts: Options, size: int | None = None) -> str:
    """What the steps generate and read, for the summary (with its size once datagen wrote it)."""
    where = "" if size is None else ", " + (f"{size / 1e9:.2f} GB" if size >= 1e9 else f"{size / 1e6:.1f} MB")
    return f"small files (the bin-packing table's kind), {files} files of ~{opts.file_mb:g} MB, {opts.codec}{where}"


def fmt_cpus(cpus: list[int]) -> str:
    return ",".join(map(str, cpus))


def _plural(n: int) -> str:
    return f"{n} core" if n == 1 else f"{n} cores"


# --- the parent -----------------------------------------------------------------------------------------
def order(round_index: int) -> tuple[int, ...]:
    """The core counts of a round (0-based), alternating: 1, 2 then 2, 1 ..."""
    return CORES if round_index % 2 == 0 else tuple(reversed(CORES))


def run_step(step: str, cpus: list[int], args: dict[str, Any], base: Path, log: Path) -> tuple[dict, str]:
    """Run one step in a fresh subprocess confined to `cpus` and told their number; its answer and how it was
    confined.  UserError (one line) when it fails."""
    n = len(cpus)
    job, out = base / "step.json", base / "answer.json"
    out.unlink(missing_ok=True)
    write_atomic(job, json.dumps({**args, "step": step, "cpus": cpus, "answer": str(out)}))
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYICEBERG_MAX_WORKERS=str(n))
    env[env_name("duckdb_threads")] = str(n)
    confiner = Confiner(None, None, cpus)

    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as fh:
            try:
                rc = children.run([sys.executable, "-m", "bench.campaigns.harness_scaling", str(job)], stdout=fh,
                                  stderr=subprocess.STDOUT, env=env, preexec_fn=confiner.preexec,
                                  timeout=STEP_TIMEOUT_S).returncode
            except subprocess.TimeoutExpired:
                raise UserError(f"{step} on {_plural(n)} took more than {STEP_TIMEOUT_S} s; its log: {log}") from None
    finally:
        confiner.release()
    mechanism = confiner.core_limit.mechanism if confiner.core_limit else "none"
    if rc != 0 or not out.exists():
        lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
        last = lines[-1].strip()[:300] if lines else "no output"
        raise UserError(f"{step} on {_plural(n)} failed (exit status {rc}): {last}; its log: {log}")
    return json.loads(out.read_text()), mechanism


def scalings(samples: list[Sample], rounds: int) -> list[CoreScaling]:
    """Per step measured on both core counts: medians over the rounds, each round named with its evidence."""
    out = []
    for step in HARNESS_STEPS:
        by = {n: sorted((s for s in samples if s.step == step and s.cores == n), key=lambda s: s.round)
              for n in CORES}
        if not all(by.values()):
            continue
        runs = []
        for r in sorted({s.round for n in CORES for s in by[n]}):
            parts = [f"{_plural(s.cores)} {s.wall_s:.3f} s, {s.busy:.2f} busy, cpus {fmt_cpus(s.cpus)}"
                     for n in order(r - 1) for s in by[n] if s.round == r]
            runs.append(f"round {r}: " + "; ".join(parts))
        out.append(CoreScaling(engine=step, t1_s=statistics.median(s.wall_s for s in by[1]),
                               t2_s=statistics.median(s.wall_s for s in by[2]),
                               busy_1=statistics.median(s.busy for s in by[1]),
                               busy_2=statistics.median(s.busy for s in by[2]), runs=runs,
                               note=f"{min(len(by[1]), len(by[2]))} of {rounds} rounds, median"))
    return out


def table(steps: list[CoreScaling], target: int = TARGET_CORES) -> str:
    """The final table: per step t1, t2, cores busy, efficiency, Amdahl's speedup on `target` cores, usable."""
    head = ["step", "1 core", "2 cores", "cores busy (1, 2)", "efficiency t1/(2 t2)", f"{target} cores (Amdahl)",
            "usable"]
    rows = [head]
    for c in steps:
        busy = f"{c.busy_1:.2f}, {c.busy_2:.2f}" if c.busy_1 is not None and c.busy_2 is not None else "-"
        rows.append([c.engine, f"{c.t1_s:.2f} s", f"{c.t2_s:.2f} s", busy, f"{c.efficiency:.2f}",
                     f"{c.speedup(target):.1f}x",
                     "yes" if c.usable else f"no: on 1 core it kept less than {MIN_BUSY} of it busy"])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(r, widths)) + "  " + r[-1] for r in rows)


def harness_scaling(opts: Options, echo: Callable[[str], None] = print) -> HarnessScalingSummary:
    """Measure, print as it goes, write <results>/<run-id>/harness-scaling.json; the summary written."""
    opts.check()
    results = check_results_dir(opts.results_dir)
    run_id = new_run_id(results, "harness-scaling", opts.run_id)
    if usable_cores() < 2:
        raise UserError(f"this process may use {usable_cores()} CPU (cpus {fmt_cpus(sorted(os.sched_getaffinity(0)))}):"
                        " measuring 1 -> 2 core scaling needs at least 2")
    cpus = {n: check_cores(n) for n in CORES}
    directory = results / run_id
    work_parent = opts.work_dir or env_settings().selfcheck_dir
    if work_parent:
        Path(work_parent).mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="bench-selfcheck-scaling-", dir=work_parent))
    try:
        env = environment(base)
        summary = HarnessScalingSummary(scaling_id=run_id, started_at=now_iso(), machine=env.describe(),
                                        cores=usable_cores(), rounds=opts.rounds, cache=CACHE,
                                        table=table_text(opts.files, opts))
        directory.mkdir(parents=True)
        write_summary(directory, summary)
        echo(f"{opts.files} files of ~{opts.file_mb:g} MB ({opts.codec}), steps {', '.join(HARNESS_STEPS)} on 1 and 2 "
             f"cores (cpus {fmt_cpus(cpus[1])} and {fmt_cpus(cpus[2])}), {opts.rounds} round"
             f"{'s' if opts.rounds != 1 else ''} alternating, warehouses in {base}")
        with recorded(directory, summary):
            _measure(opts, summary, directory, base, cpus, echo)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    echo("")
    echo(table(summary.steps))
    echo(f"written: {directory / 'harness-scaling.json'}")
    return summary


def _measure(opts: Options, summary: HarnessScalingSummary, directory: Path, base: Path, cpus: dict[int, list[int]],
             echo: Callable[[str], None]) -> None:
    samples: list[Sample] = []
    mechanisms: set[str] = set()
    args = {"files": opts.files, "file_mb": opts.file_mb, "codec": opts.codec, "seed": SEED}
    for r in range(1, opts.rounds + 1):
        for n in order(r - 1):
            warehouse = base / f"round{r}-{n}cores"
            facts: dict[str, Any] = {}
            for step in HARNESS_STEPS:
                slug = step.replace(" ", "-")
                log = directory / "logs" / f"round{r}-{n}cores-{slug}.log"
                answer, mechanism = run_step(step, cpus[n], {**args, "warehouse": str(warehouse), **facts}, base, log)
                mechanisms.add(mechanism)
                s = Sample(step=step, cores=n, round=r, wall_s=answer["wall_s"], cpu_s=answer["cpu_s"],
                           cpus=answer["cpus"], facts=answer.get("facts", {}))
                if s.cpus != cpus[n]:  # the child checks it too
                    raise UserError(f"{step} on {_plural(n)} saw cpus {fmt_cpus(s.cpus)}, not {fmt_cpus(cpus[n])}")
                samples.append(s)
                if log.stat().st_size == 0:  # kept where the step said something
                    log.unlink()
                summary.samples.setdefault(step, {str(k): [] for k in CORES})[str(n)].append(s.wall_s)
                if step == "datagen":
                    facts = {"table": s.facts["table"]}
                    summary.table = table_text(s.facts["files"], opts, s.facts["bytes"])
                said = ", ".join(f"{k} {v}" for k, v in s.facts.items() if k in ("rows", "reader", "readers"))
                echo(f"round {r}/{opts.rounds}, {_plural(n)} (cpus {fmt_cpus(s.cpus)}): {step:<12} "
                     f"{s.wall_s:7.2f} s, {s.busy:.2f} cores busy{f' ({said})' if said else ''}")
            shutil.rmtree(warehouse, ignore_errors=True)
        logs = directory / "logs"
        if logs.is_dir() and not any(logs.iterdir()):
            logs.rmdir()
        summary.steps = scalings(samples, opts.rounds)
        summary.notes = [f"each step in a fresh subprocess confined by {', '.join(sorted(mechanisms))} and told its "
                         "cores (datagen workers, DuckDB threads, pyarrow CPU threads, pyiceberg workers); every "
                         "child saw exactly its CPUs (os.sched_getaffinity)",
                         "verification: the content readers alone (" + ", ".join(_verification_readers()) +
                         "), on the generated table rather than an engine's output"]
        write_summary(directory, summary)


def _verification_readers() -> list[str]:
    from bench.verify.checks import READERS_FOR

    return list(READERS_FOR["binpack"])


# --- the child ------------------------------------------------------------------------------------------
def _cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@contextmanager
def _clock(into: dict[str, float]) -> Iterator[None]:
    cpu0, t0 = _cpu_s(), time.perf_counter()
    yield
    into["wall_s"], into["cpu_s"] = time.perf_counter() - t0, _cpu_s() - cpu0


def _warm(location: str) -> int:
    """Read every file of the table once (its data and metadata): the page cache warm, untimed."""
    from bench.core.uri import local_path

    return read_once(os.path.join(root, name) for root, _, names in os.walk(local_path(location)) for name in names)


def _tell(n: int) -> dict[str, int | None]:
    """Tell the step's libraries n cores (pyarrow here; DuckDB and pyiceberg by the environment the parent set);
    what each says it was told (each must say n)."""
    import pyarrow as pa
    from pyiceberg.utils.concurrent import ExecutorFactory

    from bench.core.catalog.duck import duckdb_connect

    pa.set_cpu_count(n)
    con = duckdb_connect()
    try:
        row = con.execute("SELECT current_setting('threads')").fetchone()
    finally:
        con.close()
    return {"pyarrow": pa.cpu_count(), "duckdb": int(row[0]) if row else None,
            "pyiceberg": ExecutorFactory.max_workers()}


def child(job: dict[str, Any]) -> dict[str, Any]:
    """One step, in this (confined) process: its wall, CPU and facts."""
    cpus = sorted(os.sched_getaffinity(0))
    n = len(job["cpus"])
    if cpus != job["cpus"]:
        raise SystemExit(f"not confined: this process may use cpus {fmt_cpus(cpus)}, not {fmt_cpus(job['cpus'])}")
    told = _tell(n)
    if any(v != n for v in told.values()):
        raise SystemExit(f"not told {n} cores: {told}")
    from bench.core.catalog import CatalogSettings, load_sql_catalog

    settings = CatalogSettings(warehouse=job["warehouse"])
    catalog = load_sql_catalog(settings)
    out: dict[str, Any] = {"cpus": cpus, "told": told}
    facts: dict[str, Any] = {}
    step = job["step"]
    if step == "datagen":
        from datagen.dataset import prepare
        from datagen.selfcheck import _recipe

        recipe = _recipe(job["files"], job["file_mb"], job["codec"])
        os.sync()  # no dirty pages of an earlier step to flush inside the clock
        with _clock(out):
            ds = prepare(catalog, settings, recipe, 1.0, job["seed"], workers=n)
        facts = {"table": ds.table, "files": ds.files, "bytes": ds.bytes, "rows": ds.rows}
    elif step == "input read":
        from bench.core.table.entries import live_files
        from bench.verify.stats import table_stats

        tbl = catalog.load_table(job["table"])
        files = live_files(tbl)  # as bench.runner.inputs: listed beside the restore, outside the read
        facts["warmed_bytes"] = _warm(tbl.location())
        with _clock(out):
            st = table_stats(tbl, files=files, settings=settings)
        facts |= {"rows": st.rows, "reader": st.content_reader}
    elif step == "verification":
        from bench.verify.readers import read
        from bench.verify.referee import agree

        tbl = catalog.load_table(job["table"])
        facts["warmed_bytes"] = _warm(tbl.location())
        answers = []
        with _clock(out):
            for name in _verification_readers():
                answers.append(read(name, tbl, None, settings))
        failed = [a for a in answers if not a.answered]
        if failed:
            raise SystemExit("a reader could not read the table: " + "; ".join(f"{a.reader}: {a.why_not}"
                                                                                for a in failed))
        if not answers or not agree(answers):
            raise SystemExit(f"the readers disagree: {[a.model_dump(exclude_none=True) for a in answers]}")
        facts |= {"rows": answers[0].rows, "readers": "+".join(a.reader for a in answers)}
    else:
        raise SystemExit(f"unknown step {step!r}")
    out["facts"] = facts
    return out


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    write_atomic(job["answer"], json.dumps(child(job)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
