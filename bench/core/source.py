"""A table the harness did not generate: its catalog, a zero-copy clone of one of its snapshots in the
harness's own catalog, and a fingerprint that proves the original unchanged.

The source is reached through pyiceberg's own `load_catalog(name, **properties)`, the properties read
from a YAML file with the keys of a `.pyiceberg.yaml` catalog entry (`type`, `uri`, `warehouse`, ...;
`${VAR}` is taken from the environment, where credentials belong).  The harness never writes through
that catalog: it only loads the table.

The clone is a new metadata file in the harness's warehouse, registered in its catalog: the source's
schemas, partition specs, sort orders and the chosen snapshot (its manifest list and manifests, hence
its data and delete files, stay where they are: nothing is copied), with its location in the harness's
warehouse (every file an engine writes lands there) and properties that turn garbage collection off,
so no expire or orphan removal can delete a file of the source through the clone.  Restoring the clone
lists, deletes and moves only files under the clone's location, which holds none of the source's files
(`check_disjoint`).
"""

from __future__ import annotations

import gzip
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict
from pyiceberg.table import Table
from pyiceberg.table.refs import SnapshotRef, SnapshotRefType

from bench.core.catalog.s3 import is_s3
from bench.core.errors import UserError
from bench.core.pin import SourceFingerprint, carried_refs, pin_source, under

# properties of the clone over the source's: no commit of an engine or the harness may delete a file
CLONE_PROPERTIES = {
    "gc.enabled": "false",  # Iceberg: expire_snapshots / remove_orphan_files refuse to delete files
    "write.metadata.delete-after-commit.enabled": "false",
    "bench.clone": "true",
}
# source properties that would send new files outside the clone's location
DROPPED_PROPERTIES = ("write.data.path", "write.metadata.path", "write.object-storage.path",
                      "write.folder-storage.path")


class SourceRef(BaseModel):
    """Which table, from which catalog file, at which snapshot (as the user named them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    catalog_file: str
    table: str
    snapshot_id: int | None = None


def catalog_properties(catalog_file: str) -> tuple[str, dict[str, str]]:
    """(catalog name, properties) from the YAML file: a mapping of pyiceberg catalog properties, or a
    `.pyiceberg.yaml` with one entry under `catalog:`.  `${VAR}` in values comes from the environment."""
    path = Path(catalog_file).expanduser()
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as e:
        raise UserError(f"--source-catalog {catalog_file}: cannot read it ({e.strerror or e})") from None
    except yaml.YAMLError as e:
        raise UserError(f"--source-catalog {catalog_file}: not YAML ({str(e).splitlines()[0]})") from None
    name = path.stem.lstrip(".") or "source"
    if isinstance(doc, dict) and set(doc) == {"catalog"} and isinstance(doc["catalog"], dict) \
            and len(doc["catalog"]) == 1:
        name, doc = next(iter(doc["catalog"].items()))
    if not isinstance(doc, dict) or not doc or not all(isinstance(v, str | int | float | bool) for v in doc.values()):
        raise UserError(f"--source-catalog {catalog_file}: expected a mapping of pyiceberg catalog properties "
                        "(type, uri, warehouse, ...), as in a .pyiceberg.yaml catalog entry")
    return str(name), {str(k): os.path.expandvars(str(v)) for k, v in doc.items()}


def load_source(ref: SourceRef) -> Table:
    """The source table, loaded read-only through its own catalog; UserError when it cannot be."""
    from pyiceberg.catalog import load_catalog

    name, props = catalog_properties(ref.catalog_file)
    sqlite = props.get("uri", "").removeprefix("sqlite:///") if props.get("uri", "").startswith("sqlite:///") else ""
    if sqlite and sqlite != ":memory:" and not Path(sqlite).is_file():
        # SQLAlchemy would create an empty catalog database there: a user's catalog is only ever read
        raise UserError(f"--source-catalog {ref.catalog_file}: its SQL catalog {sqlite} does not exist")
    try:
        catalog = load_catalog(name, **props)
    except Exception as e:  # noqa: BLE001 - any catalog's failure to start is the user's configuration
        raise UserError(f"--source-catalog {ref.catalog_file}: pyiceberg cannot load the catalog: "
                        f"{type(e).__name__}: {_first_line(e)}") from None
    if "." not in ref.table:
        raise UserError(f"--source-table {ref.table!r}: give NAMESPACE.TABLE")
    try:
        tbl = catalog.load_table(ref.table)
    except Exception as e:  # noqa: BLE001 - NoSuchTableError, or the catalog's own error
        raise UserError(f"--source-table {ref.table}: not found in {ref.catalog_file} "
                        f"({type(e).__name__}: {_first_line(e)})") from None
    snapshot(tbl, ref.snapshot_id, empty_ok=True)  # a bad snapshot id: UserError now
    return tbl


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else ""


def snapshot(tbl: Table, snapshot_id: int | None, empty_ok: bool = False) -> Any:
    """The snapshot to clone (default: the current one); UserError when there is none (`empty_ok`: None for a
    table without a snapshot, an empty table, which is cloned as it is)."""
    snap = tbl.snapshot_by_id(snapshot_id) if snapshot_id is not None else tbl.current_snapshot()
    if snap is None and snapshot_id is None and empty_ok:
        return None
    if snap is None:
        if snapshot_id is not None:
            ids = ", ".join(str(s.snapshot_id) for s in tbl.metadata.snapshots[-5:])
            raise UserError(f"--source-snapshot {snapshot_id}: not a snapshot of {'.'.join(tbl.name())} "
                            f"(latest: {ids or 'none'})")
        raise UserError(f"{'.'.join(tbl.name())} has no snapshot: an empty table has nothing to compact")
    return snap


def fingerprint_source(ref: SourceRef) -> SourceFingerprint:
    """The pin of the source (loaded afresh through its catalog) at the chosen snapshot (default: its current
    one): bench.core.pin.pin_source."""
    return pin_source(load_source(ref), ref.snapshot_id)


def check_storage(tbl: Table, warehouse: str) -> None:
    """The source and the harness's warehouse on the same kind of storage (both local, or both S3): the
    engines and readers reach the source's files with the warehouse's FileIO settings; UserError otherwise."""
    on_s3, remote = is_s3(tbl.location()), is_s3(warehouse)
    if on_s3 != remote:
        kind = "S3" if on_s3 else "a local file system"
        raise UserError(f"the source {'.'.join(tbl.name())} lives on {kind} ({tbl.location()}) but the warehouse "
                        f"{warehouse} does not: the engines read the source's files with the warehouse's storage "
                        f"settings; use {'an s3://bucket/prefix' if on_s3 else 'a local'} --warehouse")


def check_disjoint(clone_location: str, source_files: list[str]) -> None:
    """The clone's location holds none of the source's files (restoring the clone deletes whatever under
    its location it does not list); UserError otherwise."""
    inside = [p for p in source_files if under(p, clone_location)]
    if inside:
        raise UserError(f"the source's files lie under the clone's location {clone_location} (e.g. {inside[0]}): "
                        "use a --warehouse outside the source table's directory")


def clone_metadata(tbl: Table, snap: Any, location: str) -> Any:
    """The source's metadata with only `snap` as main (its manifests as they are; None: no snapshot, an empty
    table) and the source's other branches and tags with their snapshots (carried_refs), `location` as the table's
    location and garbage collection off: a new table that references the source's files in place.  No other
    snapshot of the source's history is copied."""
    md = tbl.metadata
    props = {k: v for k, v in md.properties.items() if k not in DROPPED_PROPERTIES} | CLONE_PROPERTIES
    carried = carried_refs(tbl, None if snap is None else snap.snapshot_id)
    refs = {} if snap is None else {"main": SnapshotRef(**{"snapshot-id": snap.snapshot_id,
                                                          "type": SnapshotRefType.BRANCH}), **carried}
    ids = {r.snapshot_id for r in refs.values()}
    update: dict[str, Any] = dict(
        location=location, table_uuid=uuid.uuid4(), last_updated_ms=int(time.time() * 1000), properties=props,
        snapshots=[s for s in md.snapshots if s.snapshot_id in ids],
        current_snapshot_id=None if snap is None else snap.snapshot_id,
        snapshot_log=[], metadata_log=[], refs=refs, statistics=[], partition_statistics=[])
    return md.model_copy(update={k: v for k, v in update.items() if k in type(md).model_fields})


