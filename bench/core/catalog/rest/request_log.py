"""The loopback REST catalog's request log: written by the server (`RequestLog`, `bench.core.catalog.rest.http`), read
by the runner (`requests`: what the server did while an engine ran, its commits, its conflicts).

One JSON object per line: first `{"event": "serving", "uri", "db"}`, then per request `{"t": unix time at the end,
"method", "path", "status", "ms": handling time}` plus `"error": "<type>: <message>"` when status >= 400.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, TextIO

TABLE_PATH = re.compile(r"/v1/namespaces/[^/]+/tables/[^/]+")  # a table's own endpoint: POST there commits


class RequestLog:
    """One JSON object per line, appended (line-buffered, from any thread)."""

    def __init__(self, path: str | Path):
        self._fh: TextIO = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - server lifetime
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps(record) + "\n"
        with self._lock:
            self._fh.write(line)

    def close(self) -> None:
        with self._lock:
            self._fh.close()


def requests(path: Path | None, t0: float, t1: float) -> list[dict[str, Any]]:
    """The requests the log at `path` records as answered between unix times t0 and t1 (none without a log; a
    line that is not JSON, e.g. cut short by a killed server, is skipped)."""
    if path is None or not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if "t" in e and t0 <= e["t"] <= t1:
            out.append(e)
    return out


def is_commit(e: dict[str, Any]) -> bool:
    """A table commit: POST to the table's own endpoint."""
    return e.get("method") == "POST" and bool(TABLE_PATH.fullmatch(str(e.get("path", ""))))
