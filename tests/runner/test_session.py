"""Shared engine processes (bench.runner.session, what `bench conformance` runs its cases in): one process serves
run after run while they end ok; a run that hangs past its time limit is killed with its process, recorded as a
timeout, and the next run gets a new process; nothing outlives the campaign, and no shared run is timed into a
statistic."""

import io

import psutil

from bench.core.progress import Progress
from bench.core.stats import engine_stats
from bench.runner.context import RunOptions
from bench.runner.run import run_scenario
from bench.runner.session import SharedProcesses
from tests.helpers import TEST_ENGINES, TINY, bench_env


def _workers() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True)
            if "bench.engines.worker" in " ".join(p.cmdline())]


def test_one_process_serves_runs_until_one_fails_and_none_outlives_the_campaign(tmp_path, shared_warehouse,
                                                                                 monkeypatch):
    from bench import engines

    for k, v in bench_env().items():  # the test engines, here and in the workers
        monkeypatch.setenv(k, v)
    for name in ("rewrite", "hang"):
        monkeypatch.setitem(engines.REGISTRY, name, dict(s.split("=") for s in TEST_ENGINES.split(","))[name])
    out = io.StringIO()
    with SharedProcesses(log_dir=tmp_path / "res") as shared:
        results = run_scenario(RunOptions(scenario="bin-packing", scale=float(TINY), engines="rewrite,hang", reps=2,
                                          warehouse=str(shared_warehouse), results_dir=str(tmp_path / "res"),
                                          run_id="s", timeout_s=10, readers=False, shared=shared),
                               Progress(stream=out, live=False))
        assert len(_workers()) == 1  # the rewrite engine's process, kept for a next run
    assert _workers() == []
    by = {(r.engine, r.rep): r for r in results}
    for rep in (0, 1):
        rw, hang = by[("rewrite", rep)], by[("hang", rep)]
        assert rw.status == "ok" and rw.verified, (rw.error, rw.verification.differences)
        assert hang.status == "timeout" and "time limit of 10 s exceeded" in hang.error, hang.error
        assert hang.shared_process == 1  # killed with its process: the next hang run got a new one
    # the rewrite engine's two runs in one process (the hang runs between them in their own)
    assert [by[("rewrite", rep)].shared_process for rep in (0, 1)] == [1, 2]
    assert "no speedup: the engines ran in shared processes" in out.getvalue()
    stats = engine_stats(results)
    assert stats["rewrite"].runs == 0 and stats["rewrite"].verified == 0  # no shared run is measured
    assert (tmp_path / "res" / "shared-rewrite.log").exists()