def clone_metadata_v3(tbl: Table, snap: Any, location: str) -> bytes:
    """`clone_metadata` for format v3, whose metadata pyiceberg reads but cannot write: the source's metadata file
    as JSON, edited the same way (only `snap` as main and the carried refs' snapshots, `location`, a new uuid,
    garbage collection off); every other field stays as the source wrote it (row lineage: next-row-id and each
    snapshot's first-row-id, as the spec asks)."""
    with tbl.io.new_input(tbl.metadata_location).open() as f:
        raw = f.read()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    props = {k: v for k, v in (doc.get("properties") or {}).items() if k not in DROPPED_PROPERTIES} | CLONE_PROPERTIES
    sid = None if snap is None else snap.snapshot_id
    carried = carried_refs(tbl, sid)
    refs = {} if sid is None else {"main": {"snapshot-id": sid, "type": "branch"},
                                   **{n: (doc.get("refs") or {})[n] for n in carried}}
    ids = {r["snapshot-id"] for r in refs.values()}
    doc.update({"location": location, "table-uuid": str(uuid.uuid4()), "last-updated-ms": int(time.time() * 1000),
                "properties": props, "current-snapshot-id": -1 if sid is None else sid, "snapshot-log": [],
                "metadata-log": [], "snapshots": [x for x in doc.get("snapshots") or [] if x.get("snapshot-id") in ids],
                "refs": refs, "statistics": [], "partition-statistics": []})
    return json.dumps(doc, indent=2).encode()


def write_clone(catalog: Any, ident: str, tbl: Table, snap: Any, location: str,
                io_properties: dict[str, str]) -> str:
    """Write the clone's metadata file under `location` and register `ident` at it; returns its path."""
    from pyiceberg.io import load_file_io
    from pyiceberg.serializers import ToOutputFile

    path = f"{location.rstrip('/')}/metadata/00000-{uuid.uuid4()}.metadata.json"
    out = load_file_io(io_properties, location).new_output(path)
    if tbl.metadata.format_version >= 3:
        with out.create() as f:
            f.write(clone_metadata_v3(tbl, snap, location))
    else:
        ToOutputFile.table_metadata(clone_metadata(tbl, snap, location), out)
    catalog.register_table(ident, path)
    return path
