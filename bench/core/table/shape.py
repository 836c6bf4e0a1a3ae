"""A table's shape: the facts of its metadata that decide which edge cases it touches.  Format version (v1 or
v3: not the usual v2), partition transforms in use and whether the spec evolved, schema evolution across the
schema history (columns added, renamed, dropped, promoted), the types present at any depth, optional columns,
delete files by kind (position, deletion vectors, equality: multi-column keys, nullable keys, keys holding
nulls by the files' own null counts, scoped to a partition, keyed on a column renamed since), delete files beside
data files of an older spec, branches and tags, a sort order, names that need quoting, an empty or single-file
snapshot; ORC and Avro data files, a table upgraded in place from v1, a field added inside a struct, a wide table,
row lineage, a name mapping (files added without field ids), a target file size or codec set as table properties.

Each fact is a name of FACTS (with its meaning); `shape` returns the table's facts, each with a detail (which
columns, which spec).  scenarios/conformance/cases.yaml says, per conformance case, which facts it stands for
(`touches`), so a run on a user's table lists the cases its shape touches (datagen.conformance.touched).
Metadata and manifests only: no data file is read."""

from __future__ import annotations

import re

from pyiceberg.manifest import FileFormat
from pyiceberg.schema import Schema, index_by_id, index_name_by_id
from pyiceberg.table import Table
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import ancestors_of
from pyiceberg.types import IcebergType, NestedField

from bench.core.table.entries import LiveFiles, live_files

PRIMITIVE_TYPES = ("boolean", "int", "long", "float", "double", "decimal", "date", "time", "timestamp",
                   "timestamptz", "timestamp_ns", "timestamptz_ns", "string", "uuid", "fixed", "binary", "unknown")
NESTED_TYPES = ("struct", "list", "map", "variant", "geometry", "geography")
WIDE_COLUMNS = 256
TRANSFORMS = ("bucket", "truncate", "year", "month", "day", "hour", "void")
FACTS: dict[str, str] = {
    "format-v1": "format version 1",
    "format-v3": "format version 3",
    **{f"type-{t}": f"a column of type {t} (at any depth)" for t in PRIMITIVE_TYPES + NESTED_TYPES},
    "nullable-column": "an optional column (it may hold nulls)",
    **{f"partition-identity-{t}": f"an identity partition on a {t} column" for t in PRIMITIVE_TYPES},
    **{f"partition-{t}": f"a {t} partition transform in use" for t in TRANSFORMS},
    "partition-evolution": "more than one partition spec: the spec evolved",
    "column-added": "a column added after the first schema",
    "column-renamed": "a column renamed (the same field id under another name)",
    "column-dropped": "a column dropped from the schema",
    "column-promoted": "a column's type promoted (e.g. int to long, float to double)",
    "position-deletes": "position delete files (Parquet/Avro/ORC)",
    "deletion-vectors": "deletion vectors (position deletes in Puffin files, format v3)",
    "equality-deletes": "equality delete files",
    "equality-delete-multi-column": "an equality delete keyed on more than one column",
    "equality-delete-nullable-key": "an equality delete keyed on an optional column",
    "equality-delete-null-key": "an equality delete file whose null counts say a key column holds nulls",
    "equality-delete-partitioned": "an equality delete file scoped to a partition",
    "branch": "a branch other than main",
    "tag": "a tag",
    "sort-order": "a sort order",
    "names-need-quoting": "a column name that needs quoting in SQL (not lower-case [a-z0-9_], or a keyword)",
    "empty": "no live data file in the snapshot",
    "single-file": "one live data file in the snapshot",
    "name-mapping": "a name mapping (schema.name-mapping.default): files without field ids are read through it",
    "data-orc": "ORC data files",
    "data-avro": "Avro data files",
    "equality-delete-renamed-key": "an equality delete keyed on a column renamed since (same field id, another name)",
    "deletes-older-spec": "delete files live beside data files of an older partition spec",
    "format-upgraded": "a table upgraded in place from format v1 (data files of sequence number 0 in a v2+ table)",
    "nested-field-added": "a field added inside a struct after the first schema",
    "wide": f"a wide table: at least {WIDE_COLUMNS} columns (at any depth)",
    "row-lineage": "row lineage (format v3: rows carry _row_id and _last_updated_sequence_number)",
    "property-target-file-size": "a target file size set as a table property (write.target-file-size-bytes)",
    "property-codec": "a Parquet codec set as a table property (write.parquet.compression-codec)",
    "detached-snapshot": "a snapshot that no ref's history reaches (a rollback, a dropped branch or tag, or a staged "
                         "write-audit-publish write, published by cherry-pick or not, left it)",
    "statistics-file": "a statistics file (Puffin) in the table's metadata: expiry and orphan removal must keep it "
                       "while its snapshot is kept",
}
PLAIN_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
KEYWORDS = frozenset((
    "all", "and", "as", "asc", "by", "case", "create", "delete", "desc", "distinct", "drop", "from", "group", "having",
    "in", "insert", "into", "is", "join", "limit", "not", "null", "on", "or", "order", "select", "set", "table", "to",
    "union", "update", "values", "where", "with"))


