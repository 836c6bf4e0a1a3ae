"""The report's issue-8 sections, from hand-built results (fast, no browser): the floor (an engine that
commits nothing: each engine's time as a multiple of it, throughput per core; never in a speedup),
variants of one engine side by side (the options that differ, the deployment Spark reports, the ratio
to the plain label), the tuning search (knobs, every configuration, the chart, values not tried, the
confirmation as the number to quote), and older results without the new fields.

Fixtures in tests/reports/data/floor-variants-tune/: `engines.json` holds the label fields (engine,
engine_name, profile, engine_options, commits, cores, engine_settings; `deployment` and `memory_caps`
migrated from those settings to the typed fields the engines now report) of real runs of spark, spark:standalone,
risingwave, risingwave:tuned and arrow-floor at scale 0.00005 (`bench run bin-packing --engines
spark,spark:standalone,risingwave,risingwave:tuned,arrow-floor`); `tune.json` is the summary of a real
`bench tune risingwave bin-packing --max-configs 5 --confirm-reps 2`.  Durations are set by hand so
every expected number is computed here from the fixture."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from bench.core.campaign import TuneSummary, write_summary
from bench.core.fmt import fmt_bytes
from bench.core.results import RunResult, save
from tests.reports.hand_built import make_result, render, table_row, write_results

DATA = Path(__file__).resolve().parent / "data" / "floor-variants-tune"
ENGINES = json.loads((DATA / "engines.json").read_text())
LOGICAL = 30_000_000  # before.uncompressed_bytes of every hand-built result (tests.reports.hand_built)
FLOOR = "arrow-floor"
# label -> durations of rep 0 and rep 1 (seconds)
TIMES = {"spark": (30.0, 34.0), "spark:standalone": (50.0, 44.0), "risingwave": (4.0, 6.0),
         "risingwave:tuned": (3.0, 5.0), FLOOR: (1.0, 2.0)}


def _run(label: str, rep: int, duration: float, *, run_id="issue8", order=None, **kw) -> RunResult:
    fields = {k: v for k, v in ENGINES[label].items() if k != "engine"}
    fields.update(kw)
    return make_result(label, rep, duration=duration, run_id=run_id, order=order or list(TIMES), **fields)


def _value(html: str, metric: str) -> str:
    m = re.search(rf'data-metric="{metric}" data-value="([^"]*)"', html)
    assert m, metric
    return m.group(1)


def _floor_table(html: str) -> str:
    m = re.search(r'<table class="data" data-table="floor".*?</table>', html, re.S)
    assert m
    return m.group(0)


@pytest.fixture
def all_labels(tmp_path) -> Path:
    """One run, two reps: two labels of spark, two of risingwave, and the floor."""
    runs = [_run(label, rep, t[rep]) for rep in (0, 1) for label, t in TIMES.items()]
    return write_results(tmp_path, runs, run_id="issue8")


def test_the_floor_section_multiples_throughput_and_per_core(all_labels):
    html = render([all_labels])
    table = _floor_table(html)
    assert "commits nothing" in html and "bare columnar library" in html
    assert "no planning beyond listing the live files (timed) and no commit" in html
    floor_med = statistics.median(TIMES[FLOOR])
    for label, t in TIMES.items():
        row = table_row(table, "floor", engine=label)
        med = statistics.median(t)
        assert float(_value(row, "duration_median")) == pytest.approx(med)
        throughput = LOGICAL / med / 1e6  # MB/s of uncompressed input, as the report computes it
        assert float(_value(row, "throughput")) == pytest.approx(throughput)
        cores = ENGINES[label]["cores"]
        assert float(_value(row, "cores")) == cores
        assert float(_value(row, "mb_s_per_core")) == pytest.approx(throughput / cores)
        if label == FLOOR:
            assert float(_value(row, "floor_multiple")) == pytest.approx(med / floor_med)
            assert "1× (the floor)" in row and "floor · no commit" in row
            continue
        # the median of the paired reps (rep i of the engine against rep i of the floor), as the Markdown tables
        # print it, with their min–max
        pairs = [t[i] / TIMES[FLOOR][i] for i in (0, 1)]
        assert float(_value(row, "floor_multiple")) == pytest.approx(statistics.median(pairs))
        lo, hi = map(float, _value(row, "floor_multiple_range").split(","))
        assert (lo, hi) == pytest.approx((min(pairs), max(pairs)))
        assert "over 2 paired reps" in row
    assert "MB per CPU-second is not shown" in html  # the telemetry records no CPU seconds
    assert re.search(r'<figure data-chart="floor" class="wide">\s*<svg', html)


def test_the_floor_is_never_the_fastest_engine_in_a_speedup(all_labels):
    html = render([all_labels])
    # the headline compares plain engines that commit: risingwave against spark
    assert float(_value(html, "speedup_median")) == pytest.approx(statistics.median(
        [TIMES["spark"][i] / TIMES["risingwave"][i] for i in (0, 1)]))
    kpi = re.search(r'data-headline>.*?<div class="kpi-sub">(.*?)</div>', html, re.S).group(1)
    assert kpi.startswith("risingwave faster than spark")
    summary = re.search(r"<p class=\"summary\" data-summary>(.*?)</p>", html, re.S).group(1)
    assert FLOOR not in summary
    assert not re.search(rf"{FLOOR}\S* faster", html)
    # marked as a floor wherever it stands beside the engines
    engines_row = table_row(html, "engines", engine=FLOOR)
    assert "floor · no commit" in engines_row
    assert re.search(rf'data-engine="{FLOOR}">\s*<div class="kpi-label">.*?floor · no commit', html, re.S)


def test_a_floor_run_by_itself_and_older_results_beside_it(tmp_path):
    """The floor ran in another run of the same scenario and scale: the engines' run links to it; their
    multiples are ratios of medians with the range over every combination of runs.  The engines' results
    name no profile, options, commits or cores: they still render, with the node's cores."""
    old = []
    for rep, t in enumerate((4.0, 8.0)):
        data = json.loads(make_result("risingwave", rep, duration=t, run_id="old",
                                  environment={"cpu": {"usable_cores": 4, "logical_cores": 8}}).model_dump_json())
        for k in ("profile", "engine_options", "commits", "cores"):
            data.pop(k)
        old.append(RunResult.model_validate(data))
    write_results(tmp_path, old, run_id="old")
    write_results(tmp_path, [_run(FLOOR, rep, t, run_id="floor-only") for rep, t in enumerate((1.0, 2.0))],
           run_id="floor-only")
    html = render([tmp_path])
    sections = re.findall(r'<section class="set".*?</section>', html, re.S)
    engines = next(s for s in sections if 'data-set="old|' in s)
    floor_only = next(s for s in sections if 'data-set="floor-only|' in s)
    assert 'data-table="floor"' not in floor_only  # nothing that commits in it
    assert "The floor did not run in this run" in engines and ">run <code>floor-only</code></a>" in engines
    row = table_row(engines, "floor", engine="risingwave")
    assert float(_value(row, "floor_multiple")) == pytest.approx(6.0 / 1.5)
    lo, hi = map(float, _value(row, "floor_multiple_range").split(","))
    assert (lo, hi) == pytest.approx((4.0 / 2.0, 8.0 / 1.0))
    assert "over 4 run combinations" in row
    assert float(_value(row, "cores")) == 4 and "node's" in row  # usable cores of the node
    assert float(_value(row, "mb_s_per_core")) == pytest.approx(LOGICAL / 6.0 / 1e6 / 4)
    assert 'data-table="variants"' not in html


