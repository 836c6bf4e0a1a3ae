"""Datagen: determinism, the scale rule, codecs, the generator's ground truth, the manifest written
last, and the byte-for-byte restore every engine run starts from."""

import hashlib
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.dataset import manifest_path
from bench.core.table.state import fingerprint, list_files, restore
from bench.core.uri import local_path
from bench.scenario import load_scenario
from bench.verify.stats import table_stats
from datagen import smallfiles
from datagen.dataset import prepare
from datagen.recipes import DeletesRecipe, SmallFilesRecipe

SCALE = 0.00005


def _recipe(name="bin-packing"):
    return load_scenario(name).table


def _make(tmp: Path, seed=42, recipe=None, scale=SCALE):
    settings = CatalogSettings(warehouse=str(tmp))
    cat = load_sql_catalog(settings)
    return cat, prepare(cat, settings, recipe or _recipe(), scale, seed, workers=2)


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
    assert c.table != a.table and c.ground_truth.checksum != a.ground_truth.checksum


def test_small_files_ground_truth_is_the_generators_own_checksum(tmp_path):
    """The ground truth comes from the generated rows (never read back) and equals what a reader of
    the table sees: the before side is not read by the same code as the after side."""
    cat, ds = _make(tmp_path)
    gt = ds.ground_truth
    assert gt.rows == ds.rows and gt.checksum not in ("", "0") and "generator" in gt.computed_by
    st = table_stats(cat.load_table(ds.table))
    assert (st.rows, st.checksum) == (gt.rows, gt.checksum)


def test_scale_rule_sizes_and_floor():
    r = _recipe()
    assert smallfiles.file_count(r.files, 1.0, r.min_files) == 17_358
    assert smallfiles.file_count(r.files, 0.005, r.min_files) == 87
    assert smallfiles.file_count(r.files, 0.00001, r.min_files) == 16  # the floor
    plans = smallfiles.plan_files(r.files, r.total_bytes, 0.005, r.min_files, 42)
    rows = [p.rows for p in plans]
    assert len(plans) == 87 and max(rows) > 2 * min(rows)  # a realistic spread, not uniform files
    keys = [(p.key_offset, p.key_offset + p.rows) for p in plans]
    assert all(a[1] == b[0] for a, b in zip(keys, keys[1:]))  # unique keys across files


def test_recipes_are_a_union_by_kind_validated_on_load():
    assert isinstance(_recipe("bin-packing"), SmallFilesRecipe)
    assert isinstance(_recipe("deletes-high"), DeletesRecipe)
    with pytest.raises(ValidationError, match="at most one delete file"):
        DeletesRecipe(data_files=10, position_delete_files=11)
    with pytest.raises(ValidationError):
        SmallFilesRecipe(files=10, data_files=3)  # a deletes parameter on a small-file table


def test_bytes_and_codec_follow_the_recipe(tmp_path):
    _, plain = _make(tmp_path, recipe=_recipe("bin-packing"), scale=0.0002)
    cat, zstd = _make(tmp_path, recipe=_recipe("bin-packing-zstd"), scale=0.0002)
    assert abs(plain.bytes - 193e9 * 0.0002) / (193e9 * 0.0002) < 0.05
    assert zstd.rows == plain.rows and zstd.bytes < plain.bytes / 1.5
    assert zstd.ground_truth.checksum == plain.ground_truth.checksum  # the same rows, other bytes
    md = pq.ParquetFile(local_path(zstd.live_files[0])).metadata
    assert md.row_group(0).column(0).compression == "ZSTD"
    assert md.schema.to_arrow_schema().field("v1").metadata[b"PARQUET:field_id"] == b"1"
    st = table_stats(cat.load_table(zstd.table))
    assert st.codecs == ["zstd"] and st.data_files == zstd.files
    assert st.uncompressed_bytes > zstd.bytes  # the logical size is larger than the compressed files


