"""Partitioned tables: the layout's scale rule and skew, determinism, every file (data and
delete) inside its partition, the per-partition ground truth, and bad recipes as one clear error."""

from __future__ import annotations

import collections
import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError
from pyiceberg.manifest import DataFileContent

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.checksum import arrow_checksum
from bench.core.errors import UserError
from bench.core.table.entries import live_entries
from bench.core.uri import local_path
from bench.scenario import load_scenario
from bench.verify.partitions import partition_problems
from bench.verify.readers import read_merge_on_read
from datagen import deletes, partitions, smallfiles
from datagen.dataset import data_file_count, prepare, recipe_hash
from datagen.recipes import Partitioning, SmallFilesRecipe
from tests.helpers import TINY

SCALE = float(TINY)


def _recipe(name: str):
    return load_scenario(name).table


def _make(tmp: Path, name: str, seed: int = 42):
    settings = CatalogSettings(warehouse=str(tmp))
    cat = load_sql_catalog(settings)
    return cat, prepare(cat, settings, _recipe(name), SCALE, seed, workers=2)


def _digests(paths):
    return sorted(hashlib.sha256(Path(local_path(p)).read_bytes()).hexdigest() for p in paths)


def _by_partition(tbl, content=DataFileContent.DATA):
    spec, schema = tbl.spec(), tbl.schema()
    out = collections.defaultdict(list)
    for e in live_entries(tbl):
        if e.data_file.content == content:
            out[spec.partition_to_path(e.data_file.partition, schema)].append(e)
    return out


# --- the layout (no I/O) ----------------------------------------------------------------------------
def test_scale_rule_keeps_partitions_then_drops_the_oldest():
    daily = _recipe("daily-smallfiles")
    p = daily.partitioning
    n1 = smallfiles.file_count(daily.files, 1.0, daily.min_files)
    assert partitions.counts(p, n1) == (365, 365)  # a year of days at scale 1
    local = smallfiles.file_count(daily.files, 0.005, daily.min_files)
    assert partitions.counts(p, local) == (43, 43)  # 87 files: ~2 per day, the newest 43 days
    assert partitions.counts(p, 16) == (8, 8)  # the tiny scale's floor of files
    stress = _recipe("partitions-stress")
    assert partitions.counts(stress.partitioning, stress.files) == (4320, 4320)  # thousands at scale 1
    assert set(partitions.files_per_partition(stress.partitioning, stress.files)) == {3}  # a few files each
    assert partitions.counts(stress.partitioning, 96) == (48, 48)  # the tiny scale (min_files 96)
    cdc = _recipe("daily-cdc-deletes")
    assert partitions.counts(cdc.partitioning, 20_000) == (90, 720)  # days x buckets
    assert partitions.counts(cdc.partitioning, 16) == (1, 8)  # every bucket of the newest day
    assert partitions.counts(Partitioning(spec="bucket", buckets=16), 8) == (1, 8)  # fewer files than buckets


def test_skew_puts_most_files_in_the_newest_partitions_and_a_long_cold_tail():
    p = _recipe("daily-smallfiles").partitioning
    per = partitions.files_per_partition(p, 17_358)
    assert per.sum() == 17_358 and per.min() >= 1 and len(per) == 365
    assert all(a >= b for a, b in zip(per, per[1:]))  # newest first, never more files in an older day
    assert per[:36].sum() > 0.6 * per.sum()  # the newest tenth of the days: most of the files
    assert per[-180:].sum() < 0.15 * per.sum() and per[-1] < per[0] / 100  # the older half: a long cold tail
    uniform = partitions.files_per_partition(p.model_copy(update={"skew": 0.0}), 17_358)
    assert uniform.max() - uniform.min() <= 1
    lay = partitions.layout(p, 17_358)
    assert np.array_equal(np.bincount(lay.file_partition, minlength=365), per)
    ages = [lay.age(int(q)) for q in lay.file_partition]
    assert ages == sorted(ages, reverse=True)  # written oldest day first


def test_bad_partitioning_is_one_clear_error(tmp_path):
    with pytest.raises(ValidationError, match="periods .* required for spec 'day'"):
        Partitioning(spec="day")
    with pytest.raises(ValidationError, match="buckets is required"):
        Partitioning(spec="day+bucket", periods=3)
    with pytest.raises(ValidationError, match="skew orders partitions by age"):
        Partitioning(spec="bucket", buckets=4, skew=1.0)
    with pytest.raises(ValidationError, match="buckets is not allowed"):
        Partitioning(spec="hour", periods=24, buckets=4)
    bad = tmp_path / "bad.yaml"
    text = (Path(__file__).resolve().parents[2] / "scenarios" / "daily-smallfiles.yaml").read_text()
    bad.write_text(text.replace("spec: day ", "spec: week "))
    with pytest.raises(UserError) as e:
        load_scenario(str(bad))
    msg = str(e.value)
    assert "\n" not in msg and "table.smallfiles.partitioning.spec" in msg and "'day'" in msg


