"""One engine run as a process: its own process group and memory cgroup, a time limit, the 10 Hz
sampler on its tree (with a heartbeat to the progress line) and on the catalog server, the handshake
between its setup and its compaction (`ready` -> the runner's `on_ready` -> `go`: bench.engines.worker),
and the classification of how it ended (ok, failed, oom, heap-oom, timeout)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core import children
from bench.core.catalog.rest import ServedCatalog, request_log
from bench.core.fileio import write_atomic
from bench.core.fmt import fmt_bytes
from bench.core.records.engine_run import EngineStatus
from bench.core.records.telemetry import CatalogServerUsage, CoreLimit, StorageCap
from bench.engines import worker_launch
from bench.engines.base import CompactionJob, WorkerRecord
from bench.engines.worker import CONTROL_ENV
from bench.runner.context import RunContext, Slot
from bench.telemetry.confine import Confiner
from bench.telemetry.limits import Limiter
from bench.telemetry.sampler import Sampler

LOG_TAIL_LINES = 40
HEARTBEAT_S = 5.0


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
    status: EngineStatus  # how the engine's process ended (classify)
    process_wall_s: float
    record: WorkerRecord | None
    log: Path
    telemetry: object
    samples_file: str
    enforcement: str
    error: str | None = None
    server: CatalogServerUsage | None = None
    harness_error: str | None = None  # the runner's step between setup and compaction failed
    storage_cap: StorageCap | None = None
    core_limit: CoreLimit | None = None
    shared_job: int = 0  # a shared process's n-th run (bench.runner.session), 0: its own process


def storage_record(er: EngineRun) -> StorageCap | None:
    """The run's --storage-cap record with what the worker flushed and wrote back filled in."""
    cap, rec = er.storage_cap, er.record
    if cap is not None and rec is not None:
        cap.flush_s = next((p.seconds for p in rec.phases if p.name == "flush"), None)
        cap.flushed_files, cap.flushed_bytes = rec.flushed or (0, 0)
        if rec.written_back:
            _, cap.writeback_bytes, cap.writeback_interval_s = rec.written_back
    return cap


def server_usage(served: ServedCatalog | None, sampler: Sampler | None, t0: float,
                 t1: float) -> CatalogServerUsage | None:
    """What the loopback catalog server did between unix times t0 and t1: CPU and peak RSS from its
    samples (none without a sampler: a shared process's run), requests, commits and its 5xx answers from its
    request log."""
    if served is None or served.pid is None:
        return None
    rows = sampler.samples if sampler is not None else []
    use = CatalogServerUsage(pid=served.pid, peak_rss_bytes=sampler.summary.peak_rss_bytes if sampler else None,
                             cpu_s=round(rows[-1]["cpu_s"], 3) if rows else None)
    for e in request_log.requests(served.log_file, t0, t1):
        if str(e.get("path", "")).startswith("/bench/"):
            continue
        use.requests += 1
        use.request_s += e.get("ms", 0.0) / 1000
        if int(e.get("status", 0)) >= 500:
            use.server_errors.append(f"{e.get('method')} {e.get('path')} {e.get('status')}")
        if request_log.is_commit(e):
            use.commits += 1
            use.commit_s += e.get("ms", 0.0) / 1000
    use.request_s, use.commit_s = round(use.request_s, 4), round(use.commit_s, 4)
    return use


OnReady = Callable[[int | None, int | None], object]  # its return value is not used


def release_after_setup(sampler: Sampler, on_ready: OnReady) -> str | None:
    """The worker said `ready`: `on_ready` with its tree's storage reads and read() bytes so far.  Returns the
    harness's error (the engine must be told `abort`), or None (`go`)."""
    row = sampler.mark()
    try:
        on_ready(row.get("read_bytes"), row.get("read_chars"))
    except Exception as exc:  # noqa: BLE001 - recorded; the engine is told not to compact
        return f"harness: making the table reachable after setup failed: {type(exc).__name__}: {exc}"
    return None


