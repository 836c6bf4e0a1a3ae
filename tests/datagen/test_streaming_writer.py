"""The streaming CDC writer on its own (datagen.streaming): what each micro-batch holds (StreamShape), that its
plan is a function of (seed, commit index) and its own state, and that the table after its commits is what the generator
expects, read back by an independent reader.  Tiny: the base table of streaming-cdc at the test scale, a few
commits of 200 rows, one JVM for the module's commits (the writer's own, as in a run)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.scenario import load_scenario
from bench.verify.readers import read
from datagen.dataset import prepare
from datagen.queries import reads_plan
from datagen.recipes import DeletesRecipe
from datagen.streaming import STREAM_KEY_BASE, SUMMARY_KEY, StreamShape, StreamWriter
from tests.helpers import TINY

SHAPE = StreamShape(rows_per_commit=200, update_share=0.1, delete_share=0.05, in_batch_delete_share=0.1,
                    append_only_share=0.0)
COMMITS = 3


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """streaming-cdc's base table at the tiny scale, generated once, and its queries' truth."""
    wh = tmp_path_factory.mktemp("stream-wh")
    settings = CatalogSettings(warehouse=str(wh))
    cat = load_sql_catalog(settings)
    recipe = DeletesRecipe.model_validate(load_scenario("streaming-cdc").table.model_dump())
    ds = prepare(cat, settings, recipe, float(TINY), 42, workers=2)
    _, truth = reads_plan(ds)
    return {"settings": settings, "catalog": cat, "ds": ds, "truth": truth}


def writer(base, prefix: str = "t") -> StreamWriter:
    return StreamWriter(base["ds"], base["settings"], SHAPE, prefix, base["truth"])


@pytest.fixture(scope="module")
def committed(base):
    """COMMITS micro-batches committed to main by one writer (one JVM), with the table's expected state."""
    w = writer(base)
    with w:
        recs = [w.commit(i) for i in range(COMMITS)]
    return {"writer": w, "commits": recs, "expected": w.expected()}


def test_a_plan_is_deterministic_and_holds_the_shape(base):
    """No JVM: planning is pure.  The first batch appends (nothing of the writer's to update); the next ones
    update and delete the writer's own earlier rows by equality key and delete some of their own by position."""
    a, b = writer(base), writer(base)
    first = a.plan(0)
    assert first.append_only and first.equality_keys == [] and len(first.position_rows) == 0
    assert first.new_rows == first.data.num_rows == SHAPE.rows_per_commit
    keys = first.data.column("v2").to_numpy()
    assert keys.min() == STREAM_KEY_BASE and keys.max() == STREAM_KEY_BASE + SHAPE.rows_per_commit - 1
    assert first.data.equals(b.plan(0).data)  # the same seed and index: the same rows
    a._apply(first)
    assert len(a.live) == SHAPE.rows_per_commit and a.next_key == STREAM_KEY_BASE + SHAPE.rows_per_commit
    second = a.plan(1)
    assert not second.append_only
    assert second.updated == round(SHAPE.rows_per_commit * SHAPE.update_share) == 20
    assert second.deleted == round(SHAPE.rows_per_commit * SHAPE.delete_share) == 10
    assert second.new_rows + second.updated == SHAPE.rows_per_commit == second.data.num_rows
    assert len(second.position_rows) == round(second.new_rows * SHAPE.in_batch_delete_share)
    # the updated and deleted keys are the writer's live ones, each once; an update keeps its key
    eq = [k for _, k in second.equality_keys]
    assert len(eq) == len(set(eq)) == second.updated + second.deleted and set(eq) <= set(a.live)
    updated = second.data.column("v2").to_numpy()[second.new_rows:]
    assert set(updated.tolist()) == set(eq[:second.updated])
    # deleted for good: the equality-deleted keys not updated, and this batch's own rows deleted by position
    assert sorted(second.deleted_keys) == sorted(eq[second.updated:] + [
        int(second.data.column("v2")[int(i)].as_py()) for i in second.position_rows])
    rows_before = len(a.live)
    a._apply(second)
    assert len(a.live) == rows_before + second.new_rows - len(second.position_rows) - second.deleted


def test_commits_land_and_the_table_is_what_the_writer_expects(base, committed):
    recs, exp, w = committed["commits"], committed["expected"], committed["writer"]
    assert [r.index for r in recs] == list(range(COMMITS)) and all(r.landed and r.error is None for r in recs)
    assert len({r.snapshot_id for r in recs}) == COMMITS and all(r.attempts == 1 for r in recs)
    assert recs[0].append_only and recs[0].files == 1  # data only; later ones: data, position and equality files
    assert all(not r.append_only and r.files == 3 and r.rows_updated == 20 for r in recs[1:])
    assert all(r.rows_inserted == SHAPE.rows_per_commit and r.bytes > 0 for r in recs)
    # the expected state after each commit: the base table plus the writer's live rows, row count consistent
    gt = base["ds"].ground_truth
    added = [r.rows_inserted - r.rows_updated - r.rows_deleted for r in recs]  # new versions replace their rows
    assert [r.expected_rows for r in recs] == list(gt.rows + np.cumsum(added))
    assert exp.rows == recs[-1].expected_rows and exp.checksum == recs[-1].expected_checksum
    assert exp.checksum != str(gt.checksum)
    # the table read back by an independent reader (DuckDB, merge-on-read) is exactly that
    tbl = base["catalog"].load_table(base["ds"].table)
    snap = tbl.current_snapshot()
    assert snap.snapshot_id == recs[-1].snapshot_id and snap.summary[SUMMARY_KEY] == str(COMMITS - 1)
    got = read("duckdb-merge-on-read", tbl, None, base["settings"])
    assert got.content == (exp.rows, exp.checksum), got
    # the queries' answers: the full scan counts the rows; the key range is the first batch's keys still live
    assert exp.answers["full-scan"][0] == str(exp.rows)
    first_live = [k for k in w.live if k < STREAM_KEY_BASE + SHAPE.rows_per_commit]
    assert exp.answers["key-range"][0] == str(len(first_live))
    point = w.queries[2].lo
    assert exp.answers["point-lookup"][0] == ("1" if point in w.live else "0")
