"""The same work asked of every engine on any table (bench.core.work): the scenario's intent, the options each
engine derives from it, the verifier's completeness check reading the same intent, `bench inspect` saying what
each engine is asked; and format v3 through --source-catalog.  The tables are written by Spark into a catalog of
their own (tests/runner/spark_tables.py), as a user's are: day partitions of three small files each, fewer than
Spark's min-input-files default of five."""

import json

import pytest

from bench.core.catalog import CatalogSettings
from bench.core.work import Work
from bench.engines.base import CompactionJob
from tests.helpers import run_bench
from tests.runner.spark_tables import DAYS, INSERTS, ROWS, make_spark_tables

DELETE = "id % 7 = 3"
ALL_ROWS = INSERTS * len(DAYS) * ROWS
LIVE_ROWS = sum(1 for i in range(ALL_ROWS) if i % 7 != 3)


@pytest.fixture(scope="module")
def spark_written(tmp_path_factory):
    """shop.events (v2, no delete), shop.events_del (v2, a merge-on-read DELETE: position deletes) and
    shop.events_v3 (v3, the same DELETE: deletion vectors), written by one Spark session."""
    root = tmp_path_factory.mktemp("spark-written")
    cfg = make_spark_tables(root / "src", {"events": {"format-version": "2"},
                                           "events_del": {"format-version": "2", "delete": DELETE},
                                           "events_v3": {"format-version": "3", "delete": DELETE}})
    return root, cfg


def _job(scenario: str, engine: str, delete_files: bool, **over) -> CompactionJob:
    from bench.scenario import load_scenario

    sc = load_scenario(scenario)
    return CompactionJob(table="bench.t", catalog=CatalogSettings(warehouse="/tmp/none"), scenario=sc.name,
                         kind=sc.kind, target_file_size_bytes=sc.target_file_size_bytes,
                         small_file_threshold_bytes=sc.small_file_threshold(),
                         options={**sc.options_for(engine), **over}, work=sc.work_intent(delete_files))


def test_each_engine_derives_its_options_from_the_intent_and_an_explicit_option_wins_recorded():
    from bench.engines.risingwave import RisingWaveEngine
    from bench.engines.spark.engine import SparkEngine

    spark = SparkEngine().asked(_job("bin-packing", "spark", delete_files=False))
    assert spark["rewrite_data_files"]["min-input-files"] == 2 and "delete-file-threshold" not in \
        spark["rewrite_data_files"] and spark["steps"] == ["rewrite_data_files"] and spark["overridden"] == {}
    # bin-packing on a table with delete files: applying them is the work, for both engines
    spark = SparkEngine().asked(_job("bin-packing", "spark", delete_files=True))
    assert spark["rewrite_data_files"]["delete-file-threshold"] == 1
    assert spark["rewrite_data_files"]["remove-dangling-deletes"] is True and len(spark["steps"]) == 3
    rw = RisingWaveEngine().asked(_job("bin-packing", "risingwave", delete_files=True))
    assert rw["config"]["strategy"] == "small_files" and rw["config"]["min_delete_file_count_threshold"] == 1
    assert "second pass" in rw["steps"][1]
    # an explicit option in the scenario still wins, and the difference is recorded
    spark = SparkEngine().asked(_job("bin-packing", "spark", False, rewrite_options={"min-input-files": 5}))
    assert spark["rewrite_data_files"]["min-input-files"] == 5
    assert spark["overridden"] == {"min-input-files": {"derived": 2, "explicit": 5}}
    rw = RisingWaveEngine().asked(_job("bin-packing", "risingwave", False, strategy="full"))
    assert rw["config"]["strategy"] == "full"
    assert rw["overridden"] == {"strategy": {"derived": "small_files", "explicit": "full"}}
    # a delete compaction's default work: the files its deletes apply to (RisingWave's files_with_deletes, the
    # scenario's explicit choice too: nothing overridden)
    rw = RisingWaveEngine().asked(_job("deletes-standard", "risingwave", delete_files=True))
    assert rw["config"]["strategy"] == "files_with_deletes" and rw["overridden"] == {}
    spark = SparkEngine().asked(_job("deletes-standard", "spark", delete_files=True))
    assert spark["rewrite_data_files"]["delete-file-threshold"] == 1 and "the data files a delete file applies to" \
        in spark["intent"]
    full = _job("bin-packing", "spark", False)
    full.work = Work(files="all").on(False)
    assert SparkEngine().asked(full)["rewrite_data_files"].get("rewrite-all") is True
    assert "min-input-files" not in SparkEngine().asked(full)["rewrite_data_files"]