def detached_snapshots(md: TableMetadata) -> list[int]:
    """The snapshots listed that are in no ref's history (each ref's head and its ancestors), in metadata order."""
    reached = {s.snapshot_id for ref in md.refs.values() for s in ancestors_of(md.snapshot_by_id(ref.snapshot_id), md)}
    return [s.snapshot_id for s in md.snapshots if s.snapshot_id not in reached]


def type_name(t: IcebergType | object) -> str:
    """Iceberg's name of a type or transform without its parameters: decimal(10, 2) -> decimal, list<long> -> list,
    bucket[4] -> bucket."""
    m = re.match(r"[a-z_]+", str(t))
    return m.group() if m else str(t)


def _fields(schema: Schema) -> dict[int, NestedField]:
    return index_by_id(schema)


def _add(out: dict[str, list[str]], fact: str, detail: str) -> None:
    assert fact in FACTS, fact
    got = out.setdefault(fact, [])
    if detail and detail not in got:
        got.append(detail)


def _type_facts(tbl: Table, out: dict[str, list[str]]) -> None:
    names = index_name_by_id(tbl.schema())
    for fid, f in _fields(tbl.schema()).items():
        name = type_name(f.field_type)
        if f"type-{name}" in FACTS:
            _add(out, f"type-{name}", names.get(fid, f.name))
        if not f.required:
            _add(out, "nullable-column", names.get(fid, f.name))
        if not PLAIN_NAME.match(f.name) or f.name in KEYWORDS:
            _add(out, "names-need-quoting", names.get(fid, f.name))


def _schema_evolution(tbl: Table, out: dict[str, list[str]]) -> None:
    """Consecutive schemas of the history compared by field id."""
    schemas = sorted(tbl.metadata.schemas, key=lambda s: s.schema_id)
    for old, new in zip(schemas, schemas[1:], strict=False):
        a, b = _fields(old), _fields(new)
        na, nb = index_name_by_id(old), index_name_by_id(new)
        for fid in sorted(b.keys() - a.keys()):
            _add(out, "column-added", nb[fid])
            if "." in nb[fid] and nb[fid].rsplit(".", 1)[0] in na.values():  # inside a struct that was there
                _add(out, "nested-field-added", nb[fid])
        for fid in sorted(a.keys() - b.keys()):
            _add(out, "column-dropped", na[fid])
        for fid in sorted(a.keys() & b.keys()):
            if a[fid].name != b[fid].name:
                _add(out, "column-renamed", f"{na[fid]} -> {nb[fid]}")
            ta, tb = a[fid].field_type, b[fid].field_type
            if ta.is_primitive and tb.is_primitive and ta != tb:
                _add(out, "column-promoted", f"{nb[fid]}: {ta} -> {tb}")


def _partition_facts(tbl: Table, files: LiveFiles, out: dict[str, list[str]]) -> None:
    """The transforms of the specs in use (the default spec and every live file's), and spec evolution."""
    specs = tbl.specs()
    if len(specs) > 1:
        _add(out, "partition-evolution", f"{len(specs)} specs")
    fields: dict[int, NestedField] = {}
    for s in sorted(tbl.metadata.schemas, key=lambda s: s.schema_id):  # a source column may have been dropped
        fields.update(_fields(s))
    for sid in sorted({tbl.spec().spec_id} | {e.data_file.spec_id for e in files.all}):
        spec = specs.get(sid)
        for pf in spec.fields if spec is not None else []:
            kind = type_name(pf.transform)  # bucket[4] -> bucket
            src = fields.get(pf.source_id)
            if kind == "identity" and src is not None:
                _add(out, f"partition-identity-{type_name(src.field_type)}", src.name)
            elif f"partition-{kind}" in FACTS:
                _add(out, f"partition-{kind}", f"{pf.transform}({src.name if src else pf.source_id})")


