"""A storage cap for an S3 warehouse served on this machine (`--storage-cap` with AWS_ENDPOINT_URL(_S3) on the
loopback): the S3 server's traffic is shaped on the loopback interface, per direction, with the kernel's HTB
queueing discipline (`tc`):

    server -> clients (the engine's GETs: its reads)    at READ bytes/s    (packets from the server's port)
    clients -> server (the engine's PUTs: its writes)   at WRITE bytes/s   (packets to the server's port)

every other loopback packet in a default class without a limit.  Reads and writes get separate budgets, as
an instance's network gives each direction its own (the model's "S3" storage options are per direction).
Unlike the block-device cap this is not per process: every client of that S3 server is shaped while the engine
runs (the harness itself is idle then, its catalog server's metadata writes included).  Written bytes are
durable when the PUT returns: there is nothing to flush.  The shaper's own counters (bytes sent per class)
say what passed through it.

One shaper at a time on this machine (the loopback has one root discipline): a root discipline that is not
this harness's is left alone and the cap refused; one a killed harness left (its handle) is removed first.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from urllib.parse import urlsplit

from bench.core.errors import UserError

DEV = "lo"
HANDLE = "be1"  # the root discipline's handle: this harness's shaper, and only it
_READ, _WRITE, _FREE = 10, 20, 99  # classes 1:10 (server -> clients), 1:20 (clients -> server), default
LOOPBACK = ("127.0.0.1", "localhost")
LOCK = os.path.join(tempfile.gettempdir(), "bench-loopback-shaper.lock")  # held by the run that shapes


def loopback_port(endpoint: str | None) -> int | None:
    """The port of an S3 endpoint served on this machine's IPv4 loopback, else None."""
    if not endpoint:
        return None
    parts = urlsplit(endpoint)
    if parts.hostname not in LOOPBACK:
        return None
    return parts.port or (443 if parts.scheme == "https" else 80)


def _tc(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["tc", *args], capture_output=True, text=True, check=check)


def _root() -> str:
    return _tc("qdisc", "show", "dev", DEV, "root", check=False).stdout.strip()


def check_shaper(endpoint: str | None) -> int:
    """Before anything runs: the S3 server's loopback port, and a `tc` that can shape it (UserError otherwise)."""
    port = loopback_port(endpoint)
    if port is None:
        raise UserError("--storage-cap: the warehouse is on S3 at "
                        + (f"{endpoint}, not on this machine's loopback" if endpoint else "AWS (no endpoint set)")
                        + "; a cap applies to a local warehouse's block device or to an S3 server on 127.0.0.1")
    if shutil.which("tc") is None:
        raise UserError("--storage-cap on a local S3 server needs `tc` (iproute2) to shape the loopback")
    root = _root()
    if root and f"qdisc htb {HANDLE}:" not in root and not root.startswith("qdisc noqueue"):
        raise UserError(f"--storage-cap: the loopback already has a queueing discipline ({root.splitlines()[0]}); "
                        "the harness will not replace it")
    return port


def _rate(bps: int | None) -> str:
    return "100gbit" if bps is None else f"{int(bps)}bps"  # tc's 'bps' is bytes per second


def _burst(bps: int | None) -> str:
    return f"{max(1 << 20, int((bps or 0) / 50))}b"  # 20 ms at the rate, at least 1 MiB (64 KiB loopback frames)


class LoopbackShaper:
    """Shape the S3 server's loopback traffic for one engine run: start(), counters(), stop()."""

    def __init__(self, port: int, read_bps: int | None, write_bps: int | None):
        self.port, self.read_bps, self.write_bps = port, read_bps, write_bps
        self.active = False
        self._lock: int | None = None

    def start(self) -> None:
        fd = os.open(LOCK, os.O_CREAT | os.O_RDWR, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise UserError("--storage-cap: another run is shaping the loopback (one S3 cap at a time on a "
                            "machine)") from None
        self._lock = fd
        if f"qdisc htb {HANDLE}:" in _root():  # a killed harness's shaper (no run holds the lock)
            _tc("qdisc", "del", "dev", DEV, "root", check=False)
        try:
            _tc("qdisc", "add", "dev", DEV, "root", "handle", f"{HANDLE}:", "htb", "default", str(_FREE))
            self.active = True
            for cls, bps in ((_READ, self.read_bps), (_WRITE, self.write_bps), (_FREE, None)):
                _tc("class", "add", "dev", DEV, "parent", f"{HANDLE}:", "classid", f"{HANDLE}:{cls}", "htb",
                    "rate", _rate(bps), "ceil", _rate(bps), "burst", _burst(bps), "cburst", _burst(bps))
            for cls, field in ((_READ, "sport"), (_WRITE, "dport")):
                _tc("filter", "add", "dev", DEV, "parent", f"{HANDLE}:", "protocol", "ip", "prio", "1", "u32",
                    "match", "ip", field, str(self.port), "0xffff", "flowid", f"{HANDLE}:{cls}")
        except subprocess.CalledProcessError as e:
            self.stop()
            raise UserError(f"--storage-cap: shaping the loopback failed: {(e.stderr or '').strip() or e}") from None

    def counters(self) -> tuple[int | None, int | None]:
        """(bytes the server sent to its clients, bytes its clients sent to it) through the shaper."""
        if not self.active:
            return None, None
        out = _tc("-s", "class", "show", "dev", DEV, check=False).stdout
        sent: dict[int, int] = {}
        for block in re.split(r"\n(?=class )", out):
            m = re.match(rf"class htb {HANDLE}:(\d+) .*?Sent (\d+) bytes", block, re.S)
            if m:
                sent[int(m.group(1))] = int(m.group(2))
        return sent.get(_READ), sent.get(_WRITE)

    def stop(self) -> None:
        if self.active:
            _tc("qdisc", "del", "dev", DEV, "root", check=False)
            self.active = False
        if self._lock is not None:
            os.close(self._lock)  # releases the lock
            self._lock = None


def stale_shaper(remove: bool = False) -> bool:
    """Is this harness's shaper on the loopback while no run holds its lock (a killed run left it)?  With
    `remove`, delete it (under the lock)."""
    if shutil.which("tc") is None or f"qdisc htb {HANDLE}:" not in _root():
        return False
    fd = os.open(LOCK, os.O_CREAT | os.O_RDWR, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a run is shaping right now
        if remove:
            _tc("qdisc", "del", "dev", DEV, "root", check=False)
        return True
    finally:
        os.close(fd)


__all__ = ["LoopbackShaper", "check_shaper", "loopback_port", "stale_shaper"]
