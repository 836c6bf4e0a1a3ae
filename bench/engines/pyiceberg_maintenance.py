"""`pyiceberg`: pyiceberg's own table maintenance, a maintenance-only engine (no compaction).

It runs on the harness's pyiceberg and reaches the table through the job's catalog: pyiceberg's REST client against
the REST catalog the job names (the harness's loopback server over its SQLite catalog, as every engine that commits
through REST), else pyiceberg's own SqlCatalog on the SQLite file.  What pyiceberg 0.12.0 offers and does not was
read from its source (`pyiceberg.table.maintenance`, `pyiceberg.table.update.snapshot`):

  * expire-snapshots: `table.maintenance.expire_snapshots()`, a builder with `by_id`, `by_ids` and `older_than(dt)`
    (every snapshot whose timestamp is before `dt`, except the heads of branches and tags), then `commit()`: one
    commit of a `remove-snapshots` update.  It deletes no file: the manifest lists, manifests, data and delete files
    only the expired snapshots reached stay on disk (a case that requires them gone is kept-garbage: its finding).
    The cutoff is the op's point in time to the millisecond (older_than takes a datetime).  It takes no
    retain_last and does not read history.expire.min-snapshots-to-keep: what it always keeps is every ref's head.
    So a retain_last of 1 is what it does anyway (main's newest snapshot is main's head), and an op without one is
    asked as pyiceberg's own rule; a retain_last above 1 is refused (RETAIN_LAST), not computed here into a list
    of ids or an earlier cutoff: that would be the harness's retention, not pyiceberg's.
  * remove-orphan-files, rewrite-manifests, rewrite-position-deletes, compaction (rewrite-data-files): pyiceberg
    0.12.0 has none of them (their reasons below, `not_supported`).
"""

from __future__ import annotations

import importlib.metadata
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from bench.core.catalog import load_sql_catalog
from bench.core.requirements import Requirement, module_requirement
from bench.engines.base import (
    REPRODUCER_REST_CATALOG,
    Capabilities,
    CompactionJob,
    Engine,
    EngineOutcome,
    MaintenanceOp,
    PhaseClock,
)

DISTRIBUTION = "pyiceberg"
DECLARED_FOR = "0.12.0"  # the release whose source the declarations below were read from
MAINTENANCE = "table.maintenance (MaintenanceTable) offers expire_snapshots only"
NO_REWRITE = (f"pyiceberg {DECLARED_FOR} has no data file rewrite: its Table writes with append, overwrite, delete, "
              "dynamic_partition_overwrite, upsert and add_files, each committing new data (a scan then an overwrite "
              f"would commit an overwrite snapshot, not a replace of the same rows), and {MAINTENANCE}")
REASONS = {
    "rewrite-data-files": NO_REWRITE,
    **{feature: f"it needs a data file rewrite, and {NO_REWRITE}"
       for feature in ("branch", "sort", "zorder", "partition-filter", "partition-filter-deletes")},
    "remove-orphan-files": (f"pyiceberg {DECLARED_FOR} has no orphan file removal: {MAINTENANCE}, and nothing in "
                            "the package lists a table's location against its metadata to delete what none references"),
    "rewrite-manifests": (f"pyiceberg {DECLARED_FOR} has no manifest rewrite: {MAINTENANCE}, and its snapshot updates "
                          "(fast_append, merge_append, overwrite, delete) merge manifests only while appending "
                          "(merge_append, commit.manifest-merge.enabled)"),
    "rewrite-manifests-branch": f"no manifest rewrite at all (see rewrite-manifests); {MAINTENANCE}",
    "rewrite-position-deletes": (f"pyiceberg {DECLARED_FOR} has no delete file rewrite: {MAINTENANCE}, and it writes "
                                 "no position-delete file at all (its delete() is copy-on-write: merge-on-read \"is "
                                 "not yet supported, falling back to copy-on-write\")"),
}
RETAIN_LAST = (f"retain_last {{n}} is not supported by pyiceberg {DECLARED_FOR}: its ExpireSnapshots builder takes "
               "by_id, by_ids and older_than only (no retain_last; it keeps every ref's head, so main's newest one)")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# A conformance reproducer's operation (Engine.reproducer): the table through pyiceberg's REST client against the
# harness's loopback server over the SQLite catalog, as the engine reaches it (pyiceberg's own SqlCatalog would refuse
# to write a v3 table's metadata), the operation pyiceberg's own builder
REPRODUCER = r'''
def operate(table, metadata_file, warehouse, op):
    import time
    from datetime import UTC, datetime, timedelta
    from pyiceberg.catalog.rest import RestCatalog

    if op["op"] != "expire_snapshots":
        from pyiceberg.table.maintenance import MaintenanceTable
        offered = sorted(n for n in dir(MaintenanceTable) if not n.startswith("_"))
        raise NotImplementedError(f"pyiceberg has no {op['op']}: table.maintenance offers {', '.join(offered)}")
    if (op["retain_last"] or 1) > 1:
        raise NotImplementedError("pyiceberg's ExpireSnapshots takes no retain_last (by_id, by_ids, older_than)")
    with rest_catalog(warehouse) as uri:
        tbl = RestCatalog("bench", uri=uri, warehouse=warehouse).load_table(table)
        ms = op["older_than_ms"] if op["older_than_ms"] is not None else int((time.time() - op["older_than_s"]) * 1000)
        cutoff = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
        before = {s.snapshot_id for s in tbl.metadata.snapshots}
        print(f"table.maintenance.expire_snapshots().older_than({cutoff.isoformat()}).commit()")
        tbl.maintenance.expire_snapshots().older_than(cutoff).commit()
        gone = sorted(before - {s.snapshot_id for s in tbl.metadata.snapshots})
    return tbl.metadata_location, {"expired_snapshot_ids": gone}
'''