def _handshake(proc: subprocess.Popen, ready_r: int, go_w: int, deadline: float, on_ready: OnReady,
               sampler: Sampler) -> str | None:
    """Wait for the worker's `ready` (its setup done), call `on_ready` with the tree's storage reads and
    read() bytes so far, then say `go` (or `abort` when on_ready failed).  Returns the harness's error,
    if any.  A worker that dies or runs out of time first needs no answer."""
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            readable, _, _ = select.select([ready_r], [], [], 0.1)
            if not readable:
                continue
            if os.read(ready_r, 64).strip() != b"ready":
                return None  # the worker closed the pipe: it ended
            error = release_after_setup(sampler, on_ready)
            os.write(go_w, b"abort\n" if error else b"go\n")
            return error
        return None
    except BrokenPipeError:
        return None
    finally:
        os.close(ready_r)
        os.close(go_w)


@contextmanager
def confinement(ctx: RunContext) -> Iterator[tuple[Limiter, Confiner]]:
    """The engine run's memory cgroup (Limiter) and storage cap / core limit (Confiner: cgroups, a traffic
    shaper), released in `finally`: also when the spawn or the classification fails."""
    limiter = Limiter(ctx.budget)
    confiner = None
    try:
        confiner = Confiner(ctx.storage_cap, ctx.cap_device, ctx.cpus,
                            v2_shared=limiter.cgroup if limiter.version == "v2" else None, s3_port=ctx.cap_port)
        yield limiter, confiner
    finally:
        try:
            if confiner is not None:
                confiner.release()
        finally:
            limiter.release()


@dataclass
class Spawned:
    """How the engine's process ended, before classification."""

    proc: subprocess.Popen
    sampler: Sampler
    wall_s: float
    timed_out: bool
    harness_error: str | None
    server: CatalogServerUsage | None


def _heartbeat(ctx: RunContext, slot: Slot, limiter: Limiter, sampler_ref: list[Sampler]) -> Callable[[int], None]:
    """The sampler's callback: the watchdog, and a progress line every HEARTBEAT_S (1 s when live)."""
    label = f"[{slot.engine} {slot.tag}]"
    last_beat = [time.monotonic()]  # the first heartbeat after one interval, not at the fork

    def on_sample(rss: int) -> None:
        limiter.on_sample(rss)
        now = time.monotonic()
        if sampler_ref and now - last_beat[0] >= (1.0 if ctx.progress.live else HEARTBEAT_S):
            last_beat[0] = now
            row = sampler_ref[0].last or {}
            ctx.progress.status(f"{label} compacting: {row.get('t_s', 0):.0f} s, RSS {fmt_bytes(rss)} of "
                                f"{fmt_bytes(ctx.budget)} budget, {row.get('cores') or 0:.1f} cores busy")
    return on_sample


def _supervise(ctx: RunContext, proc: subprocess.Popen, sampler: Sampler, ready_r: int, go_w: int,
               limiter: Limiter, on_ready: OnReady | None) -> tuple[bool, str | None]:
    """Handshake, then wait for the engine within the time limit; kill its tree when it ran out of
    time or memory.  Returns (timed out, the harness's error between setup and compaction)."""
    timed_out, harness_error = False, None
    deadline = time.monotonic() + ctx.timeout_s
    try:
        harness_error = _handshake(proc, ready_r, go_w, deadline, on_ready or (lambda rb, rc: None), sampler)
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        timed_out = True
    if timed_out or limiter.exceeded:
        kill_tree(proc)
        proc.wait()
    return timed_out, harness_error


