"""The cloud bootstrap (terraform/bootstrap.sh) and the uploader (bench/cloud.py), end to end on this
machine: a real S3-compatible server (moto) on 127.0.0.1, the REAL harness at a tiny scale
(risingwave only, to stay fast), and the power-off / deadline replaced by marker commands.

The Spark cluster roles (spark_workers > 0) run here too, everything on 127.0.0.1: real Spark master and
worker daemons from the venv's pyspark, with free ports, short timeouts and a 1 s poll instead of the
cloud's.  The benchmark host's `bench run` is a stub there (it records its arguments and what the
master saw): a multi-node `bench run` of the harness itself is the harness's tests' business.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from bench import cloud
from bench.engines.spark.cluster import DAEMON_OPTIONS, MASTER_CLASS, free_ports, spark_home
from tests.cloud.helpers import BUCKET

ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP = ROOT / "terraform" / "bootstrap.sh"
UPLOADER = ROOT / "bench" / "cloud.py"
BENCH = Path(sys.executable).parent / "bench"
TINY_SCALE = "0.00005"


def keys_under(s3, prefix: str) -> list[str]:
    pages = s3.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"] for p in pages for o in p.get("Contents", [])]


def get_text(s3, key: str) -> str:
    return s3.client.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()


def bootstrap_env(tmp_path: Path, s3, run_id: str, **settings) -> dict:
    """The environment of bootstrap.sh as the instance would have it, host-specific steps switched off
    or replaced by markers in tmp_path (powered-off: the bucket's keys at power-off; deadline-armed)."""
    prefix = f"runs/{run_id}/"
    marker_off = tmp_path / "powered-off"
    marker_deadline = tmp_path / "deadline-armed"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "BENCH_", "SPARK_", "PYSPARK_"))}
    env |= s3.env
    env |= {
        "BENCH_RUN_ID": run_id,
        "BENCH_RESULTS_URI": f"s3://{BUCKET}/{prefix}",
        "BENCH_SCENARIOS": "bin-packing",
        "BENCH_SCALE": TINY_SCALE,
        "BENCH_ENGINES": "risingwave",
        "BENCH_ENGINE_TIMEOUT": "120",
        "BENCH_DATA_DIR": str(tmp_path / "data"),
        "BENCH_DATA_DEVICE": "none",
        "BENCH_LOG_DIR": str(tmp_path / "logs"),
        "BENCH_HARNESS_SOURCE": "dir",
        "BENCH_HARNESS_DIR": str(ROOT),
        "BENCH_INSTALL_SYSTEM_PACKAGES": "0",
        "BENCH_SKIP_SETUP": "1",
        "BENCH_CMD": str(BENCH),
        "BENCH_PYTHON": sys.executable,
        "BENCH_UPLOADER": str(UPLOADER),
        "BENCH_INSTANCE_TYPE": "m5.4xlarge",
        "BENCH_MAX_LIFETIME_MIN": "30",
        # the real ones: `shutdown -P +N` and `systemctl poweroff`.  The power-off marker lists the
        # bucket at that moment: proof of what had landed before the machine would have gone away.
        "BENCH_DEADLINE_CMD": f'echo "shutdown -P +$BENCH_MAX_LIFETIME_MIN" > {marker_deadline}',
        "BENCH_POWEROFF_CMD": f"{sys.executable} -I {UPLOADER} ls s3://{BUCKET}/{prefix} > {marker_off}",
    }
    env |= {k: str(v) for k, v in settings.items()}
    return {k: v for k, v in env.items() if v != "<unset>"}


def outcome(tmp_path: Path, run_id: str, rc: int, elapsed: float, stderr: str) -> SimpleNamespace:
    log = (tmp_path / "logs" / "bootstrap.log")
    marker_off, marker_deadline = tmp_path / "powered-off", tmp_path / "deadline-armed"
    return SimpleNamespace(
        rc=rc, elapsed=elapsed, prefix=f"runs/{run_id}/", log=log.read_text() if log.exists() else "",
        stderr=stderr,
        powered_off=marker_off.read_text().split() if marker_off.exists() else None,
        deadline=marker_deadline.read_text().strip() if marker_deadline.exists() else None)


