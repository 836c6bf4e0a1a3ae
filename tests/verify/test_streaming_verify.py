"""The streaming verifier on its own (bench.verify.streaming): measure_table against the table's own manifests,
and check_content's three verdicts (safe, unsafe with its evidence, inconclusive) against the generator's
ground truth.  Tiny: streaming-cdc's base table at the test scale (data, position and equality delete files),
generated once for the module; no engine, no writer."""

from __future__ import annotations

import pytest

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.records.live import CycleRecord
from bench.core.table.entries import live_files
from bench.scenario import load_scenario
from bench.verify import streaming
from bench.verify.streaming import check_content, measure_table
from datagen.dataset import prepare
from datagen.recipes import DeletesRecipe
from tests.helpers import TINY


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    wh = tmp_path_factory.mktemp("stream-verify-wh")
    settings = CatalogSettings(warehouse=str(wh))
    cat = load_sql_catalog(settings)
    recipe = DeletesRecipe.model_validate(load_scenario("streaming-cdc").table.model_dump())
    ds = prepare(cat, settings, recipe, float(TINY), 42, workers=2)
    return {"settings": settings, "tbl": cat.load_table(ds.table), "ds": ds}


def test_measure_table_counts_the_snapshots_live_files_and_metadata(base):
    tbl, ds = base["tbl"], base["ds"]
    rec = CycleRecord(cycle=1)
    measure_table(rec, tbl, ds.snapshot_id)
    files = live_files(tbl, ds.snapshot_id)
    pos = [e for e in files.deletes if e.data_file.content.name == "POSITION_DELETES"]
    t = rec.table
    assert t.snapshot_id == ds.snapshot_id and t.metadata_location == tbl.metadata_location
    assert (t.data_files, t.delete_files) == (len(files.data), len(files.deletes)) and t.data_files >= 8
    assert t.position_delete_files == len(pos) > 0 and t.equality_delete_files == len(files.deletes) - len(pos) > 0
    assert t.data_bytes + t.delete_bytes == ds.bytes  # the generator's own count of what it wrote
    snap = tbl.metadata.snapshot_by_id(ds.snapshot_id)
    manifests = snap.manifests(tbl.io)
    assert rec.manifests == len(manifests) > 0 and rec.snapshots == len(tbl.metadata.snapshots)
    assert rec.metadata_bytes > sum(m.manifest_length for m in manifests)  # plus the manifest list and metadata
    assert rec.planning_s is not None and rec.planning_s >= 0
    current = CycleRecord(cycle=1)
    measure_table(current, tbl, None)  # None: the current snapshot, the dataset's here
    assert current.table == t


def _cycle(ds, rows: int | None = None, checksum: str | None = None) -> CycleRecord:
    gt = ds.ground_truth
    return CycleRecord(cycle=2, expected_rows=gt.rows if rows is None else rows,
                       expected_checksum=str(gt.checksum) if checksum is None else checksum)


def test_check_content_is_safe_on_the_expected_table(base):
    rec = _cycle(base["ds"])
    check_content(rec, base["tbl"], base["ds"].snapshot_id, base["settings"], [], [])
    answered = [a for a in rec.readers if a.answered]
    assert [a.reader for a in rec.readers] == list(streaming.STREAM_READERS) and answered
    assert rec.verdict == "safe" and rec.content_ok and rec.evidence == {}
    assert (rec.table.rows, rec.table.checksum) == (rec.expected_rows, rec.expected_checksum)
    assert rec.table.content_reader == answered[0].reader


@pytest.mark.parametrize("change", ["rows", "checksum"])
def test_check_content_is_unsafe_when_the_table_differs(base, change):
    """A table other than the generator's (one row more expected, or another checksum): unsafe, with the row
    difference and the cycle's snapshots as evidence."""
    ds = base["ds"]
    rec = _cycle(ds, rows=ds.ground_truth.rows + 1) if change == "rows" else _cycle(ds, checksum="1")
    snaps = [{"snapshot_id": i, "who": "writer"} for i in range(25)]
    check_content(rec, base["tbl"], ds.snapshot_id, base["settings"], [1, 2], snaps)
    assert rec.verdict == "unsafe" and not rec.content_ok
    assert rec.evidence["row_difference"] == (-1 if change == "rows" else 0)
    assert rec.evidence["snapshots"] == snaps[-20:]  # the last 20 of the cycle's
    assert rec.table.rows == ds.ground_truth.rows  # what the reader did see


def test_check_content_is_inconclusive_when_no_reader_answers(base, monkeypatch):
    """DuckDB's iceberg reader alone, its work above the streaming limit: it does not read, so no verdict."""
    monkeypatch.setattr(streaming, "STREAM_READERS", ("duckdb-iceberg",))
    monkeypatch.setattr(streaming, "STREAM_DUCKDB_WORK", -1)
    rec = _cycle(base["ds"])
    check_content(rec, base["tbl"], base["ds"].snapshot_id, base["settings"], [], [])
    assert rec.verdict == "inconclusive" and not rec.content_ok
    assert len(rec.readers) == 1 and rec.readers[0].unavailable and not rec.readers[0].answered
    assert rec.table.rows == 0 and rec.table.checksum == ""  # nothing read


def test_cycle_integrity_holds_the_cycle_to_a_single_runs_checks(base):
    """A cycle's maintenance is held to a single run's integrity checks: the table as it was (identity, history)
    and its commits `replace`; a schema change, a maintenance `overwrite` and lost history each fail, lost history
    only advisory when the cycle expired snapshots."""
    from bench.verify.streaming import cycle_integrity

    tbl = base["tbl"]
    head = tbl.current_snapshot().snapshot_id
    same = cycle_integrity(tbl.metadata, tbl, "main", [{"snapshot_id": 1, "operation": "replace",
                                                        "who": "maintenance"}], expired=False)
    assert all(c.ok for c in same) and {c.name for c in same} >= {"same_schema", "history_kept",
                                                                     "commits_are_replace"}
    wrong = cycle_integrity(tbl.metadata, tbl, "main", [{"snapshot_id": 2, "operation": "overwrite",
                                                         "who": "maintenance"},
                                                        {"snapshot_id": 3, "operation": "append", "who": "writer"}],
                            expired=False)
    assert [c.name for c in wrong if not c.ok] == ["commits_are_replace"] and "2 overwrite" in wrong[-1].message
    older = tbl.metadata.model_copy(update={"snapshots": [*tbl.metadata.snapshots,
                                                          tbl.metadata.snapshot_by_id(head).model_copy(
                                                              update={"snapshot_id": 99})]})
    lost = {c.name: c for c in cycle_integrity(older, tbl, "main", [], expired=False)}
    assert not lost["history_kept"].ok and lost["history_kept"].required
    expired = {c.name: c for c in cycle_integrity(older, tbl, "main", [], expired=True)}
    assert not expired["history_kept"].ok and not expired["history_kept"].required
    assert not expired["input_is_ancestor"].required and expired["same_schema"].required
    evolved = tbl.metadata.model_copy(update={"current_schema_id": -1, "schemas": [
        s.model_copy(update={"schema_id": -1, "fields": s.fields[:-1]}) for s in tbl.metadata.schemas[-1:]]})
    assert not {c.name: c for c in cycle_integrity(evolved, tbl, "main", [], expired=False)}["same_schema"].ok
