"""The runner end to end through the real CLI, with test engines that fail the ways real engines do and
engines that compact wrongly in one way each.  Each run starts the real loopback REST server and
generates (once) a real tiny table."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers import TINY, bench_env, run_bench


def _results(results_dir: Path) -> dict:
    files = sorted(p for p in results_dir.glob("*/*.json") if p.name != "run.json")
    return {json.loads(f.read_text())["engine"]: json.loads(f.read_text()) for f in files}


def _failed(r: dict) -> set[str]:
    return {c["name"] for c in r["verification"]["checks"] if not c["ok"] and c["required"]}


def test_every_wrong_compaction_is_caught(tmp_path, shared_warehouse):
    """An engine that loses a row, compacts half the files, writes another codec, alters one value, or
    drops the Parquet field ids: each finishes `ok` by its own account and is `verified: false`, the
    failed check named in `differences`."""
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "corrupt,partial,wrongcodec,altered,noids",
                  "--results-dir", tmp_path, "--warehouse", shared_warehouse, timeout=600)
    assert p.returncode == 0, p.stderr
    res = _results(tmp_path)
    for engine, r in res.items():
        assert r["status"] == "ok" and r["verified"] is False, engine  # the engine thinks all went well
        for name in _failed(r):
            assert any(d.startswith(name + ":") for d in r["verification"]["differences"]), (engine, name)
        assert r["verification"]["rules"]  # the rules applied, in words
    assert _failed(res["corrupt"]) == {"content_duckdb_read_parquet", "content_pyiceberg_scan"}
    assert any("(-1)" in d for d in res["corrupt"]["verification"]["differences"])
    assert res["corrupt"]["after"]["rows"] == res["corrupt"]["before"]["rows"] - 1
    assert _failed(res["partial"]) == {"compaction_complete", "file_count"}
    assert res["partial"]["files_out"] < res["partial"]["files_in"]  # fewer files is not enough
    assert _failed(res["wrongcodec"]) == {"output_codec"}
    assert "zstd" in next(d for d in res["wrongcodec"]["verification"]["differences"] if d.startswith("output_codec"))
    assert _failed(res["altered"]) == {"content_duckdb_read_parquet", "content_pyiceberg_scan"}
    assert res["altered"]["after"]["rows"] == res["altered"]["before"]["rows"]  # same count, other content
    # the by-name reader sees the right values; only the field-id reader notices the ids are gone
    assert _failed(res["noids"]) == {"content_pyiceberg_scan"}
    assert "field-ids" in next(c for c in res["noids"]["verification"]["checks"]
                               if c["name"] == "content_pyiceberg_scan")["message"]
    for r in res.values():  # every input was the dataset, byte for byte, whatever ran before
        assert r["input"]["identical_to_dataset"] is True
    assert len({r["input"]["fingerprint"] for r in res.values()}) == 1


def test_crash_timeout_oom_and_heap_oom_are_recorded_and_the_next_engine_runs(tmp_path, shared_warehouse):
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "crash,hang,hog,heap,corrupt",
                  "--timeout", "8", "--memory-budget", "600M",
                  "--results-dir", tmp_path, "--warehouse", shared_warehouse, timeout=300)
    assert p.returncode == 0, p.stderr
    res = _results(tmp_path)
    assert set(res) == {"crash", "hang", "hog", "heap", "corrupt"}

    crash = res["crash"]
    assert crash["status"] == "failed" and crash["verified"] is False
    assert "exited with status 3" in crash["error"]
    assert any("about to die" in ln for ln in crash["log_tail"])  # the evidence

    hang = res["hang"]
    assert hang["status"] == "timeout" and "time limit of 8 s" in hang["error"]
    assert 8 <= hang["process_wall_s"] < 60

    hog = res["hog"]  # over the harness's budget: oom
    assert hog["status"] == "oom", hog["error"]
    assert hog["memory_budget_bytes"] == 600 * 1024**2
    assert hog["memory_enforcement"]  # says how the budget was enforced
    assert "OOM killer" in hog["error"] or "RSS watchdog" in hog["error"]
    assert any("holding" in ln for ln in hog["log_tail"])
    # stopped near the budget, not at 4 GiB (the tree's summed RSS also counts the interpreter's shared pages)
    assert hog["telemetry"]["peak_rss_bytes"] <= 800 * 1024**2

    heap = res["heap"]  # the engine's own limit, far below the budget: heap-oom, not oom
    assert heap["status"] == "heap-oom" and "OutOfMemoryError" in heap["error"]
    assert heap["telemetry"]["peak_rss_bytes"] < 600 * 1024**2

    # the engine after the failures still ran on the restored, identical input
    assert res["corrupt"]["status"] == "ok"
    assert res["corrupt"]["input"]["fingerprint"] == res["crash"]["input"]["fingerprint"]
    for e in ("crash", "hang", "hog", "heap", "corrupt"):
        assert e in p.stdout


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7])
def test_schedule_balances_positions_and_predecessors(n):
    """Over a full cycle of a Williams design each engine is in each position, and right after each other
    engine, equally often; a plain rotation would give every engine the same predecessor every time."""
    from collections import Counter

    from bench.runner.context import schedule, williams_orders

    cycle = len(williams_orders(n))
    assert cycle == (2 * n if n % 2 else n)
    engines = [f"e{i}" for i in range(n)]
    slots = schedule(engines, cycle, warmup=False)
    orders = [s.order for s in slots if s.position == 0]
    assert len(orders) == cycle and all(sorted(o) == engines for o in orders)
    positions = Counter((e, o.index(e)) for o in orders for e in o)
    assert set(positions.values()) == {cycle // n}
    after = Counter((o[i - 1], o[i]) for o in orders for i in range(1, n))
    assert len(after) == n * (n - 1) and len(set(after.values())) == 1
    if n > 2:  # the first reps already vary what comes before an engine
        first = schedule(engines, 3, warmup=False)
        preds = {tuple(o[o.index("e1") - 1] if o.index("e1") else None for o in [s.order]) for s in first
                 if s.engine == "e1"}
        assert len(preds) > 1


def test_order_rotates_each_run_gets_its_own_reset_and_cache_policy(tmp_path, shared_warehouse):
    """Three repetitions of two engines: each engine goes first at least once; every run's input is
    measured after its own reset (an engine that wrote files before it changes nothing); the page cache
    is dropped before each run (root here) and recorded."""
    env = bench_env()
    env.pop("BENCH_CACHE")  # the default: cold where the harness may
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "corrupt,partial", "--reps", "3",
                  "--results-dir", tmp_path, "--warehouse", shared_warehouse, "--run-id", "rot", env=env)
    assert p.returncode == 0, p.stderr
    runs = [json.loads(f.read_text()) for f in sorted((tmp_path / "rot").glob("*--rep*.json"))]
    assert len(runs) == 6
    orders = {r["rep"]: r["engine_order"] for r in runs}
    assert orders == {0: ["corrupt", "partial"], 1: ["partial", "corrupt"], 2: ["corrupt", "partial"]}
    for r in runs:
        assert r["order_position"] == r["engine_order"].index(r["engine"])
        assert r["input"]["identical_to_dataset"] and r["cache"]["mode"] == "cold" and r["cache"]["dropped"]
        assert r["before"]["metadata_location"] == r["input"]["metadata_location"]
    assert len({r["input"]["fingerprint"] for r in runs}) == 1
    # the run's state file says it completed
    state = json.loads((tmp_path / "rot" / "run.json").read_text())
    assert state["state"] == "complete" and state["expected_results"] == 6

    w = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "corrupt", "--cache", "warm",
                  "--results-dir", tmp_path, "--warehouse", shared_warehouse, "--run-id", "warm")
    assert w.returncode == 0, w.stderr
    warm = json.loads((tmp_path / "warm" / "bin-packing--corrupt--rep0.json").read_text())
    assert warm["cache"]["mode"] == "warm" and warm["cache"]["warmed_bytes"] == warm["bytes_in"]


def test_results_are_never_overwritten(tmp_path, shared_warehouse):
    args = ["run", "bin-packing", "--scale", TINY, "--engines", "corrupt", "--run-id", "same",
            "--results-dir", tmp_path, "--warehouse", shared_warehouse]
    assert run_bench(*args).returncode == 0
    first = (tmp_path / "same" / "bin-packing--corrupt--rep0.json").read_text()
    assert run_bench(*args).returncode == 0
    assert (tmp_path / "same" / "bin-packing--corrupt--rep0.json").read_text() == first
    assert (tmp_path / "same-2" / "bin-packing--corrupt--rep0.json").exists()


def _start(args: list, log: Path) -> subprocess.Popen:
    from tests.helpers import ROOT

    exe = str(Path(os.sys.executable).parent / "bench")
    return subprocess.Popen([exe, *map(str, args)], stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            env=bench_env(), cwd=ROOT)


def _wait_for(predicate, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting")


def test_one_run_at_a_time_per_warehouse(tmp_path, shared_warehouse):
    """A second run on a busy warehouse waits, saying who holds it; with --no-wait it exits 2 at once."""
    log, wlog = tmp_path / "first.log", tmp_path / "waited.log"
    # the first run holds the warehouse until it is killed (its engine hangs far longer than this test runs),
    # so the checks below never race its end however loaded the machine is
    first = _start(["run", "bin-packing", "--scale", TINY, "--engines", "hang", "--timeout", "600",
                    "--results-dir", tmp_path / "r1", "--warehouse", shared_warehouse], log)
    waiter = None
    try:
        _wait_for(lambda: "compacting" in log.read_text())
        busy = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "corrupt", "--no-wait",
                         "--results-dir", tmp_path / "r2", "--warehouse", shared_warehouse)
        assert busy.returncode == 2
        lines = busy.stderr.strip().splitlines()
        assert len(lines) == 1 and f"in use by pid {first.pid}" in lines[0], busy.stderr
        assert not (tmp_path / "r2").exists()
        waiter = _start(["datagen", "bin-packing", "--scale", TINY, "--warehouse", shared_warehouse], wlog)
        _wait_for(lambda: "waiting: the warehouse is in use" in wlog.read_text())
        assert f"waiting: the warehouse is in use by pid {first.pid}" in wlog.read_text()
        assert waiter.poll() is None  # still waiting while the first run holds it
        first.kill()
        first.wait()
        assert waiter.wait(timeout=180) == 0, wlog.read_text()  # it got the warehouse once the first run ended
    finally:
        for p in (first, waiter):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def test_kill_9_mid_run_leaves_nothing_that_breaks_the_next_run(tmp_path, shared_warehouse):
    log = tmp_path / "killed.log"
    victim = _start(["run", "bin-packing", "--scale", TINY, "--engines", "corrupt,hang", "--timeout", "600",
                     "--results-dir", tmp_path, "--run-id", "killed", "--warehouse", shared_warehouse], log)
    try:
        _wait_for(lambda: "[hang rep0] compacting" in log.read_text())
        children = psutil.Process(victim.pid).children(recursive=True)
        assert children  # the REST catalog server and the engine worker
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        gone, alive = psutil.wait_procs(children, timeout=15)
        assert not alive, [p.cmdline() for p in alive]  # nothing the harness started outlives it
    finally:
        if victim.poll() is None:
            victim.kill()
    state = json.loads((tmp_path / "killed" / "run.json").read_text())
    assert state["state"] == "running" and state["pid"] == victim.pid  # it never got to say otherwise
    # the next run gets the warehouse at once and the dataset's exact input (the killed run's output
    # files, if any, are gone)
    nxt = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "corrupt", "--no-wait",
                    "--results-dir", tmp_path, "--run-id", "next", "--warehouse", shared_warehouse)
    assert nxt.returncode == 0, nxt.stderr
    r = json.loads((tmp_path / "next" / "bin-packing--corrupt--rep0.json").read_text())
    assert r["status"] == "ok" and r["input"]["identical_to_dataset"]
    killed = json.loads((tmp_path / "killed" / "bin-packing--corrupt--rep0.json").read_text())
    assert killed["input"]["fingerprint"] == r["input"]["fingerprint"]
    # the report on the killed run's directory says it is incomplete instead of failing
    rep = run_bench("report", tmp_path / "killed", "--out", tmp_path / "killed.html")
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "killed.html").read_text()
    assert "incomplete" in html.lower() and "1 of 2" in html