def run_bootstrap(tmp_path: Path, s3, run_id: str, timeout: float = 600, **settings) -> SimpleNamespace:
    """Run bootstrap.sh as the instance would, with host-specific steps switched off or replaced."""
    env = bootstrap_env(tmp_path, s3, run_id, **settings)
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(BOOTSTRAP)], env=env, cwd=tmp_path, timeout=timeout,
                          capture_output=True, text=True)
    return outcome(tmp_path, run_id, proc.returncode, time.monotonic() - t0, proc.stderr)


def status_of(s3, prefix: str) -> dict:
    return json.loads(get_text(s3, prefix + "status.json"))


# ----- the uploader ------------------------------------------------------------------------------------
def test_publish_writes_status_last_and_records_failures(tmp_path, s3, monkeypatch):
    for k, v in s3.env.items():
        monkeypatch.setenv(k, v)
    (tmp_path / "results" / "sub").mkdir(parents=True)
    (tmp_path / "results" / "a.json").write_text("{}")
    (tmp_path / "results" / "sub" / "b.parquet").write_bytes(b"PAR1")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "x.log").write_text("hello")
    client = cloud.make_client()
    order: list[str] = []
    client.meta.events.register("before-parameter-build.s3.PutObject",
                                lambda params, **_: order.append(params["Key"]))
    uri = f"s3://{BUCKET}/runs/unit-1/"
    rep = cloud.publish(uri, {"results": tmp_path / "results", "logs": tmp_path / "logs",
                              "report.html": tmp_path / "missing.html"},
                        {"status": "ok"}, client=client)
    assert order[-1] == "runs/unit-1/status.json"
    assert set(order[:-1]) == {"runs/unit-1/results/a.json", "runs/unit-1/results/sub/b.parquet",
                               "runs/unit-1/logs/x.log"}
    st = cloud.read_status(uri, client=client)
    assert st["status"] == "ok" and st["uploaded"] == 3
    assert len(st["upload_errors"]) == 1 and "missing.html" in st["upload_errors"][0]
    assert rep.errors == st["upload_errors"]
    head = s3.client.head_object(Bucket=BUCKET, Key="runs/unit-1/results/a.json")
    assert head["ContentType"] == "application/json"
    # and back down, as `bench aws fetch` does
    files = cloud.download(uri, tmp_path / "down", client=client)
    assert (tmp_path / "down" / "results" / "sub" / "b.parquet").read_bytes() == b"PAR1"
    assert (tmp_path / "down" / "status.json") in files


def test_uploader_rejects_bad_uris():
    with pytest.raises(cloud.UserError):
        cloud.parse_s3_uri("/tmp/x")
    with pytest.raises(cloud.UserError):
        cloud.run_prefix("a/b")
    assert cloud.parse_s3_uri("s3://b/runs/x/") == ("b", "runs/x/")