def spawn(ctx: RunContext, slot: Slot, files: tuple[Path, Path, Path], limiter: Limiter, confiner: Confiner,
          companion: Any = None, on_ready: OnReady | None = None) -> Spawned:
    """Start the engine worker in its own process group (guarded: it dies with the harness, and so does
    everything it starts) inside the run's cgroups, sample it and the catalog server, and wait for it."""
    job_file, out_file, log_file = files
    python, extra = worker_launch(slot.engine)
    env = dict(os.environ, PYTHONUNBUFFERED="1", **extra)
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    env[CONTROL_ENV] = f"{ready_w},{go_r}"
    ours = [ready_r, go_w]  # closed here unless the handshake got them (it closes them)

    def preexec() -> None:
        limiter.preexec()
        confiner.preexec()  # after the memory cgroup: on cgroup v2 it may be the same one
    sampler_ref: list[Sampler] = []
    server_sampler = None
    t0, unix0 = time.perf_counter(), time.time()
    try:
        with open(log_file, "wb") as log:
            proc = children.popen([python, "-m", "bench.engines.worker", str(job_file), str(out_file),
                                   slot.engine], stdout=log, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True, preexec_fn=preexec, pass_fds=(ready_w, go_r))
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in (ready_w, go_r):
            os.close(fd)
    try:
        if ctx.served is not None and ctx.served.pid is not None:
            server_sampler = Sampler(ctx.served.pid, interval_s=0.1).start()
        limiter.attach(proc.pid)
        sampler = Sampler(proc.pid, interval_s=0.1, on_sample=_heartbeat(ctx, slot, limiter, sampler_ref))
        sampler_ref.append(sampler)
        if companion is not None:
            companion.attach(proc.pid)
        with sampler:
            try:
                ours = []
                timed_out, harness_error = _supervise(ctx, proc, sampler, ready_r, go_w, limiter, on_ready)
            finally:
                if companion is not None:
                    companion.detach()
        wall = time.perf_counter() - t0
    finally:
        for fd in ours:
            os.close(fd)
        kill_tree(proc)  # nothing the engine started may outlive it
        proc.wait()
        children.release(proc, group=True)
        if server_sampler is not None:
            server_sampler.stop()
    server = server_usage(ctx.served, server_sampler, unix0, time.time())
    return Spawned(proc, sampler, wall, timed_out, harness_error, server)


def classify(ctx: RunContext, sp: Spawned, limiter: Limiter,
             out_file: Path) -> tuple[EngineStatus, WorkerRecord | None, str | None]:
    """(status, the worker's record, error): timeout, oom (the kernel's or the watchdog's evidence), the
    worker's own status, or failed without an outcome; a harness error between setup and compaction wins."""
    record = None
    if out_file.exists():
        try:
            record = WorkerRecord.model_validate_json(out_file.read_text())
        except ValueError:
            record = None
    oom_evidence = limiter.evidence(sp.proc.returncode)
    error = record.error if record else None
    status: EngineStatus
    if sp.timed_out:
        status, error = "timeout", f"time limit of {ctx.timeout_s} s exceeded; process tree killed"
    elif oom_evidence:
        status, error = "oom", oom_evidence + (f"; engine said: {error}" if error else "")
    elif record is not None:
        status = record.status
    else:
        status, error = "failed", f"engine process exited with status {sp.proc.returncode} and wrote no outcome"
    if sp.harness_error:
        status, error = "failed", sp.harness_error
    return status, record, error


def run_engine_process(ctx: RunContext, slot: Slot, job: CompactionJob, work: Path,
                       companion: Any = None, on_ready: OnReady | None = None) -> EngineRun:
    """Spawn the engine worker in its own process group and memory cgroup, sample it (and the catalog
    server), enforce the time and memory limits.  `companion` (e.g. the live writer's
    `bench.runner.live.EngineHold`) is attached to the engine's process while it runs.  `on_ready`
    (e.g. `bench.runner.inputs.SetupGuard.release`) runs when the engine has set up, before its
    compaction starts.  The cgroups and traffic shaper are released however it ends.  With shared processes
    (`ctx.shared`: bench conformance, a live writer's cases) the run goes to the engine's shared process instead."""
    if ctx.shared is not None:
        return ctx.shared.run(ctx, slot, job, work, on_ready, companion)
    work.mkdir(parents=True, exist_ok=True)
    files = job_file, out_file, log_file = work / "job.json", work / "outcome.json", work / "engine.log"
    write_atomic(job_file, job.model_dump_json(indent=2))
    with confinement(ctx) as (limiter, confiner):
        try:
            sp = spawn(ctx, slot, files, limiter, confiner, companion, on_ready)
        finally:
            ctx.progress.done()
        samples = work / "samples.parquet"
        sp.sampler.write_samples(samples)
        status, record, error = classify(ctx, sp, limiter, out_file)
        confiner.finish()
        return EngineRun(status, sp.wall_s, record, log_file, sp.sampler.summary, str(samples),
                         limiter.description, error, sp.server, sp.harness_error, confiner.storage,
                         confiner.core_limit)
