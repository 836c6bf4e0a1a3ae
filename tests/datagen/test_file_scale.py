"""--file-scale (issue 43): file counts of one scale, bytes and rows of another.  The default (file scale =
scale) is today's tables byte for byte: their recipe hashes and plans are pinned here, from before the
option existed."""

import hashlib

from bench.scenario import load_scenario
from datagen import deletes
from datagen.dataset import recipe_hash
from datagen.smallfiles import plan

# computed on main before --file-scale existed (commit 5e6042d): these tables must not change
PINNED = {("deletes-high", 0.005): "d564183e45d4", ("deletes-high", 0.002): "feaa248bdae1",
          ("bin-packing", 0.005): "691b1bebc549", ("bin-packing", 0.002): "0ae0ad1d6031",
          ("daily-smallfiles", 0.005): "34bbc118bbe9", ("deletes-massive", 0.002): "9cd2c58c059b"}


def test_todays_tables_keep_their_recipe_hashes_and_plans():
    for (name, scale), h in PINNED.items():
        assert recipe_hash(load_scenario(name).table, scale, 42) == h, (name, scale)
    p = deletes.plan(load_scenario("deletes-high").table, 0.002)
    assert (p.n, p.rows_per_file, p.position_files, p.equality_files, p.k_pos, p.k_eq) == (40, 50000, 40, 40, 5000, 5000)
    files = plan(load_scenario("bin-packing").table, 0.002, 42)
    assert (len(files), sum(f.rows for f in files)) == (35, 2217396)
    assert hashlib.sha256(repr(files).encode()).hexdigest()[:12] == "d0afec3e624d"