def test_variants_side_by_side(all_labels):
    html = render([all_labels])
    spark = re.search(r'data-table="variants" data-engine-base="spark".*?</table>', html, re.S).group(0)
    assert "Variants of spark" in html and "Options that differ from spark" in spark
    local = table_row(spark, "variants", engine="spark")
    standalone = table_row(spark, "variants", engine="spark:standalone")
    assert "reference" in local and "the plain engine" in local
    assert re.search(r'data-option="mode"><code>mode</code>: local → <strong>standalone</strong>', standalone)
    assert "standalone</td>" in standalone  # the profile
    d = ENGINES["spark:standalone"]["deployment"]
    assert f"master</span> {d['master']}" in standalone and d["master"].startswith("spark://")
    assert f"executors</span> {d['executors']}" in standalone
    assert f"cores</span> {d['cores']}" in standalone
    assert f"executor memory</span> {fmt_bytes(d['executor_memory_bytes'][0])}" in standalone
    assert "driver JVM heap</span>" in standalone and "mode</span> standalone" in standalone
    assert f"master</span> {ENGINES['spark']['deployment']['master']}" in local and "JVM heap</span>" in local
    assert "executor memory</span>" not in local and "mode</span> local" in local
    ratio = statistics.median(TIMES["spark:standalone"]) / statistics.median(TIMES["spark"])
    assert float(_value(standalone, "variant_ratio")) == pytest.approx(ratio)
    pairs = [TIMES["spark:standalone"][i] / TIMES["spark"][i] for i in (0, 1)]
    assert tuple(map(float, _value(standalone, "variant_ratio_range").split(","))) == pytest.approx(
        (min(pairs), max(pairs)))
    assert float(_value(standalone, "peak_rss_median")) == 500_000_000

    rw = re.search(r'data-table="variants" data-engine-base="risingwave".*?</table>', html, re.S).group(0)
    tuned = table_row(rw, "variants", engine="risingwave:tuned")
    opts = ENGINES["risingwave:tuned"]["engine_options"]
    assert opts["max_input_parallelism"] != ENGINES["risingwave"]["engine_options"]["max_input_parallelism"]
    assert re.search(rf'<code>max_input_parallelism</code>: unset → <strong>{opts["max_input_parallelism"]}</strong>',
                     tuned)
    assert tuned.count("data-option=") == 1  # only what differs
    assert float(_value(tuned, "variant_ratio")) == pytest.approx(4.0 / 5.0)
    assert 'data-engine-base="arrow-floor"' not in html  # one label: no variants