def test_half_written_dataset_is_regenerated_and_complete_one_reused(tmp_path):
    cat, ds = _make(tmp_path)
    name = ds.table.split(".")[1]
    assert _make(tmp_path)[1].reused
    manifest_path(tmp_path, name).unlink()  # as if generation died before the manifest was written
    cat.load_table(ds.table).append(cat.load_table(ds.table).scan().to_arrow().slice(0, 5))
    _, again = _make(tmp_path)
    assert not again.reused and again.rows == ds.rows
    assert table_stats(cat.load_table(again.table)).rows == ds.rows


def test_restore_gives_the_dataset_back_byte_for_byte(tmp_path):
    cat, ds = _make(tmp_path)
    before = fingerprint(list_files(ds.location), ds.metadata_location)
    tbl = cat.load_table(ds.table)
    tbl.overwrite(tbl.scan().to_arrow())  # a "compaction": a new data file, manifests, metadata
    changed = list_files(ds.location)
    assert len(changed) > len(ds.table_files)
    assert cat.load_table(ds.table).metadata_location != ds.metadata_location
    deleted, _, after = restore(cat, ds.table, ds.metadata_location, ds.location, ds.table_files)
    assert deleted == len(changed) - len(ds.table_files)
    assert after == ds.table_files and list_files(ds.location) == ds.table_files
    tbl = cat.load_table(ds.table)
    assert tbl.metadata_location == ds.metadata_location and tbl.current_snapshot().snapshot_id == ds.snapshot_id
    assert fingerprint(after, tbl.metadata_location) == before
    # a damaged dataset (a file changed in place) is refused, never compacted as if it were the input
    victim = Path(local_path(ds.live_files[0]))
    victim.write_bytes(victim.read_bytes() + b"x")
    with pytest.raises(RuntimeError, match="missing or changed"):
        restore(cat, ds.table, ds.metadata_location, ds.location, ds.table_files)


def test_pooled_row_hashes_equal_duckdbs_hash_and_fall_back_when_not(monkeypatch):
    """The generator hashes each pooled value once and combines the hashes in numpy: the result must be
    DuckDB's own hash(); when a process's first file disagrees, DuckDB hashes every file instead."""
    import numpy as np

    from bench.core.checksum import arrow_checksum, exact_sum
    from datagen import schema

    pools = schema.pools_for(42)
    monkeypatch.setattr(schema, "_FAST_HASH_CHECKED", {})
    for i, (n, off) in enumerate([(1000, 0), (1_100_000, 5)]):  # the second wraps around the pools
        rows = schema.make_rows(pools, 42, i, n, off)
        assert exact_sum(schema.row_hashes(pools, 42, i, n, off, rows)) == arrow_checksum(rows)[1]
    assert {(os.getpid(), False): True} == schema._FAST_HASH_CHECKED
    monkeypatch.setattr(schema, "_FAST_HASH_CHECKED", {})
    monkeypatch.setattr(schema, "int_hashes", lambda v: np.zeros(len(v), dtype=np.uint64))  # a wrong hash
    rows = schema.make_rows(pools, 42, 7, 500, 0)
    assert exact_sum(schema.row_hashes(pools, 42, 7, 500, 0, rows)) == arrow_checksum(rows)[1]
    assert {(os.getpid(), False): False} == schema._FAST_HASH_CHECKED  # every later file: DuckDB's own hash
    rows = schema.make_rows(pools, 42, 8, 500, 0)
    assert exact_sum(schema.row_hashes(pools, 42, 8, 500, 0, rows)) == arrow_checksum(rows)[1]


