"""The cloud bootstrap (terraform/bootstrap.sh) and the uploader (bench/cloud.py), end to end on this
machine: a real S3-compatible server (moto) on 127.0.0.1, the REAL harness at a tiny scale
(risingwave only, to stay fast), and the power-off / deadline replaced by marker commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest
from moto.server import ThreadedMotoServer

from bench import cloud

ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP = ROOT / "terraform" / "bootstrap.sh"
UPLOADER = ROOT / "bench" / "cloud.py"
BENCH = Path(sys.executable).parent / "bench"
BUCKET = "bench-results"
TINY_SCALE = "0.00005"


@pytest.fixture(scope="module")
def s3():
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL_S3": endpoint, "AWS_EC2_METADATA_DISABLED": "true"}
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket=BUCKET)
    try:
        yield SimpleNamespace(client=client, env=env, endpoint=endpoint)
    finally:
        server.stop()


def keys_under(s3, prefix: str) -> list[str]:
    pages = s3.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"] for p in pages for o in p.get("Contents", [])]


def get_text(s3, key: str) -> str:
    return s3.client.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()


def run_bootstrap(tmp_path: Path, s3, run_id: str, timeout: float = 120, **settings) -> SimpleNamespace:
    """Run bootstrap.sh as the instance would, with host-specific steps switched off or replaced."""
    prefix = f"runs/{run_id}/"
    marker_off = tmp_path / "powered-off"
    marker_deadline = tmp_path / "deadline-armed"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "BENCH_"))}
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
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(BOOTSTRAP)], env=env, cwd=tmp_path, timeout=timeout,
                          capture_output=True, text=True)
    elapsed = time.monotonic() - t0
    log = (tmp_path / "logs" / "bootstrap.log")
    return SimpleNamespace(
        rc=proc.returncode, elapsed=elapsed, prefix=prefix, log=log.read_text() if log.exists() else "",
        stderr=proc.stderr,
        powered_off=marker_off.read_text().split() if marker_off.exists() else None,
        deadline=marker_deadline.read_text().strip() if marker_deadline.exists() else None)


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
    # lifetime 1 min minus a 52 s upload reserve: ~8 s for everything before the final upload
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


def test_bootstrap_refuses_to_start_without_its_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    proc = subprocess.run(["bash", str(BOOTSTRAP)], env=env, capture_output=True, text=True, timeout=10)
    assert proc.returncode != 0 and "BENCH_RUN_ID is required" in proc.stderr