def _tune_dir(tmp_path: Path, name: str = "tune-rw") -> tuple[Path, TuneSummary]:
    """The real tune.json with a run set per configuration (its median as the run's time) and the
    confirmation's runs (published and tuned, two paired reps)."""
    s = TuneSummary.model_validate_json((DATA / "tune.json").read_text())
    s.tune_id = name
    d = tmp_path / name
    for c in s.configs:
        save(d, _run("risingwave", 0, c.duration_s.median or 1.0, run_id=c.run_dir, order=["risingwave"]))
    assert s.confirmation is not None
    for rep in (0, 1):
        order = ["risingwave", "risingwave:tuned"][::1 if rep == 0 else -1]
        save(d, _run("risingwave", rep, [0.52, 0.42][rep], run_id="confirm", order=order))
        save(d, _run("risingwave:tuned", rep, [0.46, 0.43][rep], run_id="confirm", order=order))
    write_summary(d, s)
    return d, s


def test_the_tune_section(tmp_path):
    d, s = _tune_dir(tmp_path)
    html = render([d])
    tune = re.search(r'<section class="campaign tune".*?</section>', html, re.S).group(0)
    assert f"Tuning: {s.engine} on {s.scenario}" in tune and s.strategy in tune
    # the confirmation: the number to quote, with the search's runs labelled as steering only
    c = s.confirmation
    assert c is not None and c.speedup.median is not None
    assert float(_value(tune, "tune_speedup")) == pytest.approx(c.speedup.median)
    assert "the number to quote" in tune.lower() and "only steer the search" in tune
    assert re.search(rf"min–max {c.speedup.min:.2f}×–{c.speedup.max:.2f}×", tune)
    for label, stat in (("risingwave", c.published), ("risingwave:tuned", c.tuned)):
        kpi = re.search(rf'<div class="kpi" data-engine="{re.escape(label)}">.*?</div>\s*</div>', tune, re.S).group(0)
        assert float(_value(kpi, "confirm_median")) == pytest.approx(stat.median)
    confirm = re.search(r'Its runs: <a href="#(set-\d+)">run confirm</a>', tune).group(1)
    assert f'<section class="set" id="{confirm}"' in html
    # the winning settings
    assert "max_input_parallelism=" + json.dumps(s.best["max_input_parallelism"]) in \
        re.search(r"data-tune-best>(.*?)</p>", tune, re.S).group(1)
    # every configuration, with its median, kept or not, linked to its run set
    baseline = s.configs[0].duration_s.median
    assert baseline is not None
    for cfg in s.configs:
        row = table_row(tune, "tune-configs", config=cfg.index)
        assert f'data-kept="{"yes" if cfg.accepted else "no"}"' in row
        assert float(_value(row, "duration_median")) == pytest.approx(cfg.duration_s.median)
        assert float(_value(row, "vs_published")) == pytest.approx(cfg.duration_s.median / baseline)
        assert f"{cfg.verified} of {cfg.runs}" in row
        anchor = re.search(rf'<a href="#(set-\d+)">run {cfg.run_dir}</a>', row).group(1)
        assert f'<section class="set" id="{anchor}"' in html
        if cfg.knob:
            assert f"<code>{cfg.knob}={cfg.value}</code>" in row
    best = [cfg for cfg in s.configs if cfg.accepted][-1]
    assert "data-best" in table_row(tune, "tune-configs", config=best.index)
    assert re.search(r'<figure data-chart="tune" class="wide">\s*<svg', tune)
    # values not tried: every one listed
    not_tried = re.search(r'data-table="tune-not-tried">(.*?)</ul>', tune, re.S).group(1)
    assert s.not_tried and all(f"<li>{n}</li>" in not_tried for n in s.not_tried)
    assert f"Not tried ({len(s.not_tried)})" in tune
    # knobs: name, path, values, published value
    for k in s.knobs:
        row = table_row(tune, "tune-knobs", knob=k.name)
        assert f"<code>{k.path}</code>" in row and json.dumps(k.published) in row
    # the run sets say they are part of the tune; the confirmation's set compares the two labels
    assert html.count(f'· part of <a href="#tune-1">tune {s.tune_id}</a>') == len(s.configs) + 1
    assert "Variants of risingwave" in html
    assert "1 tuning search" in html and 'href="#tune-1">Tuning: risingwave on bin-packing' in html


