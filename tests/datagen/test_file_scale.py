"""--file-scale: file counts of one scale, bytes and rows of another.  The default (file scale =
scale) is today's tables byte for byte: their recipe hashes and plans are pinned here, from before the
option existed."""

import hashlib

import pytest

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.errors import UserError
from bench.scenario import load_scenario
from bench.verify.stats import table_stats
from datagen import deletes
from datagen.dataset import prepare, recipe_hash, scales_of
from datagen.smallfiles import plan

# computed on main before --file-scale existed (commit 5e6042d): these tables must not change
PINNED = {("deletes-high", 0.005): "d564183e45d4", ("deletes-high", 0.002): "feaa248bdae1",
          ("bin-packing", 0.005): "691b1bebc549", ("bin-packing", 0.002): "0ae0ad1d6031",
          ("daily-smallfiles", 0.005): "34bbc118bbe9", ("deletes-massive", 0.002): "9cd2c58c059b"}


def test_todays_tables_keep_their_recipe_hashes_and_plans():
    for (name, scale), h in PINNED.items():
        assert recipe_hash(load_scenario(name).table, scale, 42) == h, (name, scale)
    p = deletes.plan(load_scenario("deletes-high").table, 0.002)
    got = (p.n, p.rows_per_file, p.position_files, p.equality_files, p.k_pos, p.k_eq)
    assert got == (40, 50000, 40, 40, 5000, 5000)
    files = plan(load_scenario("bin-packing").table, 0.002, 42)
    assert (len(files), sum(f.rows for f in files)) == (35, 2217396)
    assert hashlib.sha256(repr(files).encode()).hexdigest()[:12] == "d0afec3e624d"


def test_the_done_when_counts_hold_the_bytes_of_the_smaller_scale():
    """deletes-high --scale 0.002 --file-scale 0.02: 400 + 400 + 400 files holding scale 0.002's rows."""
    r = load_scenario("deletes-high").table
    plain, many = deletes.plan(r, 0.002), deletes.plan(r, 0.002, 0.02)
    assert (many.n, many.position_files, many.equality_files) == (400, 400, 400)
    assert many.n * many.rows_per_file == plain.n * plain.rows_per_file == 2_000_000
    assert deletes.plan(r, 0.002, 0.002) == plain  # equal scales: today's plan
    assert recipe_hash(r, 0.002, 42, 0.002) == recipe_hash(r, 0.002, 42) != recipe_hash(r, 0.002, 42, 0.02)
    with pytest.raises(UserError, match="less than one row"):
        deletes.plan(r, 0.00001, 1.0)
    # what `bench inspect deletes-high` says of such a table: the two scales it has
    assert scales_of(r, 400, 2_000_000, 0) == pytest.approx((0.002, 0.02))
    assert scales_of(load_scenario("bin-packing").table, 17_358, 0, 965_000_000) == pytest.approx((0.005, 1.0))


def test_counts_and_bytes_decouple_in_a_generated_table(tmp_path):
    """A small-file table at one byte scale and two file scales: more files, the same bytes and rows (within
    the calibration of bytes per row), each read back as the generator says."""
    settings = CatalogSettings(warehouse=str(tmp_path))
    cat = load_sql_catalog(settings)
    recipe = load_scenario("bin-packing").table
    few = prepare(cat, settings, recipe, 0.00005, 42, workers=2)
    many = prepare(cat, settings, recipe, 0.00005, 42, workers=2, file_scale=0.0025)
    assert (few.ground_truth.data_files, many.ground_truth.data_files) == (16, 43)
    assert many.file_scale == 0.0025 and few.file_scale is None and many.recipe_hash != few.recipe_hash
    assert abs(many.rows / few.rows - 1) < 0.05 and abs(many.bytes / few.bytes - 1) < 0.15
    st = table_stats(cat.load_table(many.table))
    assert (st.data_files, st.rows, st.checksum) == (43, many.rows, many.ground_truth.checksum)
