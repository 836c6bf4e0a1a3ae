"""bench.verify.partitions: a partitioned table's live data files each hold rows of one partition, the
one their DataFile records; a mis-partitioned file is caught, whether committed or not."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.manifest import DataFileContent

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.table.entries import live_entries
from bench.core.uri import local_path
from bench.verify.partitions import file_partition_problems, partition_problems
from datagen.dataset import prepare
from datagen.recipes import SmallFilesRecipe
from datagen.schema import PARTITIONED_SCHEMA
from datagen.writer import write_rows
from tests.helpers import TINY

RECIPE = SmallFilesRecipe(files=17_358, total_bytes=193_000_000_000, min_files=8,
                          partitioning={"spec": "day+bucket", "periods": 30, "buckets": 2, "skew": 1.0})


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    wh = tmp_path_factory.mktemp("partitions-wh")
    settings = CatalogSettings(warehouse=str(wh))
    cat = load_sql_catalog(settings)
    ds = prepare(cat, settings, RECIPE, float(TINY), 42, workers=1)
    return cat, ds, wh


def _two_partitions(tbl):
    """Two live data files of different partitions."""
    entries = [e for e in live_entries(tbl) if e.data_file.content == DataFileContent.DATA]
    first = entries[0].data_file
    other = next(e.data_file for e in entries if list(e.data_file.partition) != list(first.partition))
    return first, other


def test_generated_table_has_no_problem(table):
    cat, ds, _ = table
    assert partition_problems(cat.load_table(ds.table)) == []


def test_a_file_recording_another_partition_is_caught(table):
    cat, ds, wh = table
    tbl = cat.load_table(ds.table)
    first, other = _two_partitions(tbl)
    rows = pq.read_table(local_path(first.file_path))
    bad = write_rows(f"file://{wh}/wrong-partition.parquet", {}, rows, PARTITIONED_SCHEMA,
                     partition=tuple(other.partition))  # the rows of one partition, the tuple of another
    problems = file_partition_problems(bad, tbl.spec(), tbl.schema())
    assert len(problems) == 1 and "records partition event_date=" in problems[0]
    assert "but its rows are in" in problems[0]
    good = write_rows(f"file://{wh}/right-partition.parquet", {}, rows, PARTITIONED_SCHEMA,
                      partition=tuple(first.partition))
    assert file_partition_problems(good, tbl.spec(), tbl.schema()) == []


def test_a_file_mixing_partitions_is_caught_once_committed(table):
    cat, ds, wh = table
    tbl = cat.load_table(ds.table)
    first, other = _two_partitions(tbl)
    rows = pa.concat_tables([pq.read_table(local_path(first.file_path)), pq.read_table(local_path(other.file_path))])
    mixed = write_rows(f"file://{wh}/mixed.parquet", {}, rows, PARTITIONED_SCHEMA, partition=tuple(first.partition))
    with tbl.transaction() as tx, tx.update_snapshot().fast_append() as fa:
        fa.append_data_file(mixed)
    tbl = cat.load_table(ds.table)
    problems = partition_problems(tbl)
    assert len(problems) == 1 and problems[0].startswith(mixed.file_path)
    assert "more than one partition" in problems[0]
    # the snapshot before the bad commit is still clean
    assert partition_problems(tbl, ds.snapshot_id) == []


def test_risingwave_and_the_floor_compact_a_partitioned_cdc_table_per_partition(tmp_path, shared_warehouse):
    """daily-cdc-deletes (day + bucket(8)) end to end: RisingWave's engine and the floor verified, each
    output file in one partition, the one its manifest entry records (the floor's too, though pyiceberg
    cannot infer a bucket partition from column bounds), one file per partition, no delete file left.
    Spark's partitioned CDC compaction is the filtered one below (its JVM once, for suite time)."""
    import json

    from tests.helpers import run_bench

    p = run_bench("run", "daily-cdc-deletes", "--scale", TINY, "--engines", "risingwave,arrow-floor",
                  "--warehouse", shared_warehouse, "--results-dir", tmp_path, "--run-id", "cdc", timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    runs = {r["engine"]: r for r in (json.loads(f.read_text()) for f in (tmp_path / "cdc").glob("*--rep0.json"))}
    assert sorted(runs) == ["arrow-floor", "risingwave"]
    partitions = None
    for engine, r in runs.items():
        checks = {c["name"]: c for c in r["verification"]["checks"]}
        assert r["verified"], (engine, r["verification"]["differences"])
        placed = checks["partition_placement"]
        assert placed["ok"] and placed["required"] and "in 8 partition(s)" in placed["message"], placed
        assert any(rule.startswith("partitions (a partitioned table)") for rule in r["verification"]["rules"])
        assert r["after"]["delete_files"] == 0
        partitions = partitions or r["files_out"]
        assert r["files_out"] == partitions == 8, (engine, r["files_out"])


@pytest.mark.spark
def test_a_partition_filter_compacts_only_the_partitions_it_selects(tmp_path, shared_warehouse):
    """daily-recent with --where (3 of the 8 day partitions at the tiny scale): Spark (`where`) and the floor
    verified with the partitions outside the filter untouched; RisingWave recorded unsupported with its reason;
    an engine that ignores the filter fails exactly untouched_partitions.  The per-partition outcome is in each
    result and in the report; the recent-partition read is checked against the generator's truth."""
    import json

    from reports.render import render_html
    from tests.helpers import run_bench

    where = "event_date >= '2025-12-29'"
    p = run_bench("run", "daily-recent", "--scale", TINY, "--engines", "spark,arrow-floor,risingwave,ignorefilter",
                  "--where", where, "--readers", "on", "--warehouse", shared_warehouse, "--results-dir", tmp_path,
                  "--run-id", "recent", timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    runs = {r["engine"]: r for r in (json.loads(f.read_text()) for f in (tmp_path / "recent").glob("*--rep0.json"))}
    assert runs["risingwave"]["status"] == "unsupported"
    assert "CompactionConfig" in runs["risingwave"]["error"] and "no partition filter" in runs["risingwave"]["error"]
    for engine in ("spark", "arrow-floor"):
        r = runs[engine]
        assert r["verified"], (engine, r["verification"]["differences"])
        assert r["scenario_record"]["content"]["partition_filter"]["where"] == where
        untouched = {c["name"]: c for c in r["verification"]["checks"]}["untouched_partitions"]
        assert untouched["ok"] and untouched["required"] and "of the 5 partition(s) outside" in untouched["message"]
        part = r["partitions"]
        assert (part["filter"], part["partitions"], part["selected"], part["rewritten"], part["untouched"]) == \
            (where, 8, 3, 3, 5), part
        assert part["data_files_before"]["max"] > part["data_files_after"]["max"]
    assert "where => 'event_date >= \\'2025-12-29\\''" in " ".join(runs["spark"]["engine_actions"])
    # derived from the scenario's work (two small files make a partition work), not written in the scenario
    assert "'min-input-files', '2'" in " ".join(runs["spark"]["engine_actions"])
    assert "rewrite_options" not in runs["spark"]["engine_options"] or \
        "min-input-files" not in runs["spark"]["engine_options"]["rewrite_options"]
    bad = runs["ignorefilter"]
    failed = [c["name"] for c in bad["verification"]["checks"] if not c["ok"]]
    assert not bad["verified"] and failed == ["untouched_partitions"], bad["verification"]["differences"]
    assert bad["partitions"]["rewritten_outside_filter"] == 5
    recent = {q["name"]: q for q in runs["spark"]["reads"]["queries"]}["recent-partition"]
    assert recent["ok"] and recent["before"] == recent["after"] == recent["truth"], recent
    assert "DATE '2025-12-31'" in recent["sql"] and recent["files_opened_before"] > recent["files_opened_after"] == 1
    html = render_html([tmp_path / "recent"])
    assert "Partition by partition" in html and 'data-table="partitions"' in html
    assert html.count('data-metric="untouched"') == 3  # spark, arrow-floor and the fake; not the unsupported run


def _vi(answers: dict):
    from bench.core.dataset import GroundTruth
    from bench.verify.checks import VerifyInput

    return VerifyInput(kind="deletes", table=None, before=None, before_paths=set(),
                       ground_truth=GroundTruth(rows=10, checksum="100"), target_file_size_bytes=1,
                       small_file_threshold_bytes=1, output_codec="snappy", answers=answers)


def test_readers_agree_over_the_selected_partitions_where_the_whole_table_reads_once():
    """Equality deletes outside a partition filter: only our merge-on-read reads the whole table (pyiceberg cannot
    apply them, DuckDB's iceberg reader above its limit).  Without a filter that is one reader, not verified (as
    before); with one, pyiceberg's and our reads of the selected partitions make the second reader, checked
    against the generator's truth summed over them, and must agree."""
    from bench.core.dataset import GroundTruth
    from bench.core.records.verification import ReaderAnswer
    from bench.verify.checks import Within, content_checks

    def ans(name, rows, checksum):
        return ReaderAnswer(reader=name, resolves="x", rows=rows, checksum=checksum)

    whole = {"duckdb-merge-on-read": ans("duckdb-merge-on-read", 10, "100"),
             "pyiceberg-scan": ReaderAnswer(reader="pyiceberg-scan", unavailable="equality deletes apply"),
             "duckdb-iceberg": ReaderAnswer(reader="duckdb-iceberg", unavailable="above its limit")}
    checks = {c.name: c for c in content_checks(_vi(whole))}
    assert not checks["independent_readers_agree"].ok and "content_pyiceberg_scan_selected" not in checks

    def within(pyiceberg, ours):
        return Within(where="event_date >= '2025-12-31'", partitions=2, of=4, truth=GroundTruth(rows=4, checksum="40"),
                      answers={"pyiceberg-scan": ans("pyiceberg-scan", *pyiceberg),
                               "duckdb-merge-on-read": ans("duckdb-merge-on-read", *ours)})

    checks = {c.name: c for c in content_checks(_vi(whole), within((4, "40"), (4, "40")))}
    sel, agree = checks["content_pyiceberg_scan_selected"], checks["independent_readers_agree"]
    assert sel.ok and sel.required and "over the 2 of 4 partition(s)" in sel.message, sel
    assert agree.ok and "2 readers answered over the 2 selected partition(s)" in agree.message, agree
    checks = {c.name: c for c in content_checks(_vi(whole), within((4, "40"), (3, "31")))}
    assert checks["content_pyiceberg_scan_selected"].ok and not checks["independent_readers_agree"].ok
    checks = {c.name: c for c in content_checks(_vi(whole), within((3, "31"), (3, "31")))}
    assert not checks["content_pyiceberg_scan_selected"].ok and "reads 3 rows (-1)" in \
        checks["content_pyiceberg_scan_selected"].message
    no_truth = within((4, "40"), (4, "40"))
    no_truth.of = 0
    assert not {c.name: c for c in content_checks(_vi(whole), no_truth)}["content_pyiceberg_scan_selected"].ok
    disagree = {**whole, "duckdb-iceberg": ans("duckdb-iceberg", 9, "90")}  # every whole-table reader must agree
    assert not {c.name: c for c in content_checks(_vi(disagree), within((4, "40"), (4, "40")))}[
        "independent_readers_agree"].ok


@pytest.mark.spark
def test_a_partition_filter_on_a_cdc_table_is_verified_over_the_selected_partitions(tmp_path, shared_warehouse):
    """daily-cdc-deletes with 2 buckets instead of 8 (4 days of 2 buckets at the tiny scale: 8 partitions) and
    --where selecting the newest day: the delete files of the other days stay live, so pyiceberg cannot read the
    whole table; Spark's run is verified by pyiceberg's scan of the 2 selected partitions against their truth; an
    engine that loses rows there (a committed rewrite, everything else right) fails the content checks, the
    selected one among them."""
    import json
    from pathlib import Path

    from tests.helpers import run_bench

    src = (Path(__file__).resolve().parents[2] / "scenarios" / "daily-cdc-deletes.yaml").read_text()
    assert "\n    buckets: 8\n" in src
    scenario = tmp_path / "cdc-four-days.yaml"
    scenario.write_text(src.replace("\n    buckets: 8\n", "\n    buckets: 2\n"))
    where = "event_date >= '2025-12-31'"
    p = run_bench("run", scenario, "--scale", TINY, "--engines", "spark,losingfilter", "--where", where,
                  "--warehouse", shared_warehouse, "--results-dir", tmp_path, "--run-id", "cdcwhere", timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    runs = {r["engine"]: r for r in (json.loads(f.read_text()) for f in (tmp_path / "cdcwhere").glob("*--rep0.json"))}
    spark = {c["name"]: c for c in runs["spark"]["verification"]["checks"]}
    assert runs["spark"]["verified"], runs["spark"]["verification"]["differences"]
    assert not spark["content_pyiceberg_scan"]["required"] and "equality" in spark["content_pyiceberg_scan"]["message"]
    sel = spark["content_pyiceberg_scan_selected"]
    assert sel["ok"] and sel["required"] and "over the 2 of 8 partition(s)" in sel["message"], sel
    assert "2 readers answered over the 2 selected partition(s)" in spark["independent_readers_agree"]["message"]
    assert spark["untouched_partitions"]["ok"] and "outside it stay" in spark["no_live_delete_files"]["message"]
    assert runs["spark"]["verification"]["readers"]["selected_partitions"]["partitions"] == 2
    lost = runs["losingfilter"]
    failed = {c["name"] for c in lost["verification"]["checks"] if not c["ok"] and c["required"]}
    assert not lost["verified"] and "content_pyiceberg_scan_selected" in failed, lost["verification"]["differences"]
    assert failed <= {"content_pyiceberg_scan_selected", "content_duckdb_merge_on_read", "content_duckdb_iceberg"}
    assert lost["partitions"]["rewritten"] == 2 and lost["partitions"]["rewritten_outside_filter"] == 0
