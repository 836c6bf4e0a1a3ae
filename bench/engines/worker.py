"""Entry point of an engine subprocess: `python -m bench.engines.worker JOB.json OUT.json ENGINE`.

Runs one engine's open/compact/close, timing each step with the same clock for every engine, and
writes a WorkerRecord (or the failure) as JSON.  The runner owns the process: it measures memory and
wall time from outside, enforces the time and memory limits, and classifies a killed process.

No work outside the clock: open() runs while the table is out of reach (the runner parks it).  When
open() has returned the worker says `ready` on its control pipe and waits; the runner restores the
table and drops the page cache, then says `go`, and only then does the compaction's clock start.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.core.fileio import WriteBack, flush_files, write_atomic
from bench.engines import get_engine
from bench.engines.base import CompactionJob, EngineOOM, PhaseClock, WorkerRecord

OOM_MARKERS = ("OutOfMemoryError", "Cannot allocate memory", "MemoryError", "memory allocation of")
CONTROL_ENV = "BENCH_WORKER_CONTROL"  # "READY_FD,GO_FD": the runner's handshake pipes (absent: no handshake)
SESSION_ENV = "BENCH_WORKER_SESSION"  # "IN_FD,OUT_FD": a shared worker's control pipes (serve)
# the header line of an exception in another runtime's stack trace carried in an exception's text (a JVM's,
# through py4j): "org.apache.iceberg.exceptions.ValidationException: ..." or "Caused by: ..."
FOREIGN_HEADER = re.compile(r"^(?:: )?(?:Caused by: )?([A-Za-z_$][\w$]*(?:\.[\w$]+)+(?:Exception|Error))(?::\s*(.*))?$")
MAX_CAUSES = 8
MAX_CAUSE_CHARS = 2000  # the run's error is the first cause, as long as it always was


def exception_causes(exc: BaseException) -> list[str]:
    """The chain of an engine's failure, outermost first, each "Type: message": Python's own chain
    (__cause__ / __context__) and the exception headers of a foreign stack trace its text carries (a JVM
    exception seen through py4j names its Java cause chain only in its text).  The runner reads these, never
    the engine's log."""
    out: list[str] = []
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen and len(out) < MAX_CAUSES:
        seen.add(id(e))
        try:
            lines = str(e).strip().splitlines()
        except Exception:  # noqa: BLE001 - a foreign exception's text may need a runtime that is gone
            lines = []
        out.append(f"{type(e).__name__}: {lines[0] if lines else ''}"[:MAX_CAUSE_CHARS])
        for ln in lines[1:]:
            m = FOREIGN_HEADER.match(ln.strip())
            if m and len(out) < MAX_CAUSES:
                out.append(f"{m.group(1)}: {m.group(2) or ''}"[:MAX_CAUSE_CHARS])
        e = e.__cause__ or e.__context__
    return out


def wait_for_go() -> None:
    """Say `ready` and wait for the runner's `go` (the table restored, the cache dropped)."""
    fds = os.environ.get(CONTROL_ENV)
    if not fds:
        return
    ready_fd, go_fd = (int(x) for x in fds.split(","))
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    with os.fdopen(go_fd, "rb") as go:
        answer = go.readline().strip()
    if answer != b"go":
        raise RuntimeError(f"the harness did not start the compaction after setup ({answer.decode() or 'no answer'})")


def classify(exc: BaseException) -> str:
    """heap-oom for an engine-internal memory limit, failed otherwise (the runner decides `oom`: the
    budget's own evidence comes from outside)."""
    if isinstance(exc, (EngineOOM, MemoryError)):
        return "heap-oom"
    text = f"{type(exc).__name__}: {exc}"
    return "heap-oom" if any(m in text for m in OOM_MARKERS) else "failed"


