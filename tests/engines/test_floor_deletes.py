"""arrow-floor's delete semantics on hand-made files, without a table or a JVM: position deletes with
sequence numbers, equality deletes with sequence numbers and partition scope, null keys (a null in a
delete column matches a null row value, and only a null), one hash table per scope; and the physical
bound built from measured rates (bench.core.rates)."""

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, LongType, NestedField

from bench.core.catalog import CatalogSettings
from bench.core.rates import TableRates, check_bound, physical_bound
from bench.core.records.engine_run import Phase
from bench.core.table.fieldids import schema_map
from bench.engines.arrow_floor import ArrowFloorEngine, Deletes
from bench.engines.base import CompactionJob

SCHEMA = pa.schema([pa.field("v1", pa.int32(), metadata={"PARQUET:field_id": "1"}),
                    pa.field("v2", pa.int64(), metadata={"PARQUET:field_id": "2"})])
P0, P7 = (0, ()), (1, (7,))
IDS = (1, 2)  # the equality deletes' field ids


def _columns(second: str = "v2") -> dict:
    """The plan's table columns (the current schema: field 2 named `second`), read and written by field id."""
    schema = Schema(NestedField(1, "v1", IntegerType(), required=False),
                    NestedField(2, second, LongType(), required=False))
    return {"columns": [(f.name, f.field_id) for f in schema.fields], "schema_map": schema_map(schema)}


def _file(path: Path, rows: list[tuple], schema: pa.Schema = SCHEMA) -> str:
    pq.write_table(pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema), path)
    return str(path)


def _pos(path: Path, target: str, positions: list[int]) -> str:
    return _file(path, [(f"file://{target}", p) for p in positions],
                 pa.schema([("file_path", pa.string()), ("pos", pa.int64())]))


def _data(local: str, seq: int, scope: tuple = P0) -> dict:
    n = pq.read_metadata(local).num_rows
    return {"local": local, "path": f"file://{local}", "seq": seq, "scope": scope, "bytes": 1, "rows": n,
            "selected": True}


def _run(tmp_path: Path, plan: dict, members: list[dict]) -> list[tuple]:
    floor = ArrowFloorEngine()
    floor.plan, floor.con = {**_columns(), **plan}, duckdb.connect(config={"threads": 2})
    job = CompactionJob(table="t.t", catalog=CatalogSettings.for_warehouse(tmp_path / "wh"), scenario="x",
                        kind="deletes", target_file_size_bytes=1 << 20, small_file_threshold_bytes=1 << 20)
    out = tmp_path / f"out-{len(list(tmp_path.glob('out-*')))}"
    copy = "FORMAT parquet, COMPRESSION snappy, ROW_GROUP_SIZE 1000, ROW_GROUPS_PER_FILE 1, FILENAME_PATTERN 'f{i}'"
    built = floor._rewrite(job, Deletes.read(plan), members, out, copy)
    files = sorted(out.glob("*.parquet"))
    assert built > 0 and files
    for f in files:  # the input's field ids
        assert [int(fl.metadata[b"PARQUET:field_id"]) for fl in pq.read_schema(f)] == [1, 2]
    second = floor.plan["columns"][1][0]
    return sorted(((r["v1"], r[second]) for f in files for r in pq.read_table(f).to_pylist()), key=str)


def test_sequence_numbers_scope_and_null_keys(tmp_path):
    a = _file(tmp_path / "a.parquet", [(1, 10), (2, 20), (3, 30), (None, 40), (5, None), (6, 60)])
    b = _file(tmp_path / "b.parquet", [(1, 10), (None, 40), (5, None)])
    plan = {
        "data": [_data(a, 1), _data(b, 3)],
        # seq 1 >= a's 1: applies (position 0); seq 0 < 1: does not (position 1)
        "position": [(_pos(tmp_path / "p1.parquet", a, [0]), 1), (_pos(tmp_path / "p0.parquet", a, [1]), 0)],
        "equality": [
            # global, seq 2: removes (3,30), the null-keyed (None,40) and (5,None) from a (seq 1), nothing from b
            # (seq 3); (2,None) and (None,20) match no row: a null matches only a null
            (_file(tmp_path / "e2.parquet", [(3, 30), (None, 40), (5, None), (2, None), (None, 20)]), 2, P0, True,
             ("v1", "v2"), IDS),
            # seq 4, another partition: not a's nor b's
            (_file(tmp_path / "e4.parquet", [(6, 60), (1, 10)]), 4, P7, False, ("v1", "v2"), IDS),
            # seq 5, a's partition: removes (6,60) from a and (1,10) from b
            (_file(tmp_path / "e5.parquet", [(6, 60), (1, 10)]), 5, P0, False, ("v1", "v2"), IDS),
        ],
    }
    assert _run(tmp_path, plan, [plan["data"][0]]) == [(2, 20)]
    assert _run(tmp_path, plan, [plan["data"][1]]) == [(5, None), (None, 40)]
    deletes = Deletes.read(plan)
    assert deletes.applies(plan["data"][0]) and deletes.applies(plan["data"][1])
    # one hash table per scope and column set: each key once, with its greatest sequence number
    [(cols, keys)] = deletes.equality_tables(P0)
    assert cols == ("v1", "v2") and keys.num_rows == 7
    assert dict(((r["v1"], r["v2"]), r["__floor_seq"]) for r in keys.to_pylist())[(6, 60)] == 5
    assert {r["v1"] for r in deletes.equality_tables(P7)[0][1].to_pylist()} >= {6, 1}


