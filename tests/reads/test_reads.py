"""Read amplification (bench.reads): the generator's truth of the reader queries, the check that can
fail, the runner's reads record end to end (tiny scale, RisingWave's engine), `--readers off`, and the
report's section from hand-written results."""

from __future__ import annotations

import json
import re
from html import unescape

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from bench.core.dataset import GeneratedTable, GroundTruth
from bench.core.records.reads import QueryRead, ReadsRecord
from bench.reads.queries import check
from bench.scenario import load_scenario
from datagen.queries import choose_queries, layout, query_truth, reads_plan
from datagen.schema import make_rows, pools_for
from tests.helpers import TINY, run_bench


def _dataset(scenario: str, scale: float = float(TINY)) -> GeneratedTable:
    """A dataset manifest as datagen writes it, without generating the table (the truth needs only the
    recipe, scale and seed)."""
    return GeneratedTable(table="bench.t", kind=load_scenario(scenario).table.kind, recipe_hash="x",
                          recipe=load_scenario(scenario).table.model_dump(), scale=scale, seed=42, snapshot_id=1,
                          metadata_location="", location="", files=0, bytes=0, rows=0,
                          ground_truth=GroundTruth(rows=0, checksum="0"))


def _by_rows(ds: GeneratedTable, lo: int, hi: int) -> tuple[int, int]:
    """(count, sum(quantity)) of live rows with lo <= v2 <= hi, from every file's generated rows."""
    lay, count, total = layout(ds), 0, 0
    for f in lay.files:
        rows = make_rows(pools_for(ds.seed), ds.seed, f.index, f.rows, f.key_offset)
        keep = pa.array(lay.live(f))
        v2 = rows.column("v2")
        mask = pc.and_(pc.and_(pc.greater_equal(v2, lo), pc.less_equal(v2, hi)), keep)
        picked = rows.filter(mask)
        count += picked.num_rows
        total += int(pc.sum(picked.column("quantity")).as_py() or 0)
    return count, total


@pytest.mark.parametrize("scenario", ["bin-packing", "deletes-standard"])
def test_truth_computed_two_ways(scenario):
    """The key-range and full-scan truths (numpy over pool windows, only overlapping files) equal a
    filter over every file's generated rows; the point lookup's key is live and its row is the one."""
    ds = _dataset(scenario)
    queries = choose_queries(ds)
    assert [q.name for q in queries] == ["full-scan", "key-range", "point-lookup"]
    truth = query_truth(ds, queries)
    lay = layout(ds)
    rng = next(q for q in queries if q.name == "key-range")
    assert rng.hi - rng.lo + 1 == round(lay.rows_written * 0.01)
    assert truth["key-range"] == [str(v) for v in _by_rows(ds, rng.lo, rng.hi)]
    assert truth["full-scan"] == [str(v) for v in _by_rows(ds, 0, lay.rows_written)]
    assert truth["point-lookup"][0] == "1"
    point = next(q for q in queries if q.name == "point-lookup")
    f = lay.files[lay.file_of(point.lo)]
    assert lay.live(f)[point.lo - f.key_offset]
    if scenario.startswith("deletes"):  # deleted rows are not counted
        assert int(truth["full-scan"][0]) < lay.rows_written


@pytest.mark.serial  # a time limit
def test_truth_is_fast_at_the_local_scale():
    import time

    ds = _dataset("bin-packing", 0.005)
    pools_for(ds.seed)  # built once per process anyway (datagen)
    t0 = time.perf_counter()
    _, truth = reads_plan(ds)
    assert time.perf_counter() - t0 < 5  # ~87 files, 5.5 M rows: well under a second or two here
    assert int(truth["full-scan"][0]) == layout(ds).rows_written


