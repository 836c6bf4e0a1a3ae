"""Atomic file writes: readers see the old file or the whole new one, never a partial one; files flushed to the
device, or read once into the page cache."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path


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


def check_writable(path: str | os.PathLike, what: str, is_dir: bool = False) -> Path:
    """`path` resolved, once a file could be created where it goes (in it, for a directory); else a UserError
    naming `what` (the option).  By trying, in the nearest directory that exists, leaving nothing behind:
    permission bits do not tell (root passes `os.access` everywhere, and /proc refuses root too)."""
    from bench.core.errors import UserError

    path = Path(path).resolve()
    probe = path if is_dir else path.parent
    while not probe.exists():
        probe = probe.parent
    if is_dir and path.exists() and not path.is_dir():
        raise UserError(f"{what} {path} is a file, not a directory")
    if not probe.is_dir():
        raise UserError(f"{what} {path} cannot be written: {probe} is not a directory")
    if not is_dir and path.is_dir():
        raise UserError(f"{what} {path} is a directory: name a file")
    try:
        fd, tmp = tempfile.mkstemp(dir=probe, prefix=".bench-probe-")
    except OSError as e:
        raise UserError(f"{what} {path} cannot be written ({e.strerror or e} in {probe})") from None
    os.close(fd)
    os.unlink(tmp)
    return path


def _fsync_changed(directory: Path, since: float, seen: dict[str, tuple[int, int]] | None = None) -> tuple[int, int]:
    """fsync every file under `directory` modified at or after unix time `since` (and, with `seen`, changed
    since this function last fsynced it): (files, bytes newly made durable)."""
    files = size = 0
    for root, _, names in os.walk(directory):
        for n in names:
            p = os.path.join(root, n)
            try:
                st = os.stat(p)
                if st.st_mtime < since:
                    continue
                state = (st.st_size, st.st_mtime_ns)
                before = seen.get(p) if seen is not None else None
                if before == state:
                    continue
                fd = os.open(p, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError:
                continue  # removed meanwhile (a temporary file)
            if seen is not None:
                seen[p] = state
            files += 1
            size += st.st_size - (before[0] if before and before[0] <= st.st_size else 0)
    return files, size


def flush_files(directory: Path, since: float) -> tuple[int, int]:
    """fsync every file under `directory` modified at or after unix time `since`: (files, bytes).  The engine's
    written bytes reach the device from its own process (inside its storage cap), within its timed window."""
    return _fsync_changed(directory, since)


class WriteBack:
    """While the engine compacts, a thread of the engine's own process fsyncs every file written in
    `directory` every `interval_s` seconds, so that the written bytes reach the device from inside the
    engine's cgroup (a cgroup v1 write throttle sees only writes its processes issue; the kernel's flusher
    threads, which would otherwise write the dirty pages back after ~30 s, belong to no cgroup).  The same
    for every engine; `bytes` says how much reached the device this way before the final flush."""

    def __init__(self, directory: Path, since: float, interval_s: float = 0.5):
        self.directory, self.since, self.interval_s = directory, since, interval_s
        self.files = self.bytes = self.passes = 0
        self._seen: dict[str, tuple[int, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="writeback", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            files, size = _fsync_changed(self.directory, self.since, self._seen)
            self.files, self.bytes, self.passes = self.files + files, self.bytes + size, self.passes + 1

    def __enter__(self) -> WriteBack:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def read_once(paths: Iterable[str | os.PathLike]) -> int:
    """Read every file of `paths` once, unbuffered, discarding the bytes (the page cache warm): the bytes read."""
    total, buf = 0, bytearray(1 << 20)
    for path in paths:
        with open(path, "rb", buffering=0) as fh:
            while n := fh.readinto(buf):
                total += n
    return total
