"""The HTTP layer of the loopback REST catalog: werkzeug routing in front of `CatalogService`.

What it serves (Iceberg REST spec, `open-api/rest-catalog-open-api.yaml`; no prefix, no auth) is the
route table `URL_MAP` below, and GET /v1/config advertises exactly that table (`ENDPOINTS`).  An
unknown path is 404 NoSuchEndpointException, a known path with another method 405
UnsupportedOperationException, a server error 500 ServiceFailureException (traceback on stderr).
HEAD answers carry no body.

`CatalogServer` runs it on werkzeug's threaded server (one thread per connection; it dechunks
`Transfer-Encoding: chunked` request bodies, as iceberg-rust's and pyiceberg's clients send, and
closes the connection after every answer), bound to a loopback address only: the catalog has no
authentication.  With a log file it appends one JSON object per request (`bench.core.catalog.rest.request_log`:
the format, and its reader).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel
from pyiceberg.catalog.rest.response import ErrorResponse
from werkzeug.exceptions import MethodNotAllowed, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.routing.exceptions import RoutingException
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from bench.core.catalog import CatalogSettings
from bench.core.catalog.rest import service as svc
from bench.core.catalog.rest.request_log import RequestLog
from bench.core.catalog.rest.service import CatalogService, Result, error_model, rest_error
from bench.core.errors import UserError

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

Handler = Callable[..., Result]  # (service, request, **path values) -> (status, model)


# --------------------------------------------------------------------------------------------
# request parsing: path, query and body -> the service's inputs
# --------------------------------------------------------------------------------------------

def _body(request: Request) -> dict[str, Any]:
    data = request.get_data()
    raw = json.loads(data) if data.strip() else {}
    if not isinstance(raw, dict):
        raise svc.RestError(400, "BadRequestException", "the request body must be a JSON object")
    return raw


def _table(namespace: str, table: str) -> svc.Identifier:
    return (*svc.parse_namespace(namespace), unquote(table))


def _get_config(s: CatalogService, r: Request) -> Result:
    return s.get_config(r.args.get("warehouse"))


def _list_namespaces(s: CatalogService, r: Request) -> Result:
    parent = r.args.get("parent")
    return s.list_namespaces(svc.parse_namespace(parent) if parent else ())


def _create_namespace(s: CatalogService, r: Request) -> Result:
    return s.create_namespace(svc.CreateNamespaceRequest.model_validate(_body(r)))


def _load_namespace(s: CatalogService, r: Request, namespace: str) -> Result:
    return s.load_namespace(svc.parse_namespace(namespace))


def _namespace_exists(s: CatalogService, r: Request, namespace: str) -> Result:
    return s.namespace_exists(svc.parse_namespace(namespace))


def _drop_namespace(s: CatalogService, r: Request, namespace: str) -> Result:
    return s.drop_namespace(svc.parse_namespace(namespace))


def _update_namespace_properties(s: CatalogService, r: Request, namespace: str) -> Result:
    return s.update_namespace_properties(svc.parse_namespace(namespace),
                                         svc.UpdateNamespacePropertiesRequest.model_validate(_body(r)))


def _list_tables(s: CatalogService, r: Request, namespace: str) -> Result:
    return s.list_tables(svc.parse_namespace(namespace))


def _create_table(s: CatalogService, r: Request, namespace: str) -> Result:
    return s.create_table(svc.parse_namespace(namespace), svc.create_table_request(_body(r)))


def _register_table(s: CatalogService, r: Request, namespace: str) -> Result:
    return s.register_table(svc.parse_namespace(namespace), svc.register_table_request(_body(r)))


def _load_table(s: CatalogService, r: Request, namespace: str, table: str) -> Result:
    return s.load_table(_table(namespace, table))


def _table_exists(s: CatalogService, r: Request, namespace: str, table: str) -> Result:
    return s.table_exists(_table(namespace, table))


def _commit_table(s: CatalogService, r: Request, namespace: str, table: str) -> Result:
    identifier = _table(namespace, table)
    req = svc.commit_table_request(_body(r), identifier)
    GATE.pass_commit(identifier)
    return s.commit_table(identifier, req)


def _drop_table(s: CatalogService, r: Request, namespace: str, table: str) -> Result:
    purge = (r.args.get("purgeRequested") or "false").lower() == "true"
    return s.drop_table(_table(namespace, table), purge=purge)


def _rename_table(s: CatalogService, r: Request) -> Result:
    return s.rename_table(svc.RenameTableRequest.model_validate(_body(r)))


def _commit_transaction(s: CatalogService, r: Request) -> Result:
    req = svc.CommitTransactionRequest.model_validate(_body(r))
    for change in req.table_changes:
        ident = change.get("identifier", {}) if isinstance(change, dict) else {}
        GATE.pass_commit((*ident.get("namespace", []), ident.get("name", "")))
    return s.commit_transaction(req)


# --------------------------------------------------------------------------------------------
# the commit gate: a deterministic interleaving for the live-writer scenarios
# --------------------------------------------------------------------------------------------

class CommitGate:
    """Holds the next commit to one table until released, so another writer's commit can land between
    an engine's planning and its commit (`bench.core.catalog.rest.gate` is the client).  Disarmed (the
    default), commits pass straight through.  A held commit waits at most `max_hold_s`, then passes."""

    def __init__(self, max_hold_s: float = 300.0):
        self.max_hold_s = max_hold_s
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.table: tuple[str, ...] | None = None
        self.held: list[dict[str, Any]] = []  # commits held since armed: {table, since, released}
        self.passed = 0  # commits to the armed table that were not held (after release)

    def arm(self, table: tuple[str, ...]) -> None:
        with self._lock:
            self.table, self.held, self.passed = tuple(table), [], 0
            self._release.clear()

    def release(self) -> None:
        self._release.set()

    def disarm(self) -> None:
        with self._lock:
            self.table = None
        self._release.set()

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {"armed": self.table is not None, "table": ".".join(self.table) if self.table else None,
                    "held": [dict(h) for h in self.held], "released": self._release.is_set(),
                    "passed": self.passed}

    def pass_commit(self, table: tuple[str, ...]) -> None:
        with self._lock:
            if self.table is None or tuple(table) != self.table:
                return
            if self._release.is_set():
                self.passed += 1
                return
            entry: dict[str, Any] = {"table": ".".join(table), "since": time.time(), "released": None}
            self.held.append(entry)
        self._release.wait(self.max_hold_s)
        with self._lock:
            entry["released"] = time.time()


GATE = CommitGate()


class _GateModel(BaseModel):
    armed: bool
    table: str | None = None
    held: list[dict[str, Any]] = []
    released: bool = False
    passed: int = 0


def _gate_state(s: CatalogService, r: Request) -> Result:
    return 200, _GateModel.model_validate(GATE.state())


def _gate_arm(s: CatalogService, r: Request) -> Result:
    table = str(_body(r).get("table") or "")
    if "." not in table:
        raise svc.RestError(400, "BadRequestException", "arm the gate with {\"table\": \"namespace.table\"}")
    GATE.arm(tuple(table.split(".")))
    return _gate_state(s, r)


def _gate_disarm(s: CatalogService, r: Request) -> Result:
    GATE.disarm()
    return _gate_state(s, r)


# --------------------------------------------------------------------------------------------
# the route table
# --------------------------------------------------------------------------------------------

def _rule(method: str, path: str, handler: Handler) -> Rule:
    rule = Rule(path, methods=[method], endpoint=handler)
    rule.methods = {method}  # werkzeug adds HEAD to every GET rule; here HEAD routes are their own
    return rule


# Path variables are matched on the raw (still percent-encoded) path and decoded by the handlers,
# so an encoded "/" stays inside its segment.
def _iceberg_rules() -> list[Rule]:
    return [
        _rule("GET", "/v1/config", _get_config),
        _rule("GET", "/v1/namespaces", _list_namespaces),
        _rule("POST", "/v1/namespaces", _create_namespace),
        _rule("GET", "/v1/namespaces/<namespace>", _load_namespace),
        _rule("HEAD", "/v1/namespaces/<namespace>", _namespace_exists),
        _rule("DELETE", "/v1/namespaces/<namespace>", _drop_namespace),
        _rule("POST", "/v1/namespaces/<namespace>/properties", _update_namespace_properties),
        _rule("GET", "/v1/namespaces/<namespace>/tables", _list_tables),
        _rule("POST", "/v1/namespaces/<namespace>/tables", _create_table),  # also stage-create
        _rule("POST", "/v1/namespaces/<namespace>/register", _register_table),
        _rule("GET", "/v1/namespaces/<namespace>/tables/<table>", _load_table),
        _rule("HEAD", "/v1/namespaces/<namespace>/tables/<table>", _table_exists),
        _rule("POST", "/v1/namespaces/<namespace>/tables/<table>", _commit_table),
        _rule("DELETE", "/v1/namespaces/<namespace>/tables/<table>", _drop_table),  # ?purgeRequested=true
        _rule("POST", "/v1/tables/rename", _rename_table),
        _rule("POST", "/v1/transactions/commit", _commit_transaction),  # one table only (else 501)
    ]


def _gate_rules() -> list[Rule]:
    """The harness's own routes (not Iceberg's, never advertised): the commit gate."""
    return [
        _rule("GET", "/bench/gate", _gate_state),
        _rule("POST", "/bench/gate/arm", _gate_arm),
        _rule("POST", "/bench/gate/disarm", _gate_disarm),
    ]


URL_MAP = Map(_iceberg_rules(), merge_slashes=False)  # what the catalog advertises
SERVED_MAP = Map(_iceberg_rules() + _gate_rules(), merge_slashes=False)  # what it answers


def advertised_endpoints(url_map: Map = URL_MAP) -> list[str]:
    """Every route but GET /v1/config in the spec's notation, "METHOD /v1/{prefix}/path/{var}" (the
    {prefix} placeholder is what clients match on; this server uses no prefix)."""
    out: list[str] = []
    for rule in url_map.iter_rules():
        if rule.endpoint is _get_config:
            continue
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule).replace("/v1/", "/v1/{prefix}/", 1)
        out.extend(f"{method} {path}" for method in sorted(rule.methods or ()))
    return out


ENDPOINTS = advertised_endpoints()


# --------------------------------------------------------------------------------------------
# the WSGI application
# --------------------------------------------------------------------------------------------

def _raw_path(request: Request) -> str:
    """The request path as sent (percent-encoded), without the trailing slash."""
    raw = request.environ.get("RAW_URI") or request.environ.get("REQUEST_URI")
    if raw:
        path = urlsplit(raw.encode("latin-1").decode("utf-8", "replace")).path
    else:
        path = request.path
    return path.rstrip("/") or "/"


class CatalogApp:
    """WSGI application: route, parse, call the service, answer JSON (and log the request)."""

    def __init__(self, service: CatalogService, log: RequestLog | None = None, url_map: Map | None = None):
        self.service = service
        self.log = log
        self._urls = (url_map or SERVED_MAP).bind("localhost")

    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Any:
        t0 = time.perf_counter()
        request = Request(environ)
        status, model = self.answer(request)
        payload = None if model is None or request.method == "HEAD" else model.model_dump_json()
        response = Response(payload, status=status,
                            content_type="application/json" if payload is not None else None)
        if self.log:
            record: dict[str, Any] = {"t": time.time(), "method": request.method, "path": request.path,
                                      "status": status, "ms": round((time.perf_counter() - t0) * 1000, 3)}
            if status >= 400:
                record["error"] = (f"{model.error.type}: {model.error.message[:500]}"
                                   if isinstance(model, ErrorResponse) else response.status)
            self.log.write(record)
        return response(environ, start_response)

    def answer(self, request: Request) -> tuple[int, BaseModel | None]:
        try:
            request.get_data()  # read the whole body (dechunked by the server) whatever the answer
            handler, values = self._urls.match(_raw_path(request), method=request.method)
            return handler(self.service, request, **values)
        except MethodNotAllowed:
            return 405, error_model(405, "UnsupportedOperationException",
                                    f"{request.method} {request.path} is not served by this catalog")
        except (NotFound, RoutingException):  # RoutingException: a redirect werkzeug would suggest
            return 404, error_model(404, "NoSuchEndpointException",
                                    f"{request.method} {request.path} is not served by this catalog")
        except Exception as exc:  # noqa: BLE001 - every failure becomes a REST error response
            answer = rest_error(exc)
            if answer is not None:
                return answer
            traceback.print_exc(file=sys.stderr)
            sys.stderr.flush()
            return 500, error_model(500, "ServiceFailureException", f"{type(exc).__name__}: {exc}")


# --------------------------------------------------------------------------------------------
# the server
# --------------------------------------------------------------------------------------------

class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # the request log is CatalogApp's, and only when asked for


class CatalogServer:
    """`settings`' catalog served on host:port (0 = a free port) until `shutdown()`.

    `serve_forever()` blocks; `shutdown()` (from another thread) makes it return; `close()` (or the
    `with` block's end) releases the socket, the database and the log."""

    def __init__(self, settings: CatalogSettings, host: str = "127.0.0.1", port: int = 0, *,
                 log_file: str | Path | None = None):
        if host not in LOOPBACK_HOSTS:
            raise UserError(f"--host {host}: this catalog has no authentication; bind a loopback address "
                            f"({', '.join(LOOPBACK_HOSTS)})")
        self.settings = settings
        self.service = CatalogService(settings, endpoints=ENDPOINTS)
        self.log = RequestLog(log_file) if log_file else None
        self.app = CatalogApp(self.service, self.log)
        self._server: BaseWSGIServer = make_server(host, port, self.app, threaded=True,
                                                   request_handler=_QuietHandler)
        bound_host, bound_port = str(self._server.server_address[0]), int(self._server.server_address[1])
        self.uri = f"http://{'[' + bound_host + ']' if ':' in bound_host else bound_host}:{bound_port}"
        if self.log:
            self.log.write({"event": "serving", "uri": self.uri, "db": str(settings.sqlite_path)})

    def serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        self._server.shutdown()

    def close(self) -> None:
        self._server.server_close()
        self.service.close()
        if self.log:
            self.log.close()

    def __enter__(self) -> CatalogServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