def test_uploader_runs_standalone_without_the_harness(tmp_path, s3):
    """The bootstrap runs cloud.py with the system python before the harness exists: -I, no bench."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | s3.env
    (tmp_path / "f.txt").write_text("x")
    proc = subprocess.run([sys.executable, "-I", str(UPLOADER), "publish", f"s3://{BUCKET}/runs/solo/",
                           "--file", f"f.txt={tmp_path / 'f.txt'}", "--status-field", "status=ok",
                           "--int-field", "exit_code=0"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert keys_under(s3, "runs/solo/") == ["runs/solo/f.txt", "runs/solo/status.json"]
    assert status_of(s3, "runs/solo/")["exit_code"] == 0


# ----- the bootstrap -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_bootstrap_runs_the_real_harness_uploads_then_powers_off(tmp_path, s3):
    r = run_bootstrap(tmp_path, s3, "e2e-ok")
    assert r.rc == 0, r.log + r.stderr
    assert r.deadline == "shutdown -P +30"
    keys = keys_under(s3, r.prefix)
    results = [k for k in keys if k.startswith(r.prefix + "results/bin-packing--risingwave--rep")
               and k.endswith(".json")]
    assert results, keys
    res = json.loads(get_text(s3, results[0]))
    assert res["engine"] == "risingwave" and res["scenario"] == "bin-packing"
    assert res["status"] == "ok" and res["verified"] is True
    assert res["run_id"] == "e2e-ok" and float(res["scale"]) == float(TINY_SCALE)
    assert r.prefix + "logs/bootstrap.log" in keys
    assert "verified" in get_text(s3, r.prefix + "logs/bench-bin-packing.log")
    st = status_of(s3, r.prefix)
    assert st["status"] == "ok" and st["exit_code"] == 0 and st["upload_errors"] == []
    assert st["scenarios"] == [{"scenario": "bin-packing", "exit_code": 0, "seconds": st["scenarios"][0]["seconds"]}]
    assert st["scale"] == TINY_SCALE and st["engines"] == "risingwave" and st["run_id"] == "e2e-ok"
    assert st["report"] == "ok" and r.prefix + "report.html" in keys  # this harness has `bench report`
    assert "verified" in get_text(s3, r.prefix + "report.html")
    # status.json was in the bucket, with everything else, before the power-off ran
    assert r.powered_off is not None and set(keys) <= set(r.powered_off)
    assert r.log.index("uploading results and logs") < r.log.index("powering off")
    # and back on the user's machine: `bench aws fetch` downloads the run and renders the report
    fetched, html = tmp_path / "fetched", tmp_path / "local-report.html"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | s3.env
    proc = subprocess.run([str(BENCH), "aws", "fetch", "--bucket", BUCKET, "--run-id", "e2e-ok",
                           "--dest", str(fetched), "--report-out", str(html)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((fetched / "status.json").read_text())["status"] == "ok"
    assert (fetched / results[0][len(r.prefix):]).is_file()
    assert html.is_file() and "risingwave" in html.read_text().lower()
    assert f"report: {html}" in proc.stdout


def test_failing_benchmark_still_uploads_logs_and_powers_off(tmp_path, s3):
    """`bench run` fails (here: bad input, exit 2): the logs and a 'failed' status still land."""
    r = run_bootstrap(tmp_path, s3, "e2e-fail", BENCH_SCENARIOS="no-such-scenario")
    assert r.rc != 0
    keys = keys_under(s3, r.prefix)
    st = status_of(s3, r.prefix)
    assert st["status"] == "failed" and st["exit_code"] != 0
    assert st["scenarios"][0]["scenario"] == "no-such-scenario" and st["scenarios"][0]["exit_code"] == 2
    assert "error" in get_text(s3, r.prefix + "logs/bench-no-such-scenario.log").lower()
    assert r.prefix + "logs/bootstrap.log" in keys
    assert r.powered_off is not None and r.prefix + "status.json" in r.powered_off


def test_broken_install_still_uploads_logs_and_powers_off(tmp_path, s3):
    r = run_bootstrap(tmp_path, s3, "e2e-broken", BENCH_HARNESS_DIR=str(tmp_path / "nowhere"))
    assert r.rc != 0
    st = status_of(s3, r.prefix)
    assert st["status"] == "failed" and st["message"].startswith("harness:")
    assert "does not exist" in get_text(s3, r.prefix + "logs/bootstrap.log")
    assert r.powered_off is not None and r.prefix + "status.json" in r.powered_off


def test_deadline_stops_the_benchmark_and_still_uploads(tmp_path, s3):
    """A benchmark that would outlive the deadline is stopped early enough to upload its logs."""
    slow = tmp_path / "slow-bench"
    slow.write_text(f'#!/bin/bash\nif [[ $1 == run && $2 != --help ]]; then echo "working"; sleep 300; fi\n'
                    f'exec {BENCH} "$@"\n')
    slow.chmod(0o755)
    # lifetime 1 min minus a 52 s upload reserve: ~8 s for everything before the final upload (not a
    # `serial` test: the bound below leaves 30 s for a busy neighbour, and the grace tests' bounds are
    # one-sided or 25 s wide, so they run beside others)
    r = run_bootstrap(tmp_path, s3, "e2e-deadline", timeout=60, BENCH_CMD=slow,
                      BENCH_MAX_LIFETIME_MIN=1, BENCH_UPLOAD_RESERVE_S=52)
    assert r.elapsed < 40, r.log
    st = status_of(s3, r.prefix)
    assert st["status"] == "timeout", st
    assert r.deadline == "shutdown -P +1"
    assert r.powered_off is not None and r.prefix + "logs/bootstrap.log" in r.powered_off


def test_harness_from_an_s3_archive(tmp_path, s3, monkeypatch):
    """What `bench aws up` does by default: this checkout packed, put in the bucket, fetched at boot.
    (`make setup` inside the unpacked copy is not run here: it would install everything again.)"""
    from bench.aws_cli import pack_harness

    archive, rev, _ = pack_harness(ROOT, tmp_path / "harness.tar.gz")
    s3.client.upload_file(str(archive), BUCKET, "harness/e2e-s3.tar.gz")
    dest = tmp_path / "harness"
    r = run_bootstrap(tmp_path, s3, "e2e-s3", BENCH_HARNESS_SOURCE="s3", BENCH_HARNESS_DIR=dest,
                      BENCH_HARNESS_ARCHIVE_URI=f"s3://{BUCKET}/harness/e2e-s3.tar.gz",
                      BENCH_SCENARIOS="no-such-scenario")
    assert (dest / "bench" / "cli.py").is_file() and (dest / "terraform" / "bootstrap.sh").is_file()
    st = status_of(s3, r.prefix)
    assert st["harness_revision"] == rev
    assert st["scenarios"][0]["exit_code"] == 2   # it got as far as running the benchmark
    assert r.powered_off is not None


def test_your_own_table_is_run_from_its_downloaded_catalog_file_without_a_scale(tmp_path, s3):
    """BENCH_SOURCE_TABLE: the catalog file comes from the bucket and `bench run` gets --source-catalog,
    --source-table and --source-snapshot instead of --scale (a stub `bench run` records its arguments: the
    run on a clone is the harness's tests' business, tests/runner/test_source.py)."""
    s3.client.put_object(Bucket=BUCKET, Key="harness/own-source-catalog.yaml", Body=b"type: glue\n")
    args = tmp_path / "run-args"
    stub = tmp_path / "stub-bench"
    stub.write_text(f'#!/bin/bash\nif [[ $1 == run && $2 != --help ]]; then printf "%s\\n" "$@" > {args}; exit 0; fi\n'
                    'if [[ $1 == list || $1 == doctor ]]; then exit 0; fi\n'  # not what this test is about
                    f'exec {BENCH} "$@"\n')
    stub.chmod(0o755)
    r = run_bootstrap(tmp_path, s3, "e2e-own", BENCH_CMD=stub, BENCH_REPORT=0, BENCH_SOURCE_TABLE="lake.events",
                      BENCH_SOURCE_SNAPSHOT="42",
                      BENCH_SOURCE_CATALOG_URI=f"s3://{BUCKET}/harness/own-source-catalog.yaml")
    assert r.rc == 0, r.log + r.stderr
    got = args.read_text().splitlines()
    catalog = tmp_path / "data" / "source-catalog.yaml"
    assert got[:8] == ["run", "bin-packing", "--source-catalog", str(catalog), "--source-table", "lake.events",
                       "--source-snapshot", "42"] and "--scale" not in got, got
    assert catalog.read_text() == "type: glue\n"
    assert status_of(s3, r.prefix)["source_table"] == "lake.events"


def test_bootstrap_refuses_to_start_without_its_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    proc = subprocess.run(["bash", str(BOOTSTRAP)], env=env, capture_output=True, text=True, timeout=10)
    assert proc.returncode != 0 and "BENCH_RUN_ID is required" in proc.stderr


# ----- the Spark cluster roles (spark_workers > 0) -----------------------------------------------------
GRACE_S = 5  # the worker's "master gone" grace in these tests (the cloud's: 300 s)
# it counts from the last answer, whole seconds (date +%s), polled every 1 s: up to 2 s before the master went


def master_status(webui_port: int) -> dict | None:
    try:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"http://127.0.0.1:{webui_port}/json/", timeout=2) as r:
            return json.load(r)
    except OSError:
        return None


def alive_workers(webui_port: int) -> list[dict]:
    st = master_status(webui_port) or {}
    return [w for w in st.get("workers", []) if w.get("state") == "ALIVE"]


def wait_for(what: str, predicate, timeout_s: float, *procs: subprocess.Popen):
    """Poll `predicate` until it returns something truthy; fail early when one of `procs` exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        for p in procs:
            assert p.poll() is None, f"{p.args} exited ({p.returncode}) while waiting for {what}"
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what}")


