"""The count sweep's arithmetic (bench.count_sweep): points per engine and file scale, lines against the input's
files, per phase, and where a memory line meets the budget.  The runs themselves are ordinary `bench run`s
(tested with the runner); these records are built by hand so each number can be checked."""

from bench.core.count_campaign import CountSweepSummary
from bench.core.results import Phase, RunResult, TableStats, TelemetrySummary
from bench.count_sweep import budget_meet, count_point, count_table, fit_counts
from reports.counts import count_markdown

MB = 1_000_000


def _run(engine: str, files: int, seconds: float, rss: int, status: str = "ok") -> RunResult:
    data = files // 3
    return RunResult(run_id=f"files-{files}", scenario="deletes-high", engine=engine, scale=0.005,
                     file_scale=files / 60_000, seed=42, status=status, verified=status == "ok",
                     duration_s=seconds if status == "ok" else None,
                     phases=[Phase(name="plan", seconds=0.1 * seconds), Phase(name="rewrite", seconds=0.9 * seconds)],
                     before=TableStats(data_files=data, delete_files=files - data, position_delete_files=data,
                                       equality_delete_files=files - 2 * data),
                     telemetry=TelemetrySummary(peak_rss_bytes=rss))


def test_lines_against_files_per_phase_and_where_memory_meets_the_budget():
    # spark: 2 s + 10 ms per file, 500 MB + 1 MB per file; its largest table ran out of memory (not a point)
    runs = [_run("spark", n, 2 + 0.01 * n, 500 * MB + n * MB) for n in (300, 1200, 3000)]
    runs.append(_run("spark", 6000, 0, 0, status="heap-oom"))
    runs += [_run("risingwave", n, 1.0, 200 * MB) for n in (300, 1200, 3000, 6000)]  # flat memory
    s = CountSweepSummary(sweep_id="t", scenario="deletes-high", scale=0.005, file_scales=[0.005, 0.02, 0.05, 0.1],
                          reps=1, engines=["spark", "risingwave"], budget_bytes=4_000 * MB)
    fit_counts(s, runs)
    t, m = s.time_fits["spark"], s.memory_fits["spark"]
    assert t.n == 3 and abs(t.per_gb - 0.01) < 1e-9 and abs(t.fixed - 2) < 1e-6 and "files" in t.x
    assert abs(m.per_gb - MB) < 1e-3 and abs(m.fixed - 500 * MB) < 1
    assert abs(s.phase_fits["spark"]["rewrite"].per_gb - 0.009) < 1e-9
    assert s.pair_time_fits["spark"].n == 3 and "equality-delete" in s.pair_time_fits["spark"].x
    meets = {b.engine: b for b in s.budget_meets}
    assert abs(meets["spark"].files - 3500) < 1e-6  # (4000 MB - 500 MB) / 1 MB per file
    assert meets["risingwave"].files is None and "did not grow" in meets["risingwave"].note
    p = count_point("spark", 0.1, [r for r in runs if r.engine == "spark" and r.before.data_files == 2000], "x")
    assert p is not None and (p.files, p.data_files, p.verified, p.statuses) == (6000, 2000, 0, ["heap-oom"])
    text = count_table(s)
    assert "spark: memory reaches the budget" in text and "~3,500 input files" in text
    assert "risingwave: memory does not reach the budget" in text
    assert budget_meet("x", m, 100 * MB).files < 0  # the line already starts above a small budget: said as it is
    s.points = [p]
    md = count_markdown(s)  # what `bench docs` renders in a `counts:` block
    assert "| spark | 0.1 | 6,000 (2,000 + 2,000 + 2,000) | 0 B | heap-oom | — | — | — | — |" in md
    assert "- spark: time 2.0 s + 10.00 s per 1,000 files (R² 1.00, 3 runs" in md and "at ~3,500 input files" in md
