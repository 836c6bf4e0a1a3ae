"""A live writer commits while the engine compacts (tiny scale, both real engines),
held deterministically between the engine's planning and its commit; each case gets a verdict."""

import threading
import time

from bench.core.catalog import CatalogSettings, load_catalog
from bench.core.catalog.rest.http import CommitGate
from bench.core.results import RunResult
from bench.verify.live import live_verdict
from tests.helpers import INTEGRITY_CHECKS, TINY, run_bench


def assert_same_table(r: RunResult, broken: tuple[str, ...] = ()) -> None:
    """The integrity checks on the compacted branch: required, and passing except those named `broken`
    (the writer's snapshot is not the engine's, so its append or delete is no failed `replace`)."""
    checks = {c.name: c for c in r.verification.checks}
    for name in INTEGRITY_CHECKS:
        if name == "summary_totals" and name not in checks:  # no engine commit at the head (refused)
            continue
        ok = name not in broken
        assert checks[name].ok == ok and checks[name].required, (r.engine, r.live_writer.case, name,
                                                                 checks[name].message)


def _runs(run_dir) -> dict[tuple[str, str], RunResult]:
    """(engine, case) -> result, of one run directory."""
    out = {}
    for f in run_dir.glob("*.json"):
        if f.name != "run.json":
            r = RunResult.model_validate_json(f.read_text())
            out[(r.engine, r.live_writer.case)] = r
    return out


def test_commit_gate_holds_the_armed_tables_next_commit_until_released():
    gate = CommitGate(max_hold_s=30)
    gate.arm(("bench", "t"))
    gate.pass_commit(("bench", "other"))  # another table passes at once
    done = threading.Event()
    threading.Thread(target=lambda: (gate.pass_commit(("bench", "t")), done.set()), daemon=True).start()
    time.sleep(0.3)
    state = gate.state()
    assert not done.is_set() and len(state["held"]) == 1 and state["held"][0]["released"] is None
    gate.release()
    assert done.wait(5)
    assert gate.state()["held"][0]["released"] is not None
    gate.pass_commit(("bench", "t"))  # after the release, later commits pass
    assert gate.state()["passed"] == 1
    gate.disarm()
    assert not gate.state()["armed"]


