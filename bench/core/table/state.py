"""The files under a table's location: list them, fingerprint them, restore them.

Datagen records every file under the table's location (data, delete, manifest, manifest-list and
metadata files, with sizes) in the dataset manifest.  Before every engine run the harness restores
exactly that: the catalog points at the dataset's metadata file again (drop + register, no purge) and
every file a previous run added under the location is deleted, and every dataset file a run deleted (a
snapshot expiry, an orphan removal, a commit that deletes old metadata) is put back from the dataset's
vault (`vault`: hard links beside the warehouse, out of every engine's reach).  So every engine, in every
repetition, starts from a byte-identical table, whatever ran before it (metadata written by another engine,
extra snapshots, expired files, a run killed half-way).  The input fingerprint recorded in each result
proves it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import NamedTuple

import pyarrow.fs as pafs
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.table import Table

from bench.core.catalog.s3 import filesystem
from bench.core.fileio import write_atomic
from bench.core.uri import local_path


def list_files(location: str) -> dict[str, int]:
    """Every file under `location`: path relative to it -> size in bytes."""
    fs, root = filesystem(location)
    try:
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    except FileNotFoundError:
        return {}
    root = root.rstrip("/")
    return {i.path[len(root) + 1:]: int(i.size or 0) for i in infos if i.type == pafs.FileType.File}


def prune_metadata(tbl: Table) -> list[str]:
    """Delete the files under the table's `metadata/` that its current metadata file does not need: older
    metadata versions (and their Hadoop `.crc` files).  A table property like
    write.metadata.delete-after-commit lets an engine's commit delete those, so a dataset that kept them
    could not be restored byte for byte after such a commit; readers and engines never need them.  Kept:
    the current metadata file, every snapshot's manifest list and the manifests they list, and the
    `.crc` file of each.  Returns the deleted paths (relative to the location)."""
    keep = {tbl.metadata_location}
    for snap in tbl.metadata.snapshots:
        keep.add(snap.manifest_list)
        keep.update(m.manifest_path for m in snap.manifests(tbl.io))
    location = tbl.location().rstrip("/")
    fs, root = filesystem(location)
    root = root.rstrip("/")
    keep_rel = {_relative(p, location) for p in keep}
    keep_rel |= {_crc(rel) for rel in keep_rel}
    deleted = []
    for rel in list_files(location):
        if rel.startswith("metadata/") and rel not in keep_rel:
            fs.delete_file(f"{root}/{rel}")
            deleted.append(rel)
    return deleted


def _relative(uri: str, location: str) -> str:
    """`uri` relative to `location` (file:/x, file:///x and /x spell the same local path)."""
    from bench.core.uri import local_path

    path, root = local_path(uri), local_path(location).rstrip("/")
    return path[len(root) + 1:] if path.startswith(root + "/") else path


def _crc(rel: str) -> str:
    head, _, name = rel.rpartition("/")
    return f"{head}/.{name}.crc" if head else f".{name}.crc"


def fingerprint(files: dict[str, int], metadata_location: str | None) -> str:
    h = hashlib.sha256(f"metadata={(metadata_location or '').rsplit('/', 1)[-1]}\n".encode())
    for rel, size in sorted(files.items()):
        h.update(f"{rel}\t{size}\n".encode())
    return h.hexdigest()[:16]


def point_at(catalog: Catalog, ident: str, metadata_location: str) -> bool:
    """Make the catalog's entry for `ident` point at `metadata_location` (drop without purge, then
    register); True when it had to change."""
    exists = True
    try:
        current = catalog.load_table(ident).metadata_location
    except NoSuchTableError:
        current, exists = None, False
    except (FileNotFoundError, OSError):  # registered, but its metadata file is gone
        current = None
    if current == metadata_location:
        return False
    if exists:
        catalog.drop_table(ident)
    catalog.register_table(ident, metadata_location)
    return True


class Restored(NamedTuple):
    """What a restore did: files a run added that it deleted, dataset files it put back from the vault, and
    the table's files after it (relative path -> size)."""

    deleted: int
    put_back: int
    files: dict[str, int]


def restore(catalog: Catalog, ident: str, metadata_location: str, location: str,
            files: dict[str, int], spare: Path | None = None, parked: Path | None = None) -> Restored:
    """Restore the table to `metadata_location` and exactly `files` under `location` (files a commit or an
    engine's expiry deleted are put back from the vault `spare`, see `vault`; a directory left parked by a
    killed run is moved back from `parked` first).  Returns what it did (`Restored`).  Raises
    RuntimeError when a recorded file is missing or changed and the vault has no intact copy (the dataset is
    damaged: it must be generated again)."""
    if parked is not None:
        unpark(location, parked)
    fs, root = filesystem(location)
    root = root.rstrip("/")
    now = list_files(location)
    put_back = 0
    if spare is not None:
        vault(location, {rel: size for rel, size in files.items() if now.get(rel) == size}, spare)
        for rel, size in files.items():
            if now.get(rel) != size and _put_back(fs, root, rel, size, Path(spare)):
                now[rel] = size
                put_back += 1
    extra = sorted(set(now) - set(files))
    for rel in extra:
        fs.delete_file(f"{root}/{rel}")
    after = {rel: size for rel, size in now.items() if rel in files}
    damaged = sorted(rel for rel in files if after.get(rel) != files[rel])
    if damaged:
        raise RuntimeError(f"{len(damaged)} file(s) of the dataset are missing or changed under {location}, "
                           f"e.g. {damaged[0]}: generate the dataset again (delete its manifest)")
    point_at(catalog, ident, metadata_location)  # last: registering reads the metadata file
    return Restored(len(extra), put_back, after)


VAULT_INDEX = ".vault-index.json"


def vault(location: str, files: dict[str, int], spare: Path, fresh: bool = False) -> int:
    """Keep a restorable copy of each of `files` (relative path -> size) in `spare`, out of every engine's
    reach (beside the warehouse, not under the table's location), so that nothing a run does can destroy
    what the next run restores from: a snapshot expiry or orphan removal deletes the table's name for a
    file, never the vault's.  On a local warehouse every file is a hard link (no byte is copied; Iceberg
    never writes a file in place, and the index of each link's size and mtime, checked on the way back,
    would show one that was); across file systems, a copy.  On S3 the metadata files are copied (its data
    objects are never deleted by a run on S3: maintenance that expires snapshots needs a local warehouse).
    `fresh`: a new dataset's vault (what an earlier dataset of the same name kept is removed first).  Returns how
    many files were added to the vault."""
    if fresh:
        shutil.rmtree(spare, ignore_errors=True)
    fs, root = filesystem(location)
    if not isinstance(fs, pafs.LocalFileSystem):
        return keep_spares(location, files, spare)
    root, spare = root.rstrip("/"), Path(spare)
    index = _vault_index(spare)
    added = 0
    for rel, size in sorted(files.items()):
        dst = spare / rel
        if rel in index and dst.is_file() and dst.stat().st_size == size:
            continue
        src = Path(root) / rel
        if not src.is_file() or src.stat().st_size != size:
            continue
        _link(src, dst)
        st = dst.stat()
        index[rel] = [st.st_size, st.st_mtime_ns]
        added += 1
    if added:
        write_atomic(spare / VAULT_INDEX, json.dumps(index, sort_keys=True))
    return added


def _vault_index(spare: Path) -> dict[str, list[int]]:
    try:
        return dict(json.loads((spare / VAULT_INDEX).read_text()))
    except (OSError, ValueError):
        return {}


def _put_back(fs: pafs.FileSystem, root: str, rel: str, size: int, spare: Path) -> bool:
    """Put `rel` back under the table's location from the vault (a hard link, else a copy); False when the
    vault has no intact copy of it.  Raises when the vault's copy was changed in place since it was kept."""
    copy = spare / rel
    if not copy.is_file() or copy.stat().st_size != size:
        return False
    if not isinstance(fs, pafs.LocalFileSystem):
        with fs.open_output_stream(f"{root}/{rel}") as out:
            out.write(copy.read_bytes())
        return True
    kept = _vault_index(spare).get(rel)
    if kept is not None and kept != [copy.stat().st_size, copy.stat().st_mtime_ns]:
        raise RuntimeError(f"the dataset's file {rel} was changed in place since it was kept (size and mtime "
                           f"{kept} -> {[copy.stat().st_size, copy.stat().st_mtime_ns]}): generate the dataset "
                           "again (delete its manifest)")
    _link(copy, Path(root) / rel)
    return True


def _link(src: Path, dst: Path) -> None:
    """`dst` the same file as `src`: a hard link; a copy on another file system (or one without hard links)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def park(catalog: Catalog, ident: str, location: str, parked: Path, metadata_files: list[str] | None = None,
         spare: Path | None = None) -> str:
    """Put the table out of reach while an engine sets up: drop it from the catalog (no purge) and, on a
    local warehouse, move its directory to `parked` (the same file system: a rename); on S3, where
    objects cannot be moved cheaply, delete its `metadata_files` (relative paths, each with a copy in
    `spare`: `restore` puts them back).  Returns how it was parked."""
    try:
        catalog.drop_table(ident)
    except NoSuchTableError:
        pass
    fs, root = filesystem(location)
    if isinstance(fs, pafs.LocalFileSystem):
        parked.parent.mkdir(parents=True, exist_ok=True)
        Path(root).rename(parked)
        return "unregistered from the catalog, its directory moved out of the warehouse"
    root = root.rstrip("/")
    missing = [rel for rel in metadata_files or [] if spare is None or not (Path(spare) / rel).is_file()]
    if missing:
        raise RuntimeError(f"cannot park {ident}: no spare copy of {missing[0]} (and {len(missing) - 1} more)")
    for rel in metadata_files or []:
        fs.delete_file(f"{root}/{rel}")
    return "unregistered from the catalog, its metadata files removed (its data objects stay: S3 cannot move them)"


def unpark(location: str, parked: Path) -> bool:
    """Move a parked table directory back under `location` (local warehouses); True when it was parked.
    Files that appeared at `location` meanwhile stay for `restore` to judge (it deletes what the dataset
    does not list)."""
    parked = Path(parked)
    if not parked.exists():
        return False
    target = Path(local_path(location))
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        parked.rename(target)
        return True
    for src in sorted(p for p in parked.rglob("*") if p.is_file()):
        dst = target / src.relative_to(parked)
        dst.parent.mkdir(parents=True, exist_ok=True)
        src.replace(dst)
    shutil.rmtree(parked)
    return True


def keep_spares(location: str, files: dict[str, int], spare: Path, prefix: str = "metadata/") -> int:
    """Copies of every file under `prefix` of the table (as listed in `files`) in `spare`, where missing
    or of another size; returns how many were copied."""
    fs, root = filesystem(location)
    root = root.rstrip("/")
    copied = 0
    for rel, size in files.items():
        copy = Path(spare) / rel
        if not rel.startswith(prefix) or (copy.is_file() and copy.stat().st_size == size):
            continue
        with fs.open_input_stream(f"{root}/{rel}") as f:
            write_atomic(copy, f.read())
        copied += 1
    return copied
