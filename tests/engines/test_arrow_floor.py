"""The `arrow-floor` engine: the physical floor of the same rewrite, committing nothing.  Its output is
verified like any engine's (staged as a scratch table), then removed; a floor that loses rows, commits
to the table or lists a file it did not write is not verified."""

import json
from pathlib import Path

from tests.helpers import TINY, run_bench


def _results(run_dir: Path) -> dict:
    return {json.loads(p.read_text())["engine"]: json.loads(p.read_text())
            for p in run_dir.glob("*--rep0.json")}


def _floor_compact(job):
    """The floor's open, compact and close in this process: its outcome."""
    from bench.engines.arrow_floor import ArrowFloorEngine
    from bench.engines.base import PhaseClock

    floor, clock = ArrowFloorEngine(), PhaseClock()
    floor.open(job, clock)
    try:
        return floor.compact(job, clock)
    finally:
        floor.close()


def _failed(r: dict) -> set[str]:
    return {c["name"] for c in r["verification"]["checks"] if not c["ok"] and c["required"]}


def test_floor_is_verified_without_a_commit_and_wrong_floors_are_caught(tmp_path, shared_warehouse):
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "arrow-floor,lossyfloor,committingfloor,"
                  "ghostfloor", "--results-dir", tmp_path, "--warehouse", shared_warehouse, "--run-id", "floor")
    assert p.returncode == 0, p.stderr[-3000:]
    res = _results(tmp_path / "floor")
    floor = res["arrow-floor"]
    assert floor["status"] == "ok" and floor["verified"], floor["verification"]["differences"]
    assert floor["commits"] == "none" and floor["engine_name"] == "arrow-floor"
    checks = {c["name"]: c for c in floor["verification"]["checks"]}
    for name in ("nothing_committed", "content_duckdb_read_parquet", "content_pyiceberg_scan", "output_codec",
                 "compaction_complete", "file_count"):
        assert checks[name]["ok"] and checks[name]["required"], name
    assert "new_snapshot" not in checks  # nothing was committed, and that is what is checked
    assert floor["after"]["rows"] == floor["before"]["rows"] and floor["files_out"] < floor["files_in"]
    assert floor["engine_result"]["files_written"] == floor["files_out"]
    # listing the live files is timed: the table is out of reach while an engine sets up
    assert [ph["name"] for ph in floor["phases"]][:4] == ["list live files", "read deletes", "select files",
                                                          "read, apply deletes, write"]
    assert floor["duration_s"] > 0 and floor["setup_s"] > 0
    # its written files and the scratch table are gone; the run's log stays
    work = tmp_path / "floor" / "work" / "bin-packing--arrow-floor--rep0"
    assert (work / "engine.log").exists()
    assert not (work / "floor-output").exists() and not (work / "staged-output").exists()
    # each wrong floor is caught by the check that names its flaw
    assert _failed(res["lossyfloor"]) == {"content_duckdb_read_parquet", "content_pyiceberg_scan"}
    assert _failed(res["committingfloor"]) == {"nothing_committed"}
    assert _failed(res["ghostfloor"]) == {"output_staged"}
    assert "do not exist" in res["ghostfloor"]["verification"]["differences"][0]
    for r in res.values():  # whatever the floors did, every engine started from the dataset, byte for byte
        assert r["input"]["identical_to_dataset"] is True
    assert not list((tmp_path / "floor" / "work").rglob("floor-*.parquet"))


