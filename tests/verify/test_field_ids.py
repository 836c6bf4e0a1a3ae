"""The harness's Parquet readers resolve columns by field id (Iceberg's rule); a file without field ids is
read by name, and that answer is advisory where the schema history makes names ambiguous (a rename) - yet a wrong
output is still caught, by the readers that count."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.dataset import GroundTruth
from bench.core.records.verification import TableStats
from bench.verify.checks import VerifyInput, content_checks
from bench.verify.readers import read


@pytest.fixture()
def renamed(tmp_path):
    """A table (id, v) written by pyiceberg (field ids in its files), then v renamed to `a/b` and two rows added."""
    cat = load_sql_catalog(CatalogSettings(warehouse=str(tmp_path)))
    cat.create_namespace("ns")
    tbl = cat.create_table("ns.t", Schema(NestedField(1, "id", LongType()), NestedField(2, "v", StringType())))
    tbl.append(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    with tbl.update_schema() as u:
        u.rename_column("v", "a/b")
    tbl = cat.load_table("ns.t")
    tbl.append(pa.table({"id": pa.array([3], pa.int64()), "a/b": ["c"]}))
    return cat.load_table("ns.t"), tmp_path


def _answers(tbl):
    return {n: read(n, tbl, None, None) for n in ("duckdb-read-parquet", "pyiceberg-scan", "duckdb-merge-on-read")}


def test_the_parquet_readers_resolve_by_field_id_through_a_rename(renamed):
    tbl, _ = renamed
    a = _answers(tbl)
    assert a["pyiceberg-scan"].rows == 3
    for name in ("duckdb-read-parquet", "duckdb-merge-on-read"):  # by name they would read `a/b` NULL (or fail)
        assert a[name].resolves == "field id" and a[name].advisory is None, a[name]
        assert a[name].content == a["pyiceberg-scan"].content, a


def test_a_by_name_reader_is_advisory_after_a_rename_and_a_wrong_output_is_still_caught(renamed):
    tbl, tmp = renamed
    truth = GroundTruth(rows=3, checksum=str(read("pyiceberg-scan", tbl, None, None).checksum))
    # a file without field ids (another writer's, added to the table): the Parquet readers fall back to names; it
    # holds a row that is not in the input: a wrong output (a row came back)
    bare = tmp / "bare.parquet"
    pq.write_table(pa.table({"id": pa.array([2], pa.int64()), "a/b": ["b"]}), bare)
    tbl.add_files([str(bare)])
    a = _answers(tbl)
    by_name = a["duckdb-read-parquet"]
    assert by_name.resolves == "name" and by_name.advisory and "renamed" in by_name.advisory, by_name
    vi = VerifyInput(kind="binpack", table=tbl, before=TableStats(), before_paths=set(), ground_truth=truth,
                     target_file_size_bytes=1 << 20, small_file_threshold_bytes=1 << 20, output_codec="zstd",
                     answers=a)
    checks = {c.name: c for c in content_checks(vi)}
    advisory = checks["content_duckdb_read_parquet"]
    assert not advisory.required and "advisory" in advisory.message
    caught = checks["content_pyiceberg_scan"]  # field id (name mapping for the bare file): the row that came back
    assert caught.required and not caught.ok and "4 rows (+1)" in caught.message, caught


def test_the_reference_reader_decides_when_the_readers_disagree_on_an_output(renamed, monkeypatch):
    """Two readers that count disagree on an output: the reference reader (stubbed here: a JVM start is the
    conformance test's) reads it; the reader it overrules becomes advisory and a finding, and the output is
    judged by the reference: right when it equals the truth, wrong (a required check fails) when it does not."""
    import bench.verify.checks as checks
    from bench.core.records.verification import ReaderAnswer
    from bench.verify.reference import NAME as REFERENCE

    tbl, _ = renamed
    good = ReaderAnswer(reader="duckdb-merge-on-read", resolves="field id", rows=6, checksum="60")
    bad = ReaderAnswer(reader="duckdb-iceberg", resolves="catalog", rows=4, checksum="40")
    for ref_rows, ref_sum, verified in ((6, "60", True), (4, "40", False)):
        ref = ReaderAnswer(reader=REFERENCE, resolves="field id", rows=ref_rows, checksum=ref_sum)
        monkeypatch.setattr(checks, "read", lambda *a, ref=ref: ref)
        answers = {"duckdb-merge-on-read": good.model_copy(), "pyiceberg-scan": ReaderAnswer(
            reader="pyiceberg-scan", unavailable="equality deletes"), "duckdb-iceberg": bad.model_copy()}
        vi = VerifyInput(kind="deletes", table=tbl, before=TableStats(), before_paths=set(),
                         ground_truth=GroundTruth(rows=6, checksum="60"), target_file_size_bytes=1 << 20,
                         small_file_threshold_bytes=1 << 20, output_codec="zstd", answers=answers)
        found = checks.referee(vi, tbl)
        overruled = "duckdb-iceberg" if verified else "duckdb-merge-on-read"
        assert [f.reader for f in found] == [overruled] and vi.answers[overruled].advisory, found
        out = {c.name: c for c in checks.content_checks(vi)}
        assert out["content_iceberg_java"].required and out["content_iceberg_java"].ok is verified
        assert not out[f"content_{overruled.replace('-', '_')}"].required
        assert all(c.ok for c in out.values() if c.required) is verified, out