def run_job(job_path: str, engine_name: str, handshake: Callable[[], None],
            engine: Any = None) -> tuple[Any, WorkerRecord]:
    """One job: the engine's open (timed as setup), the handshake, its compaction or maintenance on the clock.
    Returns the engine (opened, never closed here) and the record; every failure becomes the record's."""
    record = WorkerRecord(engine=engine_name)
    try:
        job = CompactionJob.model_validate_json(Path(job_path).read_text())
        engine = engine or get_engine(engine_name)
        record.step = "open"
        setup = PhaseClock()
        t0 = time.perf_counter()
        engine.open(job, setup)
        record.setup_phases = setup.complete(time.perf_counter() - t0)
        record.setup_s = sum(p.seconds for p in record.setup_phases)
        record.memory_caps = engine.memory_caps()
        record.step = "wait"
        handshake()
        record.step = "compact"
        clock = PhaseClock()
        t1, since = time.perf_counter(), time.time()
        try:
            # under --storage-cap the engine's writes reach the device from its own process as they are made
            back = WriteBack(Path(job.flush_dir), since - 0.05) if job.flush_dir else contextlib.nullcontext()
            with back:
                record.outcome = engine.maintain(job, clock) if job.maintenance else engine.compact(job, clock)
            if isinstance(back, WriteBack):
                record.written_back = (back.files, back.bytes, back.interval_s)
            if job.flush_dir:  # what it wrote reaches the device from this process, on its clock
                with clock.phase("flush", "fsync of every file written in the table's directory during the "
                                 "compaction (the same for every engine)"):
                    record.flushed = flush_files(Path(job.flush_dir), since - 0.05)
        finally:
            record.phases = clock.complete(time.perf_counter() - t1)
            record.duration_s = sum(p.seconds for p in record.phases)  # the phases add up to it
        record.status = "ok"
        record.step = "close"
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a recorded result
        record.status = classify(exc)  # type: ignore[assignment]
        record.causes = exception_causes(exc)
        record.error = record.causes[0]
        if record.step != "compact":
            record.duration_s, record.phases = None, []
        traceback.print_exc()
    return engine, record


def close(engine: Any) -> None:
    if engine is not None:
        try:
            engine.close()
        except Exception:  # noqa: BLE001
            traceback.print_exc()


def main(argv: list[str]) -> int:
    job_path, out_path, engine_name = argv
    engine = None
    try:
        engine, record = run_job(job_path, engine_name, wait_for_go)
    finally:
        close(engine)
    write_atomic(out_path, record.model_dump_json(indent=2))
    sys.stdout.flush()
    return 0 if record.status == "ok" else 1


def serve(engine_name: str, fds: str) -> int:
    """A shared worker (bench.runner.session, for `bench conformance`): one engine process, its session kept
    between jobs.  The harness writes `job JOB.json OUT.json`, then `go` or `abort` after the worker's `ready`;
    the worker writes the record to OUT.json and says `done STATUS`.  It ends on `quit`, at the end of its
    input, or after a job that did not end ok (its process may be in any state: the next job gets a new one)."""
    in_fd, out_fd = (int(x) for x in fds.split(","))
    engine = None
    with os.fdopen(in_fd, "rb") as inp:
        def handshake() -> None:
            os.write(out_fd, b"ready\n")
            answer = inp.readline().strip()
            if answer != b"go":
                raise RuntimeError("the harness did not start the compaction after setup "
                                   f"({answer.decode() or 'no answer'})")
        try:
            for line in inp:
                words = line.decode().split()
                if len(words) != 3 or words[0] != "job":
                    break
                engine, record = run_job(words[1], engine_name, handshake, engine)
                write_atomic(words[2], record.model_dump_json(indent=2))
                sys.stdout.flush()
                os.write(out_fd, f"done {record.status}\n".encode())
                if record.status != "ok":
                    break
        finally:
            close(engine)
    return 0


if __name__ == "__main__":
    if os.environ.get(SESSION_ENV):
        sys.exit(serve(sys.argv[1], os.environ[SESSION_ENV]))
    sys.exit(main(sys.argv[1:]))
