"""Live manifest entries of a snapshot (file + its data sequence number), split by content."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyiceberg.manifest import DataFileContent, ManifestEntry, ManifestFile
from pyiceberg.table import Table


def snapshot_of(tbl: Table, snapshot_id: int | None = None) -> Any:
    """The snapshot `snapshot_id` (default: the current one), or None for an empty table."""
    return tbl.snapshot_by_id(snapshot_id) if snapshot_id else tbl.current_snapshot()


def manifest_live_entries(tbl: Table, manifest: ManifestFile) -> list[ManifestEntry]:
    """The live entries of one manifest (added or existing: a deleted entry is no file of the snapshot)."""
    return manifest.fetch_manifest_entry(tbl.io, discard_deleted=True)


def live_entries(tbl: Table, snapshot_id: int | None = None) -> list[ManifestEntry]:
    """Every live manifest entry of a snapshot (default: current)."""
    snap = snapshot_of(tbl, snapshot_id)
    if snap is None:
        return []
    entries: list[ManifestEntry] = []
    for m in snap.manifests(tbl.io):
        entries.extend(manifest_live_entries(tbl, m))
    return entries


@dataclass
class LiveFiles:
    """A snapshot's live entries by content."""

    data: list[ManifestEntry] = field(default_factory=list)
    position: list[ManifestEntry] = field(default_factory=list)
    equality: list[ManifestEntry] = field(default_factory=list)

    @classmethod
    def split(cls, entries: list[ManifestEntry]) -> LiveFiles:
        out = cls()
        for e in entries:
            c = e.data_file.content
            if c == DataFileContent.DATA:
                out.data.append(e)
            elif c == DataFileContent.POSITION_DELETES:
                out.position.append(e)
            else:
                out.equality.append(e)
        return out

    @property
    def deletes(self) -> list[ManifestEntry]:
        return self.position + self.equality

    @property
    def all(self) -> list[ManifestEntry]:
        return self.data + self.position + self.equality

    @staticmethod
    def paths(entries: list[ManifestEntry]) -> list[str]:
        return [e.data_file.file_path for e in entries]


def live_files(tbl: Table, snapshot_id: int | None = None) -> LiveFiles:
    return LiveFiles.split(live_entries(tbl, snapshot_id))