def test_a_tune_not_searchable_knob_and_a_summary_alone(tmp_path):
    """A knob the search cannot vary is listed with its reason; a tune summary without its run sets
    renders (an interrupted search) with no links; two tunes whose run ids repeat stay apart."""
    s = TuneSummary.model_validate_json((DATA / "tune.json").read_text())
    s.knobs[0].searchable, s.knobs[0].note = False, "only a table property"
    s.state, s.confirmation = "interrupted", None
    write_summary(tmp_path / "alone", s)
    html = render([tmp_path / "alone"])
    row = table_row(html, "tune-knobs", knob=s.knobs[0].name)
    assert 'data-searchable="no"' in row and "not searched:</strong> only a table property" in row
    assert "No confirmation was recorded" in html and "no confirmation recorded" in html
    assert 'data-campaign-state' in html and "was interrupted" in html
    assert '<a href="#set-' not in html

    _tune_dir(tmp_path / "two", "tune-a")
    _tune_dir(tmp_path / "two", "tune-b")
    html = render([tmp_path / "two"])
    assert html.count('<section class="set"') == 2 * (len(s.configs) + 1)
    assert html.count('data-set="cfg-00|') == 2
    assert html.count('· part of <a href="#tune-1">tune tune-a</a>') == len(s.configs) + 1
    assert html.count('· part of <a href="#tune-2">tune tune-b</a>') == len(s.configs) + 1


def test_a_floor_that_an_engine_beats_is_said_not_to_be_one():
    from reports.compare import FloorRow, FloorView

    rows = [FloorRow("floor", "#000", True, None), FloorRow("fast", "#111", False, None, multiple=0.52),
            FloorRow("slow", "#222", False, None, multiple=1.9), FloorRow("unknown", "#333", False, None)]
    assert FloorView("floor", None, True, rows).beaten_by == ["fast"]
    assert FloorView("floor", None, True, rows[:1] + rows[2:]).beaten_by == []
