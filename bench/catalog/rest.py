"""A small loopback Iceberg REST catalog server over the embedded SQLite catalog.

Why: iceberg-compaction (RisingWave's engine, iceberg-rust's REST client) and DuckDB's iceberg
extension (the independent verifier) speak only the Iceberg REST protocol, while the harness and
Spark share one SQLite catalog (`<warehouse>/catalog.db`, pyiceberg SqlCatalog == Java JdbcCatalog).
This server puts the REST protocol in front of that same database, so every engine sees the same
tables.  No pip-installable REST server fits (FIELD-NOTES: the one that works is heavy, pre-beta and
forces auth); the protocol surface the three clients need is small.

What it serves (Iceberg REST spec, `open-api/rest-catalog-open-api.yaml`; no prefix, no auth):
    GET    /v1/config[?warehouse=W]                        defaults/overrides/endpoints
    GET    /v1/namespaces[?parent=P]                       list (one page)
    POST   /v1/namespaces                                  create
    GET    /v1/namespaces/{ns}                             load properties
    HEAD   /v1/namespaces/{ns}                             exists (204 / 404)
    DELETE /v1/namespaces/{ns}                             drop (409 when not empty)
    POST   /v1/namespaces/{ns}/properties                  update properties
    GET    /v1/namespaces/{ns}/tables                      list
    POST   /v1/namespaces/{ns}/tables                      create (also stage-create)
    POST   /v1/namespaces/{ns}/register                    register a metadata file
    GET    /v1/namespaces/{ns}/tables/{t}                  load
    HEAD   /v1/namespaces/{ns}/tables/{t}                  exists (204 / 404)
    POST   /v1/namespaces/{ns}/tables/{t}                  commit (requirements checked)
    DELETE /v1/namespaces/{ns}/tables/{t}[?purgeRequested] drop
    POST   /v1/tables/rename                               rename
    POST   /v1/transactions/commit                         commit of ONE table (several: 501, since
                                                           SQLite + SqlCatalog cannot commit them
                                                           atomically)
Requests and responses use pyiceberg's own models (CommitTableRequest/-Response, TableRequirement,
TableUpdate, CreateTableRequest, TableResponse = the spec's LoadTableResult, ...).

Concurrency: a commit is SqlCatalog.commit_table: it reloads the table, validates every requirement
against the current metadata, writes a new metadata file and swaps the pointer with
`UPDATE ... WHERE metadata_location = <the one validated against>`.  A failed requirement or a lost
race (also against Spark committing through JDBC to the same file) is HTTP 409 with the REST error
model (type CommitFailedException), never a silent overwrite.

Run it in its own process (so catalog work is not measured against an engine):
    python -m bench.catalog.rest --warehouse DIR|s3://B/P [--state-dir D] [--name bench] [--host 127.0.0.1] [--port 0]
                                 [--ready-file F] [--log-file L] [--parent-pid PID]
It binds loopback addresses only, writes its URI (`http://127.0.0.1:PORT`) to the ready file once it
accepts connections, logs one line per request to --log-file when given (nothing otherwise; server
errors go to stderr), stops on SIGTERM/SIGINT, and exits by itself when --parent-pid dies.

From Python use `serve(settings)` (a context manager that starts/stops that process) and
`check_rest_uri(uri)`.  The DuckDB connection the verifier uses is `bench.catalog.duck`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from bench.catalog import CatalogSettings
from bench.errors import UserError

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
NAMESPACE_SEPARATOR = "\x1f"  # the spec's multi-level namespace separator in paths (%1F)
STOP_GRACE_S = 5.0


# --------------------------------------------------------------------------------------------
# client side: probe and lifecycle
# --------------------------------------------------------------------------------------------

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


def _stop(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
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


@contextlib.contextmanager
def serve(settings: CatalogSettings, *, log_file: str | os.PathLike | None = None,
          timeout_s: float = 30.0) -> Iterator[CatalogSettings]:
    """Serve `settings`' SQLite catalog over REST in a separate process for the `with` block.

    Yields `settings.with_rest(uri)`.  The server process is terminated (killed after a grace
    period) when the block exits, also on exceptions.  With an external REST catalog
    (`settings.external_rest`) nothing is started: the URI is probed and `settings` yielded as is.
    """
    if settings.external_rest:
        if not settings.rest_uri:
            raise UserError("external REST catalog selected but no URI given: pass --catalog-uri")
        check_rest_uri(settings.rest_uri)
        yield settings
        return
    settings.prepare_state()
    with tempfile.TemporaryDirectory(prefix="bench-rest-") as tmp:
        ready = Path(tmp) / "ready"
        err_path = Path(tmp) / "stderr.log"
        cmd = [sys.executable, "-m", "bench.catalog.rest",
               "--warehouse", settings.rest_warehouse, "--state-dir", str(settings.state_path),
               "--name", settings.name,
               "--host", "127.0.0.1", "--port", "0", "--ready-file", str(ready),
               "--parent-pid", str(os.getpid())]
        if log_file:
            cmd += ["--log-file", str(log_file)]
        with open(err_path, "wb") as err:
            # own session: a Ctrl-C in the harness terminal does not kill the catalog under a
            # run that is still cleaning up; we stop it ourselves (and it watches its parent).
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=err, start_new_session=True)
        try:
            uri = _wait_ready(proc, ready, err_path, timeout_s)
            yield settings.with_rest(uri)
        finally:
            _stop(proc)


def _wait_ready(proc: subprocess.Popen, ready: Path, err_path: Path, timeout_s: float) -> str:
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


# --------------------------------------------------------------------------------------------
# server side
# --------------------------------------------------------------------------------------------

class HttpError(Exception):
    """An error answered with the REST error model."""

    def __init__(self, code: int, type_: str, message: str):
        super().__init__(message)
        self.code, self.type, self.message = code, type_, message


def _error_for(exc: BaseException) -> HttpError:
    """Map pyiceberg/pydantic exceptions to the REST spec's error model (code + Java type name)."""
    from pydantic import ValidationError
    from pyiceberg import exceptions as ex

    if isinstance(exc, HttpError):
        return exc
    table: list[tuple[type, int, str]] = [
        (ex.NoSuchTableError, 404, "NoSuchTableException"),
        (ex.NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
        (ex.NoSuchViewError, 404, "NoSuchViewException"),
        (ex.NoSuchIdentifierError, 404, "NoSuchTableException"),
        (ex.TableAlreadyExistsError, 409, "AlreadyExistsException"),
        (ex.NamespaceAlreadyExistsError, 409, "AlreadyExistsException"),
        (ex.NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"),
        (ex.CommitFailedException, 409, "CommitFailedException"),
        (ValidationError, 400, "BadRequestException"),
        (json.JSONDecodeError, 400, "BadRequestException"),
        (ValueError, 400, "BadRequestException"),  # pyiceberg raises ValueError for invalid updates
        (NotImplementedError, 501, "UnsupportedOperationException"),
    ]
    for cls, code, type_ in table:
        if isinstance(exc, cls):
            msg = str(exc).strip() or cls.__name__
            return HttpError(code, type_, msg.splitlines()[0] if code != 400 else msg[:2000])
    return HttpError(500, "ServiceFailureException", f"{type(exc).__name__}: {exc}")


Route = tuple[str, re.Pattern, str]
_SEG = r"([^/]+)"
ROUTES: list[Route] = [
    ("GET", re.compile(r"/v1/config"), "get_config"),
    ("GET", re.compile(r"/v1/namespaces"), "list_namespaces"),
    ("POST", re.compile(r"/v1/namespaces"), "create_namespace"),
    ("GET", re.compile(rf"/v1/namespaces/{_SEG}"), "load_namespace"),
    ("HEAD", re.compile(rf"/v1/namespaces/{_SEG}"), "namespace_exists"),
    ("DELETE", re.compile(rf"/v1/namespaces/{_SEG}"), "drop_namespace"),
    ("POST", re.compile(rf"/v1/namespaces/{_SEG}/properties"), "update_namespace_properties"),
    ("GET", re.compile(rf"/v1/namespaces/{_SEG}/tables"), "list_tables"),
    ("POST", re.compile(rf"/v1/namespaces/{_SEG}/tables"), "create_table"),
    ("POST", re.compile(rf"/v1/namespaces/{_SEG}/register"), "register_table"),
    ("GET", re.compile(rf"/v1/namespaces/{_SEG}/tables/{_SEG}"), "load_table"),
    ("HEAD", re.compile(rf"/v1/namespaces/{_SEG}/tables/{_SEG}"), "table_exists"),
    ("POST", re.compile(rf"/v1/namespaces/{_SEG}/tables/{_SEG}"), "commit_table"),
    ("DELETE", re.compile(rf"/v1/namespaces/{_SEG}/tables/{_SEG}"), "drop_table"),
    ("POST", re.compile(r"/v1/tables/rename"), "rename_table"),
    ("POST", re.compile(r"/v1/transactions/commit"), "commit_transaction"),
]
# advertised in GET /v1/config (spec notation, with the {prefix} placeholder that clients match on;
# this server uses no prefix) so clients (pyiceberg, DuckDB) know exactly what is supported
ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
]
assert len(ENDPOINTS) == len(ROUTES) - 1  # every route but GET /v1/config


def _namespace(segment: str) -> tuple[str, ...]:
    parts = tuple(unquote(segment).split(NAMESPACE_SEPARATOR))
    if not all(parts):
        raise HttpError(400, "BadRequestException", f"invalid namespace {unquote(segment)!r}")
    return parts


class _Named:
    """What SqlCatalog.commit_table needs of its `table` argument: the identifier (it reloads the
    current table itself, inside its compare-and-swap)."""

    def __init__(self, identifier: tuple[str, ...]):
        self._identifier = identifier

    def name(self) -> tuple[str, ...]:
        return self._identifier


class CatalogService:
    """The REST operations, over one pyiceberg SqlCatalog.  Each handler returns (status, model)."""

    def __init__(self, settings: CatalogSettings):
        from bench.catalog import load_sql_catalog

        self.settings = settings
        self.catalog = load_sql_catalog(settings)
        # FileIO properties handed to clients with every table (LoadTableResult.config): for an S3
        # warehouse the endpoint, region and credentials of this process's environment, so
        # iceberg-compaction (iceberg-rust) and DuckDB reach the files (the REST spec's way to vend
        # storage settings; this server binds loopback only)
        self.table_config = settings.file_io_properties()
        # import what the first load/commit needs now (~0.5 s), not inside the first timed request
        import pyiceberg.catalog.rest  # noqa: F401
        import pyiceberg.table.update  # noqa: F401
        import pyiceberg.io.pyarrow  # noqa: F401

    # -- config ---------------------------------------------------------------------------------
    def get_config(self, query: dict, body: bytes):
        from pyiceberg.catalog.rest import ConfigResponse

        asked = (query.get("warehouse") or [None])[0]
        if asked is not None and not self._is_our_warehouse(asked):
            raise HttpError(400, "BadRequestException",
                            f"unknown warehouse {asked!r}; this server serves "
                            f"{self.settings.warehouse_uri} (catalog {self.settings.name!r})")
        # pyiceberg's ConfigResponse parses this, but would serialize its endpoints as objects rather
        # than the spec's "METHOD /path" strings: build the JSON, check it with the model
        config = {"defaults": {}, "overrides": {"warehouse": self.settings.warehouse_uri},
                  "endpoints": ENDPOINTS}
        ConfigResponse.model_validate(config)
        return 200, config

    def _is_our_warehouse(self, asked: str) -> bool:
        if asked.rstrip("/") in (self.settings.name, self.settings.warehouse_uri.rstrip("/")):
            return True
        if self.settings.is_remote:
            return False
        ours = self.settings.warehouse_path.resolve()
        path = urlsplit(asked).path if asked.startswith("file:") else asked
        try:
            return Path(unquote(path)).resolve() == ours
        except (OSError, ValueError):
            return False

    # -- namespaces -----------------------------------------------------------------------------
    def list_namespaces(self, query: dict, body: bytes):
        from pyiceberg.catalog.rest import ListNamespaceResponse

        parent = (query.get("parent") or [""])[0]
        parent_ns = _namespace(parent) if parent else ()
        if parent_ns and not self.catalog.namespace_exists(parent_ns):
            raise HttpError(404, "NoSuchNamespaceException", f"Namespace does not exist: {parent}")
        return 200, ListNamespaceResponse(namespaces=self.catalog.list_namespaces(parent_ns))

    def create_namespace(self, query: dict, body: bytes):
        from pyiceberg.catalog.rest import NamespaceResponse

        req = NamespaceResponse.model_validate_json(body)  # same shape as CreateNamespaceRequest
        if not req.namespace or not all(req.namespace):
            raise HttpError(400, "BadRequestException", "namespace must be a non-empty list of names")
        self.catalog.create_namespace(tuple(req.namespace), req.properties)
        return 200, NamespaceResponse(namespace=req.namespace,
                                      properties=self.catalog.load_namespace_properties(tuple(req.namespace)))

    def load_namespace(self, query: dict, body: bytes, ns: str):
        from pyiceberg.catalog.rest import NamespaceResponse

        namespace = _namespace(ns)
        return 200, NamespaceResponse(namespace=namespace,
                                      properties=self.catalog.load_namespace_properties(namespace))

    def namespace_exists(self, query: dict, body: bytes, ns: str):
        return (204 if self.catalog.namespace_exists(_namespace(ns)) else 404), None

    def drop_namespace(self, query: dict, body: bytes, ns: str):
        self.catalog.drop_namespace(_namespace(ns))
        return 204, None

    def update_namespace_properties(self, query: dict, body: bytes, ns: str):
        from pyiceberg.catalog.rest import UpdateNamespacePropertiesResponse

        req = json.loads(body or b"{}")
        summary = self.catalog.update_namespace_properties(
            _namespace(ns), removals=set(req.get("removals") or []), updates=req.get("updates") or {})
        return 200, UpdateNamespacePropertiesResponse(removed=summary.removed, updated=summary.updated,
                                                      missing=summary.missing)

    # -- tables ---------------------------------------------------------------------------------
    def list_tables(self, query: dict, body: bytes, ns: str):
        from pyiceberg.catalog.rest import ListTableResponseEntry, ListTablesResponse

        namespace = _namespace(ns)
        if not self.catalog.namespace_exists(namespace):
            raise HttpError(404, "NoSuchNamespaceException", f"Namespace does not exist: {'.'.join(namespace)}")
        ids = self.catalog.list_tables(namespace)
        return 200, ListTablesResponse(identifiers=[
            ListTableResponseEntry(namespace=tuple(i[:-1]), name=i[-1]) for i in ids])

    def create_table(self, query: dict, body: bytes, ns: str):
        from pyiceberg.catalog.rest import CreateTableRequest
        from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
        from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

        namespace = _namespace(ns)
        raw = json.loads(body or b"{}")
        raw.setdefault("location", None)  # optional in the spec, required-but-nullable in pyiceberg
        raw.setdefault("partition-spec", None)
        raw.setdefault("write-order", None)
        req = CreateTableRequest.model_validate(raw)
        if not self.catalog.namespace_exists(namespace):
            raise HttpError(404, "NoSuchNamespaceException", f"Namespace does not exist: {'.'.join(namespace)}")
        identifier = (*namespace, req.name)
        kwargs: dict[str, Any] = dict(
            location=req.location, properties=req.properties,
            partition_spec=req.partition_spec or UNPARTITIONED_PARTITION_SPEC,
            sort_order=req.write_order or UNSORTED_SORT_ORDER)
        if req.stage_create:
            if self.catalog.table_exists(identifier):
                raise HttpError(409, "AlreadyExistsException", f"Table already exists: {'.'.join(identifier)}")
            staged = self.catalog._create_staged_table(identifier, req.table_schema, **kwargs)
            return 200, self._table_response(staged, metadata_location=None)
        return 200, self._table_response(self.catalog.create_table(identifier, req.table_schema, **kwargs))

    def register_table(self, query: dict, body: bytes, ns: str):
        from pyiceberg.catalog.rest import RegisterTableRequest

        raw = json.loads(body or b"{}")
        raw.setdefault("overwrite", False)
        req = RegisterTableRequest.model_validate(raw)
        if req.overwrite:
            raise HttpError(501, "UnsupportedOperationException", "register with overwrite is not supported")
        table = self.catalog.register_table((*_namespace(ns), req.name), req.metadata_location)
        return 200, self._table_response(table)

    def load_table(self, query: dict, body: bytes, ns: str, name: str):
        return 200, self._table_response(self.catalog.load_table((*_namespace(ns), unquote(name))))

    def table_exists(self, query: dict, body: bytes, ns: str, name: str):
        return (204 if self.catalog.table_exists((*_namespace(ns), unquote(name))) else 404), None

    def drop_table(self, query: dict, body: bytes, ns: str, name: str):
        identifier = (*_namespace(ns), unquote(name))
        purge = (query.get("purgeRequested") or ["false"])[0].lower() == "true"
        (self.catalog.purge_table if purge else self.catalog.drop_table)(identifier)
        return 204, None

    def rename_table(self, query: dict, body: bytes):
        req = json.loads(body or b"{}")
        try:
            src = (*req["source"]["namespace"], req["source"]["name"])
            dst = (*req["destination"]["namespace"], req["destination"]["name"])
        except (KeyError, TypeError):
            raise HttpError(400, "BadRequestException", "rename needs source and destination identifiers") from None
        self.catalog.rename_table(src, dst)
        return 204, None

    def commit_table(self, query: dict, body: bytes, ns: str, name: str):
        from pyiceberg.table import CommitTableRequest

        identifier = (*_namespace(ns), unquote(name))
        raw = json.loads(body or b"{}")
        # the body's identifier is optional on this endpoint: the path is authoritative
        raw["identifier"] = {"namespace": list(identifier[:-1]), "name": identifier[-1]}
        return 200, self._commit(CommitTableRequest.model_validate(raw))

    def commit_transaction(self, query: dict, body: bytes):
        from pyiceberg.table import CommitTableRequest

        changes = json.loads(body or b"{}").get("table-changes") or []
        if len(changes) != 1:
            raise HttpError(501, "UnsupportedOperationException",
                            f"this catalog commits one table per transaction atomically, not {len(changes)}")
        req = CommitTableRequest.model_validate(changes[0])
        self._commit(req)
        return 204, None

    # -- helpers --------------------------------------------------------------------------------
    def _commit(self, req):
        from pyiceberg.table.update import AssertCreate

        identifier = (*req.identifier.namespace.root, req.identifier.name)
        creating = any(isinstance(r, AssertCreate) for r in req.requirements)
        if not creating and not self.catalog.table_exists(identifier):
            raise HttpError(404, "NoSuchTableException", f"Table does not exist: {'.'.join(identifier)}")
        # SqlCatalog.commit_table validates the requirements against the freshly loaded metadata and
        # swaps the metadata pointer only if it is still the validated one -> CommitFailedException.
        return self.catalog.commit_table(_Named(identifier), tuple(req.requirements), tuple(req.updates))

    def _table_response(self, table, metadata_location: str | None | type = ...):
        from pyiceberg.catalog.rest import TableResponse

        loc = table.metadata_location if metadata_location is ... else metadata_location
        return TableResponse(metadata_location=loc, metadata=table.metadata, config=dict(self.table_config))


def make_handler(service: CatalogService, log: Callable[[str], None] | None):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive; every answer carries Content-Length
        server_version = "bench-iceberg-rest/1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass  # one line per request is written by _dispatch, only when a log file is asked for

        def _body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def _send(self, status: int, payload: bytes | None) -> None:
            self.send_response(status)
            if payload is not None:
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload or b"")))
            self.end_headers()
            if payload and self.command != "HEAD":
                self.wfile.write(payload)

        def _dispatch(self) -> None:
            t0 = time.perf_counter()
            url = urlsplit(self.path)
            path = url.path.rstrip("/") or "/"
            query = parse_qs(url.query)
            status = 500
            try:
                body = self._body()
                for method, pattern, op in ROUTES:
                    m = pattern.fullmatch(path)
                    if m and method == self.command:
                        break
                else:
                    allowed = any(p.fullmatch(path) for _, p, _ in ROUTES)
                    raise HttpError(405 if allowed else 404,
                                    "UnsupportedOperationException" if allowed else "NoSuchEndpointException",
                                    f"{self.command} {path} is not served by this catalog")
                status, model = getattr(service, op)(query, body, *m.groups())
                if model is None:
                    payload = None
                elif isinstance(model, dict):
                    payload = json.dumps(model).encode()
                else:
                    payload = model.model_dump_json().encode()
                if self.command == "HEAD":
                    payload = None
                self._send(status, payload)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a REST error response
                err = _error_for(exc)
                status = err.code
                if status >= 500:
                    traceback.print_exc(file=sys.stderr)
                    sys.stderr.flush()
                payload = json.dumps({"error": {"message": err.message, "type": err.type,
                                                "code": err.code}}).encode()
                self._send(status, None if self.command == "HEAD" else payload)
                if log and status >= 400:
                    log(f"    {err.type}: {err.message[:500]}")
            if log:
                log(f"{time.strftime('%H:%M:%S')} {self.command} {self.path} -> {status} "
                    f"{(time.perf_counter() - t0) * 1000:.1f} ms")

        do_GET = do_POST = do_HEAD = do_DELETE = do_PUT = _dispatch

    return Handler