def test_the_scenario_states_its_work_validated():
    from bench.scenario import Scenario, load_scenario

    base = load_scenario("deletes-standard").model_dump()
    with pytest.raises(ValueError, match="work.deletes keep"):
        Scenario.model_validate({**base, "work": {"deletes": "keep"}})
    with pytest.raises(ValueError, match="min_files"):
        Scenario.model_validate({**base, "work": {"min_files": 0}})
    sc = Scenario.model_validate({**load_scenario("bin-packing").model_dump(), "work": {"min_files": 3}})
    intent = sc.work_intent(delete_files=True)
    assert intent.min_files == 3 and intent.applies_deletes and intent.stated_by == "scenario bin-packing"
    assert sc.record().content["work"] == {"files": "small", "min_files": 3, "deletes": "apply"}
    assert "work" not in load_scenario("bin-packing").record().content  # the default keeps the record's digest


@pytest.mark.spark
@pytest.mark.slow
def test_bin_packing_verifies_both_engines_where_partitions_hold_fewer_than_five_small_files(spark_written):
    """Spark's min-input-files default (5) would leave every partition of three small files uncompacted: it is
    derived from the intent (2), and the completeness check holds both engines to the same."""
    root, cfg = spark_written
    r = run_bench("run", "bin-packing", "--source-catalog", cfg, "--source-table", "shop.events", "--engines",
                  "spark,risingwave", "--warehouse", root / "wh", "--results-dir", root / "res", "--run-id", "bp")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    runs = {x["engine"]: x for x in (json.loads(p.read_text()) for p in (root / "res" / "bp").glob("*--rep0.json"))}
    for engine in ("spark", "risingwave"):
        x = runs[engine]
        assert x["status"] == "ok" and x["verified"], (engine, x["verification"]["differences"])
        complete = {c["name"]: c for c in x["verification"]["checks"]}["compaction_complete"]
        assert complete["required"] and "in every partition holding 2 or more" in complete["message"]
        assert "0 small input file(s)" in complete["message"]
        assert x["files_in"] == INSERTS * len(DAYS) and x["files_out"] == len(DAYS)
        assert x["engine_settings"]["work"]["intent"].startswith("rewrite small data files")
    assert "'min-input-files', '2'" in " ".join(runs["spark"]["engine_actions"])