def test_the_check_fails_on_a_wrong_answer():
    truth = {"full-scan": ["10", "55"], "key-range": ["1", "5"]}
    rec = ReadsRecord(reader="duckdb-iceberg", queries=[
        QueryRead(name="full-scan", sql="", before=["10", "55"], after=["10", "55"]),
        QueryRead(name="key-range", sql="", before=["1", "5"], after=["1", "5"])])
    assert check(rec, truth).ok and rec.message == ""
    wrong = check(rec.model_copy(deep=True), {**truth, "key-range": ["1", "6"]})
    assert not wrong.ok and "key-range" in wrong.message and "truth" in wrong.message
    drift = rec.model_copy(deep=True)
    drift.queries[0].after = ["9", "50"]
    drift = check(drift, truth)
    assert not drift.ok and "before ['10', '55'] != after ['9', '50']" in drift.message
    none = check(ReadsRecord(reader="", reader_reason="reader unavailable: test"), truth)
    assert not none.ok and none.message == "reader unavailable: test"


def test_a_wrong_answer_after_the_compaction_fails_the_run():
    """Right on the input, wrong on the output: the engine's fault, the run is not verified; wrong on both: the
    reader's, advisory."""
    from bench.core.records.verification import Verification
    from bench.core.results import RunResult
    from bench.runner.reads import answers_check
    from bench.runner.record import checked

    truth = {"full-scan": ["10", "55"], "key-range": ["1", "5"]}

    def run(after: list[str], before: list[str]) -> RunResult:
        r = RunResult(run_id="x", scenario="s", engine="e", engine_name="e", seed=0, scale=0.0, status="ok",
                      verified=True,
                      verification=Verification(verified=True))
        rec = check(ReadsRecord(reader="duckdb-iceberg", after_measured=True, queries=[
            QueryRead(name="full-scan", sql="", before=["10", "55"], after=["10", "55"]),
            QueryRead(name="key-range", sql="", before=before, after=after)]), truth)
        return checked(r, answers_check(rec))

    good = run(["1", "5"], ["1", "5"])
    assert good.verified and [(c.name, c.ok, c.required) for c in good.verification.checks] == \
        [("reader_queries", True, True)]
    bad = run(["1", "4"], ["1", "5"])
    assert not bad.verified and not bad.verification.verified
    assert bad.verification.differences == ["reader_queries: duckdb-iceberg: key-range: after ['1', '4'], truth "
                                            "['1', '5']"]
    reader = run(["1", "4"], ["1", "4"])
    assert reader.verified and "the reader's fault" in reader.verification.differences[0]


def _reads_of(results_dir, run_id):
    files = sorted(p for p in (results_dir / run_id).glob("*.json") if p.name != "run.json")
    return {json.loads(p.read_text())["engine"]: json.loads(p.read_text()) for p in files}


