"""`bench tune` through the real CLI with a test engine whose knobs are known: a faster but wrong value
is never kept, a faster verified one is, the budget's untried values are listed, the best is written as
ENGINE:tuned and confirmed against the published configuration in one run."""

import json

import yaml

from bench.scenario import Scenario, load_scenario, parse_option_overrides
from tests.helpers import TINY, bench_env, run_bench


def test_tune_keeps_only_verified_gains_writes_and_confirms_the_profile(tmp_path, shared_warehouse):
    profiles = tmp_path / "profiles"
    env = bench_env(BENCH_PROFILE_DIR=str(profiles))
    p = run_bench("tune", "knobby", "bin-packing", "--scale", TINY, "--max-configs", "3", "--confirm-reps", "2",
                  "--results-dir", tmp_path, "--warehouse", shared_warehouse, "--run-id", "tk", env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads((tmp_path / "tk" / "tune.json").read_text())
    assert s["state"] == "complete" and s["engine"] == "knobby" and "coordinate descent" in s["strategy"]
    configs = s["configs"]
    assert [(c["knob"], c["value"]) for c in configs] == [(None, None), ("lose_row", True), ("sleep_s", 0.6)]
    published, wrong, better = configs
    assert published["accepted"] and published["verified"] == 1
    assert wrong["verified"] == 0 and not wrong["accepted"]  # faster, but it loses a row: never kept
    assert wrong["duration_s"]["median"] is None and wrong["statuses"] == ["unverified"]
    assert better["accepted"] and better["duration_s"]["median"] < published["duration_s"]["median"]
    assert s["best"] == {"sleep_s": 0.6}
    assert s["not_tried"] == ["sleep_s=0.1: configuration budget spent"]  # said, not skipped
    assert any(n.startswith("batch_size: not searched: only a table property") for n in s["notes"])
    # every configuration is an ordinary, verified run with its options recorded
    r = json.loads((tmp_path / "tk" / "cfg-02" / "bin-packing--knobby--rep0.json").read_text())
    assert r["engine_options"] == {"sleep_s": 0.6, "lose_row": False} and r["verified"]
    # the profile: written per scenario with its provenance, and run by --engines knobby:tuned
    prof = yaml.safe_load((profiles / "knobby" / "tuned.yaml").read_text())
    assert prof["scenarios"]["bin-packing"] == {"sleep_s": 0.6}
    assert prof["provenance"]["bin-packing"]["tune_id"] == "tk"
    c = s["confirmation"]
    assert c["pairs"] == 2 and c["published_verified"] == 2 and c["tuned_verified"] == 2
    # 1.5 s of idling against 0.6 s: faster in every pair (by how much bends with a busy neighbour)
    assert c["speedup"]["min"] > 1.0
    assert prof["provenance"]["bin-packing"]["confirmation"]["pairs"] == 2
    tuned = json.loads((tmp_path / "tk" / "confirm" / "bin-packing--knobby+tuned--rep0.json").read_text())
    assert tuned["engine"] == "knobby:tuned" and tuned["engine_name"] == "knobby" and tuned["profile"] == "tuned"
    assert tuned["engine_options"]["sleep_s"] == 0.6


def test_option_layers_and_bad_profiles(tmp_path, monkeypatch):
    """scenario < profile options < profile's scenario entry < --option; errors are one line."""
    monkeypatch.setenv("BENCH_PROFILE_DIR", str(tmp_path))
    (tmp_path / "risingwave").mkdir()
    (tmp_path / "risingwave" / "fast.yaml").write_text(yaml.safe_dump({
        "engine": "risingwave", "name": "fast", "options": {"max_input_parallelism": 3, "enable_prefetch": True},
        "scenarios": {"bin-packing": {"max_input_parallelism": 5}}}))
    sc: Scenario = load_scenario("bin-packing")
    o = sc.options_for("risingwave:fast")
    assert (o["max_input_parallelism"], o["enable_prefetch"], o["strategy"]) == (5, True, "small_files")
    o = sc.options_for("risingwave:fast", parse_option_overrides(["risingwave.max_input_parallelism=7"]))
    assert o["max_input_parallelism"] == 7
    assert parse_option_overrides(["spark.spark_conf.spark.sql.files.maxPartitionBytes=64m", "spark.mode=standalone"]) \
        == {"spark": {"spark_conf": {"spark.sql.files.maxPartitionBytes": "64m"}, "mode": "standalone"}}
    import pytest

    from bench.core.errors import UserError
    with pytest.raises(UserError, match="unknown profile risingwave:nope.*profiles: fast"):
        sc.options_for("risingwave:nope")
    with pytest.raises(UserError, match="max_input_parallelism"):
        sc.options_for("risingwave:fast", {"risingwave": {"max_input_parallelism": "many"}})
    with pytest.raises(UserError, match="ENGINE.KEY=VALUE"):
        parse_option_overrides(["mode=standalone"])
    (tmp_path / "risingwave" / "only.yaml").write_text(yaml.safe_dump({
        "engine": "risingwave", "name": "only", "scenarios": {"deletes-high": {"enable_prefetch": True}}}))
    with pytest.raises(UserError, match="no settings for scenario bin-packing.*bench tune risingwave bin-packing"):
        sc.options_for("risingwave:only")


def test_a_configuration_already_measured_is_compared_not_run_again(tmp_path, monkeypatch):
    """Back at the published value, the search reuses the published configuration's measurement: a fresh
    single run of it could be faster by noise and be kept."""
    from bench import engines
    from bench.campaigns.tune import Search, TuneOptions
    from bench.core.campaign import TuneConfig
    from bench.core.progress import Progress
    from bench.core.spread import Spread

    monkeypatch.setitem(engines.REGISTRY, "revisit", "tests.fakes.knobby:RevisitEngine")
    search = Search(TuneOptions(engine="revisit", scenario="bin-packing", scale=float(TINY),
                                results_dir=str(tmp_path), run_id="rv"), Progress())
    search.deadline = float("inf")
    times = {(): 10.0, (("sleep_s", 0.6),): 9.0}
    ran = []

    def fake_evaluate(s, changed, knob, value):
        ran.append(dict(changed))
        cfg = TuneConfig(index=len(s.configs), changed=dict(changed), knob=knob, value=value, runs=1, verified=1,
                         duration_s=Spread(n=1, median=times[tuple(sorted(changed.items()))]))
        s.configs.append(cfg)
        return cfg

    monkeypatch.setattr(search, "evaluate", fake_evaluate)
    s = search.summary()
    search.search(s)
    assert ran == [{}, {"sleep_s": 0.6}]  # the published configuration ran once
    assert s.best == {"sleep_s": 0.6}
    assert any("same configuration as cfg-00" in n for n in s.notes)
