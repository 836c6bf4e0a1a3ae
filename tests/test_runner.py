"""The runner end to end through the real CLI, with test engines that fail the ways real engines do.
Each run starts the real loopback REST server and generates (once) a real tiny table."""

import json
from pathlib import Path

from tests.conftest import TINY, run_bench


def _results(results_dir: Path) -> dict:
    files = sorted(results_dir.glob("*/*.json"))
    return {json.loads(f.read_text())["engine"]: json.loads(f.read_text()) for f in files}


def test_corrupted_compaction_is_caught(tmp_path, shared_warehouse):
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "corrupt",
                  "--results-dir", tmp_path, "--warehouse", shared_warehouse)
    assert p.returncode == 0, p.stderr
    r = _results(tmp_path)["corrupt"]
    assert r["status"] == "ok"  # the engine itself thinks all went well...
    assert r["verified"] is False  # ...the verifier does not
    checks = r["verification"]["checks"]
    assert checks["same_row_count"] is False and checks["same_content_checksum"] is False
    assert any("rows" in d and "(-1)" in d for d in r["verification"]["differences"])
    assert r["after"]["rows"] == r["before"]["rows"] - 1


def test_crash_timeout_and_oom_are_recorded_and_the_next_engine_runs(tmp_path, shared_warehouse):
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "crash,hang,hog,corrupt",
                  "--timeout", "8", "--memory-budget", "600M",
                  "--results-dir", tmp_path, "--warehouse", shared_warehouse, timeout=300)
    assert p.returncode == 0, p.stderr
    res = _results(tmp_path)
    assert set(res) == {"crash", "hang", "hog", "corrupt"}

    crash = res["crash"]
    assert crash["status"] == "failed" and crash["verified"] is False
    assert "exited with status 3" in crash["error"]
    assert any("about to die" in ln for ln in crash["log_tail"])  # the evidence

    hang = res["hang"]
    assert hang["status"] == "timeout" and "time limit of 8 s" in hang["error"]
    assert 8 <= hang["process_wall_s"] < 60

    hog = res["hog"]
    assert hog["status"] == "oom", hog["error"]
    assert hog["memory_budget_bytes"] == 600 * 1024**2
    assert hog["memory_enforcement"]  # says how the budget was enforced
    assert "OOM killer" in hog["error"] or "RSS watchdog" in hog["error"]
    assert any("holding" in ln for ln in hog["log_tail"])
    assert hog["telemetry"]["peak_rss_bytes"] <= 700 * 1024**2  # stopped near the budget, not at 4 GiB

    # the engine after the failures still ran on the reset, identical input
    assert res["corrupt"]["status"] == "ok"
    assert res["corrupt"]["before"]["checksum"] == res["crash"]["before"]["checksum"]
    summary = p.stdout
    for e in ("crash", "hang", "hog", "corrupt"):
        assert e in summary


def test_results_are_never_overwritten(tmp_path, shared_warehouse):
    args = ["run", "bin-packing", "--scale", TINY, "--engines", "corrupt", "--run-id", "same",
            "--results-dir", tmp_path, "--warehouse", shared_warehouse]
    assert run_bench(*args).returncode == 0
    first = (tmp_path / "same" / "bin-packing--corrupt--rep0.json").read_text()
    assert run_bench(*args).returncode == 0
    assert (tmp_path / "same" / "bin-packing--corrupt--rep0.json").read_text() == first
    assert (tmp_path / "same-2" / "bin-packing--corrupt--rep0.json").exists()
