"""Content hashes of a table's files (BLAKE2b of every byte), at a cost proportional to what changed.

A dataset's files are hashed once when it is generated (`GeneratedTable.table_hashes`).  Before every run
the input's files are hashed again, but a file whose inode, size, mtime and ctime are those it had when it
was last hashed is not read again: its hash is taken from a cache beside the dataset's manifest
(`<table>.hashes.json`).  Any write to a file, in place or by replacing it, and any new hard link to it,
changes its ctime, which no process can set back; so a file whose ctime is unchanged holds the bytes it
was hashed with.  A run that leaves the input alone costs one stat per file; a file a run deleted and the
vault put back (a new link: a new ctime) is read and hashed again.  On S3 there is no ctime: objects are
not hashed (the check says it compared paths and sizes only).
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.core.catalog.s3 import is_s3
from bench.core.fileio import write_atomic
from bench.core.uri import local_path

ALGORITHM = "blake2b"


def _digest(path: str) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, ALGORITHM).hexdigest()[:32]


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def content_hashes(location: str, files: dict[str, int], cache: Path | None = None,
                   threads: int | None = None) -> tuple[dict[str, str], int]:
    """(relative path -> content hash of each of `files` under `location`, how many were read now).  Files
    whose stamp (inode, size, mtime, ctime) is the one `cache` recorded with their hash are not read.  An S3
    location: ({}, 0), nothing hashed."""
    if is_s3(location):
        return {}, 0
    root = local_path(location).rstrip("/")
    known: dict[str, list] = {}
    if cache is not None:
        try:
            known = dict(json.loads(cache.read_text()))
        except (OSError, ValueError):
            known = {}
    stamps = {rel: _stamp(os.stat(f"{root}/{rel}")) for rel in files}
    out = {rel: known[rel][1] for rel, st in stamps.items() if rel in known and known[rel][0] == st}
    todo = sorted(set(files) - set(out))
    with ThreadPoolExecutor(max_workers=threads or os.cpu_count() or 1) as pool:  # hashlib releases the GIL
        out.update(zip(todo, pool.map(lambda rel: _digest(f"{root}/{rel}"), todo)))
    if cache is not None and todo:
        write_atomic(cache, json.dumps({rel: [stamps[rel], out[rel]] for rel in sorted(out)}))
    return out, len(todo)


def differing(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """The files whose content differs from the recorded hashes (missing or extra files included)."""
    return sorted(rel for rel in set(recorded) | set(now) if recorded.get(rel) != now.get(rel))


__all__ = ["ALGORITHM", "content_hashes", "differing"]
