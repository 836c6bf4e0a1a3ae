"""`python -m bench.core.catalog.rest`: serve a warehouse's SQLite catalog over REST on loopback.

    python -m bench.core.catalog.rest --warehouse DIR|s3://B/P [--state-dir D] [--name bench]
        [--host 127.0.0.1] [--port 0] [--ready-file F] [--log-file L] [--parent-pid PID]

Writes its URI (`http://127.0.0.1:PORT`) to the ready file once it accepts connections, stops on
SIGTERM/SIGINT, exits by itself when --parent-pid is no longer its parent, and exits 2 with
`error: ...` on a usage error (e.g. a non-loopback --host).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

from bench.core.catalog import CATALOG_NAME, CatalogSettings
from bench.core.errors import UserError
from bench.core.fileio import write_atomic


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.core.catalog.rest",
                                 description="Loopback Iceberg REST catalog over <warehouse>/catalog.db")
    ap.add_argument("--warehouse", required=True,
                    help="warehouse directory (holds catalog.db) or s3://bucket/prefix (with --state-dir)")
    ap.add_argument("--state-dir", help="local directory holding catalog.db (default: the warehouse "
                                        "directory; for S3 see bench.core.catalog)")
    ap.add_argument("--name", default=CATALOG_NAME, help="catalog name in the SQLite tables")
    ap.add_argument("--host", default="127.0.0.1", help="a loopback address")
    ap.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    ap.add_argument("--ready-file", help="write the bound URI here once serving")
    ap.add_argument("--log-file", help="append one JSON line per request here")
    ap.add_argument("--parent-pid", type=int, help="exit when this process is no longer our parent")
    a = ap.parse_args(argv)
    try:
        extra = {"state_dir": str(Path(a.state_dir).resolve())} if a.state_dir else {}
        settings = CatalogSettings.for_warehouse(a.warehouse, name=a.name, **extra)
        from bench.core.catalog.rest.http import CatalogServer

        with CatalogServer(settings, a.host, a.port, log_file=a.log_file) as server:
            _stop_on_signal_or_orphan(server.shutdown, a.parent_pid)
            if a.ready_file:
                write_atomic(a.ready_file, server.uri + "\n")
            server.serve_forever()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _stop_on_signal_or_orphan(shutdown, parent_pid: int | None) -> None:
    def stop(*_: object) -> None:
        # shutdown() waits for serve_forever (this thread's) to return: call it from another one
        threading.Thread(target=shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if parent_pid:
        def watch_parent() -> None:
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            stop()

        threading.Thread(target=watch_parent, daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
