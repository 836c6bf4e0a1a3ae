"""Confinement for real: a storage cap slows a read from the disk through the kernel's throttle, a core
limit narrows the CPUs a child may run on, the flush fsyncs what was written, the write-back thread makes
buffered writes reach the device from inside the cgroup; bad caps are one-line errors."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from bench.core.errors import UserError
from bench.core.fileio import flush_files
from bench.core.units import MiB
from bench.telemetry.confine import Confiner, block_device, parse_storage_cap, stale_parents
from bench.telemetry.netcap import check_shaper


def test_parse_storage_cap():
    c = parse_storage_cap("125MiB/s")
    assert c is not None and c.read_bps == c.write_bps == 125 * MiB and c.limits
    c = parse_storage_cap("250MiB/s,60M/s")
    assert c is not None and (c.read_bps, c.write_bps) == (250 * MiB, 60 * MiB)
    c = parse_storage_cap("none")
    assert c is not None and c.read_bps is None and c.write_bps is None and not c.limits
    for bad in ("fast", "125MiB", "1/s,2/s,3/s", "0MiB/s"):
        with pytest.raises(UserError, match="--storage-cap"):
            parse_storage_cap(bad)
    with pytest.raises(UserError, match="S3"):
        check_shaper(None)


def _timed_direct_read(path, confiner: Confiner | None) -> float:
    """Seconds for dd to read `path` with O_DIRECT (from the device, never the page cache)."""
    t0 = time.perf_counter()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=1M", "iflag=direct", "status=none"], check=True,
                   preexec_fn=confiner.preexec if confiner else None)
    return time.perf_counter() - t0


def test_a_read_cap_slows_a_read_from_the_device_and_the_cgroup_counts_it(tmp_path):
    if not stale_parents():
        pytest.skip("no writable blkio/io cgroup here: the clear error is tested by the CLI test")
    f = tmp_path / "data.bin"
    f.write_bytes(os.urandom(4 * MiB))
    flush_files(tmp_path, 0)
    free = _timed_direct_read(f, None)
    confiner = Confiner(parse_storage_cap("4MiB/s,none"), block_device(tmp_path), [sorted(os.sched_getaffinity(0))[0]])
    try:
        capped = _timed_direct_read(f, confiner)
        confiner.finish()
    finally:
        confiner.release()
    assert all(not d.exists() for d in confiner.dirs)
    rec, core = confiner.storage, confiner.core_limit
    assert rec is not None and rec.read_bytes_per_s == 4 * MiB and rec.write_bytes_per_s is None
    assert core is not None and core.cores == 1 and "cpuset" in core.mechanism
    # 4 MiB at 4 MiB/s: about a second through the throttle, a few milliseconds without it
    assert capped > 0.6 and capped > 2 * free, (capped, free)
    assert rec.device_read_bytes is not None and rec.device_read_bytes >= 4 * MiB


def test_a_core_limit_narrows_the_childs_cpus(tmp_path):
    cpu = sorted(os.sched_getaffinity(0))[-1]
    confiner = Confiner(None, None, [cpu])
    try:
        out = subprocess.run(["python3", "-c", "import os; print(sorted(os.sched_getaffinity(0)))"], check=True,
                             capture_output=True, text=True, preexec_fn=confiner.preexec).stdout
    finally:
        confiner.release()
    assert out.strip() == f"[{cpu}]"


def test_flush_fsyncs_only_what_was_written_since(tmp_path):
    old = tmp_path / "old.bin"
    old.write_bytes(b"x" * 100)
    os.utime(old, (1, 1))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "new.bin").write_bytes(b"y" * 300)
    assert flush_files(tmp_path, time.time() - 60) == (1, 300)


_WRITER = """
import sys, time
from pathlib import Path
from bench.core.fileio import WriteBack
import contextlib
d, back = Path(sys.argv[1]), sys.argv[2] == "on"
since = time.time() - 1
with (WriteBack(d, since, 0.1) if back else contextlib.nullcontext()) as wb:
    with open(d / "out.bin", "wb") as f:  # buffered, never fsynced by the writer itself
        for _ in range(8):
            f.write(bytes(1 << 20)); f.flush(); time.sleep(0.05)
    time.sleep(0.4)
print(wb.bytes if back else 0)
"""


@pytest.mark.parametrize("back", ["on", "off"])
def test_the_write_back_thread_writes_from_inside_the_cgroup(tmp_path, back):
    """A v1 write throttle sees only writes its processes issue: buffered writes left to the kernel's flusher
    escape it.  With the write-back thread the cgroup's own counter sees the 8 MiB written; without, ~none."""
    if not stale_parents():
        pytest.skip("no writable blkio/io cgroup here: the clear error is tested by the CLI test")
    confiner = Confiner(parse_storage_cap("none"), block_device(tmp_path), None)
    try:
        out = subprocess.run(["python3", "-c", _WRITER, str(tmp_path), back], check=True, capture_output=True,
                             text=True, preexec_fn=confiner.preexec, cwd=os.getcwd()).stdout
        confiner.finish()
    finally:
        confiner.release()
    written = confiner.storage.device_write_bytes
    assert written is not None
    if back == "on":
        assert int(out) == 8 * MiB and written >= 8 * MiB, (out, written)
    else:
        assert written < 2 * MiB, written


def test_the_v2_files_are_written_and_read_in_the_kernels_format(tmp_path, monkeypatch):
    """This machine has cgroup v1: the v2 path (io.max, io.stat, cpuset.cpus) is checked against a directory
    laid out as the kernel's cgroup2 files are (the kernel itself is not exercised here)."""
    import bench.telemetry.confine as confine

    root = tmp_path / "cg2"
    root.mkdir()
    monkeypatch.setattr(confine, "_v1_dir", lambda controller: None)
    monkeypatch.setattr(confine, "_v2_dir", lambda controller: root)
    made: list = []
    real_mk = Confiner._mk

    def mk(self, parent, tag):  # the kernel creates a cgroup's files on mkdir; here they start empty
        d = real_mk(self, parent, tag)
        for name in ("io.max", "io.stat", "cpuset.cpus", "cgroup.procs"):
            (d / name).touch()
        made.append(d)
        return d

    monkeypatch.setattr(Confiner, "_mk", mk)
    c = Confiner(parse_storage_cap("250MiB/s,none"), ("vda", 254, 0), [0])
    d = made[0]
    assert (d / "io.max").read_text() == f"254:0 rbps={250 * MiB} wbps=max"
    assert (d / "cpuset.cpus").read_text() == "0"
    assert c.storage.cgroup_version == "v2" and "io.max" in c.storage.mechanism
    assert c.core_limit.mechanism == "cgroup v2 cpuset" and c.join == [d]  # one cgroup for both
    (d / "io.stat").write_text("8:0 rbytes=1 wbytes=2 rios=1 wios=1\n254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 "
                               "dbytes=0 dios=0\n")
    c.finish()
    assert (c.storage.device_read_bytes, c.storage.device_write_bytes) == (4096, 8192)