def java_processes(marker: Path) -> list[psutil.Process]:
    """Living JVMs whose command line names `marker` (their conf or work directory is under it)."""
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            cmd = p.info["cmdline"] or []
            if (p.info["status"] != psutil.STATUS_ZOMBIE and cmd and Path(cmd[0]).name == "java"
                    and any(str(marker) in a for a in cmd)):
                out.append(p)
        except psutil.Error:
            continue
    return out


def no_java_left(marker: Path, timeout_s: float = 15) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while (left := java_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.25)
    return [" ".join(p.cmdline()[-8:]) for p in left if p.is_running()]


def kill_group(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


def cleanup(marker: Path, *procs: subprocess.Popen | None) -> None:
    """Whatever a failed test left: the bootstraps' and the master's process groups, then any JVM of
    the test (a daemon leads a process group of its own: setsid in bootstrap.sh)."""
    for p in procs:
        kill_group(p)
    for p in java_processes(marker):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            p.kill()


def start_master(root: Path, port: int, webui_port: int) -> subprocess.Popen:
    """A real Spark standalone master on 127.0.0.1, in a process group of its own."""
    conf = root / "master-conf"   # an empty SPARK_CONF_DIR, under the test's directory (the JVM's marker)
    conf.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env |= {"SPARK_HOME": str(spark_home()), "SPARK_CONF_DIR": str(conf), "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m", "SPARK_DAEMON_JAVA_OPTS": " ".join(DAEMON_OPTIONS)}
    log = open(root / "master.log", "ab")   # noqa: SIM115 - the child keeps it
    try:
        return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), MASTER_CLASS, "--host", "127.0.0.1",
                                 "--port", str(port), "--webui-port", str(webui_port)], env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    finally:
        log.close()


