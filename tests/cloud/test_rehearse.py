"""`bench aws rehearse`: the real module and the real AWS provider (from the local plugin directory) applied
against moto on 127.0.0.1, the instance's user data booted here, then status, fetch and down; and the faults that
must end in one line with nothing left running.  The full rehearsal runs at its smallest: one engine (risingwave,
no JVM) at a tiny scale; most of its minutes are the provider waiting on the emulator."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.cloud.test_terraform import local_aws_provider

ROOT = Path(__file__).resolve().parents[2]
BENCH = [sys.executable, "-m", "bench.cli"]
needs_provider = pytest.mark.skipif(local_aws_provider() is None,
                                    reason="no AWS provider binary in a local plugin directory (BENCH_TF_PLUGIN_DIR)")


def module_files() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "terraform").rglob("*")}


def leftovers(marker: str) -> list[str]:
    """Processes whose command line mentions `marker` (the rehearsal's temporary directory or port)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if marker in " ".join(p.info["cmdline"] or []):
                found.append(" ".join(p.info["cmdline"])[:200])
        except psutil.Error:
            pass
    return found


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@needs_provider
@pytest.mark.slow
def test_rehearsal_applies_boots_fetches_and_destroys(tmp_path):
    before = module_files()
    out = tmp_path / "out"
    proc = subprocess.run([*BENCH, "aws", "rehearse", "--results-dir", str(out), "--engines", "risingwave"],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "rehearsal" / "rehearsal.json").read_text())
    assert summary["ok"] and summary["verified"] == {"risingwave": "verified"}
    assert {"module.bench.aws_instance.this[0]", "aws_s3_object.harness[0]", "aws_iam_instance_profile.bench",
            "aws_s3_bucket.results[0]"} <= set(summary["applied_resources"])
    assert summary["instance_state_after_boot"] == "terminated"   # the power-off reached the emulator's EC2
    assert summary["state_after_down"] == []
    assert any("MonitorInstances" in g for g in summary["gaps"])
    # what the instance uploaded, fetched as a user fetches it: its own status, results and report
    status = json.loads((out / "status.json").read_text())
    assert status["status"] == "ok" and status["scenarios"][0]["exit_code"] == 0
    assert (out / "report.html").stat().st_size > 1000
    assert "bench setup" in (out / "logs" / "setup.log").read_text()   # the sandbox's make setup ran
    # nothing left: the emulator's port is closed, no process of the rehearsal runs, terraform/ untouched
    endpoint = proc.stdout.split(" on http://127.0.0.1:", 1)[1].split(";", 1)[0]
    tmp = proc.stdout.split("module copied to ", 1)[1].split("/terraform", 1)[0]
    assert not listening(int(endpoint)) and not Path(tmp).exists()
    assert leftovers(f"127.0.0.1:{endpoint}") == [] and leftovers(tmp) == []
    assert module_files() == before


@pytest.mark.parametrize("case", ["no-plugin-dir", "no-terraform", "port-taken"])
def test_missing_prerequisites_are_one_line_and_exit_2(tmp_path, case):
    env = dict(os.environ)
    args = [*BENCH, "aws", "rehearse", "--results-dir", str(tmp_path / "out")]
    with socket.socket() as taken:
        if case == "no-plugin-dir":
            env["BENCH_TF_PLUGIN_DIR"] = str(tmp_path / "none")
            want = "no plugin directory"
        elif case == "no-terraform":
            env["BENCH_TERRAFORM"] = str(tmp_path / "no-terraform")
            want = "terraform not found"
        else:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            args += ["--port", str(taken.getsockname()[1])]
            want = "is taken"
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and want in lines[0], proc.stderr


@needs_provider
def test_emulator_dying_mid_run_is_one_line_and_leaves_nothing(tmp_path):
    """moto killed while `bench aws up` runs: the rehearsal stops it, says so in one line, exit 1."""
    proc = subprocess.Popen([*BENCH, "aws", "rehearse", "--results-dir", str(tmp_path / "out"), "--no-boot"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    first = proc.stdout.readline()
    pid = int(first.split("(pid ", 1)[1].split(")", 1)[0])
    tmp = first.split("module copied to ", 1)[1].split("/terraform", 1)[0]
    for line in proc.stdout:
        if line.startswith("rehearse [up]"):
            break
    time.sleep(3)  # terraform init is under way
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "the emulator died during up" in lines[0], err
    assert leftovers(tmp) == [] and not Path(tmp).exists()


def test_the_sandbox_moves_the_instances_paths_and_refuses_a_user_data_it_does_not_know(tmp_path):
    from bench.core.errors import UserError
    from bench.rehearse.sandbox import sandboxed

    script = ("install -d -m 0755 /opt/bench\ncat > /opt/bench/bootstrap.env <<'E'\n"
              "export BENCH_DATA_DIR='/data'\nexport BENCH_DATA_DEVICE='auto'\nexport BENCH_PYTHON='/usr/bin/python3'\n"
              "E\nexec /opt/bench/bootstrap.sh\n")
    out = sandboxed(script, tmp_path)
    assert "/opt/bench" not in out.replace(f"{tmp_path}/opt/bench", "")
    assert f"export BENCH_DATA_DIR={tmp_path}/data" in out and "export BENCH_DATA_DEVICE=none" in out
    assert f"export BENCH_PYTHON={sys.executable}" in out
    with pytest.raises(UserError, match="BENCH_DATA_DEVICE"):
        sandboxed(script.replace("BENCH_DATA_DEVICE", "BENCH_DISK"), tmp_path)


def test_a_fetched_run_counts_only_ok_and_verified_results(tmp_path):
    from bench.rehearse.flow import RehearsalFailed, check_fetched

    (tmp_path / "results").mkdir()
    (tmp_path / "report.html").write_text("<html>")
    (tmp_path / "results" / "a.json").write_text(json.dumps({"engine": "spark", "status": "ok", "verified": True}))
    (tmp_path / "results" / "b.json").write_text(json.dumps({"engine": "risingwave", "status": "ok",
                                                             "verified": False}))
    assert check_fetched(tmp_path, ["spark"]) == {"spark": "verified"}
    with pytest.raises(RehearsalFailed, match="risingwave: ok, not verified"):
        check_fetched(tmp_path, ["spark", "risingwave"])
    with pytest.raises(RehearsalFailed, match="arrow-floor: no result"):
        check_fetched(tmp_path, ["arrow-floor"])
