"""`bench selfcheck scaling` for real at a tiny size: the harness's own steps (datagen, the input read, verification)
on 1 and 2 cores, each child confined and told its cores, written as harness-scaling.json that `bench plan` and
the report read; bad input is one line; the report of its directory renders the section (hand-built too)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from bench.core.campaign import HARNESS_STEPS, HarnessScalingSummary, read_summary, write_summary
from bench.core.errors import UserError
from bench.core.fit import CoreScaling
from tests.helpers import bench_env, run_bench
from tests.reports.hand_built import render, table_row

ALLOWED = sorted(os.sched_getaffinity(0))
TWO_CPUS = pytest.mark.skipif(len(ALLOWED) < 2, reason=f"this machine lets the tests use {len(ALLOWED)} CPU: "
                                                       "1 -> 2 core scaling needs 2")


def _one_line_error(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.slow
@TWO_CPUS
def test_the_steps_run_confined_on_1_and_2_cores_and_the_report_shows_them(tmp_path):
    results = tmp_path / "results"
    p = run_bench("selfcheck", "scaling", "--files", 4, "--file-mb", 1, "--rounds", 1, "--results-dir", results,
                  "--run-id", "hs", "--work-dir", tmp_path / "work", timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    s = read_summary(results / "hs" / "harness-scaling.json")
    assert isinstance(s, HarnessScalingSummary) and s.state == "complete" and s.rounds == 1 and s.cores >= 2
    assert [c.engine for c in s.steps] == list(HARNESS_STEPS)
    one, two = ",".join(map(str, ALLOWED[:1])), ",".join(map(str, ALLOWED[:2]))
    for c in s.steps:
        assert c.t1_s > 0 and c.t2_s > 0 and c.busy_1 and c.busy_2 and c.busy_1 > 0 and c.busy_2 > 0, c
        assert s.samples[c.engine] == {"1": [c.t1_s], "2": [c.t2_s]}
        # the CPUs each child saw (os.sched_getaffinity in the child): the first 1, then the first 2
        (evidence,) = c.runs
        assert f"1 core {c.t1_s:.3f} s" in evidence and f"cpus {one};" in evidence, evidence
        assert evidence.endswith(f"cpus {two}"), evidence
        assert 0 < c.speedup(16) <= 16 and c.note == "1 of 1 rounds, median"
    assert "cpuset" in s.notes[0] or "sched_setaffinity" in s.notes[0]
    assert "duckdb-read-parquet, pyiceberg-scan" in s.notes[1]
    assert "4 files of ~1 MB, uncompressed" in s.table and s.cache.startswith("datagen: os.sync()")
    out = p.stdout
    assert f"round 1/1, 1 core (cpus {one}): datagen" in out and f"round 1/1, 2 cores (cpus {two}): verification" in out
    assert "step          1 core  2 cores  cores busy (1, 2)  efficiency t1/(2 t2)  16 cores (Amdahl)  usable" in out
    assert all(f"\n{step} " in out for step in HARNESS_STEPS)
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())  # warehouses removed

    # the report of that directory: the section, no traceback; the Markdown tables have nothing to show
    p = run_bench("report", results / "hs")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stdout + p.stderr
    html = (results / "hs" / "report.html").read_text()
    assert 'data-section="harness-scaling"' in html and 'data-table="harness-scaling"' in html
    assert f'data-value="{s.steps[0].efficiency!r}"' in table_row(html, "harness-scaling", engine="datagen")
    _one_line_error(run_bench("report", results / "hs", "--markdown", "-"), "no results found")


def test_bad_values_are_one_line(tmp_path):
    _one_line_error(run_bench("selfcheck", "scaling", "--rounds", 0), "--rounds")
    _one_line_error(run_bench("selfcheck", "scaling", "--file-mb", 0), "--file-mb")
    _one_line_error(run_bench("selfcheck", "scaling", "--codec", "lz4"), "--codec")
    _one_line_error(run_bench("selfcheck", "scaling", "--files", 2, "--results-dir", tmp_path, "--run-id", "a b"),
                    "--run-id")
    assert not any(tmp_path.iterdir())


def test_fewer_than_two_cpus_is_one_line(tmp_path):
    exe = shutil.which("bench", path=os.path.dirname(sys.executable)) or "bench"
    p = subprocess.run([exe, "selfcheck", "scaling", "--results-dir", str(tmp_path)], env=bench_env(),
                       capture_output=True, text=True, timeout=120,
                       preexec_fn=lambda: os.sched_setaffinity(0, ALLOWED[:1]))
    _one_line_error(p, "needs at least 2")
    assert not any(tmp_path.iterdir())


def test_a_child_that_is_not_confined_refuses_to_measure():
    from bench.campaigns.harness_scaling import child

    with pytest.raises(SystemExit, match="not confined"):
        child({"cpus": [max(ALLOWED) + 1], "step": "datagen"})


def test_duckdb_is_told_its_threads(monkeypatch):
    from bench.core.catalog.duck import duckdb_config, duckdb_connect
    from bench.core.settings import env_name

    threads = env_name("duckdb_threads")
    monkeypatch.delenv(threads, raising=False)
    assert duckdb_config() == {}  # today's behaviour: DuckDB's default
    monkeypatch.setenv(threads, "1")
    con = duckdb_connect()
    try:
        assert con.execute("SELECT current_setting('threads')").fetchone()[0] == 1
    finally:
        con.close()
    monkeypatch.setenv(threads, "zero")
    with pytest.raises(UserError, match=threads):
        duckdb_config()


def test_the_report_of_a_hand_built_check(tmp_path):
    """A summary alone (no result set): its section with the 1 -> 2 core table; one still running: the banner."""
    steps = [CoreScaling(engine="datagen", t1_s=10.0, t2_s=6.25, busy_1=0.97, busy_2=1.8, runs=["round 1: ..."],
                         note="3 of 3 rounds, median"),
             CoreScaling(engine="verification", t1_s=4.0, t2_s=4.0, busy_1=0.5, busy_2=0.6),
             CoreScaling(engine="input read", t1_s=1.0, t2_s=0.6, busy_1=1.0, busy_2=1.8)]
    write_summary(tmp_path / "hs", HarnessScalingSummary(scaling_id="hs", state="complete", cores=2, steps=steps,
                                                          rounds=3, table="small files, 87 files", cache="warm"))
    html = render([tmp_path / "hs"])
    assert "<title>The harness's own steps on 1 and 2 cores</title>" in html
    row = table_row(html, "harness-scaling", engine="datagen")
    assert 'data-metric="efficiency" data-value="0.8"' in row and '<td data-metric="usable">yes</td>' in row
    assert "3 of 3 rounds, median: round 1: ..." in row
    assert "no: on 1 core it kept less than" in table_row(html, "harness-scaling", engine="verification")
    # usable, but the plan plans the input read by its bytes alone: the table does not claim it is used
    assert "no: the plan counts the input read's bytes" in table_row(html, "harness-scaling", engine="input read")
    assert "1 harness scaling check, 0 result sets" in html and "data-campaign-banner" not in html
    write_summary(tmp_path / "running", HarnessScalingSummary(scaling_id="running", started_at="2026-11-26T00:00:00Z"))
    html = render([tmp_path])
    assert "data-campaign-banner" in html and "harness scaling <code>running</code>" in html
    assert "No step was measured on both 1 and 2 cores." in html