def test_runner_records_reads_before_and_after(tmp_path, shared_warehouse):
    """The runner's reads record, here with the fallback reader asked for (Spark SQL in its own process:
    the point lookup's row checksummed from Spark's Arrow output like DuckDB's); DuckDB's reads in a run
    are asserted by tests/datagen/test_deletes.py."""
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "risingwave", "--results-dir", tmp_path,
                  "--warehouse", shared_warehouse, "--run-id", "reads", "--readers", "spark-sql",
                  "--storage-cap", "64MiB/s,32MiB/s", "--cores", "1")  # confinement recorded: see the end
    assert p.returncode == 0, p.stderr[-3000:]
    r = _reads_of(tmp_path, "reads")["risingwave"]
    assert r["verified"], r["verification"]["differences"]
    # --storage-cap and --cores: the engine throttled and told, its written files flushed on its clock
    cap, lim = r["storage_cap"], r["core_limit"]
    assert cap["read_bytes_per_s"] == 64 * 2**20 and cap["write_bytes_per_s"] == 32 * 2**20
    assert cap["cgroup_version"] in ("v1", "v2") and cap["device"]
    assert "blkio throttle" in cap["mechanism"] or "io.max" in cap["mechanism"]
    flush = [ph for ph in r["phases"] if ph["name"] == "flush"]
    assert len(flush) == 1 and cap["flush_s"] == flush[0]["seconds"] and cap["flushed_files"] >= 1
    assert cap["flushed_bytes"] >= r["bytes_out"] and cap["device_write_bytes"] is not None
    assert cap["writeback_interval_s"] == 0.5  # written back from inside the cgroup while it compacted
    assert lim["cores"] == 1 and r["cores"] == 1 and r["deployment"]["cores"] == 1 and len(lim["cpus"]) == 1
    rec = r["reads"]
    assert rec["ok"], rec["message"]
    assert rec["reader"] == "spark-sql" and "asked for" in rec["reader_reason"] and rec["cache"] == r["cache"]["mode"]
    assert rec["after_measured"] and rec["after_usable"]
    qs = {q["name"]: q for q in rec["queries"]}
    assert set(qs) == {"full-scan", "key-range", "point-lookup"}
    for q in qs.values():
        assert q["before"] == q["after"] == q["truth"] and q["ok"], q
        assert q["before_s"] > 0 and q["after_s"] > 0 and q["ratio"] == pytest.approx(q["before_s"] / q["after_s"])
    ds = json.loads((shared_warehouse / "datasets" / f"{r['dataset'].split('.')[-1]}.json").read_text())
    assert int(qs["full-scan"]["truth"][0]) == ds["ground_truth"]["rows"] == r["before"]["rows"]
    assert qs["full-scan"]["files_opened_before"] == r["before"]["data_files"] > qs["full-scan"]["files_opened_after"]
    assert qs["point-lookup"]["files_opened_before"] == 1
    assert "reads (spark-sql" in p.stdout and "answers = truth" in p.stdout

    off = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "corrupt", "--readers", "off",
                    "--results-dir", tmp_path, "--warehouse", shared_warehouse, "--run-id", "noreads")
    assert off.returncode == 0, off.stderr[-3000:]
    assert _reads_of(tmp_path, "noreads")["corrupt"]["reads"] is None
    assert "reads (" not in off.stdout


def test_report_shows_what_readers_gained(tmp_path):
    from tests.reports.hand_built import make_result, render, write_results

    def reads(before, after, ok=True, usable=True):
        q = [QueryRead(name="full-scan", sql="SELECT count(*), sum(quantity) FROM t", before_s=before,
                       after_s=after, ratio=before / after, before=["5", "9"], after=["5", "9"], truth=["5", "9"],
                       ok=True, files_opened_before=16, files_opened_after=1, delete_files_merged_before=4,
                       delete_files_merged_after=0, counts_source="computed from the snapshot's manifests")]
        return ReadsRecord(reader="duckdb-iceberg", reader_reason="test", cache="cold", ok=ok,
                           message="" if ok else "full-scan: before ['5', '9'] != truth ['5', '8']",
                           after_measured=True, after_usable=usable, queries=q).model_dump()

    run_dir = write_results(tmp_path, [
        make_result("spark", 0, reads=reads(2.0, 1.0)), make_result("risingwave", 0, reads=reads(4.0, 0.5)),
        make_result("spark", 1, reads=reads(3.0, 2.0, ok=False)),
        make_result("risingwave", 1, verified=False, reads=reads(9.0, 0.01, usable=False)),  # never in statistics
    ])
    html = render([run_dir])
    assert "What readers gained" in html
    row = re.search(r'<tr data-query="full-scan">(.*?)</tr>', html, re.S).group(1)
    before = re.search(r'data-metric="before" data-value="([^"]*)"', row).group(1)
    assert float(before) == 3.0  # median of the verified runs' before-times (2, 4, 3), not the unverified 9
    after = dict(re.findall(r'data-engine="([^"]+)" data-metric="after" data-value="([^"]*)"', row))
    assert float(after["spark"]) == 1.5 and float(after["risingwave"]) == 0.5
    assert "16 → 1" in row and "4 → 0" in row
    assert "Reads check failed: spark rep1" in unescape(html)
