import hashlib
from pathlib import Path

import pyarrow.parquet as pq

from bench.catalog import CatalogSettings, load_sql_catalog
from bench.scenario import load_scenario
from bench.verify import local_path, table_stats
from datagen import smallfiles
from datagen.dataset import manifest_path, prepare, reset

SCALE = 0.00005


def _recipe(name="bin-packing"):
    return load_scenario(name).table.model_dump()


def _make(tmp: Path, seed=42, recipe=None, scale=SCALE):
    cat = load_sql_catalog(CatalogSettings(warehouse=str(tmp)))
    return cat, prepare(cat, tmp, "bench", recipe or _recipe(), scale, seed, workers=2)


def _digest(paths):
    return [hashlib.sha256(Path(local_path(p)).read_bytes()).hexdigest() for p in paths]


def test_same_seed_same_bytes_different_seed_different_data(tmp_path):
    cat_a, a = _make(tmp_path / "a")
    cat_b, b = _make(tmp_path / "b")
    _, c = _make(tmp_path / "c", seed=7)
    assert a.table == b.table and a.rows == b.rows and a.files == b.files == 16
    assert _digest(a.live_files) == _digest(b.live_files)  # byte-identical files
    sa = table_stats(cat_a.load_table(a.table))
    sb = table_stats(cat_b.load_table(b.table))
    assert sa.checksum == sb.checksum and sa.rows == a.rows
    assert c.table != a.table
    assert table_stats(load_sql_catalog(CatalogSettings(warehouse=str(tmp_path / "c"))).load_table(c.table)).checksum != sa.checksum


def test_scale_rule_sizes_and_floor():
    r = _recipe()
    assert smallfiles.file_count(r["files"], 1.0, r["min_files"]) == 17_358
    assert smallfiles.file_count(r["files"], 0.005, r["min_files"]) == 87
    assert smallfiles.file_count(r["files"], 0.00001, r["min_files"]) == 16  # the floor
    plans = smallfiles.plan_files(r["files"], r["total_bytes"], 0.005, r["min_files"], 42)
    rows = [p.rows for p in plans]
    assert len(plans) == 87 and max(rows) > 2 * min(rows)  # a realistic spread, not uniform files
    keys = [(p.key_offset, p.key_offset + p.rows) for p in plans]
    assert all(a[1] == b[0] for a, b in zip(keys, keys[1:]))  # unique keys across files


def test_bytes_and_codec_follow_the_recipe(tmp_path):
    _, plain = _make(tmp_path, recipe=_recipe("bin-packing"), scale=0.0002)
    cat, zstd = _make(tmp_path, recipe=_recipe("bin-packing-zstd"), scale=0.0002)
    assert abs(plain.bytes - 193e9 * 0.0002) / (193e9 * 0.0002) < 0.05
    assert zstd.rows == plain.rows and zstd.bytes < plain.bytes / 1.5
    md = pq.ParquetFile(local_path(zstd.live_files[0])).metadata
    assert md.row_group(0).column(0).compression == "ZSTD"
    assert md.schema.to_arrow_schema().field("v1").metadata[b"PARQUET:field_id"] == b"1"
    st = table_stats(cat.load_table(zstd.table))
    assert st.codecs == ["ZSTD"] and st.data_files == zstd.files


def test_half_written_dataset_is_regenerated_and_complete_one_reused(tmp_path):
    cat, ds = _make(tmp_path)
    name = ds.table.split(".")[1]
    assert _make(tmp_path)[1].reused
    manifest_path(tmp_path, name).unlink()  # as if generation died before the manifest was written
    cat.load_table(ds.table).append(cat.load_table(ds.table).scan().to_arrow().slice(0, 5))
    _, again = _make(tmp_path)
    assert not again.reused and again.rows == ds.rows
    assert table_stats(cat.load_table(again.table)).rows == ds.rows


def test_reset_restores_snapshot_and_removes_new_files(tmp_path):
    cat, ds = _make(tmp_path)
    tbl = cat.load_table(ds.table)
    tbl.overwrite(tbl.scan().to_arrow())  # a "compaction" that writes a new file
    data_dir = Path(local_path(tbl.location())) / "data"
    assert len(list(data_dir.iterdir())) == ds.files + 1
    reset(cat, ds)
    assert cat.load_table(ds.table).current_snapshot().snapshot_id == ds.snapshot_id
    assert len(list(data_dir.iterdir())) == ds.files
