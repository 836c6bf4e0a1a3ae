"""The append sink writer on its own (datagen.sink), no JVM: the time-compression rule, flushes
deterministic from (seed, index), rows split by any partition spec's transforms, the rolling size, the retry policy
(100, 200, 400 ms, then failing; a real conflict injected), and the table after every flush what the generator
expects, read back by an independent reader.  Tiny: a 16-file day-partitioned table, flushes of 40 rows."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    YearTransform,
)

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.scenario import load_scenario
from bench.verify.readers import read
from datagen.dataset import prepare
from datagen.queries import reads_plan
from datagen.recipes import SmallFilesRecipe
from datagen.schema import PARTITIONED_SCHEMA
from datagen.sink import AppendSink, AppendWriter, SinkShape, commit_with_retry, flush_rows, partition_groups, roll
from datagen.streaming import STREAM_KEY_BASE, StreamCommit
from datagen.writer import write_rows
from tests.helpers import TINY

SHAPE = SinkShape(rows_per_flush=40, flushes_per_cycle=3, target_file_bytes=1 << 30, flush_us=10_000_000,
                  cadence_s=0.0, late_share=0.25, late_us=86_400_000_000)


def test_the_time_compression_rule_of_the_three_presets():
    """A flush every min(interval, batch / rate) stream seconds, rate x that many rows; --scale multiplies rows and
    the rolling size, never the flushes per cycle."""
    presets = {name: load_scenario(f"sink-{name}").streaming.sink for name in
               ("low-latency", "balanced", "high-throughput")}
    got = {name: (s.flush_s, s.at(1.0).rows_per_flush, s.at(1.0).flushes_per_cycle) for name, s in presets.items()}
    assert got == {"low-latency": (10.0, 1000, 60), "balanced": (60.0, 6000, 10), "high-throughput": (300.0, 30000, 2)}
    low = presets["low-latency"]
    assert (low.at(0.1).rows_per_flush, low.at(0.1).flushes_per_cycle) == (100, 60)
    assert low.at(0.5).target_file_bytes == 16 * 1024 * 1024
    busy = AppendSink(batch_size=1000, flush_interval_s=10, events_per_s=1000, cycle_s=60)  # the batch fills first
    assert (busy.flush_s, busy.at(1.0).rows_per_flush, busy.at(1.0).flushes_per_cycle) == (1.0, 1000, 60)
    assert AppendSink().at(1e-9).rows_per_flush == 10  # MIN_ROWS


def test_a_flush_is_deterministic_and_its_keys_follow_the_index():
    a, b = flush_rows(7, SHAPE, 3, PARTITIONED_SCHEMA), flush_rows(7, SHAPE, 3, PARTITIONED_SCHEMA)
    assert a.equals(b) and not a.equals(flush_rows(7, SHAPE, 4, PARTITIONED_SCHEMA))
    assert a.column("v2").to_pylist() == list(range(STREAM_KEY_BASE + 120, STREAM_KEY_BASE + 160))
    days = set(a.column("event_date").cast(pa.int32()).to_pylist())
    assert len(days) == 2  # today's and, late, yesterday's
    ts = a.column("event_ts").cast(pa.int64()).to_numpy()
    assert (a.column("event_date").cast(pa.int32()).to_numpy() == ts // 86_400_000_000).all()


@pytest.mark.parametrize("transform,source", [
    (IdentityTransform(), "event_date"), (BucketTransform(4), "v1"), (YearTransform(), "event_ts"),
    (MonthTransform(), "event_ts"), (DayTransform(), "event_ts"), (HourTransform(), "event_ts")])
def test_rows_go_to_the_partition_the_transform_names(transform, source):
    shape = SinkShape(**{**SHAPE.__dict__, "rows_per_flush": 400, "late_us": 400 * 86_400_000_000})
    rows = flush_rows(11, shape, 0, PARTITIONED_SCHEMA)
    field = PARTITIONED_SCHEMA.find_field(source)
    spec = PartitionSpec(PartitionField(field.field_id, 1000, transform, "p"))
    groups = partition_groups(rows, spec, PARTITIONED_SCHEMA)
    assert sorted(i for _, idx in groups for i in idx) == list(range(400))
    fn = transform.transform(field.field_type)
    col = rows.column(source)
    if source != "v1":  # dates as days, timestamps as microseconds: what Iceberg's transforms take
        col = col.cast(pa.int32() if pa.types.is_date32(col.type) else pa.int64())
    values = col.to_pylist()
    for record, idx in groups:
        assert {fn(values[i]) for i in idx} == {record[0]}
    assert len(groups) > 1
    assert partition_groups(rows, PartitionSpec(), PARTITIONED_SCHEMA)[0][1].tolist() == list(range(400))


def test_a_partitions_rows_roll_at_the_target_size(tmp_path):
    rows = flush_rows(5, SinkShape(**{**SHAPE.__dict__, "rows_per_flush": 3000}), 0, PARTITIONED_SCHEMA)
    props = {"write.parquet.compression-codec": "snappy"}
    written = []

    def write(part, k):
        f = write_rows(str(tmp_path / f"f-{len(written)}-{k}.parquet"), props, part, PARTITIONED_SCHEMA)
        written.append(f)
        return f

    whole = roll(rows, write, 1 << 30)
    assert len(whole) == 1
    target = whole[0].file_size_in_bytes // 3
    parts = roll(rows, write, target)
    assert len(parts) >= 3 and sum(f.record_count for f in parts) == 3000
    assert max(f.file_size_in_bytes for f in parts) <= target * 1.3


def test_the_retry_policy_is_100_200_400_ms_then_failing():
    slept: list[float] = []

    def conflicts(n):
        calls = iter(range(100))

        def attempt():
            if next(calls) < n:
                raise CommitFailedException("branch main has changed")
            return 42
        return attempt

    rec = StreamCommit(index=0, append_only=True, rows_inserted=1, rows_updated=0, rows_deleted=0, bytes=1, files=1)
    commit_with_retry(conflicts(2), (0.1, 0.2, 0.4), rec, slept.append)
    assert (rec.snapshot_id, rec.attempts, len(rec.conflicts), slept) == (42, 3, 2, [0.1, 0.2])
    slept.clear()
    rec = StreamCommit(index=1, append_only=True, rows_inserted=1, rows_updated=0, rows_deleted=0, bytes=1, files=1)
    commit_with_retry(conflicts(9), (0.1, 0.2, 0.4), rec, slept.append)
    assert not rec.landed and rec.attempts == 4 and slept == [0.1, 0.2, 0.4] and "failed after 4" in rec.error


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """sink-balanced's base table (day-partitioned small files) at the tiny scale, and its queries' truth."""
    wh = tmp_path_factory.mktemp("sink-wh")
    settings = CatalogSettings(warehouse=str(wh))
    cat = load_sql_catalog(settings)
    recipe = SmallFilesRecipe.model_validate(load_scenario("sink-balanced").table.model_dump())
    ds = prepare(cat, settings, recipe, float(TINY), 42, workers=1)
    _, truth = reads_plan(ds)
    return {"settings": settings, "catalog": cat, "ds": ds, "truth": truth}


class Interrupted(AppendWriter):
    """A writer whose first commit attempt is beaten by another writer's flush (a real conflict)."""

    other: AppendWriter | None = None

    def _load(self):
        tbl = super()._load()
        if self.other is not None:
            other, self.other = self.other, None
            other.commit(900)
        return tbl


