"""A table with a sort order (datagen.smallfiles): its recipe, the scattered order its keys arrive in, the
reader queries' truth over those keys, and the verifier's order rule (bench.verify.sortorder)."""

import numpy as np
import pyarrow as pa
import pytest
from pydantic import ValidationError

from bench.verify.sortorder import files_per_probe, probes, rows_out_of_order
from datagen.dataset import recipe_hash
from datagen.queries import _Layout, choose_queries, query_truth
from datagen.recipes import SmallFilesRecipe, SortKey
from datagen.schema import make_rows, pools_for
from datagen.smallfiles import plan


def test_sort_keys_parse_and_bad_ones_are_named():
    assert SortKey.model_validate("v2").text() == "v2 asc nulls first"
    assert SortKey.model_validate("v2 desc").text() == "v2 desc nulls last"
    assert SortKey.model_validate("v1 asc nulls last").text() == "v1 asc nulls last"
    with pytest.raises(ValidationError, match="COLUMN"):
        SortKey.model_validate("v2 sideways")
    with pytest.raises(ValidationError, match="not a column"):
        SmallFilesRecipe(sort_order=["nope"])
    with pytest.raises(ValidationError, match="not a column"):  # event_date: partitioned tables only
        SmallFilesRecipe(sort_order=["event_date"])


def test_a_sort_order_is_another_dataset_and_none_keeps_the_old_hash():
    plain, sorted_ = SmallFilesRecipe(), SmallFilesRecipe(sort_order=["v2"])
    assert recipe_hash(plain, 0.001, 42) != recipe_hash(sorted_, 0.001, 42)
    assert "sort_order" not in plain.model_dump(exclude_none=True)
    assert recipe_hash(sorted_, 0.001, 42) != recipe_hash(SmallFilesRecipe(sort_order=["v2 desc"]), 0.001, 42)


def test_keys_are_unique_scattered_and_the_query_truth_follows_them():
    recipe = SmallFilesRecipe(sort_order=["v2"], min_files=6)
    plans = plan(recipe, 0.00002, 7)
    lay = _Layout(7, plans)
    tables = [make_rows(pools_for(7), 7, p.index, p.rows, p.key_offset, p.shape, p.keys) for p in plans]
    v2 = np.concatenate([t.column("v2").to_numpy() for t in tables])
    n = len(v2)
    assert sorted(v2.tolist()) == list(range(n))  # unique, 0 .. n-1
    for t in tables:  # unsorted across files: each file spans most of the key range
        keys = t.column("v2").to_numpy()
        assert keys.max() - keys.min() > 0.9 * n and not (np.diff(keys) > 0).all()
    queries = choose_queries(None, lay)
    truth = query_truth(None, queries, lay)
    whole = pa.concat_tables(tables)
    rng = next(q for q in queries if q.name == "key-range")
    mask = (v2 >= rng.lo) & (v2 <= rng.hi)
    quantity = whole.column("quantity").to_numpy()
    assert truth["key-range"] == [str(int(mask.sum())), str(int(quantity[mask].sum()))]
    assert truth["full-scan"] == [str(n), str(int(quantity.sum()))]


def test_rows_out_of_order_follows_direction_and_null_order():
    asc_first = [(pa.array([None, 1, 2, 2, 5]), True, True)]
    assert rows_out_of_order(asc_first) == 0
    assert rows_out_of_order([(pa.array([1, 2, None]), True, True)]) == 1  # a null after values: nulls first
    assert rows_out_of_order([(pa.array([1, 2, None]), True, False)]) == 0
    assert rows_out_of_order([(pa.array([5, 3, 3, None]), False, False)]) == 0
    # two keys: the second decides only where the first ties
    a, b = pa.array([1, 1, 2, 2]), pa.array([9, 3, 1, 2])
    assert rows_out_of_order([(a, True, True), (b, False, True)]) == 1  # (2, 1) -> (2, 2): b rises, desc
    assert rows_out_of_order([(a, True, True), (pa.array([9, 3, 2, 1]), False, True)]) == 0


def test_point_lookups_open_fewer_files_when_ranges_do_not_overlap():
    spread = [(0, 100), (1, 99), (2, 98)]
    apart = [(0, 33), (34, 66), (67, 100)]
    keys = probes(spread, apart)
    assert len(keys) == 64 and keys[0] == 0 and keys[-1] == 100
    assert files_per_probe(apart, keys) == 1.0
    assert files_per_probe(spread, keys) > 2.8
    assert files_per_probe([None, (0, 1)], [50]) == 1.0  # a file without bounds is always opened