def stop_master(master: subprocess.Popen) -> None:
    os.killpg(master.pid, signal.SIGTERM)
    try:
        master.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(master.pid, signal.SIGKILL)
        master.wait(timeout=10)


def worker_settings(master_port: int, master_webui: int, worker_port: int, worker_webui: int, **more) -> dict:
    """A worker role's settings on 127.0.0.1: one core, 512 MiB, a 1 s poll and a short grace."""
    return {"BENCH_ROLE": "worker", "BENCH_SCENARIOS": "<unset>",   # a worker needs no scenarios
            "BENCH_SPARK_MASTER_HOST": "127.0.0.1", "BENCH_PRIVATE_IP": "127.0.0.1", "BENCH_INSTANCE_ID": "i-w1",
            "BENCH_SPARK_MASTER_PORT": master_port, "BENCH_SPARK_MASTER_WEBUI_PORT": master_webui,
            "BENCH_SPARK_WORKER_PORT": worker_port, "BENCH_SPARK_WORKER_WEBUI_PORT": worker_webui,
            "BENCH_SPARK_WORKER_CORES": 1, "BENCH_SPARK_WORKER_MEMORY": "512m", "BENCH_SPARK_DAEMON_MEMORY": "256m",
            "BENCH_SPARK_POLL_S": 1, "BENCH_SPARK_MASTER_GRACE_S": GRACE_S, "BENCH_SPARK_MASTER_WAIT_S": 90,
            "BENCH_VENV_PYTHON": sys.executable} | more