def test_live_writer_cases_with_both_engines_get_verdicts_with_evidence(tmp_path, shared_warehouse):
    p = run_bench("run", "live-writer-deletes", "--scale", TINY, "--engines", "spark,risingwave",
                  "--warehouse", shared_warehouse, "--results-dir", tmp_path / "results", "--run-id", "lw",
                  timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    runs = _runs(tmp_path / "results" / "lw")
    assert len(runs) == 6
    # judged, never timed: one process per engine serves the run's cases (a case that fails ends it: the next gets a
    # new one), its log in the run's work directory
    assert sorted(r.shared_process for r in runs.values() if r.engine == "risingwave") == [1, 2, 3]
    assert (tmp_path / "results" / "lw" / "work" / "shared-spark.log").exists()
    for r in runs.values():
        lw = r.live_writer
        # deterministic interleaving: the writer's commit is the first after the dataset's snapshot
        assert lw.interleaved and lw.order[0] == "writer" and lw.hold, (r.engine, lw.case, lw.hold, lw.order)
        assert lw.writer_snapshot_id and lw.rows == 100
        assert not r.counts  # judged, not timed: never in a statistic
        # a finding: iceberg-compaction's commit retried on top of the writer's append states the totals of
        # the snapshot it started from (the writer's 100 rows and file missing from the head's summary)
        broken = ("summary_totals",) if (r.engine, lw.case) == ("risingwave", "append") else ()
        assert_same_table(r, broken)
        assert r.verified == (lw.verdict == "safe" and not broken)
    rw_append = {c.name: c for c in runs[("risingwave", "append")].verification.checks}["summary_totals"]
    assert "total-records 40000 (manifests: 40100)" in rw_append.message, rw_append.message
    assert "integrity failed (summary_totals)" in runs[("risingwave", "append")].live_writer.reason
    for engine in ("spark", "risingwave"):
        assert runs[(engine, "append")].live_writer.verdict == "safe"
        assert runs[(engine, "equality-delete")].live_writer.verdict == "safe"
    # Spark (Iceberg Java) detects the new position delete on a file it replaced, and commits nothing
    spark = runs[("spark", "position-delete")].live_writer
    assert spark.verdict == "refused" and runs[("spark", "position-delete")].status == "failed"
    # the Java cause behind py4j's error, from the worker's typed record (never a grep of the engine's log)
    assert any("ValidationException" in c for c in runs[("spark", "position-delete")].error_causes)
    assert any("ValidationException" in ln for ln in spark.evidence.get("engine_causes", [])), spark.evidence
    # iceberg-compaction's retry re-applies its rewrite on top of the delete: the deleted rows are back
    rw = runs[("risingwave", "position-delete")].live_writer
    assert rw.verdict == "unsafe" and rw.evidence["deleted_rows_back"] == 100, rw.evidence
    assert "are back" in rw.reason
    # the report's safety table, from the result files
    rep = run_bench("report", tmp_path / "results" / "lw", "--out", tmp_path / "lw.html")
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "lw.html").read_text()
    assert html.count('data-table="safety"') == 1
    assert html.count('data-verdict="unsafe"') == 1 and html.count('data-verdict="refused"') == 1
    assert html.count('data-verdict="safe"') == 4
    # the verdict's check can fail: the last run's end state (still the table's: each run restores the
    # dataset first), judged again as it was and against an expectation one row off
    tbl = load_catalog(CatalogSettings.for_warehouse(str(shared_warehouse))).load_table(any_run(runs).dataset)
    last = [r for r in runs.values() if tbl.metadata.snapshot_by_id(r.live_writer.writer_snapshot_id)]
    assert len(last) == 1
    r = last[0]
    same, v_same = live_verdict(r.live_writer.model_copy(deep=True), tbl, None, r.before.snapshot_id, r.status,
                                r.error, [], [])
    off = r.live_writer.model_copy(deep=True)
    off.expected_rows += 1
    wrong, v_wrong = live_verdict(off, tbl, None, r.before.snapshot_id, r.status, r.error, [], [])
    assert same.verdict == r.live_writer.verdict and v_same.verified == (r.live_writer.verdict == "safe")
    assert wrong.verdict == "unsafe" and not v_wrong.verified and "expected" in wrong.reason

    # repark (its own environment; held at its first output file; run last: the check above reads the table as the
    # last run left it) publishes by compare-and-swap of the catalog's pointer: the writer's commit moved it, so the
    # case is refused, the append too (its memory catalog never sees the writer's commit: its own concurrent-delete
    # validation does not come into play; Spark rebases an append)
    p = run_bench("run", "live-writer-deletes", "--scale", TINY, "--engines", "repark", "--cases",
                  "append,position-delete", "--warehouse", shared_warehouse, "--results-dir", tmp_path / "results",
                  "--run-id", "lw-repark", "--memory-budget", "3G", timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    repark = _runs(tmp_path / "results" / "lw-repark")
    assert set(repark) == {("repark", "append"), ("repark", "position-delete")}
    for r in repark.values():
        lw = r.live_writer
        assert lw.interleaved and lw.order == ["writer"] and "SIGSTOP" in lw.hold, (lw.case, lw.hold, lw.order)
        assert lw.verdict == "refused" and r.status == "failed" and "moved while repark compacted" in r.error
        assert any(c.startswith("CommitConflict") for c in r.error_causes), r.error_causes
        assert_same_table(r)


def any_run(runs: dict) -> RunResult:
    return next(iter(runs.values()))


def test_cow_branch_publishes_the_compactors_snapshot_and_says_who_cannot(tmp_path, shared_warehouse):
    """--cow-branch: the writer commits to the branch 'ingest', the engine compacts that branch, main gets
    the engine's snapshot, with no delete file; spark (Iceberg 1.12's rewrite_data_files takes the branch) compacts
    it, and an engine that cannot compact a branch (spark-3.5, Iceberg 1.10.2) is recorded as unsupported (not run),
    with its reason."""
    bad = run_bench("run", "deletes-high", "--cow-branch", "--scale", TINY, "--warehouse", shared_warehouse,
                    "--results-dir", tmp_path / "results")
    assert bad.returncode == 2 and "has no live writer" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    p = run_bench("run", "live-writer-deletes", "--cow-branch", "--cases", "append,position-delete", "--scale",
                  TINY, "--engines", "risingwave,spark,spark-3.5", "--warehouse", shared_warehouse,
                  "--results-dir", tmp_path / "results", "--run-id", "cow", timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    runs = _runs(tmp_path / "results" / "cow")
    assert len(runs) == 6  # --cases: two of the three
    for r in runs.values():
        assert r.tag.endswith(f"-{r.live_writer.case}-ingest") and r.live_writer.branch == "ingest"
    for case in ("append", "position-delete"):
        old = runs[("spark-3.5", case)]
        assert old.status == "unsupported" and old.live_writer.verdict == "unsupported"
        assert "silently compacts main" in old.live_writer.reason and "Iceberg 1.10.2" in old.live_writer.reason
    # spark on the branch: rewrite_data_files(branch => 'ingest'), committed on top of the writer's append and
    # published; the writer's position delete of a file it rewrites is a conflict its validation refuses
    spark = {case: runs[("spark", case)] for case in ("append", "position-delete")}
    assert spark["append"].verified and spark["append"].live_writer.verdict == "safe", spark["append"].verification
    lw = spark["append"].live_writer
    assert lw.published_snapshot_id == lw.commits[-1].snapshot_id and lw.main_delete_files == 0
    assert any("branch => 'ingest'" in a for a in spark["append"].engine_actions), spark["append"].engine_actions
    assert spark["position-delete"].live_writer.verdict == "refused", spark["position-delete"].live_writer.reason
    rw = {case: runs[("risingwave", case)].live_writer for case in ("append", "position-delete")}
    for lw in rw.values():
        assert lw.interleaved and lw.order[0] == "writer"
        assert lw.published_snapshot_id == lw.commits[-1].snapshot_id and lw.main_delete_files == 0
    # safe content, but the same misstated totals as on main (the retried commit's summary)
    assert rw["append"].verdict == "safe" and not runs[("risingwave", "append")].verified
    for case in ("append", "position-delete"):  # on the branch it compacted, with main published after
        assert_same_table(runs[("risingwave", case)], ("summary_totals",) if case == "append" else ())
    assert rw["position-delete"].verdict == "unsafe"  # the same lost delete, now published to main
    # main's reader sees exactly the published snapshot: the writer's appended rows, no delete file
    tbl = load_catalog(CatalogSettings.for_warehouse(str(shared_warehouse))).load_table(
        runs[("risingwave", "append")].dataset)
    # (each engine run starts from the restored dataset: only the last run's published snapshot, if it published one,
    # is still in the table)
    published = [r.live_writer for r in runs.values() if r.live_writer.published_snapshot_id]
    last = [lw for lw in published if tbl.metadata.snapshot_by_id(lw.published_snapshot_id or 0)]
    assert len(published) == 3 and len(last) <= 1, published
    assert not last or tbl.current_snapshot().snapshot_id == last[0].published_snapshot_id
    rep = run_bench("report", tmp_path / "results" / "cow", "--out", tmp_path / "cow.html")
    assert rep.returncode == 0, rep.stderr
    html = (tmp_path / "cow.html").read_text()
    assert "copy-on-write through branch" in html and html.count('data-verdict="unsupported"') == 2
    assert html.count('data-main-delete-files="0"') == 3
