"""The append-sink presets as streaming scenarios, through the streaming runner (scale 0.01, 2 cycles,
every maintenance operation fired): the baseline `none` and RisingWave's engine on each preset, every cycle
verified, files per GB falling as the batch grows, and the report's side-by-side section over the three runs.
Spark's maintenance is left to tests/runner/test_streaming.py (on one preset it added 55 s here)."""

from pathlib import Path

import yaml

from bench.core.results import RunResult
from tests.helpers import run_bench

SCALE = "0.01"  # the base table at its 16-file floor; 10, 60 and 300 rows per flush (at TINY all 10)
PRESETS = ("low-latency", "balanced", "high-throughput")


def _scenario(tmp_path: Path, preset: str) -> Path:
    """The preset's scenario, shortened: 30 s of stream per cycle (3, 1 and 1 flushes), every operation in cycle 1,
    the expiry every cycle."""
    sc = yaml.safe_load((Path(__file__).parents[2] / "scenarios" / f"sink-{preset}.yaml").read_text())
    sc["streaming"]["cycles"] = 2
    sc["streaming"]["sink"]["cycle_s"] = 30
    sc["streaming"]["maintenance"] = [{"op": "expire_snapshots", "retain_last": 2, "older_than_s": 0},
                                      {"op": "compact"}, {"op": "rewrite_manifests", "every": 2}]
    path = tmp_path / f"sink-{preset}.yaml"
    path.write_text(yaml.safe_dump(sc))
    return path


def test_the_three_presets_run_verified_and_are_reported_side_by_side(tmp_path, shared_warehouse):
    results = tmp_path / "results"
    runs: dict[str, dict[str, RunResult]] = {}
    for preset in PRESETS:
        p = run_bench("run", _scenario(tmp_path, preset), "--scale", SCALE, "--engines", "risingwave", "--warehouse",
                      shared_warehouse, "--results-dir", results, "--run-id", preset, timeout=900)
        assert p.returncode == 0, p.stderr[-3000:]
        runs[preset] = {r.engine: r for r in (RunResult.model_validate_json(f.read_text())
                                              for f in (results / preset).glob("*--rep1.json"))}
    flushes = {"low-latency": 3, "balanced": 1, "high-throughput": 1}
    for preset, by_engine in runs.items():
        base = by_engine["none"].streaming
        assert base.sink.preset == preset and base.sink.flushes_per_cycle == flushes[preset]
        for engine, r in by_engine.items():
            st = r.streaming
            assert r.status == "ok" and r.verified, (preset, engine, r.error)
            assert st.totals.all_cycles_safe and st.totals.files_per_gb > 0 and st.totals.manifests_per_gb > 0
            for c, b in zip(st.cycles, base.cycles):  # the same flushes for every engine
                assert (c.commits, c.rows_ingested, c.expected_checksum) == \
                       (flushes[preset], b.rows_ingested, b.expected_checksum)
                assert c.reads_ok, c.reads_message
            if engine == "none":
                assert st.cycles[1].table.data_files > st.cycles[0].table.data_files
                continue
            first, second = st.cycles
            assert [o.op for o in first.op_results] == ["expire_snapshots", "compact", "rewrite_manifests"]
            assert [o.op for o in second.op_results] == ["expire_snapshots", "compact"]
            assert st.totals.maintenance_commits >= 2 and st.totals.cost_usd_per_gb > 0
            assert second.table.data_files < base.cycles[1].table.data_files  # compaction undid the sink's files
    per_gb = [runs[p]["none"].streaming.totals.files_per_gb for p in PRESETS]
    assert per_gb[0] > per_gb[1] > per_gb[2], per_gb  # bigger batches, fewer files per GB
    out = tmp_path / "report.html"
    p = run_bench("report", *(results / preset for preset in PRESETS), "--out", out)
    assert p.returncode == 0, p.stderr[-2000:]
    html = out.read_text()
    section = html[html.index('data-section="sink-compare"'):]
    section = section[:section.index("</section>")]
    assert 'data-chart="sink-cost-vs-files"' in section and "<svg" in section
    assert section.count("<tr data-preset=") == 6  # none and risingwave on three presets
    for preset in PRESETS:
        assert f'data-preset="{preset}" data-mode="sequential" data-engine="risingwave"' in section
