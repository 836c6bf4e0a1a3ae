"""A table's shape facts (bench.core.table.shape) and the conformance cases they touch (datagen.conformance.touched,
scenarios/conformance/cases.yaml `touches`): small tables made with pyiceberg in a temporary SQLite catalog, and
hand-built delete-file entries (pyiceberg writes no equality delete).  No Spark, no JVM."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortField, SortOrder
from pyiceberg.transforms import BucketTransform, DayTransform, IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import (
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    UUIDType,
)

from bench.core.table.entries import LiveFiles
from bench.core.table.shape import FACTS, _delete_facts, shape
from datagen.conformance import Case, load_cases, touched


@pytest.fixture
def catalog(tmp_path):
    cat = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/lake")
    cat.create_namespace("ns")
    return cat


def _touched(facts: dict[str, str], maintenance: bool = False) -> list[str]:
    """The cases a table with these facts touches, in the suite's order: the compaction cases, or with
    `maintenance` the maintenance cases (their list grows with the suite: tests name those they rely on)."""
    cases = load_cases()
    ops = {c.name: c.operation.maintains for c in cases}
    return [t.case for t in touched(facts, cases)[0] if ops[t.case] == maintenance]


def test_every_case_stands_for_known_facts_and_unknown_ones_are_refused():
    cases = load_cases()
    assert all(c.touches and set(c.touches) <= set(FACTS) for c in cases)
    with pytest.raises(ValueError, match="unknown shape fact"):
        Case(name="x", covers=["x"], touches=["partition-identity-nothing"], columns="id BIGINT")
    with pytest.raises(ValueError):
        Case(name="x", covers=["x"], touches=[], columns="id BIGINT")


def test_a_plain_table_touches_its_types_nulls_refs_and_size(catalog):
    tbl = catalog.create_table("ns.plain", Schema(NestedField(1, "id", LongType(), required=True),
                                                  NestedField(2, "v", StringType(), required=False)))
    assert shape(tbl) == {"type-long": "id", "type-string": "v", "nullable-column": "v", "empty": ""}
    tbl.append(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", None]},
                        schema=tbl.schema().as_arrow()))
    snap = tbl.current_snapshot().snapshot_id
    tbl.manage_snapshots().create_tag(snap, "v1").create_branch(snap, "audit").commit()
    facts = shape(tbl)
    assert "single-file" in facts and "empty" not in facts and facts["tag"] == "v1" and facts["branch"] == "audit"
    assert _touched(facts) == ["primitive-types", "nan-and-nulls", "position-deletes-branch-tag",
                               "branch-compaction", "single-file"]
    # a tag and a branch: the expiry cases whose refs keep snapshots, and the manifest rewrite that keeps a tag
    assert {"expire-retain-last-keeps-tag", "expire-branch-head-older-than-cutoff",
            "expire-tag-and-branch-on-old-snapshots", "rewrite-manifests-keeps-tag"} <= set(_touched(facts, True))
    got = touched(facts, load_cases())[0]
    assert got[0].because == ["type-long: id", "type-string: v"] and got[0].covers[0] == "boolean"


def test_an_evolved_partitioned_sorted_table_with_refs_and_odd_names(catalog):
    schema = Schema(NestedField(1, "id", IntegerType(), required=True), NestedField(2, "f", FloatType()),
                    NestedField(3, "gone", StringType()), NestedField(4, "ts", TimestampType()),
                    NestedField(5, "With Space", StringType()),
                    NestedField(6, "st", StructType(NestedField(7, "u", UUIDType()),
                                                    NestedField(8, "fx", FixedType(4)))),
                    NestedField(9, "arr", ListType(10, LongType())))
    spec = PartitionSpec(PartitionField(4, 1000, DayTransform(), "ts_day"),
                         PartitionField(1, 1001, IdentityTransform(), "id_p"))
    tbl = catalog.create_table("ns.evolved", schema, partition_spec=spec,
                               sort_order=SortOrder(SortField(source_id=1, transform=IdentityTransform())))
    with tbl.update_schema() as u:
        u.add_column("extra", DoubleType())
        u.rename_column("f", "g")
        u.delete_column("gone")
        u.update_column("id", LongType())
    with tbl.update_spec() as s:
        s.add_field("id", BucketTransform(4), "id_bucket")
    facts = shape(tbl)  # no snapshot: the facts of its metadata, and empty
    assert facts["column-added"] == "extra" and facts["column-renamed"] == "f -> g"
    assert facts["column-dropped"] == "gone" and facts["column-promoted"] == "id: int -> long"
    assert facts["partition-identity-long"] == "id" and facts["partition-day"] == "day(ts)"
    assert facts["partition-bucket"] == "bucket[4](id)" and "partition-evolution" in facts
    assert "sort-order" in facts and "empty" in facts
    assert facts["names-need-quoting"] == "With Space" and facts["type-uuid"] == "st.u"
    assert {"type-fixed", "type-struct", "type-list"} <= facts.keys()
    cases, untested = touched(facts, load_cases())
    names = [t.case for t in cases]
    for case in ("add-column", "rename-column", "drop-column", "promote-column", "partition-evolution", "bucket",
                 "year-month-day-hour", "sort-order", "quoted-names", "nested-types", "empty-table"):
        assert case in names, (case, names)
    for case in ("uuid-fixed", "identity-long", "nested-struct-evolution"):  # cases of real tables' shapes
        assert case in names, (case, names)
    assert not {"type-uuid", "type-fixed", "partition-identity-long"} & set(untested)
    assert set(untested) <= {f"type-{t}" for t in ("timestamp_ns", "timestamptz_ns", "unknown", "variant", "geometry",
                                                   "geography")} | {"partition-identity-uuid"}, untested


def _entry(content: DataFileContent, fmt: FileFormat = FileFormat.PARQUET, **kw) -> ManifestEntry:
    df = DataFile.from_args(content=content, file_path="x", file_format=fmt, record_count=1, file_size_in_bytes=1,
                            spec_id=0, **kw)
    return ManifestEntry.from_args(data_file=df)


def test_delete_files_by_kind(catalog):
    tbl = catalog.create_table("ns.deletes", Schema(NestedField(1, "k", LongType(), required=False),
                                                    NestedField(2, "k2", StringType(), required=True)))
    files = LiveFiles(position=[_entry(DataFileContent.POSITION_DELETES, partition=Record()),
                                _entry(DataFileContent.POSITION_DELETES, FileFormat.PUFFIN, partition=Record())],
                      equality=[_entry(DataFileContent.EQUALITY_DELETES, equality_ids=[1, 2], partition=Record(3),
                                       null_value_counts={1: 1, 2: 0})])
    out: dict[str, list[str]] = {}
    _delete_facts(tbl, files, out)
    assert out == {"position-deletes": [], "deletion-vectors": [], "equality-deletes": ["k, k2"],
                   "equality-delete-multi-column": ["k, k2"], "equality-delete-nullable-key": ["k"],
                   "equality-delete-null-key": ["k"], "equality-delete-partitioned": []}
    facts = {f: ", ".join(v) for f, v in out.items()}
    assert _touched(facts) == ["equality-delete-null-key", "equality-delete-multi-column", "equality-delete-sequence",
                               "equality-delete-partition-scoped", "position-deletes-branch-tag", "branch-compaction",
                               "format-v3-deletion-vectors", "position-deletes-older-spec", "format-v1-upgraded",
                               "nested-struct-evolution-deletes", "concurrent-equality-delete",
                               "concurrent-position-delete", "concurrent-append"]
    assert {"expire-keeps-equality-delete-applying", "rewrite-manifests-keeps-deletes-applying"} <= set(
        _touched(facts, True))
    only = {"equality-deletes": "k2"}  # a single required key, unpartitioned: the sequence and concurrent cases alone
    assert _touched(only) == ["equality-delete-sequence", "concurrent-equality-delete"]