def _renamed_ids(tbl: Table) -> dict[int, str]:
    """{field id: "old -> new"} of the fields whose name changed across the schema history."""
    names: dict[int, list[str]] = {}
    for s in sorted(tbl.metadata.schemas, key=lambda s: s.schema_id):
        for fid, name in index_name_by_id(s).items():
            if name not in names.setdefault(fid, []):
                names[fid].append(name)
    return {fid: " -> ".join(v) for fid, v in names.items() if len(v) > 1}


def _file_facts(tbl: Table, files: LiveFiles, out: dict[str, list[str]]) -> None:
    """Data file formats, deletes beside files of an older spec, v1 files in an upgraded table, row lineage,
    name mapping and write properties."""
    for e in files.data:
        fmt = e.data_file.file_format
        if fmt in (FileFormat.ORC, FileFormat.AVRO):
            _add(out, f"data-{fmt.value.lower()}", "")
    current = tbl.spec().spec_id
    if files.deletes and any(e.data_file.spec_id != current for e in files.data):
        _add(out, "deletes-older-spec", f"spec {current} is current")
    if tbl.metadata.format_version >= 2 and any(e.sequence_number == 0 for e in files.data):
        _add(out, "format-upgraded", "")
    if tbl.metadata.format_version >= 3 and getattr(tbl.metadata, "next_row_id", None):
        _add(out, "row-lineage", f"next-row-id {getattr(tbl.metadata, 'next_row_id', None)}")
    props = tbl.properties
    if "schema.name-mapping.default" in props:
        _add(out, "name-mapping", "")
    if "write.target-file-size-bytes" in props:
        _add(out, "property-target-file-size", props["write.target-file-size-bytes"])
    if "write.parquet.compression-codec" in props:
        _add(out, "property-codec", props["write.parquet.compression-codec"])


def _delete_facts(tbl: Table, files: LiveFiles, out: dict[str, list[str]]) -> None:
    renamed = _renamed_ids(tbl)
    for e in files.position:
        _add(out, "deletion-vectors" if e.data_file.file_format == FileFormat.PUFFIN else "position-deletes", "")
    fields, names = _fields(tbl.schema()), index_name_by_id(tbl.schema())
    for e in files.equality:
        df = e.data_file
        ids = list(df.equality_ids or [])
        keys = [names.get(i, str(i)) for i in ids]
        _add(out, "equality-deletes", ", ".join(keys))
        if len(ids) > 1:
            _add(out, "equality-delete-multi-column", ", ".join(keys))
        for i, key in zip(ids, keys, strict=True):
            if i in fields and not fields[i].required:
                _add(out, "equality-delete-nullable-key", key)
            if (df.null_value_counts or {}).get(i, 0) > 0:
                _add(out, "equality-delete-null-key", key)
            if i in renamed:
                _add(out, "equality-delete-renamed-key", renamed[i])
        if df.partition is not None and len(df.partition) > 0:
            _add(out, "equality-delete-partitioned", "")


def shape(tbl: Table, snapshot_id: int | None = None) -> dict[str, str]:
    """The table's shape facts at the snapshot (default: the current one), each with its detail ("" when
    there is nothing to add), in FACTS' order."""
    snap = tbl.snapshot_by_id(snapshot_id) if snapshot_id is not None else tbl.current_snapshot()
    files = live_files(tbl, snap.snapshot_id) if snap is not None else LiveFiles()
    out: dict[str, list[str]] = {}
    if tbl.metadata.format_version != 2:
        _add(out, f"format-v{tbl.metadata.format_version}", "")
    _type_facts(tbl, out)
    _schema_evolution(tbl, out)
    _partition_facts(tbl, files, out)
    _delete_facts(tbl, files, out)
    _file_facts(tbl, files, out)
    if len(_fields(tbl.schema())) >= WIDE_COLUMNS:
        _add(out, "wide", f"{len(_fields(tbl.schema()))} columns")
    for name, ref in tbl.metadata.refs.items():
        if ref.snapshot_ref_type == SnapshotRefType.TAG:
            _add(out, "tag", name)
        elif name != "main":
            _add(out, "branch", name)
    detached = detached_snapshots(tbl.metadata)
    if detached:
        _add(out, "detached-snapshot", ", ".join(map(str, detached[:3])))
    if tbl.metadata.statistics:
        _add(out, "statistics-file", ", ".join(sorted({str(s.snapshot_id) for s in tbl.metadata.statistics})))
    if not tbl.sort_order().is_unsorted:
        _add(out, "sort-order", str(tbl.sort_order()).replace("\n", " ").strip())
    if len(files.data) <= 1:
        _add(out, "empty" if not files.data else "single-file", "")
    return {f: ", ".join(out[f]) for f in FACTS if f in out}


__all__ = ["FACTS", "detached_snapshots", "shape", "type_name"]
