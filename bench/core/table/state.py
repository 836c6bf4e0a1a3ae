"""The files under a table's location: list them, fingerprint them, restore them.

Datagen records every file under the table's location (data, delete, manifest, manifest-list and
metadata files, with sizes) in the dataset manifest.  Before every engine run the harness restores
exactly that: the catalog points at the dataset's metadata file again (drop + register, no purge) and
every file a previous run added under the location is deleted.  So every engine, in every repetition,
starts from a byte-identical table, whatever ran before it (metadata written by another engine, extra
snapshots, a run killed half-way).  The input fingerprint recorded in each result proves it.
"""

from __future__ import annotations

import hashlib

import pyarrow.fs as pafs
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError

from bench.core.catalog.s3 import filesystem


def list_files(location: str) -> dict[str, int]:
    """Every file under `location`: path relative to it -> size in bytes."""
    fs, root = filesystem(location)
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    except FileNotFoundError:
        return {}
    root = root.rstrip("/")
    return {i.path[len(root) + 1:]: int(i.size or 0) for i in infos if i.type == pafs.FileType.File}


def fingerprint(files: dict[str, int], metadata_location: str | None) -> str:
    h = hashlib.sha256(f"metadata={(metadata_location or '').rsplit('/', 1)[-1]}\n".encode())
    for rel, size in sorted(files.items()):
        h.update(f"{rel}\t{size}\n".encode())
    return h.hexdigest()[:16]


def point_at(catalog: Catalog, ident: str, metadata_location: str) -> bool:
    """Make the catalog's entry for `ident` point at `metadata_location` (drop without purge, then
    register); True when it had to change."""
    try:
        current = catalog.load_table(ident).metadata_location
    except (NoSuchTableError, FileNotFoundError):
        current = None
    if current == metadata_location:
        return False
    if current is not None:
        catalog.drop_table(ident)
    catalog.register_table(ident, metadata_location)
    return True


def restore(catalog: Catalog, ident: str, metadata_location: str, location: str,
            files: dict[str, int]) -> tuple[int, dict[str, int]]:
    """Restore the table to `metadata_location` and exactly `files` under `location`.  Returns
    (files deleted, the listing after).  Raises RuntimeError when a recorded file is missing or
    changed (the dataset is damaged: it must be generated again)."""
    point_at(catalog, ident, metadata_location)
    fs, root = filesystem(location)
    root = root.rstrip("/")
    now = list_files(location)
    extra = sorted(set(now) - set(files))
    for rel in extra:
        fs.delete_file(f"{root}/{rel}")
    after = {rel: size for rel, size in now.items() if rel in files}
    damaged = sorted(rel for rel in files if after.get(rel) != files[rel])
    if damaged:
        raise RuntimeError(f"{len(damaged)} file(s) of the dataset are missing or changed under {location}, "
                           f"e.g. {damaged[0]}: generate the dataset again (delete its manifest)")
    return len(extra), after
