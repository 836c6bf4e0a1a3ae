"""Shared engine processes, for runs that are judged, never timed (`bench conformance`, a live writer's cases): one
worker per engine serves one run after another, so a JVM starts once for every case instead of once per case.
What a case judges is correctness, and that does not depend on a warm process; what it times does, so a run made
in a shared process is marked (`RunResult.shared_process`: its process's n-th run) and never enters a statistic
(bench.core.stats.measured).

Each run still goes the one path (bench.runner.engine_run): the dataset restored, the table out of reach
while the engine sets up (its `open()` runs again for every job: for a warm engine it costs little), the
handshake, the compaction on the engine's own clock, the verification.  The process is spawned inside its own
memory cgroup and process group like any engine's (bench.runner.process), sampled from each job's start to
its end, killed on its time limit; a job that does not end ok ends the process, and the next job gets a new
one.  A job whose engine options, budget, cores or catalog differ from the process's gets a new one too.
The loopback REST catalog is served once for all the runs (`serve`): an engine's catalog stays the same."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.core import children
from bench.core.catalog import CatalogSettings
from bench.core.catalog.rest import ServedCatalog, serve
from bench.core.fileio import write_atomic
from bench.engines import worker_launch
from bench.engines.base import CompactionJob
from bench.engines.worker import SESSION_ENV
from bench.runner.process import (
    EngineRun,
    OnReady,
    Spawned,
    classify,
    kill_tree,
    release_after_setup,
    server_usage,
)
from bench.telemetry.limits import Limiter
from bench.telemetry.sampler import Sampler


def _key(engine: str, job: CompactionJob) -> str:
    """What a process is started with: a job that differs gets a new process."""
    return job.model_dump_json(include={"options", "memory_budget_bytes", "cores", "catalog"}) + engine


@dataclass
class _Worker:
    key: str
    proc: subprocess.Popen
    limiter: Limiter
    to_worker: int  # the harness writes here
    from_worker: int  # ... and reads here
    log: Path
    jobs: int = 0
    buffer: bytes = b""

    def send(self, text: str) -> bool:
        try:
            os.write(self.to_worker, text.encode() + b"\n")
            return True
        except (BrokenPipeError, OSError):
            return False

    def line(self, deadline: float) -> str | None:
        """The worker's next line, '' when it ended, None when the deadline passed first."""
        while b"\n" not in self.buffer:
            if time.monotonic() >= deadline:
                return None
            readable, _, _ = select.select([self.from_worker], [], [], min(0.1, max(0.0, deadline - time.monotonic())))
            if not readable:
                if self.proc.poll() is not None:
                    return ""
                continue
            chunk = os.read(self.from_worker, 4096)
            if not chunk:
                return ""
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode().strip()

    def stop(self, grace_s: float = 10.0) -> None:
        self.send("quit")
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        kill_tree(self.proc)  # nothing it started outlives it
        self.proc.wait()
        children.release(self.proc, group=True)
        for fd in (self.to_worker, self.from_worker):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.limiter.release()


@dataclass
class SharedProcesses:
    """The shared workers of a campaign of runs (one per engine at a time) and its one served catalog."""

    log_dir: Path  # where each engine's shared-<engine>.log goes
    workers: dict[str, _Worker] = field(default_factory=dict)
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    _served: ServedCatalog | None = None

    def serve(self, settings: CatalogSettings, log_file: Path) -> ServedCatalog:
        """The loopback REST catalog, started by the first run and kept for the others."""
        if self._served is None or self._served.settings.name != settings.name:
            self._served = self._stack.enter_context(serve(settings, log_file=log_file))
        return self._served

    def close(self) -> None:
        for name in list(self.workers):
            self.workers.pop(name).stop()
        self._stack.close()

    def __enter__(self) -> SharedProcesses:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _spawn(self, engine: str, key: str, budget: int, log: Path) -> _Worker:
        limiter = Limiter(budget)
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        python, extra = worker_launch(engine)
        env = dict(os.environ, PYTHONUNBUFFERED="1", **extra, **{SESSION_ENV: f"{to_r},{from_w}"})
        try:
            with open(log, "ab") as out:
                proc = children.popen([python, "-m", "bench.engines.worker", engine], stdout=out,
                                      stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                      preexec_fn=limiter.preexec, pass_fds=(to_r, from_w))
        except BaseException:
            for fd in (to_w, from_r):
                os.close(fd)
            limiter.release()
            raise
        finally:
            for fd in (to_r, from_w):
                os.close(fd)
        limiter.attach(proc.pid)
        return _Worker(key, proc, limiter, to_w, from_r, log)

    def _worker(self, engine: str, job: CompactionJob, budget: int, log: Path) -> _Worker:
        key = _key(engine, job)
        w = self.workers.get(engine)
        if w is not None and (w.key != key or w.proc.poll() is not None):
            self.workers.pop(engine).stop()
            w = None
        if w is None:
            w = self.workers[engine] = self._spawn(engine, key, budget, log)
        return w

    def run(self, ctx, slot, job: CompactionJob, work: Path, on_ready: OnReady | None,
            companion: Any = None) -> EngineRun:
        """One engine run in the engine's shared process: as bench.runner.process.run_engine_process (`companion`,
        e.g. the live writer's hold, attached to the process for this run), but the process is kept for the next
        run when this one ended ok."""
        work.mkdir(parents=True, exist_ok=True)
        job_file, out_file = work / "job.json", work / "outcome.json"
        write_atomic(job_file, job.model_dump_json(indent=2))
        log = self.log_dir / f"shared-{slot.engine.replace('/', '_')}.log"
        w = self._worker(slot.engine, job, ctx.budget, log)
        w.jobs += 1
        t0, unix0 = time.perf_counter(), time.time()
        deadline = time.monotonic() + ctx.timeout_s
        sampler = Sampler(w.proc.pid, interval_s=0.1, on_sample=w.limiter.on_sample).start()
        harness_error, timed_out = None, False
        if companion is not None:
            companion.attach(w.proc.pid)  # the worker leads its own process group, as a run's own process does
        try:
            w.send(f"job {job_file} {out_file}")  # a worker that ended is classified below from what it left
            while True:
                said = w.line(deadline)
                if said is None:
                    timed_out = True
                    break
                if said != "ready":
                    break  # done, or it ended
                harness_error = release_after_setup(sampler, on_ready or (lambda rb, rc: None))
                w.send("abort" if harness_error else "go")
        finally:
            if companion is not None:
                companion.detach()
            sampler.stop()
            ctx.progress.done()
        wall = time.perf_counter() - t0
        ended = timed_out or w.limiter.exceeded or w.proc.poll() is not None
        if timed_out or w.limiter.exceeded:
            kill_tree(w.proc)
            w.proc.wait()
        sp = Spawned(w.proc, sampler, wall, timed_out, harness_error, None)
        samples = work / "samples.parquet"
        sampler.write_samples(samples)
        status, record, error = classify(ctx, sp, w.limiter, out_file)
        description = w.limiter.description
        if ended or status != "ok":
            self.workers.pop(slot.engine).stop()
        server = server_usage(ctx.served, None, unix0, time.time())  # its requests and 5xx answers (no samples)
        return EngineRun(status, wall, record, log, sampler.summary, str(samples), description, error, server,
                         harness_error, shared_job=w.jobs)