def test_inspect_says_which_scenario_fits_and_what_each_engine_is_asked(spark_written):
    root, cfg = spark_written
    r = run_bench("inspect", "bin-packing", "--source-catalog", cfg, "--source-table", "shop.events_del", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["fits"]["kind"] == "deletes" and d["fits"]["scenarios"] == ["daily-cdc-deletes"]
    asked = d["asked"]
    assert asked["scenario"] == "bin-packing" and asked["work"]["delete_files"] is True
    spark, rw = asked["engines"]["spark"], asked["engines"]["risingwave"]
    assert spark["rewrite_data_files"]["delete-file-threshold"] == 1 and spark["rewrite_data_files"][
        "min-input-files"] == 2
    assert rw["config"]["min_delete_file_count_threshold"] == 1
    text = run_bench("inspect", "--source-catalog", cfg, "--source-table", "shop.events_v3")
    assert text.returncode == 0, text.stderr
    assert "fits: a delete-compaction table" in text.stdout and "asked under daily-cdc-deletes" in text.stdout
    # both engines are served a v3 table (the harness's catalog writes v3 metadata); the floor does not declare v3
    assert "risingwave   unsupported" not in text.stdout and "spark        unsupported" not in text.stdout, text.stdout
    assert "arrow-floor  unsupported" in text.stdout, text.stdout
    plain = run_bench("inspect", "--source-catalog", cfg, "--source-table", "shop.events")
    assert "fits: a bin-packing table (no delete file); scenario(s): daily-smallfiles" in plain.stdout, plain.stdout


@pytest.mark.spark
@pytest.mark.slow
def test_a_v3_table_with_deletion_vectors_is_cloned_read_and_compacted_by_both_engines(spark_written):
    """Format v3 (a MERGE-on-read DELETE written as deletion vectors): the clone's metadata is the source's,
    edited (pyiceberg cannot write v3; row lineage kept), the ground truth read with the deletion vectors applied
    by two readers; Spark verified.  The harness's catalog commits v3 metadata (bench.core.catalog.v3), so
    RisingWave's engine meets the v3 table: it applies the deletion vectors (the rows are right) but writes its files
    without the rows' _row_id and _last_updated_sequence_number, so the rows' lineage is lost (row_lineage_kept)."""
    root, cfg = spark_written
    r = run_bench("run", "bin-packing", "--source-catalog", cfg, "--source-table", "shop.events_v3", "--engines",
                  "spark,risingwave", "--warehouse", root / "wh", "--results-dir", root / "res", "--run-id", "v3")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    runs = {x["engine"]: x for x in (json.loads(p.read_text()) for p in (root / "res" / "v3").glob("*--rep0.json"))}
    spark, rw = runs["spark"], runs["risingwave"]
    assert spark["status"] == "ok" and spark["verified"], spark["verification"]["differences"]
    assert spark["before"]["rows"] == spark["after"]["rows"] == LIVE_ROWS < ALL_ROWS
    assert spark["before"]["position_delete_files"] == INSERTS * len(DAYS) and spark["after"]["delete_files"] == 0
    assert rw["status"] == "ok" and rw["after"]["rows"] == LIVE_ROWS and rw["after"]["delete_files"] == 0, rw["error"]
    failed = [c["name"] for c in rw["verification"]["checks"] if c["required"] and not c["ok"]]
    assert failed == ["row_lineage_kept"], failed
    assert any(d.startswith("row_lineage_kept") and "no _row_id" in d for d in rw["verification"]["differences"])
    lineage = {c["name"]: c for c in spark["verification"]["checks"]}["row_lineage_kept"]
    assert lineage["ok"] and lineage["required"], lineage
    clone = spark["source"]["clone"].split(".")[-1]
    manifest = json.loads((root / "wh" / "datasets" / f"{clone}.json").read_text())
    assert manifest["ground_truth"]["rows"] == LIVE_ROWS
    assert manifest["ground_truth"]["computed_by"] == "read: pyiceberg-scan + duckdb-merge-on-read"
    src_md = json.loads(sorted((root / "src" / "lake" / "shop" / "events_v3" / "metadata").glob("*.metadata.json"))[
        -1].read_text())
    clone_md = json.loads(next((root / "wh" / "bench" / clone / "metadata").glob("00000-*.metadata.json")).read_text())
    assert clone_md["format-version"] == 3 and clone_md["next-row-id"] == src_md["next-row-id"]
    assert clone_md["location"] != src_md["location"] and clone_md["properties"]["gc.enabled"] == "false"
    assert [s["snapshot-id"] for s in clone_md["snapshots"]] == [src_md["current-snapshot-id"]]


@pytest.mark.spark
@pytest.mark.slow
def test_a_generated_skewed_daily_table_is_compacted_in_every_partition_of_two_or_more(tmp_path, shared_warehouse):
    """daily-smallfiles (no hand-written min-input-files any more): its skewed day partitions hold from one to a
    few small files; both engines rewrite every partition of two or more and are verified."""
    from tests.helpers import TINY

    r = run_bench("run", "daily-smallfiles", "--scale", TINY, "--engines", "spark,risingwave", "--warehouse",
                  shared_warehouse, "--results-dir", tmp_path, "--run-id", "daily", timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    runs = {x["engine"]: x for x in (json.loads(p.read_text()) for p in (tmp_path / "daily").glob("*--rep0.json"))}
    for engine in ("spark", "risingwave"):
        x = runs[engine]
        assert x["status"] == "ok" and x["verified"], (engine, x["verification"]["differences"])
        part = x["partitions"]
        # every partition holds one to four small files (fewer than Spark's default five): each left with one file
        assert 1 < part["data_files_before"]["max"] < 5, part
        assert part["data_files_after"]["max"] == 1 and part["rewritten"] > 0, part
    assert "rewrite_options" not in runs["spark"]["scenario_record"]["content"]["engines"]["spark"]
    assert "'min-input-files', '2'" in " ".join(runs["spark"]["engine_actions"])


def test_the_completeness_check_reads_the_intent_the_engines_were_given():
    """compaction_complete and no_live_delete_files follow VerifyInput.work: min_files, files all, deletes keep."""
    from types import SimpleNamespace

    from bench.core.records.verification import TableStats
    from bench.verify.checks import VerifyInput, _complete, state_checks

    def df(path: str, size: int) -> SimpleNamespace:
        return SimpleNamespace(file_path=path, file_size_in_bytes=size)

    part = {("p",): [df("a", 10), df("b", 10), df("big", 1000)]}  # two small input files and a large one live
    vi = VerifyInput(kind="binpack", table=None, before=TableStats(delete_files=2), before_paths={"a", "b", "big"},
                     ground_truth=None, target_file_size_bytes=1000, small_file_threshold_bytes=100,
                     output_codec="snappy")
    assert not _complete(vi, part).ok  # no intent given: the default (min_files 2) on a table with deletes
    assert vi.intent().applies_deletes
    vi.work = Work(min_files=3).on(True, "scenario x")
    ok = _complete(vi, part)
    assert ok.ok and "in every partition holding 3 or more" in ok.message and "(scenario x)" in ok.message
    vi.work = Work(files="all").on(False)
    assert not _complete(vi, {("p",): [df("big", 1000)]}).ok  # files all: no input file may stay
    vi.work = Work(files="with-deletes").on(True)
    assert _complete(vi, part).ok  # complete when no delete file is live: the next check
    after = TableStats(delete_files=2, position_delete_files=2)
    live = {c.name: c for c in state_checks(vi, after, [])}["no_live_delete_files"]
    assert not live.ok and live.required
    vi.work = Work(deletes="keep").on(True)
    live = {c.name: c for c in state_checks(vi, after, [])}["no_live_delete_files"]
    assert not live.ok and not live.required  # kept delete files are not work: advisory
