"""Atomic file writes: readers see the old file or the whole new one, never a partial one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(path: str | os.PathLike, data: str | bytes, mode: int | None = None) -> Path:
    """Write `data` to `path` through a temporary file in the same directory, fsync, rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | os.PathLike, obj: Any, indent: int = 1) -> Path:
    return write_atomic(path, json.dumps(obj, indent=indent, default=str) + "\n")


def flush_files(directory: Path, since: float) -> tuple[int, int]:
    """fsync every file under `directory` modified at or after unix time `since`: (files, bytes).  The engine's
    written bytes reach the device from its own process (inside its storage cap), within its timed window."""
    files = size = 0
    for root, _, names in os.walk(directory):
        for n in names:
            p = os.path.join(root, n)
            try:
                st = os.stat(p)
                if st.st_mtime < since:
                    continue
                fd = os.open(p, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError:
                continue  # removed meanwhile (a temporary file)
            files += 1
            size += st.st_size
    return files, size
