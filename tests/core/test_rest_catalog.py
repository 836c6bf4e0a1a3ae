"""The loopback Iceberg REST catalog (bench.core.catalog.rest) against real clients: pyiceberg's
RestCatalog, pyiceberg's SqlCatalog on the same SQLite file, and DuckDB 1.5.5's iceberg extension;
its service without sockets, and the HTTP layer's chunked bodies, route table and request log."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from http.client import HTTPConnection
from pathlib import Path

import psutil
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.table.update import AssertRefSnapshotId, AssertTableUUID, SetPropertiesUpdate
from pyiceberg.types import LongType, NestedField, StringType
from werkzeug.test import Client

from bench.core.catalog import CatalogSettings, load_sql_catalog
from bench.core.catalog.duck import duckdb_connect_iceberg
from bench.core.catalog.rest import ServedCatalog, check_rest_uri, serve
from bench.core.catalog.rest import main as rest_main
from bench.core.catalog.rest import service as svc
from bench.core.catalog.rest.http import ENDPOINTS, URL_MAP, CatalogApp
from bench.core.catalog.rest.service import CatalogService
from bench.core.errors import UserError


def batch(start: int, n: int = 5) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "name": pa.array([f"row-{i}" for i in range(start, start + n)])})


def rows(tbl) -> list[tuple]:
    t = tbl.scan().to_arrow()
    return sorted(zip(t["id"].to_pylist(), t["name"].to_pylist()))


NO_RETRY = {"commit.retry.num-retries": "0"}  # pyiceberg would otherwise retry a 409 on a fresh base


def http(method: str, url: str, body: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=10) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else {}
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else {}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    settings = CatalogSettings(warehouse=str(tmp_path_factory.mktemp("wh")))
    log = tmp_path_factory.mktemp("log") / "requests.log"
    with serve(settings, log_file=log) as s:
        assert isinstance(s, ServedCatalog) and s.log_file == log
        rc = RestCatalog("bench", uri=s.settings.rest_uri)
        rc.create_namespace("bench")
        yield s.settings
    records = [json.loads(ln) for ln in log.read_text().splitlines()]  # request log written only because asked
    assert any(r.get("method") == "POST" and r.get("path") == "/v1/namespaces" for r in records)


def test_serve_yields_rest_settings(served):
    assert served.rest_uri.startswith("http://127.0.0.1:")
    assert served.sqlite_path.exists() and not served.external_rest
    config = check_rest_uri(served.rest_uri)
    assert config["overrides"]["warehouse"] == served.warehouse_uri
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}" in config["endpoints"]


def test_rest_and_sql_catalog_share_tables(served):
    rc = RestCatalog("bench", uri=served.rest_uri)
    t = rc.create_table("bench.shared", batch(0).schema)
    t.append(batch(0))
    t.append(batch(5))
    assert rc.table_exists("bench.shared") and ("bench", "shared") in rc.list_tables("bench")
    assert rows(rc.load_table("bench.shared")) == rows(t) and len(rows(t)) == 10

    sql = load_sql_catalog(served)  # the same SQLite file, no server in between
    st = sql.load_table("bench.shared")
    assert rows(st) == rows(t)
    assert st.metadata.current_snapshot_id == rc.load_table("bench.shared").metadata.current_snapshot_id

    st.append(batch(100))  # a commit straight to SQLite is seen through REST (and vice versa above)
    assert len(rows(rc.load_table("bench.shared"))) == 15
    assert rows(rc.load_table("bench.shared")) == rows(sql.load_table("bench.shared"))


def test_stale_commit_gets_409_and_does_not_overwrite(served):
    a = RestCatalog("bench", uri=served.rest_uri)
    b = RestCatalog("bench", uri=served.rest_uri)
    a.create_table("bench.race", batch(0).schema, properties=NO_RETRY).append(batch(0))
    ta, tb = a.load_table("bench.race"), b.load_table("bench.race")  # same base snapshot
    base = ta.metadata.current_snapshot_id
    ta.append(batch(10))
    won = a.load_table("bench.race").metadata.current_snapshot_id
    with pytest.raises(CommitFailedException):
        tb.append(batch(20))  # requirement assert-ref-snapshot-id(main == base) fails
    after = load_sql_catalog(served).load_table("bench.race")
    assert after.metadata.current_snapshot_id == won != base
    assert [r[0] for r in rows(after)] == list(range(5)) + list(range(10, 15))

    # the raw answer: HTTP 409 with the REST error model
    status, body = http("POST", f"{served.rest_uri}/v1/namespaces/bench/tables/race", {
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": base}],
        "updates": [{"action": "set-properties", "updates": {"x": "y"}}]})
    assert status == 409
    assert body["error"]["type"] == "CommitFailedException" and body["error"]["code"] == 409
    assert "x" not in load_sql_catalog(served).load_table("bench.race").properties

    # with pyiceberg's default retries the loser re-applies its append on the new base: nothing lost
    tc = b.load_table("bench.race")
    tc.transaction().set_properties({"commit.retry.num-retries": "4"}).commit_transaction()
    tc, td = b.load_table("bench.race"), a.load_table("bench.race")
    td.append(batch(30))
    tc.append(batch(40))  # 409 inside, retried on the refreshed table
    assert len(rows(load_sql_catalog(served).load_table("bench.race"))) == 20


def test_concurrent_commits_from_one_base_one_wins(served):
    RestCatalog("bench", uri=served.rest_uri).create_table("bench.concurrent", batch(0).schema,
                                                            properties=NO_RETRY)
    clients = [RestCatalog("bench", uri=served.rest_uri) for _ in range(4)]
    tables = [c.load_table("bench.concurrent") for c in clients]
    outcomes: list[str] = []
    go = threading.Barrier(len(tables))

    def commit(i: int, t) -> None:
        go.wait()
        try:
            t.append(batch(1000 * (i + 1)))
            outcomes.append("ok")
        except CommitFailedException:
            outcomes.append("409")

    threads = [threading.Thread(target=commit, args=(i, t)) for i, t in enumerate(tables)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert sorted(outcomes) == ["409", "409", "409", "ok"]
    final = load_sql_catalog(served).load_table("bench.concurrent")
    assert len(final.metadata.snapshots) == 1 and len(rows(final)) == 5


def test_unknown_table_and_namespace_are_404(served):
    status, body = http("GET", f"{served.rest_uri}/v1/namespaces/bench/tables/nope")
    assert status == 404 and body["error"]["type"] == "NoSuchTableException"
    status, body = http("GET", f"{served.rest_uri}/v1/namespaces/nope/tables")
    assert status == 404 and body["error"]["type"] == "NoSuchNamespaceException"
    status, body = http("POST", f"{served.rest_uri}/v1/namespaces/bench/tables/nope",
                        {"requirements": [], "updates": []})
    assert status == 404 and body["error"]["type"] == "NoSuchTableException"
    with pytest.raises(NoSuchTableError):
        RestCatalog("bench", uri=served.rest_uri).load_table("bench.nope")


def test_config_checks_the_warehouse(served):
    for ok in (served.warehouse, served.warehouse_uri, served.name):
        status, _ = http("GET", f"{served.rest_uri}/v1/config?warehouse={urllib.parse.quote(ok)}")
        assert status == 200, ok
    status, body = http("GET", f"{served.rest_uri}/v1/config?warehouse=%2Fsomewhere%2Felse")
    assert status == 400 and "unknown warehouse" in body["error"]["message"]


def test_staged_create_rename_drop(served):
    rc = RestCatalog("bench", uri=served.rest_uri)
    with rc.create_table_transaction("bench.staged", batch(0).schema) as txn:  # stage-create + assert-create
        txn.set_properties(owner="test")
    sql = load_sql_catalog(served)
    assert sql.load_table("bench.staged").properties["owner"] == "test"
    rc.rename_table("bench.staged", "bench.renamed")
    assert not sql.table_exists("bench.staged") and sql.table_exists("bench.renamed")
    rc.drop_table("bench.renamed")
    assert not rc.table_exists("bench.renamed")


def test_duckdb_reads_the_table_through_rest(served):
    rc = RestCatalog("bench", uri=served.rest_uri)
    t = rc.create_table("bench.duck", batch(0).schema)
    for i in range(3):
        t.append(batch(10 * i))
    con = duckdb_connect_iceberg(served)
    try:
        got = sorted(con.execute("SELECT id, name FROM ice.bench.duck").fetchall())
        assert got == rows(rc.load_table("bench.duck")) and len(got) == 15
        assert con.execute("SELECT count(*) FROM ice.bench.duck").fetchone()[0] == 15
    finally:
        con.close()


@pytest.mark.serial  # a time limit
def test_check_rest_uri_dead_port_fails_fast():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(UserError, match=rf"catalog URI http://127.0.0.1:{port} does not answer .*"
                                        r"start it or drop --catalog-uri"):
        check_rest_uri(f"http://127.0.0.1:{port}")
    assert time.monotonic() - t0 < 2


def _server_children(warehouse: str) -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True)
            if "bench.core.catalog.rest" in p.cmdline() and warehouse in p.cmdline()]


def test_server_process_is_gone_after_serve(tmp_path):
    settings = CatalogSettings(warehouse=str(tmp_path / "wh"))
    with pytest.raises(RuntimeError, match="boom"), serve(settings) as served:
        s = served.settings
        procs = _server_children(str(s.warehouse_path.resolve()))
        assert len(procs) == 1 and procs[0].is_running() and procs[0].pid == served.pid
        assert procs[0].net_connections(kind="tcp")[0].laddr.ip == "127.0.0.1"
        raise RuntimeError("boom")  # the server must stop on exceptions too
    assert not psutil.pid_exists(procs[0].pid)
    assert _server_children(str(s.warehouse_path.resolve())) == []
    with pytest.raises(UserError):
        check_rest_uri(s.rest_uri, timeout=1)


def test_server_refuses_non_loopback_bind(tmp_path, capsys):
    assert rest_main(["--warehouse", str(tmp_path), "--host", "0.0.0.0"]) == 2
    assert "loopback" in capsys.readouterr().err


def test_error_model_for_bad_requests(served):
    uri = served.rest_uri
    cases = [
        ("PUT", "/v1/config", None, 405, "UnsupportedOperationException"),
        ("GET", "/v1/nowhere", None, 404, "NoSuchEndpointException"),
        ("POST", "/v1/namespaces", {"namespace": ["bench"]}, 409, "AlreadyExistsException"),
        ("POST", "/v1/namespaces", {"namespace": "not-a-list"}, 400, "BadRequestException"),
        ("POST", "/v1/namespaces/bench/tables/shared", {"updates": [{"action": "no-such-update"}]},
         400, "BadRequestException"),
        ("POST", "/v1/transactions/commit", {"table-changes": [{}, {}]}, 501, "UnsupportedOperationException"),
    ]
    RestCatalog("bench", uri=uri).create_table("bench.errors", batch(0).schema)
    cases.append(("DELETE", "/v1/namespaces/bench", None, 409, "NamespaceNotEmptyException"))
    for method, path, body, code, type_ in cases:
        status, answer = http(method, uri + path, body)
        assert (status, answer["error"]["type"], answer["error"]["code"]) == (code, type_, code), (method, path)
        assert answer["error"]["message"]


# --------------------------------------------------------------------------------------------
# the service without sockets
# --------------------------------------------------------------------------------------------

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))


@pytest.fixture
def service(tmp_path, monkeypatch):
    def no_sockets(*args, **kwargs):
        raise AssertionError("the catalog service must not open sockets")

    monkeypatch.setattr(socket, "socket", no_sockets)
    s = CatalogService(CatalogSettings(warehouse=str(tmp_path / "wh")), endpoints=ENDPOINTS)
    yield s
    s.close()


def _error(answer) -> dict:
    status, model = answer
    body = json.loads(model.model_dump_json())
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "code"}
    assert body["error"]["code"] == status and body["error"]["message"]
    return body["error"]


def test_service_operations_without_sockets(service):
    status, config = service.get_config(service.settings.warehouse)
    assert status == 200 and config.endpoints == ENDPOINTS
    assert config.overrides["warehouse"] == service.settings.warehouse_uri
    assert _error(service.get_config("/somewhere/else"))["type"] == "BadRequestException"

    status, ns = service.create_namespace(svc.CreateNamespaceRequest(namespace=["bench"], properties={"a": "b"}))
    assert status == 200 and ns.namespace == ("bench",) and ns.properties == {"a": "b"}
    assert service.namespace_exists(("bench",)) == (204, None)
    assert _error(service.create_namespace(svc.CreateNamespaceRequest(namespace=["bench"])))["type"] \
        == "AlreadyExistsException"
    assert svc.parse_namespace("a%1Fb") == ("a", "b") == svc.parse_namespace("a\x1fb")

    status, created = service.create_table(("bench",), svc.CreateTableRequest(
        name="t", location=None, schema=SCHEMA, partition_spec=None, write_order=None))
    assert status == 200 and created.metadata_location and created.config == {}
    status, listed = service.list_tables(("bench",))
    assert status == 200 and [(e.namespace, e.name) for e in listed.identifiers] == [(("bench",), "t")]

    status, loaded = service.load_table(("bench", "t"))
    assert status == 200 and loaded.metadata_location == created.metadata_location
    assert loaded.config == service.settings.file_io_properties()
    uuid = loaded.metadata.table_uuid

    # a commit whose requirements hold
    ok = svc.CommitTableRequest(identifier={"namespace": ["ignored"], "name": "ignored"},
                                requirements=(AssertTableUUID(uuid=uuid),),
                                updates=(SetPropertiesUpdate(updates={"k": "1"}),))
    status, committed = service.commit_table(("bench", "t"), ok)
    assert status == 200 and committed.metadata.properties["k"] == "1"
    assert committed.metadata_location != created.metadata_location

    # a stale requirement: 409 in the REST error model, nothing written
    stale = svc.commit_table_request({
        "requirements": [AssertRefSnapshotId(ref="main", snapshot_id=42).model_dump(by_alias=True)],
        "updates": [{"action": "set-properties", "updates": {"k": "2"}}]}, ("bench", "t"))
    assert service.commit_table(("bench", "t"), stale)[0] == 409
    error = _error(service.commit_table(("bench", "t"), stale))
    assert error["type"] == "CommitFailedException" and error["code"] == 409
    assert service.load_table(("bench", "t"))[1].metadata.properties["k"] == "1"

    # unknown table / namespace: 404
    for answer, type_ in [(service.load_table(("bench", "nope")), "NoSuchTableException"),
                          (service.table_exists(("bench", "nope")), "NoSuchTableException"),
                          (service.commit_table(("bench", "nope"), ok), "NoSuchTableException"),
                          (service.drop_table(("bench", "nope")), "NoSuchTableException"),
                          (service.list_tables(("nope",)), "NoSuchNamespaceException"),
                          (service.namespace_exists(("nope",)), "NoSuchNamespaceException")]:
        assert answer[0] == 404 and _error(answer)["type"] == type_

    # what this catalog does not do: 501
    two = svc.CommitTransactionRequest.model_validate({"table-changes": [{}, {}]})
    assert _error(service.commit_transaction(two))["code"] == 501
    overwrite = svc.register_table_request({"name": "r", "metadata-location": created.metadata_location,
                                            "overwrite": True})
    assert _error(service.register_table(("bench",), overwrite))["type"] == "UnsupportedOperationException"

    # rename, drop namespace (409 while not empty), drop with purge
    rename = svc.RenameTableRequest.model_validate({"source": {"namespace": ["bench"], "name": "t"},
                                                    "destination": {"namespace": ["bench"], "name": "u"}})
    assert service.rename_table(rename) == (204, None)
    assert _error(service.drop_namespace(("bench",)))["type"] == "NamespaceNotEmptyException"
    assert service.drop_table(("bench", "u"), purge=True) == (204, None)
    assert service.drop_namespace(("bench",)) == (204, None)


def test_server_error_is_500_with_traceback(service, capsys):
    def broken(identifier):
        raise RuntimeError("kaput")

    service.load_table = broken
    resp = Client(CatalogApp(service)).get("/v1/namespaces/bench/tables/t")  # WSGI, no sockets
    assert resp.status_code == 500 and resp.json["error"]["type"] == "ServiceFailureException"
    assert "RuntimeError: kaput" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# the HTTP layer
# --------------------------------------------------------------------------------------------

def test_chunked_request_body_is_accepted(served):
    host, port = served.rest_uri.removeprefix("http://").split(":")
    body = json.dumps({"namespace": ["chunked"], "properties": {"sent": "in chunks"}}).encode()
    conn = HTTPConnection(host, int(port), timeout=10)
    try:
        conn.putrequest("POST", "/v1/namespaces")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        for i in range(0, len(body), 10):
            chunk = body[i:i + 10]
            conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        conn.send(b"0\r\n\r\n")
        resp = conn.getresponse()
        answer = json.loads(resp.read())
    finally:
        conn.close()
    assert resp.status == 200 and answer == {"namespace": ["chunked"], "properties": {"sent": "in chunks"}}
    assert load_sql_catalog(served).load_namespace_properties("chunked") == {"sent": "in chunks"}


def test_config_advertises_the_route_table(served):
    expected = []
    for rule in URL_MAP.iter_rules():
        (method,) = rule.methods
        if (method, rule.rule) == ("GET", "/v1/config"):
            continue
        path = rule.rule.replace("/v1/", "/v1/{prefix}/").replace("<namespace>", "{namespace}")
        expected.append(f"{method} {path.replace('<table>', '{table}')}")
    assert len(expected) == len(list(URL_MAP.iter_rules())) - 1 == 15
    assert check_rest_uri(served.rest_uri)["endpoints"] == expected == ENDPOINTS
    # and every advertised endpoint is served (answers, though not necessarily with success)
    for endpoint in expected:
        method, path = endpoint.split(" ")
        path = path.format(prefix="", namespace="nowhere", table="nothing").replace("//", "/")
        status, answer = http(method, served.rest_uri + path, None if method in ("GET", "HEAD", "DELETE") else {})
        assert status != 405 and answer.get("error", {}).get("type") != "NoSuchEndpointException", endpoint


def test_request_log_and_server_pid(tmp_path):
    log = tmp_path / "requests.log"
    calls = [("GET", "/v1/config", None, 200), ("POST", "/v1/namespaces", {"namespace": ["logged"]}, 200),
             ("HEAD", "/v1/namespaces/logged", None, 204), ("GET", "/v1/namespaces/logged/tables/nope", None, 404),
             ("DELETE", "/v1/namespaces/logged", None, 204)]
    with serve(CatalogSettings(warehouse=str(tmp_path / "wh")), log_file=log) as served:
        assert served.log_file == log and served.pid
        proc = psutil.Process(served.pid)
        assert proc.is_running() and "bench.core.catalog.rest" in proc.cmdline()
        uri = served.settings.rest_uri
        t0 = time.time()
        for method, path, body, code in calls:
            assert http(method, uri + path, body)[0] == code, (method, path)
        t1 = time.time()
    assert not psutil.pid_exists(served.pid)

    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records[0] == {"event": "serving", "uri": uri, "db": str(served.settings.sqlite_path)}
    assert (records[1]["method"], records[1]["path"]) == ("GET", "/v1/config")  # serve()'s readiness probe
    mine = records[2:]
    assert [(r["method"], r["path"], r["status"]) for r in mine] == [(m, p, c) for m, p, _, c in calls]
    for r in mine:
        assert set(r) == {"t", "method", "path", "status", "ms"} | ({"error"} if r["status"] >= 400 else set())
        assert isinstance(r["t"], float) and t0 <= r["t"] <= t1
        assert isinstance(r["ms"], float) and 0 <= r["ms"] <= (t1 - t0) * 1000
    assert mine[3]["error"] == "NoSuchTableException: Table does not exist: logged.nope"



ORPHAN_PARENT = """
import sys, time
from bench.core.catalog import CatalogSettings
from bench.core.catalog.rest import serve
with serve(CatalogSettings(warehouse=sys.argv[1])) as s:
    print(s.pid, flush=True)
    time.sleep(3600)
"""


def test_a_killed_harness_leaves_neither_its_server_nor_its_scratch_directory(tmp_path, monkeypatch):
    """SIGKILL of the process that served the catalog (as the OOM killer would): its server dies with it, and the
    scratch directory (ready file, stderr) it could not remove goes at the next server start."""
    import subprocess
    import sys
    import tempfile

    # a temporary directory of its own: another worker's server start would sweep the dead scratch directory first
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN_PARENT, str(tmp_path / "wh")], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    server = psutil.Process(int(parent.stdout.readline()))
    d = Path(os.readlink(f"/proc/{server.pid}/fd/2")).parent  # its stderr, in the scratch directory
    assert d.name.startswith("bench-rest-") and (d / "ready").exists() and d.parent == private
    parent.kill()
    parent.wait()
    server.wait(timeout=10)  # raises if it outlives its harness
    assert d.exists()  # nobody left to remove it ...
    with serve(CatalogSettings(warehouse=str(tmp_path / "wh"))):
        assert not d.exists()  # ... until the next server starts
