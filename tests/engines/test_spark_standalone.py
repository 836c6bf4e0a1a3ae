"""The `spark` engine in standalone deploy mode: a master, one worker and one executor on 127.0.0.1,
started and stopped by the engine.

Cluster starts are the cost here (~10-20 s each, plus the driver): the file starts three, each inside a
real `bench run` - the verified run, the run whose engine process is killed, the run that is killed
whole.  Every test checks that no JVM of its cluster outlives it (matched by the run's directory on the
command line and the start time, so other people's Spark processes are never counted) and kills what
it finds, so a failure does not leak processes.  The rest is the memory plan, without a JVM.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from bench.core.errors import UserError
from bench.engines.base import EngineOOM
from bench.engines.spark import memory
from bench.engines.spark.cluster import StandaloneCluster, free_ports
from bench.engines.spark.engine import SparkEngine
from bench.engines.spark.options import SparkOptions
from bench.telemetry.limits import remove_stale_cgroups
from tests.engines.spark_processes import GONE_WITHIN_S, cluster_processes, kill_leftovers, results, wait_until_gone
from tests.helpers import TINY, bench_env, run_bench

MiB = 1024**2
GiB = 1024**3


# ------------------------------------------------------------------------------------------------
# helpers


def memory_cgroup(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(",") or controllers == "":
            return path
    return ""


def wait_for(predicate, timeout_s: float, what: str, log: Path | None = None):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def start_bench(args: list, log: Path) -> subprocess.Popen:
    exe = shutil.which("bench", path=str(Path(sys.executable).parent)) or "bench"
    with open(log, "w") as out:
        return subprocess.Popen([exe, *map(str, args)], stdout=out, stderr=subprocess.STDOUT, env=bench_env(),
                                start_new_session=True)


def engine_worker(marker: Path) -> psutil.Process | None:
    """The engine subprocess (python -m bench.engines.worker) of the run under `marker`."""
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if "bench.engines.worker" in cmd and any(str(marker) in a for a in cmd):
            return p
    return None


def standalone_args(results_dir: Path, warehouse: Path, run_id: str) -> list:
    return ["run", "bin-packing", "--scale", TINY, "--engines", "spark", "--spark-mode", "standalone",
            "--reps", "1", "--warehouse", warehouse, "--results-dir", results_dir, "--run-id", run_id]


# ------------------------------------------------------------------------------------------------
# the memory plan (no JVM)


def parts_of(plan: dict) -> int:
    conf = plan["conf"]
    driver = memory.parse_size(conf["spark.driver.memory"])
    executor = memory.parse_size(conf["spark.executor.memory"])
    overhead = memory.parse_size(conf["spark.executor.memoryOverhead"])
    return memory.standalone_total(driver, executor, overhead)


@pytest.mark.parametrize("profile", ["local", "paper"])
@pytest.mark.parametrize("budget_mib", [2496, 3000, 8192, 24105, 65536, 200_000])
def test_standalone_plan_fits_the_budget(profile, budget_mib):
    budget = budget_mib * MiB
    plan = memory.memory_plan(profile, budget, ram_bytes=24 * GiB, mode="standalone")
    conf = plan["conf"]
    driver = memory.parse_size(conf["spark.driver.memory"])
    executor = memory.parse_size(conf["spark.executor.memory"])
    overhead = memory.parse_size(conf["spark.executor.memoryOverhead"])
    # every JVM of the cluster inside the budget: 2 daemons + driver share + executor heap + overhead
    assert parts_of(plan) == plan["budget_parts_bytes"]["total"] <= budget
    assert plan["budget_parts_bytes"]["daemons"] == 2 * (256 + 128) * MiB
    assert plan["budget_parts_bytes"]["driver_share"] >= driver + 256 * MiB
    assert plan["budget_parts_bytes"]["driver_share"] * 0.75 >= driver - 1
    # tight when it had to shrink: less than 2 MiB per scaled size left over
    if plan["fit_scale"] < 1:
        assert budget - parts_of(plan) < 8 * MiB
    assert driver >= 480 * MiB and executor >= 480 * MiB and overhead >= 512 * MiB
    assert plan["worker_memory_mib"] * MiB == executor  # the worker offers exactly one executor's heap
    assert plan["daemon_memory"] == "256m"
    # the executor's off-heap caps fit in its overhead; direct memory above Spark's 200 MiB minimum
    caps = {o.split("=")[0]: memory.parse_size(o.split("=")[1]) for o in plan["executor_java_options"]}
    assert caps["-XX:MaxDirectMemorySize"] >= 256 * MiB
    assert caps["-XX:MaxDirectMemorySize"] + caps["-XX:MaxMetaspaceSize"] <= overhead
    assert "-XX:+ExitOnOutOfMemoryError" in plan["java_options"]
    assert any(o.startswith("-XX:MaxDirectMemorySize=") for o in plan["java_options"])
    assert "(1 master + W workers) daemons" in plan["budget_rule"] and plan["mode"] == "standalone"


def test_standalone_plan_sizes_paper_vs_local():
    # no budget: paper verbatim; local = paper x RAM / 64 GiB, and (unlike local mode) the driver keeps
    # the driver's share
    paper = memory.memory_plan("paper", None, ram_bytes=24 * GiB, mode="standalone")
    assert {k: paper["conf"][k] for k in memory.MEMORY_SIZE_KEYS} == {
        "spark.executor.memory": "40960m", "spark.executor.memoryOverhead": "8192m", "spark.driver.memory": "12288m"}
    assert paper["fit_scale"] == 1.0 and paper["conf"]["spark.memory.fraction"] == "0.8"
    local = memory.memory_plan("local", None, ram_bytes=32 * GiB, mode="standalone")
    assert {k: local["conf"][k] for k in memory.MEMORY_SIZE_KEYS} == {
        "spark.executor.memory": "20480m", "spark.executor.memoryOverhead": "4096m", "spark.driver.memory": "6144m"}
    assert memory.memory_plan("local", None, ram_bytes=32 * GiB)["conf"]["spark.driver.memory"] == "20480m"
    # a budget the published sizes fit in: verbatim
    big = memory.memory_plan("paper", 80 * GiB, ram_bytes=24 * GiB, mode="standalone")
    assert big["fit_scale"] == 1.0 and big["conf"]["spark.executor.memory"] == "40960m"
    # this node's budget (24 GiB): paper is scaled down a lot, local a little, to the same sizes
    p24 = memory.memory_plan("paper", 24 * GiB, ram_bytes=24 * GiB, mode="standalone")
    l24 = memory.memory_plan("local", 24 * GiB, ram_bytes=24 * GiB, mode="standalone")
    assert p24["fit_scale"] < 0.4 < 0.9 < l24["fit_scale"] < 1
    assert p24["requested_before_fit"]["spark.executor.memory"] == "40960m"
    assert l24["requested_before_fit"]["spark.executor.memory"] == "15360m"
    for plan in (p24, l24):  # the executor keeps the published 40 : 8 : 12 proportions
        e = memory.parse_size(plan["conf"]["spark.executor.memory"])
        assert abs(memory.parse_size(plan["conf"]["spark.executor.memoryOverhead"]) * 5 - e) < 8 * MiB
        assert abs(memory.parse_size(plan["conf"]["spark.driver.memory"]) * 10 - e * 3) < 16 * MiB
        assert 13 * GiB < e < 15 * GiB


def test_standalone_plan_too_small_budget_is_a_clear_error():
    floor = memory.min_budget_bytes("standalone")
    assert floor == (2 * 384 + 736 + 480 + 512) * MiB
    assert memory.memory_plan("local", floor, ram_bytes=24 * GiB, mode="standalone")["fit_scale"] < 0.1
    with pytest.raises(UserError, match=r"too small for Spark in standalone mode.*at least 2496 MiB"):
        memory.memory_plan("local", floor - MiB, ram_bytes=24 * GiB, mode="standalone")
    # a budget local mode runs in is not enough for a cluster
    assert memory.memory_plan("local", GiB, ram_bytes=24 * GiB)["heap_requested_bytes"] == 768 * MiB
    with pytest.raises(UserError, match="standalone"):
        memory.memory_plan("paper", GiB, ram_bytes=24 * GiB, mode="standalone")
    with pytest.raises(UserError, match="unknown spark mode"):
        memory.memory_plan("local", GiB, mode="yarn")


def test_options_and_failure_classification():
    assert SparkOptions().mode == "local"
    assert SparkOptions.model_validate({"mode": "standalone"}).mode == "standalone"
    with pytest.raises(ValueError):
        SparkOptions.model_validate({"mode": "yarn"})
    for key in ("spark.cores.max", "spark.executor.instances", "spark.executor.extraJavaOptions",
                "spark.memory.fraction", "spark.executor.memory"):
        with pytest.raises(ValueError, match="spark_conf may not set"):
            SparkOptions.model_validate({"spark_conf": {key: "1"}})
    # the profile's shuffle partitions are a scenario's to set (its memory is the budget's)
    assert SparkOptions.model_validate({"spark_conf": {"spark.sql.shuffle.partitions": 2}}).spark_conf
    eng = SparkEngine()
    eng.mode = "standalone"
    task_oom = ("Job aborted due to stage failure: Task 0 in stage 0.0 failed 4 times, most recent failure: "
                "Lost task 0.3 in stage 0.0 (TID 3) (127.0.0.1 executor 3): java.lang.OutOfMemoryError: "
                "Java heap space")
    got = eng._classify(RuntimeError(task_oom))
    assert isinstance(got, EngineOOM) and "executor 3" in str(got)
    lost = ("Job aborted due to stage failure: Task 0 in stage 1.0 failed 4 times, most recent failure: Lost task "
            "0.3 in stage 1.0 (TID 7) (127.0.0.1 executor 3): ExecutorLostFailure (executor 3 exited caused by "
            "one of the running tasks) Reason: Command exited with code 52")
    got = eng._classify(RuntimeError(lost))
    assert isinstance(got, EngineOOM) and "52" in str(got)
    other = RuntimeError(lost.replace("code 52", "code 1"))
    assert eng._classify(other) is other  # another executor death is a plain failure
    eng.close()  # nothing started: safe


def test_cluster_environment_is_loopback_and_ignores_the_machines_spark_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_CONF_DIR", "/etc/elsewhere")
    monkeypatch.setenv("SPARK_WORKER_INSTANCES", "4")
    c = StandaloneCluster(tmp_path / "c", cores=2, worker_memory_mib=1000, daemon_java_options=["-XX:X"])
    ports = free_ports(4)
    assert len(set(ports)) == 4
    c.ports = dict(zip(("master", "master_webui", "worker0", "worker_webui0"), ports))
    env = c.environment()
    assert env["SPARK_CONF_DIR"] == str(tmp_path / "c" / "conf") and "SPARK_WORKER_INSTANCES" not in env
    assert env["SPARK_LOCAL_IP"] == env["SPARK_MASTER_HOST"] == "127.0.0.1"
    assert env["SPARK_DAEMON_MEMORY"] == "256m"
    assert env["SPARK_LOCAL_DIRS"].startswith(str(tmp_path))
    assert f"-Dbench.spark.standalone={tmp_path / 'c'}" in env["SPARK_DAEMON_JAVA_OPTS"]
    cmds = c.commands()
    assert cmds["worker"][cmds["worker"].index("--cores") + 1] == "2"
    assert cmds["worker"][cmds["worker"].index("--memory") + 1] == "1000m"
    assert all(cmd[cmd.index("--host") + 1] == "127.0.0.1" for cmd in cmds.values())
    c.stop()  # never started: safe


# ------------------------------------------------------------------------------------------------
# real clusters (one each)


@pytest.mark.spark
@pytest.mark.slow
def test_standalone_run_is_verified_and_records_what_spark_granted(tmp_path, shared_warehouse):
    """... while another program holds port 6066, the fixed port of the submission API a Spark 4.1 master serves
    by default (a master that cannot bind it stays in STANDBY: the harness turns it off)."""
    t0 = time.time()
    holder = socket.socket()
    try:
        with contextlib.suppress(OSError):  # already taken by someone else: held all the same
            holder.bind(("127.0.0.1", 6066))
            holder.listen()
        p = run_bench(*standalone_args(tmp_path, shared_warehouse, "sa"), timeout=600)
        left = wait_until_gone(tmp_path, t0, timeout_s=5)
    finally:
        holder.close()
        kill_leftovers(tmp_path, t0)
    assert p.returncode == 0, p.stderr[-3000:]
    assert left == []  # close() stopped the worker, the master and the executor
    [r] = results(tmp_path)
    assert r["status"] == "ok" and r["verified"] is True, (r["error"], r["log_tail"])
    assert r["engine_options"]["mode"] == "standalone"
    s = r["engine_settings"]
    assert s["mode"] == "standalone"
    assert re.fullmatch(r"spark://127\.0\.0\.1:\d+", s["master"]) and s["cluster"]["master_url"] == s["master"]
    # exactly one executor with all the cores, as Spark reports them (driver, master and worker)
    assert s["executor_count"] == 1 and len(s["executors"]) == 1
    assert s["executor_cores"] == [r["cores"]] and s["cores"] == s["cores_total"] == r["cores"]
    assert s["app_cores_master"] == r["cores"] and s["worker_cores_used"] == [r["cores"]]
    assert s["executor_memory_mib_master"] == s["worker_memory_mib"] == s["executor_memory_mib_worker"][0]
    assert s["spark_memory"]["spark.executor.memory"] == f"{s['worker_memory_mib']}m"
    assert s["executor_jvm_memory_options"][0][0] == f"-Xmx{s['worker_memory_mib']}M"
    xmx = s["worker_memory_mib"] * MiB
    heap = s["executor_heap_granted_bytes"][0]
    assert xmx <= heap <= xmx + 32 * MiB  # Runtime.maxMemory: -Xmx rounded up to G1 regions
    caps = {c["role"]: c["bytes"] for c in r["memory_caps"]}
    assert caps["executor-heap"] == heap and caps["heap"] == s["heap_granted_bytes"]
    # the typed deployment says the same as Spark's own record of it
    d = r["deployment"]
    assert d["mode"] == "standalone" and d["master"] == s["master"] and d["workers"] == 1
    assert d["executors"] == 1 and d["executor_cores"] == [r["cores"]] == [d["cores"]]
    assert d["executor_memory_bytes"] == [heap] and d["nodes"] == r["nodes"] == 1 and d["hosts"] == ["127.0.0.1"]
    assert s["heap_requested_bytes"] <= s["heap_granted_bytes"] <= s["heap_requested_bytes"] + 32 * MiB
    # the whole cluster fits in the budget the run had
    assert s["budget_parts_bytes"]["total"] <= r["memory_budget_bytes"]
    assert [ph["name"] for ph in r["setup_phases"]][:4] == ["cluster start", "session start", "executor start",
                                                            "catalog warm-up"]
    # the daemons ran inside the engine's process tree: the runner's samples saw the extra JVMs
    import pyarrow.parquet as pq

    samples = pq.read_table(tmp_path / "sa" / r["samples_file"])
    assert max(samples.column("procs").to_pylist()) >= 5  # python, driver, master, worker, executor
    logs = Path(s["cluster"]["logs"])
    assert logs.is_relative_to(tmp_path)
    assert "Registering worker 127.0.0.1" in (logs / "master.log").read_text()
    assert list((logs / "work").glob("app-*/0/stderr"))  # the executor's log, in the run's work dir


@pytest.mark.spark
@pytest.mark.slow
def test_killing_the_engine_process_stops_its_cluster(tmp_path, shared_warehouse):
    """kill -9 of the engine subprocess mid-run: the runner records the run as failed and ends normally;
    master, worker and executor are gone within seconds."""
    t0 = time.time()
    log = tmp_path / "bench.log"
    proc = start_bench(standalone_args(tmp_path / "r", shared_warehouse, "killed-engine"), log)
    try:
        procs = wait_for(lambda: (lambda c: c if all(c.values()) else None)(cluster_processes(tmp_path, t0)),
                         240, "master, worker and executor", log)
        engine = engine_worker(tmp_path)
        assert engine is not None
        # the daemons are plain children of the engine process, in its memory cgroup
        for role in ("master", "worker"):
            assert procs[role][0].ppid() == engine.pid, role
            assert memory_cgroup(procs[role][0].pid) == memory_cgroup(engine.pid)
        assert procs["executor"][0].ppid() == procs["worker"][0].pid
        os.kill(engine.pid, signal.SIGKILL)
        assert wait_until_gone(tmp_path, t0) == []
        assert proc.wait(timeout=180) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        kill_leftovers(tmp_path, t0)
    [r] = results(tmp_path / "r")
    assert r["status"] == "failed" and r["verified"] is False
    assert "-9" in r["error"] or "signal" in r["error"], r["error"]


@pytest.mark.spark
@pytest.mark.slow
def test_killing_the_whole_bench_run_leaves_no_cluster_behind(tmp_path, shared_warehouse):
    """kill -9 of `bench run` itself: nobody calls close() or kills the process group; the engine dies
    with the harness and the daemons with the engine (PR_SET_PDEATHSIG), the executor with its worker."""
    t0 = time.time()
    log = tmp_path / "bench.log"
    proc = start_bench(standalone_args(tmp_path / "r", shared_warehouse, "killed-run"), log)
    try:
        wait_for(lambda: all(cluster_processes(tmp_path, t0).values()), 240, "master, worker and executor", log)
        everything = psutil.Process(proc.pid).children(recursive=True)  # engine, driver, daemons, executor...
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert wait_until_gone(tmp_path, t0) == []
        _, still = psutil.wait_procs(everything, timeout=GONE_WITHIN_S)
        assert [p for p in still if p.status() != psutil.STATUS_ZOMBIE] == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_leftovers(tmp_path, t0)
        remove_stale_cgroups()  # the killed run's memory cgroup (a next `bench run` would remove it too)
