"""The Spark standalone clusters a test started: found by the test's directory on their command line and
their start time (other people's Spark processes are never counted), waited for and killed; and the
result files of a run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil

from bench.engines.spark.cluster import EXECUTOR_CLASS, MASTER_CLASS, WORKER_CLASS

CLUSTER_CLASSES = {"master": MASTER_CLASS, "worker": WORKER_CLASS, "executor": EXECUTOR_CLASS}
GONE_WITHIN_S = 20


def cluster_processes(marker: Path, since: float) -> dict[str, list[psutil.Process]]:
    """Running master/worker/executor JVMs whose command line names `marker` (the test's directory) and
    that started after `since` (unix time), by role."""
    out: dict[str, list[psutil.Process]] = {k: [] for k in CLUSTER_CLASSES}
    for p in psutil.process_iter(["cmdline", "create_time", "status"]):
        try:
            if p.info["status"] == psutil.STATUS_ZOMBIE or p.info["create_time"] < since - 1:
                continue
            cmd = p.info["cmdline"] or []
            if not any(str(marker) in a for a in cmd):
                continue
            for role, cls in CLUSTER_CLASSES.items():
                if cls in cmd:
                    out[role].append(p)
        except psutil.Error:
            continue
    return out


def alive(procs: dict[str, list[psutil.Process]]) -> list[str]:
    return [f"{role} pid {p.pid}" for role, ps in procs.items() for p in ps if p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE]


def wait_until_gone(marker: Path, since: float, timeout_s: float = GONE_WITHIN_S) -> list[str]:
    """What is still running of the test's clusters after up to `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = alive(cluster_processes(marker, since))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.25)


def kill_leftovers(marker: Path, since: float) -> None:
    for ps in cluster_processes(marker, since).values():
        for p in ps:
            try:
                p.kill()
            except psutil.Error:
                pass


def results(results_dir: Path) -> list[dict]:
    return [json.loads(f.read_text()) for f in sorted(results_dir.glob("*/*.json")) if f.name != "run.json"]
