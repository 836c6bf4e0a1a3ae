"""The client of the loopback catalog's commit gate (`bench.core.catalog.rest.http.CommitGate`).

    arm(uri, "ns.t")      the next commit to ns.t is held by the server until release()
    state(uri)            {"armed", "table", "held": [{"table", "since", "released"}], "released", "passed"}
    disarm(uri)           let a held commit through; back to normal: commits pass straight through

Only our own server (`serve()`) has a gate; an external REST catalog has none.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from bench.core.catalog.rest import _no_proxy_opener


def _call(uri: str, path: str, body: dict[str, Any] | None = None, timeout: float = 5.0) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{uri.rstrip('/')}{path}", data=data, method="GET" if body is None else "POST",
                                 headers={"Content-Type": "application/json"})
    with _no_proxy_opener().open(req, timeout=timeout) as resp:
        return json.loads(resp.read() or b"{}")


def arm(uri: str, table: str) -> dict[str, Any]:
    return _call(uri, "/bench/gate/arm", {"table": table})


def state(uri: str) -> dict[str, Any]:
    return _call(uri, "/bench/gate")


def disarm(uri: str) -> dict[str, Any]:
    return _call(uri, "/bench/gate/disarm", {})