def test_unpartitioned_recipes_keep_their_hashes():
    """Adding the field changes no cached dataset of the unpartitioned scenarios."""
    r = _recipe("bin-packing")
    assert r.partitioning is None
    assert recipe_hash(r, 0.005, 42) == recipe_hash(SmallFilesRecipe(**r.model_dump(exclude={"partitioning"})),
                                                    0.005, 42)
    assert "partitioning" not in _hash_blob(r)


def test_a_partition_count_is_its_own_recipe_or_a_clear_error():
    """`bench frontier --partitions`: exactly that many partitions at the scale, buckets kept, a new hash."""
    stress, cdc = load_scenario("partitions-stress"), load_scenario("daily-cdc-deletes")
    for sc, n, scale in ((stress, 8, float(TINY)), (stress, 48, float(TINY)), (cdc, 64, 0.007)):
        r = sc.with_partitions(n, scale).table
        assert r.partitioning is not None and sc.table.partitioning is not None
        assert r.partitioning.buckets == sc.table.partitioning.buckets  # part of the spec: kept
        assert partitions.counts(r.partitioning, data_file_count(r, scale))[1] == n
        assert recipe_hash(r, scale, 42) != recipe_hash(sc.table, scale, 42)  # a dataset of its own
    assert cdc.with_partitions(64, 0.007).table.partitioning.periods == 8  # 64 = 8 days x 8 buckets
    assert partitions.reshape(Partitioning(spec="bucket", buckets=4), 16, 40).buckets == 16
    for sc, n, needle in ((stress, 64, "has 96 data files, fewer than 64 x 2 (min_files_per_partition): at most 48"),
                          (cdc, 12, "multiple of 8"), (load_scenario("bin-packing"), 8, "is not partitioned")):
        with pytest.raises(UserError) as e:
            sc.with_partitions(n, float(TINY))
        assert needle in str(e.value) and "\n" not in str(e.value)


def _hash_blob(r) -> dict:
    d = r.model_dump(mode="json")
    if d.get("partitioning") is None:
        d.pop("partitioning", None)
    return d


# --- generated tables (tiny scale) ------------------------------------------------------------------
@pytest.fixture(scope="module")
def daily(tmp_path_factory):
    a = _make(tmp_path_factory.mktemp("daily-a"), "daily-smallfiles")
    b = _make(tmp_path_factory.mktemp("daily-b"), "daily-smallfiles")
    return a, b


def test_same_seed_same_bytes_same_truth(daily, tmp_path):
    (cat_a, a), (_, b) = daily
    assert a.table == b.table and a.files == b.files == 16
    assert _digests(a.live_files) == _digests(b.live_files)  # byte-identical files
    assert a.ground_truth == b.ground_truth  # whole and per partition
    _, c = _make(tmp_path, "daily-smallfiles", seed=7)
    assert c.ground_truth.checksum != a.ground_truth.checksum


def test_daily_files_are_within_their_partition_and_skewed(daily):
    (cat, ds), _ = daily
    tbl = cat.load_table(ds.table)
    assert str(tbl.spec().fields[0].transform) == "identity" and tbl.spec().fields[0].name == "event_date"
    assert partition_problems(tbl) == []
    parts = _by_partition(tbl)
    per = partitions.files_per_partition(_recipe("daily-smallfiles").partitioning, 16)
    assert len(parts) == len(per) == 8
    newest_first = sorted(parts, reverse=True)  # event_date=YYYY-MM-DD sorts by day
    assert [len(parts[k]) for k in newest_first] == list(per)
    assert len(parts[newest_first[0]]) > len(parts[newest_first[-1]])
    for path, entries in parts.items():
        for e in entries:  # written under the partition's directory, as Iceberg writers lay files out
            assert f"/data/{path}/" in e.data_file.file_path


def test_per_partition_truth_sums_to_the_whole_and_matches_the_files(daily):
    (cat, ds), _ = daily
    gt = ds.ground_truth
    assert gt.partition_spec == "identity(event_date)" and len(gt.partitions) == 8
    assert sum(p.rows for p in gt.partitions.values()) == gt.rows
    assert sum(int(p.checksum) for p in gt.partitions.values()) == int(gt.checksum)
    assert sum(p.data_files for p in gt.partitions.values()) == gt.data_files
    parts = _by_partition(cat.load_table(ds.table))
    for path, truth in gt.partitions.items():
        table = pa.concat_tables(pq.read_table(local_path(e.data_file.file_path)) for e in parts[path])
        assert arrow_checksum(table) == (truth.rows, int(truth.checksum)), path
        assert truth.values == list(parts[path][0].data_file.partition)


def test_stress_table_has_its_partition_count(tmp_path):
    cat, ds = _make(tmp_path, "partitions-stress")
    tbl = cat.load_table(ds.table)
    parts = _by_partition(tbl)
    assert len(parts) == len(ds.ground_truth.partitions) == 48 and ds.files == 96
    assert {len(v) for v in parts.values()} == {2}
    assert all(k.startswith("event_ts_hour=2025-12-") for k in parts)
    assert partition_problems(tbl) == []
    # the reader query over the newest hour: the generator's truth is what the files hold
    import datetime as dt

    from datagen.queries import layout, query_truth, recent_partition

    q = recent_partition(_recipe("partitions-stress").partitioning)
    assert q is not None and q.column == "event_ts" and q.literal == "TIMESTAMP '2025-12-31 23:00:00'"
    truth = query_truth(ds, [q], layout(ds))["recent-partition"]
    assert truth == _recent_truth_from_files(tbl, "event_ts", dt.datetime(2025, 12, 31, 23)) and int(truth[0]) > 0


