"""The lower layer's small parts: progress output, the warehouse lock, sizes, SQL quoting, the phase
clock, the REST catalog's request log."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from bench.core.catalog.rest import request_log
from bench.core.errors import UserError
from bench.core.fmt import fmt_bytes
from bench.core.lock import WarehouseLock
from bench.core.progress import Progress
from bench.core.sql import ident, literal, spark_idents, spark_literal
from bench.core.units import check_scale, parse_size
from bench.engines.base import PhaseClock


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_progress_in_a_log_is_timestamped_and_thinned():
    out, clock = io.StringIO(), FakeClock()
    p = Progress(stream=out, live=False, log_interval_s=5.0, clock=clock)
    p.info("dataset ready")
    for i in range(10):  # ten heartbeats within 4.5 s: one line
        clock.t = i * 0.5
        p.status(f"beat {i}")
    clock.t = 5.0
    p.status("beat late")
    with p.task("datagen t", total=4, unit="files") as t:
        for _ in range(4):
            t.advance()
    lines = out.getvalue().splitlines()
    assert all(re.match(r"\d\d:\d\d:\d\d ", ln) for ln in lines), lines
    assert [ln[9:] for ln in lines][:3] == ["dataset ready", "beat 0", "beat late"]
    assert lines[-1].endswith("datagen t: done, 4/4 files (100%), 0.0 s")
    p.block("a | b\n1 | 2")
    assert out.getvalue().endswith("a | b\n1 | 2\n")  # tables as they are


def test_progress_on_a_terminal_redraws_one_line():
    out = io.StringIO()
    p = Progress(stream=out, live=True)
    p.status("compacting: 1 s")
    p.status("compacting: 2 s")
    p.info("done")
    text = out.getvalue()
    assert text.startswith("\rcompacting: 1 s\rcompacting: 2 s")
    assert text.endswith("done\n") and "\n" not in text[:-len("done\n")].replace("\r", "")


@pytest.mark.serial  # a time limit
def test_lock_is_exclusive_says_who_holds_it_and_is_free_after_a_kill(tmp_path):
    path = tmp_path / "state" / ".bench.lock"
    code = (f"import sys, time; sys.path.insert(0, {os.getcwd()!r})\n"
            "from bench.core.lock import WarehouseLock\n"
            f"l = WarehouseLock({str(path)!r}).acquire(); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match=f"in use by pid {holder.pid}"):
            WarehouseLock(path, wait=False).acquire()
        holder.kill()  # like kill -9: no clean-up at all
        holder.wait()
        said: list[str] = []
        t0 = time.monotonic()
        with WarehouseLock(path, wait=False, say=said.append) as lock:
            assert lock.took_over and lock.took_over["pid"] == holder.pid
        assert time.monotonic() - t0 < 5
        assert said and f"pid {holder.pid}" in said[0] and "no longer running" in said[0]
        with WarehouseLock(path, wait=False, say=said.append) as lock:  # released cleanly: nothing to say
            assert lock.took_over is None
    finally:
        if holder.poll() is None:
            holder.kill()


def test_a_child_forked_by_the_holder_does_not_keep_the_lock_after_the_holder_is_killed(tmp_path):
    """A child the holder forked without exec (as the catalog server and the generator's pool are) shares the
    holder's open files: the lock must still be free the moment the holder dies, the child alive or not."""
    path = tmp_path / "state" / ".bench.lock"
    code = (f"import os, sys, time; sys.path.insert(0, {os.getcwd()!r})\n"
            "from bench.core.lock import WarehouseLock\n"
            f"l = WarehouseLock({str(path)!r}).acquire()\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    os.write(1, b'forked\\n'); time.sleep(60); os._exit(0)\n"  # os.fork has returned in the child
            "os.write(1, b'%d\\n' % pid); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    said = sorted(holder.stdout.readline().strip() for _ in range(2))
    assert said[1] == "forked", said
    child = int(said[0])
    try:
        with pytest.raises(UserError, match=f"in use by pid {holder.pid}"):
            WarehouseLock(path, wait=False).acquire()
        holder.kill()
        holder.wait()
        os.kill(child, 0)  # still running (it raises if not)
        with WarehouseLock(path, wait=False, say=lambda _: None) as lock:
            assert lock.took_over and lock.took_over["pid"] == holder.pid
    finally:
        if holder.poll() is None:
            holder.kill()
        os.kill(child, signal.SIGKILL)


def test_sizes_scales_and_quoting():
    assert parse_size("512M") == 512 * 2**20 and parse_size("1.5g") == int(1.5 * 2**30) and parse_size(100) == 100
    for bad in ("lots", "-1G", "0"):
        with pytest.raises(UserError):
            parse_size(bad)
    assert check_scale("0.5") == 0.5
    for bad in (0, -1, "x", None, float("nan")):
        with pytest.raises(UserError, match="positive"):
            check_scale(bad)
    assert literal("it's") == "'it''s'" and ident('a"b') == '"a""b"'
    assert spark_idents("bench", "ns", "t`x") == "`bench`.`ns`.`t``x`"
    assert spark_literal("it's \\") == "'it\\'s \\\\'" and spark_literal(True) == "'true'"
    # one formatter of sizes for people: three significant digits, binary units
    assert [fmt_bytes(v) for v in (512, 1536, int(95.4 * 2**20), 3 * 2**30, None)] == [
        "512 B", "1.50 KiB", "95.4 MiB", "3.00 GiB", "—"]


def test_request_log_is_read_within_a_window_and_commits_are_told_apart(tmp_path):
    log = tmp_path / "rest.jsonl"
    w = request_log.RequestLog(log)
    w.write({"event": "serving", "uri": "http://127.0.0.1:1", "db": "x"})
    for t, method, path in ((10.0, "POST", "/v1/namespaces/bench/tables/t"), (11.0, "GET", "/v1/config"),
                            (12.0, "POST", "/v1/namespaces/bench/tables"), (20.0, "POST", "/v1/namespaces/b/tables/t")):
        w.write({"t": t, "method": method, "path": path, "status": 200, "ms": 1.0})
    w.close()
    with open(log, "a") as fh:
        fh.write('{"t": 11.5, "method": "PO')  # a line cut short by a killed server
    got = request_log.requests(log, 9.0, 15.0)
    assert [e["t"] for e in got] == [10.0, 11.0, 12.0]
    assert [request_log.is_commit(e) for e in got] == [True, False, False]  # creating a table is no commit
    assert request_log.requests(None, 0, 1e12) == [] and request_log.requests(tmp_path / "none", 0, 1e12) == []


def test_phase_clock_phases_add_up_to_the_call():
    clock = PhaseClock()
    t0 = time.perf_counter()
    with clock.phase("work"):
        time.sleep(0.02)
    time.sleep(0.02)  # untimed engine code
    phases = clock.complete(time.perf_counter() - t0)
    assert [p.name for p in phases] == ["work", "other"]
    assert abs(sum(p.seconds for p in phases) - (time.perf_counter() - t0)) < 0.01
