"""The count sweep's arithmetic (bench.campaigns.counts): points per engine and file scale, lines against the input's
files, per phase, and where a memory line meets the budget.  The runs themselves are ordinary `bench run`s
(tested with the runner); these records are built by hand so each number can be checked."""

from bench.campaigns.counts import budget_meet, count_point, count_table, fit_counts
from bench.core.campaign import CountSweepSummary
from bench.core.records.engine_run import Phase
from bench.core.records.telemetry import TelemetrySummary
from bench.core.records.verification import TableStats
from bench.core.results import RunResult
from reports.counts import count_markdown

MB = 1_000_000


def _run(engine: str, files: int, seconds: float, rss: int, status: str = "ok") -> RunResult:
    data = files // 3
    return RunResult(run_id=f"files-{files}", scenario="deletes-high", engine=engine, engine_name=engine, scale=0.005,
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


def test_the_html_report_draws_a_count_sweep_from_its_counts_json(tmp_path):
    """`bench report <count sweep dir>`: time, memory and each phase against the input's files per engine, with the
    sweep's lines (legend: fixed + slope per 1,000 files), its points, where memory meets the budget and the delete
    files' opens -- from counts.json alone (no run directory beside it)."""
    from bench.core.campaign import write_counts
    from bench.core.records.telemetry import DeleteOpens
    from reports.render import render_html

    runs = [_run("spark", n, 2 + 0.01 * n, 500 * MB + n * MB) for n in (300, 1200, 3000)]
    runs.append(_run("spark", 6000, 0, 0, status="heap-oom"))
    runs += [_run("risingwave", n, 1.0, 200 * MB) for n in (300, 1200, 3000, 6000)]
    runs[1].delete_opens = DeleteOpens(delete_files=800, opened=800, opens=160_400, equality_opens=160_000,
                                       position_opens=400, per_file_min=1, per_file_median=200.0, per_file_max=400,
                                       data_files=400, data_opens=400, tasks=8, opens_per_task=20_050.0)
    s = CountSweepSummary(sweep_id="t", scenario="deletes-high", scale=0.005, file_scales=[0.005, 0.02, 0.05, 0.1],
                          reps=1, engines=["spark", "risingwave"], budget_bytes=4_000 * MB, state="complete")
    for e in s.engines:
        for n in (300, 1200, 3000, 6000):
            mine = [r for r in runs if r.engine == e and r.before.data_files + r.before.delete_files == n]
            s.points.append(count_point(e, n / 60_000, mine, f"files-{n}"))
    fit_counts(s, runs)
    write_counts(tmp_path, s)
    html = render_html([tmp_path])
    assert 'data-campaign="counts|t"' in html and html.count('data-chart="counts_phases"') == 2
    assert html.count('data-chart="counts_time"') == html.count('data-chart="counts_memory"') == 1
    assert "spark: 2.00 s + 10.0 s/1,000 files" in html  # the time chart's legend: the stored line, per 1,000 files
    assert "rewrite: 1.80 s + 9.00 s/1,000 files" in html  # spark's rewrite phase
    assert html.count('<tr data-engine="spark" data-file-scale=') == 4  # every point, the heap-oom one too
    assert ">heap-oom<" in html and "at ~3,500 input files" in html
    assert "160,400 opens of 800 of 800 delete files; per delete file min 1, median 200, max 400, 20,050.0 per task" \
           in html
    s.points = [p.model_copy(update={"delete_opens": None}) for p in s.points]
    write_counts(tmp_path, s)
    assert "Delete-file opens" not in render_html([tmp_path])  # no count: no column
