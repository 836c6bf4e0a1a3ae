"""Why a Spark run failed: a java.lang.OutOfMemoryError ends the driver JVM at once (-XX:+ExitOnOutOfMemoryError,
exit code 3) and is raised as EngineOOM (status heap-oom: the JVM's own limit, below the budget), so the runner does
not wait on a half-dead JVM.  In standalone mode an executor's OutOfMemoryError reaches the driver as a task or stage
failure (the error text, or ExecutorLostFailure with Spark's OOM exit code 52): heap-oom too.  A JVM that died
otherwise (a signal, another exit code) is said as such."""

from __future__ import annotations

import re
import subprocess
from typing import Any

from bench.engines.base import EngineOOM

# Exit codes of a JVM that died of an OutOfMemoryError: -XX:+ExitOnOutOfMemoryError exits with 3,
# Spark's executor exits with SparkExitCode.OOM = 52.
OOM_EXIT_CODES = {3: "-XX:+ExitOnOutOfMemoryError", 52: "Spark executor OOM exit"}
OOM_TEXT = re.compile(r"(java\.lang\.OutOfMemoryError|SparkOutOfMemoryError|OutOfDirectMemoryError"
                      r"|Java heap space|GC overhead limit exceeded|Direct buffer memory)")
# standalone: an executor that died of an OutOfMemoryError, as the driver reports the lost executor
EXECUTOR_OOM_TEXT = re.compile(r"ExecutorLostFailure[^\n]*?(?:exit(?:ed)? (?:with )?code|exit status)\D{0,3}52\b")
EXECUTOR_TASK_OOM = re.compile(r"\(\S+ executor (\w+)\): (?:java\.lang\.OutOfMemoryError|\S*SparkOutOfMemoryError)")
LOST_JVM_WAIT_S = 15.0  # a lost connection to the JVM: how long it may take to finish dying


def jvm_exit_code(spark: Any, wait_s: float = 0.0) -> int | None:
    """Exit code of the JVM behind `spark` (the spark-submit process PySpark launched, which execs the JVM), or None
    while it runs (waiting up to `wait_s` for it to finish dying)."""
    try:
        proc = spark.sparkContext._gateway.proc
    except Exception:  # noqa: BLE001
        return None
    if proc is None:
        return None
    if wait_s > 0:
        try:
            return proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None
    return proc.poll()


def classify(exc: BaseException, spark: Any) -> BaseException:
    """What `exc`, raised by a Spark call, means: EngineOOM, a RuntimeError naming how the JVM died, or `exc`."""
    text = str(exc)
    m = OOM_TEXT.search(text)
    if m:
        task = EXECUTOR_TASK_OOM.search(text)  # "Lost task 0.3 in stage 0.0 (TID 3) (host executor 1): ..."
        where = f"executor {task.group(1)}" if task else "Spark"
        return EngineOOM(f"java.lang.OutOfMemoryError in {where} ({m.group(0)})")
    m = EXECUTOR_OOM_TEXT.search(text)
    if m:
        return EngineOOM(f"a Spark executor died of a java.lang.OutOfMemoryError (ExecutorLostFailure with "
                         f"exit code 52, {OOM_EXIT_CODES[52]})")
    # A lost connection to the JVM: it is dying or dead; give it a moment to exit, then read why.
    lost = isinstance(exc, (ConnectionError, OSError)) or type(exc).__name__ in ("Py4JNetworkError", "Py4JError")
    code = jvm_exit_code(spark, wait_s=LOST_JVM_WAIT_S if lost else 0.0)
    if code in OOM_EXIT_CODES:
        return EngineOOM(f"the Spark JVM exited with code {code} ({OOM_EXIT_CODES[code]}) after a "
                         f"java.lang.OutOfMemoryError")
    if code is not None and code < 0:
        return RuntimeError(f"the Spark JVM was killed by signal {-code} ({type(exc).__name__}); "
                            f"a kernel OOM kill or a time limit look like this")
    if code is not None:
        return RuntimeError(f"the Spark JVM exited with code {code} ({type(exc).__name__})")
    return exc