@pytest.mark.spark  # the commits go through Iceberg's Java API
def test_cdc_table_deletes_stay_in_their_partition(tmp_path):
    cat, ds = _make(tmp_path, "daily-cdc-deletes")
    tbl = cat.load_table(ds.table)
    assert partition_problems(tbl) == []
    data = _by_partition(tbl)
    assert len(data) == 8 and {k.split("/")[1] for k in data} == {f"v1_bucket={b}" for b in range(8)}
    keys = {}  # partition -> (v1, v2) keys of its rows
    for path, entries in data.items():
        rows = pa.concat_tables(pq.read_table(local_path(e.data_file.file_path), columns=["v1", "v2"])
                                for e in entries)
        keys[path] = set(zip(rows.column("v1").to_pylist(), rows.column("v2").to_pylist()))
    files = {e.data_file.file_path: path for path, es in data.items() for e in es}
    for content in (DataFileContent.POSITION_DELETES, DataFileContent.EQUALITY_DELETES):
        for path, entries in _by_partition(tbl, content).items():
            assert path in data
            for e in entries:
                t = pq.read_table(local_path(e.data_file.file_path))
                if content == DataFileContent.POSITION_DELETES:  # only rows of a file of its partition
                    assert {files[f] for f in t.column("file_path").to_pylist()} == {path}
                else:  # partition-scoped: every matched key is a row of its own partition
                    pairs = set(zip(t.column("v1").to_pylist(), t.column("v2").to_pylist()))
                    matched = {k for k in pairs if k[0] >= 0}
                    assert matched and matched <= keys[path]
    gt = ds.ground_truth
    assert sum(p.rows for p in gt.partitions.values()) == gt.rows
    assert sum(int(p.checksum) for p in gt.partitions.values()) == int(gt.checksum)
    assert sum(p.delete_files for p in gt.partitions.values()) == gt.position_delete_files + gt.equality_delete_files
    assert read_merge_on_read(tbl, None) == (gt.rows, gt.checksum)
    pl = deletes.plan(_recipe("daily-cdc-deletes"), SCALE)
    assert pl.layout is not None
    for j in range(pl.n):  # an equality delete only ever targets its own partition
        assert all(pl.layout.file_partition[t] == pl.layout.file_partition[j] for t in pl.eq_targets(j))


def _recent_truth_from_files(tbl, column: str, since) -> list[str]:
    """count and sum(quantity) of the rows with column >= since, read from the table's files (the test's own
    reader: pyarrow over every live data file)."""
    import pyarrow.compute as pc

    rows = pa.concat_tables(pq.read_table(local_path(e.data_file.file_path), columns=[column, "quantity"])
                            for e in live_entries(tbl) if e.data_file.content == DataFileContent.DATA)
    hit = rows.filter(pc.greater_equal(rows.column(column), pa.scalar(since, rows.schema.field(column).type)))
    return [str(hit.num_rows), str(pc.sum(hit.column("quantity")).as_py() or 0)]


def test_recent_partition_query_truth_is_the_newest_day_and_the_filter_selects_the_newest_days(daily):
    """The reader query over the newest period: its truth (from the generator) equals the newest day's rows
    read from the files; `recent_periods: N` resolves to the newest N day partitions of the table."""
    import datetime as dt

    from bench.core.partition_filter import recent_filter, selector
    from datagen.queries import layout, query_truth, recent_partition

    (cat, ds), _ = daily
    tbl = cat.load_table(ds.table)
    q = recent_partition(_recipe("daily-smallfiles").partitioning)
    assert q is not None and q.column == "event_date" and q.literal == "DATE '2025-12-31'"
    truth = query_truth(ds, [q], layout(ds))["recent-partition"]
    assert truth == _recent_truth_from_files(tbl, "event_date", dt.date(2025, 12, 31))
    assert int(truth[0]) == ds.ground_truth.partitions["event_date=2025-12-31"].rows > 0
    keys = {(e.data_file.spec_id, tuple(e.data_file.partition)) for e in live_entries(tbl)}
    text = recent_filter(3, tbl.spec(), tbl.schema(), [v for _, v in keys])
    assert text == "event_date >= '2025-12-29'"
    selected = selector(text, tbl.schema(), tbl.specs(), keys)
    chosen = {tbl.spec().partition_to_path(e.data_file.partition, tbl.schema()) for e in live_entries(tbl)
              if selected((e.data_file.spec_id, tuple(e.data_file.partition)))}
    assert chosen == {"event_date=2025-12-29", "event_date=2025-12-30", "event_date=2025-12-31"}
    with pytest.raises(UserError, match="selects part of partition"):  # not aligned to partitions
        selector("v2 > 5", tbl.schema(), tbl.specs(), keys)