def test_every_flush_lands_as_a_fast_append_and_the_table_is_what_the_writer_expects(base):
    ds, settings, truth = base["ds"], base["settings"], base["truth"]
    slept: list[float] = []
    w = Interrupted(ds, settings, SHAPE, "t", truth, sleep=slept.append)
    other = AppendWriter(ds, settings, SHAPE, "o", truth)
    with w, other:
        for i in range(2):
            rec = w.commit(i)
            assert rec.landed and rec.attempts == 1 and rec.files == 2  # today's and (late) yesterday's partitions
            tbl = base["catalog"].load_table(ds.table)
            snap = tbl.current_snapshot()
            assert snap.snapshot_id == rec.snapshot_id and snap.summary.operation.value == "append"
            assert snap.summary["added-data-files"] == "2"
            got = read("duckdb-merge-on-read", tbl, None, settings)
            assert got.content == (rec.expected_rows, rec.expected_checksum) == (w.expected().rows,
                                                                                 w.expected().checksum)
        assert w.expected().rows == ds.ground_truth.rows + 80
        w.other = other
        rec = w.commit(2)  # the other writer's flush lands between our load and our commit
    assert rec.landed and rec.attempts == 2 and len(rec.conflicts) == 1 and slept == [0.1]
    tbl = base["catalog"].load_table(ds.table)
    got = read("duckdb-merge-on-read", tbl, None, settings)
    base_sum = int(ds.ground_truth.checksum)
    assert got.content == (w.expected().rows + 40, str(int(w.expected().checksum) + int(other.expected().checksum)
                                                         - base_sum))
    days = {r["partition"]["event_date"] for r in tbl.inspect.files().to_pylist()
            if "stream-t-" in r["file_path"]}
    assert len(days) == 2


def test_the_schema_takes_a_sink_on_any_table_and_the_cdc_writer_on_a_deletes_table_only():
    import yaml

    from bench.scenario import SCENARIO_DIR, Scenario

    sink = yaml.safe_load((SCENARIO_DIR / "sink-balanced.yaml").read_text())
    assert Scenario.model_validate(sink).streaming.sink.preset == "balanced"
    cdc_on_binpack = {**sink, "streaming": {k: v for k, v in sink["streaming"].items() if k != "sink"}}
    with pytest.raises(ValueError, match="CDC writer needs a deletes table"):
        Scenario.model_validate(cdc_on_binpack)
    bad = {**sink, "streaming": {**sink["streaming"], "sink": {**sink["streaming"]["sink"], "batch_size": 0}}}
    with pytest.raises(ValueError, match="batch_size"):
        Scenario.model_validate(bad)
    cdc_field = {**sink, "streaming": {**sink["streaming"], "cadence_s": 0.5}}
    with pytest.raises(ValueError, match="cadence_s: the CDC writer's, not used with a sink"):
        Scenario.model_validate(cdc_field)
    assert "sink" not in load_scenario("streaming-cdc").record().content["streaming"]  # its digest is kept