class NotSupported(RuntimeError):
    """What pyiceberg cannot be asked (its message matches the engine's refusal_pattern)."""


def cutoff(op: MaintenanceOp) -> datetime:
    """The op's cutoff (MaintenanceOp.cutoff_unix) as the datetime older_than takes, to the millisecond."""
    return EPOCH + timedelta(milliseconds=round(op.cutoff_unix() * 1000))


class PyicebergEngine(Engine):
    name: ClassVar[str] = "pyiceberg"
    description: ClassVar[str] = (f"pyiceberg's own maintenance (expire_snapshots; metadata only, no file deleted), "
                                  f"maintenance only: pyiceberg {DECLARED_FOR} has no compaction, orphan removal, "
                                  "manifest or delete rewrite")
    color: ClassVar[str] = "#E3A21A"
    packages: ClassVar[tuple[str, ...]] = (DISTRIBUTION,)
    reproducer: ClassVar[str] = REPRODUCER_REST_CATALOG + REPRODUCER
    refusal_pattern: ClassVar[str] = r"[Nn]ot (yet )?supported"  # RETAIN_LAST; pyiceberg's "... is not yet supported"
    # format-v3: over REST the server writes the metadata; pyiceberg applies v3 updates by the spec's rules
    # (bench.core.catalog.v3); its own SqlCatalog refuses to write v3 metadata ("Writing V3 is not yet supported")
    capabilities: ClassVar[Capabilities] = Capabilities(
        commits_through_rest=True, supports=frozenset({"expire-snapshots", "format-v3"}), not_supported=REASONS)

    def __init__(self) -> None:
        self._catalog: Any = None
        self._how = ""

    def requirements(self) -> list[Requirement]:
        try:
            found: str | None = importlib.metadata.version(DISTRIBUTION)
        except importlib.metadata.PackageNotFoundError:
            found = None
        return [module_requirement("pyiceberg", "make setup"),
                Requirement(f"{DISTRIBUTION} {DECLARED_FOR} (what its capabilities were declared from)",
                            found == DECLARED_FOR, f"found {found}" if found else "not installed",
                            f"check bench/engines/pyiceberg_maintenance.py's declarations against pyiceberg {found}")]

    @classmethod
    def declared_runtime(cls) -> str:
        return f"pyiceberg {DECLARED_FOR}"

    def open(self, job: CompactionJob, clock: PhaseClock) -> None:
        settings = job.catalog
        if settings.rest_uri:
            with clock.phase("catalog client", f"pyiceberg RestCatalog({settings.rest_uri})"):
                from pyiceberg.catalog.rest import RestCatalog

                props = {**settings.file_io_properties(), **{str(k): str(v) for k, v in settings.properties.items()}}
                warehouse = props.pop("warehouse", None) if settings.external_rest else settings.rest_warehouse
                self._catalog = RestCatalog(settings.name, uri=str(settings.rest_uri),
                                            **({"warehouse": warehouse} if warehouse else {}), **props)
                self._how = f"RestCatalog({settings.rest_uri})"
        else:
            with clock.phase("catalog client", f"pyiceberg SqlCatalog({settings.sqlalchemy_uri})"):
                self._catalog = load_sql_catalog(settings)
                self._how = f"SqlCatalog({settings.sqlalchemy_uri})"

    def close(self) -> None:
        self._catalog = None

    def compact(self, job: CompactionJob, clock: PhaseClock) -> EngineOutcome:
        raise NotImplementedError(NO_REWRITE)  # never called: declared not supported (REASONS)

    def versions(self) -> dict[str, str]:
        return {DISTRIBUTION: importlib.metadata.version(DISTRIBUTION)}

    def expire_snapshots(self, job: CompactionJob, op: MaintenanceOp, clock: PhaseClock) -> dict[str, Any]:
        if op.retain_last is not None and op.retain_last > 1:
            raise NotSupported(RETAIN_LAST.format(n=op.retain_last))
        if self._catalog is None:
            raise RuntimeError("pyiceberg engine: expire_snapshots before open()")
        when = cutoff(op)
        with clock.phase("load", f"{self._how}.load_table"):
            tbl = self._catalog.load_table(job.catalog.qualified(job.table))
        before = {s.snapshot_id for s in tbl.metadata.snapshots}
        call = f"table.maintenance.expire_snapshots().older_than({when.isoformat(timespec='milliseconds')}).commit()"
        with clock.phase("expire_snapshots", f"{call}: one commit, metadata only (no file deleted)"):
            tbl.maintenance.expire_snapshots().older_than(when).commit()
        gone = sorted(before - {s.snapshot_id for s in tbl.metadata.snapshots})
        return {"call": call, "expired_snapshot_ids": gone, "expired_snapshot_count": len(gone),
                "deleted_files": "none: pyiceberg's expiry commits metadata only",
                "retain_last": f"asked {op.retain_text()}; pyiceberg keeps every ref's head",
                "metadata_location": tbl.metadata_location}