def run_server(settings: CatalogSettings, host: str = "127.0.0.1", port: int = 0,
               ready_file: str | None = None, log_file: str | None = None,
               parent_pid: int | None = None) -> None:
    if host not in LOOPBACK_HOSTS:
        raise UserError(f"--host {host}: this catalog has no authentication; bind a loopback address "
                        f"({', '.join(LOOPBACK_HOSTS)})")
    log = None
    if log_file:
        fh = open(log_file, "a", buffering=1)  # noqa: SIM115 - open for the life of the server
        lock = threading.Lock()

        def log(line: str) -> None:
            with lock:
                fh.write(line + "\n")

    service = CatalogService(settings)
    server = ThreadingHTTPServer((host, port), make_handler(service, log))
    server.daemon_threads = True
    bound_host, bound_port = server.server_address[:2]
    uri = f"http://{'[' + bound_host + ']' if ':' in bound_host else bound_host}:{bound_port}"

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if parent_pid:
        def watch_parent():
            while True:
                time.sleep(0.5)
                if os.getppid() != parent_pid:
                    stop()
                    return
        threading.Thread(target=watch_parent, daemon=True).start()
    if ready_file:
        tmp = Path(f"{ready_file}.tmp")
        tmp.write_text(uri + "\n")
        tmp.replace(ready_file)
    if log:
        log(f"serving {settings.sqlite_path} (catalog {settings.name!r}) at {uri}")
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        service.catalog.engine.dispose()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.catalog.rest",
                                 description="Loopback Iceberg REST catalog over <warehouse>/catalog.db")
    ap.add_argument("--warehouse", required=True,
                    help="warehouse directory (holds catalog.db) or s3://bucket/prefix (with --state-dir)")
    ap.add_argument("--state-dir", help="local directory holding catalog.db (default: the warehouse "
                                        "directory; for S3 see bench.catalog)")
    ap.add_argument("--name", default=CatalogSettings("").name, help="catalog name in the SQLite tables")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    ap.add_argument("--ready-file", help="write the bound URI here once serving")
    ap.add_argument("--log-file", help="append one line per request here")
    ap.add_argument("--parent-pid", type=int, help="exit when this process is no longer our parent")
    a = ap.parse_args(argv)
    try:
        extra = {"state_dir": str(Path(a.state_dir).resolve())} if a.state_dir else {}
        settings = CatalogSettings.for_warehouse(a.warehouse, name=a.name, **extra)
        run_server(settings, a.host, a.port, a.ready_file, a.log_file, a.parent_pid)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