def test_only_later_deletes_select_a_file(tmp_path):
    a = _file(tmp_path / "a.parquet", [(1, 10)])
    plan = {"data": [_data(a, 5)], "position": [(_pos(tmp_path / "p.parquet", a, [0]), 4)],
            "equality": [(_file(tmp_path / "e.parquet", [(1, 10)]), 5, P0, True, ("v1", "v2"), IDS)]}
    assert not Deletes.read(plan).applies(plan["data"][0])  # both older than (or as old as, equality) the file


def test_a_renamed_column_is_read_and_deleted_by_field_id(tmp_path):
    """Field 2 renamed v2 -> w2 after file a and the equality delete were written (b is written under the new
    name): the floor reads both files' field 2 as w2, applies the delete written under the old name by its field
    id, and writes the current names with their field ids.  By name, a's v2 and the delete's v2 match no
    current column."""
    renamed = pa.schema([SCHEMA.field(0), pa.field("w2", pa.int64(), metadata={"PARQUET:field_id": "2"})])
    a = _file(tmp_path / "a.parquet", [(1, 10), (2, 20), (3, 30)])
    b = _file(tmp_path / "b.parquet", [(4, 40), (2, 20)], renamed)
    plan = {**_columns("w2"), "data": [_data(a, 1), _data(b, 1)], "position": [],
            "equality": [(_file(tmp_path / "e.parquet", [(2, 20)]), 2, P0, True, ("v1", "w2"), IDS)]}
    assert _run(tmp_path, plan, plan["data"]) == [(1, 10), (3, 30), (4, 40)]


def _rates(**kw) -> TableRates:
    base = dict(table="b.t", measured_at="2026-11-27T00:00:00+00:00", input_codec="snappy", files=1, bytes=1, rows=1,
                read_mb_s=100.0, decode_mb_s_per_core=50.0, decode_rows_s_per_core=1e6,
                encode_rows_s_per_core={"snappy": 2e6}, join_rows_s_per_core=1e7)
    return TableRates(**{**base, **kw})


def test_physical_bound_is_the_slower_of_device_and_cpus():
    b = physical_bound(_rates(), cores=2, read_bytes=200_000_000, data_bytes=100_000_000, rows_out=4_000_000,
                       codec="snappy", join_rows=10_000_000)
    # read 200 MB at 100 MB/s = 2 s; CPU (100/50 + 4e6/2e6 + 1e7/1e7) = 5 CPU-s on 2 cores = 2.5 s
    assert b.read_s == pytest.approx(2.0) and b.cpu_s == pytest.approx(2.5)
    assert b.seconds == pytest.approx(2.5) and b.limited_by == "CPU"
    fast_cpu = physical_bound(_rates(), cores=8, read_bytes=200_000_000, data_bytes=100_000_000, rows_out=4_000_000,
                              codec="snappy", join_rows=10_000_000)
    assert fast_cpu.seconds == pytest.approx(2.0) and fast_cpu.limited_by == "device read"
    with pytest.raises(ValueError, match="zstd"):
        physical_bound(_rates(), cores=2, read_bytes=1, data_bytes=1, rows_out=1, codec="zstd")
    # the rates per CPU-second (a core to itself) are faster here: the bound is the smaller of the two ways
    idle = physical_bound(_rates(cpu={"decode_mb": 100.0, "encode_rows_snappy": 4e6, "join_rows": 2e7}), cores=2,
                          read_bytes=0, data_bytes=100_000_000, rows_out=4_000_000, codec="snappy",
                          join_rows=10_000_000, covers=["rewrite"])
    assert idle.seconds == pytest.approx(1.25) and idle.basis == "rates per CPU-second"


def test_a_run_faster_than_its_bound_is_flagged():
    """The bound's self-check: the phases it covers took less than it -> `beaten` says so; else nothing."""
    bound = physical_bound(_rates(), cores=2, read_bytes=0, data_bytes=100_000_000, rows_out=4_000_000,
                           codec="snappy", covers=["read deletes", "rewrite"])  # 2 + 2 CPU-s on 2 cores: 2 s
    phases = [Phase(name="list live files", seconds=5.0), Phase(name="read deletes", seconds=0.5),
              Phase(name="rewrite", seconds=1.2)]
    check_bound(bound, phases, duration_s=6.7)
    assert bound.measured_s == pytest.approx(1.7) and bound.beaten.startswith("BOUND BEATEN: its phases read "
                                                                              "deletes, rewrite took 1.70 s")
    held = bound.model_copy(update={"beaten": "", "measured_s": None})
    check_bound(held, [Phase(name="rewrite", seconds=2.5)], duration_s=3.0)
    assert held.measured_s == pytest.approx(2.5) and not held.beaten