def test_sorted_files_keep_the_sort_order_past_one_sorted_run(tmp_path):
    """Strategy sort on a table of more rows than one of DuckDB's sorted runs (122,880 rows: the ORDER BY
    hands its output to its threads a run at a time), output files of several row groups: each file sorted,
    their key ranges apart.  The former one-COPY write (ROW_GROUPS_PER_FILE) lost the order there: DuckDB
    rotates files only in its unordered COPY, where each thread writes the row groups of its own run as soon
    as they are encoded (at scale 0.005: keys 122,880..245,759, then 0..122,879 in one file).  The
    keys arrive as sorted-smallfiles' do: (a x i + b) mod n, a near n x 0.618, so every input file spans
    the key range."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.schema import Schema
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import IntegerType, LongType, NestedField

    from bench.core.catalog import CatalogSettings, load_sql_catalog
    from bench.engines.base import CompactionJob
    from bench.verify.sortorder import rows_out_of_order

    n, files, a, b = 8 * 122_880, 8, 648_061, 12_345  # gcd(a, n) = 1: the keys are 0..n-1, each once
    schema = Schema(NestedField(1, "v1", IntegerType(), required=False),
                    NestedField(2, "v2", LongType(), required=False))
    settings = CatalogSettings(warehouse=str(tmp_path / "warehouse"))
    cat = load_sql_catalog(settings)
    cat.create_namespace("bench")
    tbl = cat.create_table("bench.t", schema, properties={"format-version": "2"}, sort_order=SortOrder(
        SortField(source_id=2, transform=IdentityTransform())))
    keys = (a * np.arange(n, dtype=np.int64) + b) % n
    for part in np.array_split(keys, files):
        tbl.append(pa.table({"v1": pa.array(part % 1000, pa.int32()), "v2": pa.array(part, pa.int64())}))
    in_bytes = sum(task.file.file_size_in_bytes for task in tbl.scan().plan_files())
    # three output files of ~2.7 sorted runs each (of 3 row groups: the former write's rows per file); then
    # one file for all (a partition that fits one file is COPY'd straight from the ORDER BY)
    for target, n_files in ((in_bytes * 34 // 100, 3), (in_bytes * 2, 1)):
        job = CompactionJob(table="bench.t", catalog=settings, scenario="sorted-smallfiles", kind="binpack",
                            target_file_size_bytes=target, small_file_threshold_bytes=in_bytes, cores=2,
                            work_dir=str(tmp_path / f"work-{n_files}"), strategy="sort")
        out = _floor_compact(job)
        written = [pq.read_table(f.removeprefix("file://"), columns=["v2"]).column(0)
                   for f in out.output_files]
        assert out.engine_result["files_rewritten"] == files and sum(len(c) for c in written) == n
        for col in written:  # each file in order (the verifier's sorted_output), its keys one run of the sort
            assert rows_out_of_order([(col, True, True)]) == 0
        assert len(written) == n_files
        ranges = sorted((c[0].as_py(), c[-1].as_py(), len(c)) for c in written)
        assert all(hi - lo + 1 == rows for lo, hi, rows in ranges)  # keys 0..n-1: a sorted file holds a run
        assert all(prev[1] < nxt[0] for prev, nxt in zip(ranges, ranges[1:]))  # the files' key ranges apart


def test_the_floor_reads_a_renamed_column_by_field_id(tmp_path):
    """A real table whose column v2 was renamed w2 between two appends (the older file says v2, the newer w2,
    both field id 2): the floor rewrites both into one file holding every row under the current name with its
    field id.  By name, the older file's values of field 2 had no current column to go to."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, LongType, NestedField

    from bench.core.catalog import CatalogSettings, load_sql_catalog
    from bench.engines.base import CompactionJob

    settings = CatalogSettings(warehouse=str(tmp_path / "warehouse"))
    cat = load_sql_catalog(settings)
    cat.create_namespace("bench")
    tbl = cat.create_table("bench.t", Schema(NestedField(1, "v1", IntegerType(), required=False),
                                             NestedField(2, "v2", LongType(), required=False)),
                           properties={"format-version": "2"})
    tbl.append(pa.table({"v1": pa.array([1, 2], pa.int32()), "v2": pa.array([10, 20], pa.int64())}))
    with tbl.update_schema() as u:
        u.rename_column("v2", "w2")
    tbl = cat.load_table("bench.t")
    tbl.append(pa.table({"v1": pa.array([3], pa.int32()), "w2": pa.array([30], pa.int64())}))
    job = CompactionJob(table="bench.t", catalog=settings, scenario="bin-packing", kind="binpack",
                        target_file_size_bytes=1 << 30, small_file_threshold_bytes=1 << 30, cores=2,
                        work_dir=str(tmp_path / "work"))
    out = _floor_compact(job)
    [written] = [f.removeprefix("file://") for f in out.output_files]
    got = pq.read_table(written)
    assert got.column_names == ["v1", "w2"] and sorted(zip(*got.to_pydict().values())) == [(1, 10), (2, 20), (3, 30)]
    assert [int(f.metadata[b"PARQUET:field_id"]) for f in got.schema] == [1, 2]


def test_a_floor_faster_than_its_bound_is_flagged_loudly(tmp_path):
    """The bound's self-check end to end: rates far slower than this machine (a bound of minutes on a table of
    ~10 MB) -> the floor's rewrite beats its bound: its result says BOUND BEATEN, the run's output says it, and
    the report flags it; the output is verified all the same (the bound is wrong, not the floor's files)."""
    import json

    from bench.core.catalog import CatalogSettings
    from bench.core.rates import TableRates, save_rates

    wh = tmp_path / "wh"
    gen = run_bench("datagen", "bin-packing", "--scale", TINY, "--warehouse", wh)
    assert gen.returncode == 0, gen.stderr
    [manifest] = [p for p in (wh / "datasets").glob("*.json") if p.name.count(".") == 1]
    table = json.loads(manifest.read_text())["table"]
    slow = TableRates(table=table, measured_at="2026-11-29T00:00:00+00:00", input_codec="uncompressed", files=1,
                      bytes=1, rows=1, read_mb_s=1e6, decode_mb_s_per_core=0.01, decode_rows_s_per_core=1.0,
                      encode_rows_s_per_core={"snappy": 10.0}, join_rows_s_per_core=1.0)
    save_rates(CatalogSettings.for_warehouse(str(wh)).state_path, slow)
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "rewrite,arrow-floor", "--readers", "off",
                  "--warehouse", wh, "--results-dir", tmp_path / "res", "--run-id", "slow")
    assert p.returncode == 0, p.stderr[-3000:]
    res = _results(tmp_path / "res" / "slow")
    r = res["arrow-floor"]
    b = r["physical_bound"]
    assert r["verified"] and b["seconds"] > 60 and b["measured_s"] < b["seconds"], b
    assert b["covers"] == ["read deletes", "read, apply deletes, write"]
    assert b["beaten"].startswith("BOUND BEATEN: its phases read deletes, read, apply deletes, write took")
    assert "BOUND BEATEN" in p.stdout + p.stderr
    rep = run_bench("report", tmp_path / "res" / "slow", "--out", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert rep.returncode == 0 and "data-bound-beaten" in page, rep.stderr
    assert "arrow-floor rep 0: BOUND BEATEN" in page and "rewrite rep 0: " in page  # the engine beat it too
