"""Entry point of an engine subprocess: `python -m bench.engines.worker JOB.json OUT.json ENGINE`.

Runs one engine's open/compact/close, timing each phase with the same clock for every engine, and
writes the outcome (or the failure) as JSON.  The runner owns the process: it measures memory and
wall time from outside, enforces the time limit, and classifies a killed process.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path

from bench.engines import get_engine
from bench.engines.base import CompactionJob, EngineOOM

OOM_MARKERS = ("OutOfMemoryError", "Cannot allocate memory", "MemoryError", "memory allocation of")


def classify(exc: BaseException) -> str:
    if isinstance(exc, (EngineOOM, MemoryError)):
        return "oom"
    text = f"{type(exc).__name__}: {exc}"
    return "oom" if any(m in text for m in OOM_MARKERS) else "failed"


def main(argv: list[str]) -> int:
    job_path, out_path, engine_name = argv
    job = CompactionJob.from_dict(json.loads(Path(job_path).read_text()))
    engine = get_engine(engine_name)
    record: dict = {"engine": engine_name, "status": "failed"}
    phase = "open"
    try:
        t0 = time.perf_counter()
        engine.open(job)
        t1 = time.perf_counter()
        record["setup_s"] = t1 - t0
        phase = "compact"
        outcome = engine.compact(job)
        t2 = time.perf_counter()
        record["duration_s"] = t2 - t1
        record["outcome"] = asdict(outcome)
        record["status"] = "ok"
    except BaseException as exc:  # noqa: BLE001 - every failure becomes a recorded result
        record["status"] = classify(exc)
        record["phase"] = phase
        record["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:2000]
        traceback.print_exc()
    finally:
        try:
            engine.close()
        except Exception:  # noqa: BLE001
            traceback.print_exc()
    Path(out_path).write_text(json.dumps(record, indent=2, default=str))
    sys.stdout.flush()
    return 0 if record["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
