"""A loopback Iceberg REST catalog server over the embedded SQLite catalog, and its lifecycle.

Why: clients that speak only the Iceberg REST protocol (iceberg-rust's REST client, DuckDB's iceberg
extension) must see the same tables as the harness (pyiceberg SqlCatalog) and JVM clients (Java
JdbcCatalog), which share `<state>/catalog.db`.  This server puts the REST protocol in front of that
database.  No pip-installable REST server fits (FIELD-NOTES: the one that works is heavy, pre-beta
and forces auth); the protocol surface the clients need is small.

The package:
- `service`: `CatalogService`, the REST operations over one SqlCatalog (no sockets); commits are
  compare-and-swap, so a failed requirement or a lost race is 409, never a silent overwrite;
- `http`: the werkzeug route table (`URL_MAP`, also what GET /v1/config advertises), the WSGI app
  and `CatalogServer` (loopback only: no auth);
- `request_log`: the optional JSON-lines request log, written by the server and read by the runner;
- `python -m bench.core.catalog.rest` (`main`): the server process;
- here: `serve(settings)`, a context manager running that process for a `with` block (so catalog
  work is not measured against an engine), and `check_rest_uri(uri)`.

The DuckDB connection the verifier uses is `bench.core.catalog.duck`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.core import children
from bench.core.catalog import CatalogSettings
from bench.core.errors import UserError

__all__ = ["ServedCatalog", "check_rest_uri", "main", "serve"]

STOP_GRACE_S = 5.0


@dataclass(frozen=True)
class ServedCatalog:
    """What `serve()` yields: the settings with `rest_uri` set, the server's process id and its
    request log (both None for an external catalog, where nothing is started)."""

    settings: CatalogSettings
    pid: int | None
    log_file: Path | None


def _no_proxy_opener() -> urllib.request.OpenerDirector:
    # loopback traffic must never go through an HTTP(S)_PROXY from the environment
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get_config(uri: str, timeout: float) -> dict:
    with _no_proxy_opener().open(f"{uri.rstrip('/')}/v1/config", timeout=timeout) as resp:
        return json.loads(resp.read() or b"{}")


def check_rest_uri(uri: str, timeout: float = 3.0) -> dict:
    """Probe GET {uri}/v1/config; return the config response or raise UserError."""
    try:
        return _get_config(uri, timeout)
    except urllib.error.HTTPError as e:
        reason = f"HTTP {e.code}"
    except urllib.error.URLError as e:
        reason = str(e.reason)
    except (TimeoutError, OSError, ValueError) as e:  # ValueError: malformed URI or non-JSON answer
        reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    raise UserError(f"catalog URI {uri} does not answer ({reason}): start it or drop --catalog-uri")


# the scratch directory of one server (its ready file and stderr) in the temporary directory, and its owner (the
# harness's pid and start time): a killed harness cannot remove it, the next server start does (sweep_scratch)
SCRATCH_PREFIX = "bench-rest-"
OWNER_FILE = "owner"


def sweep_scratch() -> list[Path]:
    """Remove the scratch directories of servers whose harness is gone (killed: it could not remove them)."""
    gone = []
    for d in Path(tempfile.gettempdir()).glob(SCRATCH_PREFIX + "*"):
        try:
            pid, start = (d / OWNER_FILE).read_text().split()
        except (OSError, ValueError):
            continue  # being made, or not one this harness marks: not ours to judge
        if children.start_time(int(pid)) != start:
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d)
    return gone

@contextlib.contextmanager
def serve(settings: CatalogSettings, *, log_file: str | os.PathLike | None = None,
          timeout_s: float = 30.0) -> Iterator[ServedCatalog]:
    """Serve `settings`' SQLite catalog over REST in a separate process for the `with` block.

    Yields `ServedCatalog(settings.with_rest(uri), pid, log_file)`; the server appends one JSON line
    per request to `log_file` when given (format: `bench.core.catalog.rest.http`).  The process is
    terminated (killed after a grace period) when the block exits, also on exceptions.  With an
    external REST catalog (`settings.external_rest`) nothing is started: the URI is probed and
    `ServedCatalog(settings, None, None)` yielded.
    """
    if settings.external_rest:
        if not settings.rest_uri:
            raise UserError("external REST catalog selected but no URI given: pass --catalog-uri")
        check_rest_uri(settings.rest_uri)
        yield ServedCatalog(settings, None, None)
        return
    settings.prepare_state()
    log_path = Path(log_file).absolute() if log_file else None
    sweep_scratch()
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as tmp:
        (Path(tmp) / OWNER_FILE).write_text(f"{os.getpid()} {children.start_time(os.getpid())}")
        ready = Path(tmp) / "ready"
        err_path = Path(tmp) / "stderr.log"
        args = ["--warehouse", settings.rest_warehouse, "--state-dir", str(settings.state_path),
                "--name", settings.name, "--host", "127.0.0.1", "--port", "0", "--ready-file", str(ready),
                "--parent-pid", str(os.getpid())]
        if log_path:
            args += ["--log-file", str(log_path)]
        # forked, not a new interpreter: this process has already imported most of what the server does (pyiceberg,
        # pyarrow, SQLAlchemy: a second of CPU); its own session, so a Ctrl-C in the harness terminal does not kill
        # the catalog under a run that is still cleaning up (we stop it ourselves, and it watches its parent)
        proc = children.fork(lambda: main(args), title=" ".join([sys.executable, "-m", __name__, *args]),
                             stderr=err_path)
        try:
            uri = _wait_ready(proc, ready, err_path, timeout_s)
            yield ServedCatalog(settings.with_rest(uri), proc.pid, log_path)
        finally:
            _stop(proc)
            children.release(proc, group=True)


def main(argv: list[str] | None = None) -> int:
    """The server process's command line (`python -m bench.core.catalog.rest --help`)."""
    from bench.core.catalog.rest.__main__ import main as _main

    return _main(argv)


def _wait_ready(proc: children.Forked, ready: Path, err_path: Path, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    last = "no ready file yet"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise UserError(f"REST catalog server exited with status {proc.returncode} at start: "
                            f"{_tail(err_path) or 'no output'}")
        if ready.exists():
            uri = ready.read_text().strip()
            try:
                _get_config(uri, timeout=2.0)
                return uri
            except (OSError, ValueError) as e:
                last = f"{uri}: {e}"
        time.sleep(0.05)
    raise UserError(f"REST catalog server did not answer GET /v1/config within {timeout_s:g} s "
                    f"({last}; stderr: {_tail(err_path) or 'empty'})")


def _stop(proc: children.Forked, grace_s: float = STOP_GRACE_S) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _tail(path: Path, n: int = 3) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])