def start_bootstrap(tmp_path: Path, s3, run_id: str, **settings) -> subprocess.Popen:
    env = bootstrap_env(tmp_path, s3, run_id, **settings)
    return subprocess.Popen(["bash", str(BOOTSTRAP)], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.mark.slow
def test_worker_serves_the_master_then_powers_off_once_it_is_gone(tmp_path, s3):
    """The worker role against a real master: it registers ALIVE with the cores and memory it was told,
    keeps serving while the master answers, and once the master is gone for the grace period stops its
    JVM, uploads its logs to workers/<instance-id>/ (never status.json) and powers off."""
    m_port, m_webui, w_port, w_webui = free_ports(4)
    wdir = tmp_path / "worker"
    wdir.mkdir()
    master = worker = None
    try:
        master = start_master(tmp_path, m_port, m_webui)
        wait_for("the master ALIVE", lambda: (master_status(m_webui) or {}).get("status") == "ALIVE", 60, master)
        worker = start_bootstrap(wdir, s3, "e2e-worker", **worker_settings(m_port, m_webui, w_port, w_webui))
        alive = wait_for("the worker ALIVE at the master", lambda: alive_workers(m_webui), 60, master, worker)
        assert len(alive) == 1
        assert (alive[0]["host"], alive[0]["port"]) == ("127.0.0.1", w_port)
        assert alive[0]["cores"] == 1 and alive[0]["memory"] == 512
        time.sleep(GRACE_S + 1)   # the master answers: the worker stays
        assert worker.poll() is None and not (wdir / "powered-off").exists()
        t_gone = time.monotonic()  # before the stop: the master stops answering while stop_master waits for it
        stop_master(master)
        rc = worker.wait(timeout=60)
        after = time.monotonic() - t_gone
        r = outcome(wdir, "e2e-worker", rc, after, worker.stderr.read())
        assert rc == 0, r.log + r.stderr
        assert GRACE_S - 2 <= after < GRACE_S + 25, (after, r.log)
        assert "the Spark master has not answered for" in r.log
        assert r.deadline == "shutdown -P +30"   # the same deadline as the benchmark host, armed first
        # its logs were in the bucket before the power-off; status.json is the benchmark host's alone
        logs = {"runs/e2e-worker/workers/i-w1/" + f for f in ("bootstrap.log", "spark-worker.log")}
        assert r.powered_off is not None and logs <= set(r.powered_off), r.powered_off
        assert "runs/e2e-worker/status.json" not in keys_under(s3, "runs/e2e-worker/")
        assert "Successfully registered with master" in get_text(s3, "runs/e2e-worker/workers/i-w1/spark-worker.log")
        assert no_java_left(tmp_path) == []
    finally:
        cleanup(tmp_path, worker, master)


def test_worker_powers_off_when_the_master_never_answers(tmp_path, s3):
    """No master within BENCH_SPARK_MASTER_WAIT_S: the worker uploads its logs and powers off (no JVM)."""
    m_port, m_webui, w_port, w_webui = free_ports(4)
    r = run_bootstrap(tmp_path, s3, "e2e-lonely", timeout=60,
                      **worker_settings(m_port, m_webui, w_port, w_webui, BENCH_SPARK_MASTER_WAIT_S=2))
    assert r.rc == 1, r.log + r.stderr
    assert "did not answer within 2 s" in r.log
    assert r.powered_off is not None and "runs/e2e-lonely/workers/i-w1/bootstrap.log" in r.powered_off
    assert keys_under(s3, "runs/e2e-lonely/") == ["runs/e2e-lonely/workers/i-w1/bootstrap.log"]
    assert not (tmp_path / "logs" / "spark-worker.log").exists()


def stub_bench(tmp_path: Path, webui_port: int, spark_master_flag: bool = True) -> Path:
    """A `bench` that passes for the harness: `run` records its arguments, BENCH_SPARK_DRIVER_HOST and
    the master's /json/ at that moment, and exits 0."""
    stub = tmp_path / "stub-bench"
    flag = " --spark-master spark://HOST:PORT" if spark_master_flag else ""
    stub.write_text(f"""#!/bin/bash
if [[ $1 == run && $2 == --help ]]; then echo "Usage: bench run [OPTIONS] SCENARIO --instance-type{flag}"; exit 0; fi
case $1 in
  --version) echo "bench, version stub" ;;
  list) echo "  bin-packing  stub" ;;
  doctor) echo "ok" ;;
  run)
    printf '%s\\n' "$@" > {tmp_path}/run-args
    echo "$BENCH_SPARK_DRIVER_HOST" > {tmp_path}/driver-host
    curl -fsS --noproxy '*' http://127.0.0.1:{webui_port}/json/ > {tmp_path}/master-at-run.json ;;
  *) exit 2 ;;
esac
""")
    stub.chmod(0o755)
    return stub


def bench_settings(stub: Path, master_port: int, master_webui: int, **more) -> dict:
    return {"BENCH_CMD": stub, "BENCH_SPARK_WORKERS": 1, "BENCH_PRIVATE_IP": "127.0.0.1", "BENCH_INSTANCE_ID": "i-b",
            "BENCH_SPARK_MASTER_PORT": master_port, "BENCH_SPARK_MASTER_WEBUI_PORT": master_webui,
            "BENCH_SPARK_DAEMON_MEMORY": "256m", "BENCH_SPARK_POLL_S": 1, "BENCH_REPORT": 0,
            "BENCH_VENV_PYTHON": sys.executable, "BENCH_WAREHOUSE": f"s3://{BUCKET}/warehouse/e2e"} | more


@pytest.mark.slow
def test_bench_role_with_one_worker_end_to_end(tmp_path, s3):
    """Both roles together, as on AWS with spark_workers = 1: the benchmark host starts the master, waits
    for the worker (a worker-role bootstrap started first, waiting for the master), runs `bench run
    --spark-master`, stops the master, uploads with status.json last and powers off; the worker follows
    once the master is gone.  No JVM outlives them."""
    m_port, m_webui, w_port, w_webui = free_ports(4)
    bdir, wdir = tmp_path / "bench", tmp_path / "worker"
    bdir.mkdir()
    wdir.mkdir()
    worker = None
    try:
        worker = start_bootstrap(wdir, s3, "e2e-cluster", **worker_settings(m_port, m_webui, w_port, w_webui))
        r = run_bootstrap(bdir, s3, "e2e-cluster", timeout=150,
                          **bench_settings(stub_bench(bdir, m_webui), m_port, m_webui))
        assert r.rc == 0, r.log + r.stderr
        st = status_of(s3, r.prefix)
        assert st["status"] == "ok" and st["scenarios"][0]["exit_code"] == 0
        args = (bdir / "run-args").read_text().splitlines()
        i = args.index("--spark-master")
        assert args[i + 1] == f"spark://127.0.0.1:{m_port}"
        assert f"spark.master_webui=http://127.0.0.1:{m_webui}" in args   # not the default 8080 here
        assert args[args.index("--warehouse") + 1] == f"s3://{BUCKET}/warehouse/e2e/bin-packing"
        assert (bdir / "driver-host").read_text().strip() == "127.0.0.1"
        at_run = json.loads((bdir / "master-at-run.json").read_text())
        assert [(w["host"], w["port"], w["state"]) for w in at_run["workers"]] == [("127.0.0.1", w_port, "ALIVE")]
        assert "1 workers ALIVE after" in r.log
        log = r.log
        assert log.index("stopping the Spark master") < log.index("uploading results") < log.index("powering off")
        assert r.powered_off is not None and r.prefix + "logs/spark-master.log" in r.powered_off
        assert r.prefix + "status.json" in r.powered_off
        # the worker: the master is gone, it follows after the grace period
        rc = worker.wait(timeout=60)
        w = outcome(wdir, "e2e-cluster", rc, 0, worker.stderr.read())
        assert rc == 0, w.log + w.stderr
        assert w.powered_off is not None and r.prefix + "workers/i-w1/spark-worker.log" in w.powered_off
        assert no_java_left(tmp_path) == []
    finally:
        cleanup(tmp_path, worker)


@pytest.mark.slow
def test_bench_role_fails_uploads_and_powers_off_when_workers_do_not_come(tmp_path, s3):
    """No worker within BENCH_SPARK_WORKERS_TIMEOUT_S: the run fails with the reason in status.json, the
    master is stopped, everything is uploaded, the host powers off; `bench run` never ran."""
    m_port, m_webui = free_ports(2)
    try:
        r = run_bootstrap(tmp_path, s3, "e2e-alone", timeout=90,
                          **bench_settings(stub_bench(tmp_path, m_webui), m_port, m_webui,
                                           BENCH_SPARK_WORKERS_TIMEOUT_S=3))
        assert r.rc == 1, r.log + r.stderr
        st = status_of(s3, r.prefix)
        assert st["status"] == "failed"
        assert st["message"].startswith(f"spark-cluster: only 0 of 1 Spark workers ALIVE at spark://127.0.0.1:{m_port}")
        assert not (tmp_path / "run-args").exists()
        assert r.powered_off is not None and r.prefix + "logs/spark-master.log" in r.powered_off
        assert "stopping the Spark master" in r.log
        assert no_java_left(tmp_path) == []
    finally:
        cleanup(tmp_path)


def test_bench_role_refuses_workers_without_harness_support(tmp_path, s3):
    """A harness whose `bench run` has no --spark-master cannot use the workers: fail before any JVM."""
    m_port, m_webui = free_ports(2)
    r = run_bootstrap(tmp_path, s3, "e2e-old-harness", timeout=60,
                      **bench_settings(stub_bench(tmp_path, m_webui, spark_master_flag=False), m_port, m_webui))
    assert r.rc == 1
    assert "no --spark-master" in status_of(s3, r.prefix)["message"]
    assert not (tmp_path / "logs" / "spark-master.log").exists()
    assert r.powered_off is not None