def test_restore_survives_commits_that_delete_old_metadata(tmp_path):
    """A table whose commits delete old metadata versions (write.metadata.delete-after-commit, as the
    deletes datagen sets): the dataset keeps only what its current metadata needs, so an engine's commit
    cannot take a dataset file with it, and the restore still finds every one."""
    import pyarrow as pa

    from bench.core.table.state import prune_metadata, vault

    settings = CatalogSettings(warehouse=str(tmp_path))
    cat = load_sql_catalog(settings)
    cat.create_namespace("bench")
    tbl = cat.create_table("bench.t", pa.schema([("a", pa.int64())]), properties={
        "format-version": "2", "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": "1"})
    for i in range(4):
        tbl.append(pa.table({"a": [i]}))
    tbl = cat.load_table("bench.t")
    old = [r for r in list_files(tbl.location()) if r.endswith(".metadata.json")]
    deleted = prune_metadata(tbl)
    assert deleted and all(d.endswith(".metadata.json") for d in deleted)
    kept = list_files(tbl.location())
    assert [r for r in kept if r.endswith(".metadata.json")] == [_rel(tbl.metadata_location)]
    assert len(old) > 1 and cat.load_table("bench.t").scan().to_arrow().num_rows == 4  # still readable
    location, meta = tbl.location(), tbl.metadata_location
    spare = tmp_path / "spare"
    assert vault(location, kept, spare) == len(kept)
    for i in range(3):  # an "engine" committing: each commit deletes the oldest metadata version...
        tbl.append(pa.table({"a": [10 + i]}))
    assert _rel(meta) not in list_files(location)  # ...the dataset's own metadata file too, by now
    _, _, after = restore(cat, "bench.t", meta, location, kept, spare)  # put back from the spare copy
    assert after == kept and cat.load_table("bench.t").scan().to_arrow().num_rows == 4
    with pytest.raises(RuntimeError, match="missing or changed"):  # without a spare: damaged, said so
        for i in range(3):
            cat.load_table("bench.t").append(pa.table({"a": [20 + i]}))
        restore(cat, "bench.t", meta, location, kept)


def _rel(metadata_location: str) -> str:
    return "metadata/" + metadata_location.rsplit("/", 1)[-1]


def test_the_vault_gives_back_what_an_expiry_deleted_and_refuses_a_file_changed_in_place(tmp_path):
    """Nothing a run does may destroy what the next run restores from: an engine's snapshot expiry deletes
    dataset files (data and metadata); the restore puts each back from the vault (hard links: the same
    bytes, no copy), and a vaulted file written in place (same size) is refused, never restored as if it
    were the dataset's."""
    import pyarrow as pa

    from bench.core.table.state import vault

    settings = CatalogSettings(warehouse=str(tmp_path / "wh"))
    cat = load_sql_catalog(settings)
    cat.create_namespace("bench")
    tbl = cat.create_table("bench.t", pa.schema([("a", pa.int64())]), properties={"format-version": "2"})
    for i in range(3):
        tbl.append(pa.table({"a": [i]}))
    tbl = cat.load_table("bench.t")
    location, meta, files = tbl.location(), tbl.metadata_location, list_files(tbl.location())
    digests = {rel: _sha(Path(local_path(location)) / rel) for rel in files}
    spare = tmp_path / "vault"
    assert vault(location, files, spare) == len(files) and vault(location, files, spare) == 0  # once
    root = Path(local_path(location))
    assert all(os.path.samefile(root / rel, spare / rel) for rel in files)  # links, not copies
    tbl.overwrite(pa.table({"a": [7]}))  # a "compaction", then an "expiry" deleting what it made unreachable
    gone = [rel for rel in files if rel.startswith("data/") or rel.endswith(".avro")]
    for rel in gone:
        (root / rel).unlink()
    _, put_back, after = restore(cat, "bench.t", meta, location, files, spare)
    assert put_back == len(gone) and after == files and {rel: _sha(root / rel) for rel in files} == digests
    assert sorted(cat.load_table("bench.t").scan().to_arrow()["a"].to_pylist()) == [0, 1, 2]
    victim = root / gone[0]  # the same size, other bytes, written in place: the vault's link sees it too
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    with open(victim, "r+b") as f:
        f.write(bytes(data))
    os.utime(victim, ns=(victim.stat().st_atime_ns, victim.stat().st_mtime_ns + 1_000_000))
    victim.unlink()
    with pytest.raises(RuntimeError, match="changed in place"):
        restore(cat, "bench.t", meta, location, files, spare)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
