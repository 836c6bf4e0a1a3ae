"""The sampler sees a process tree's memory, CPU and I/O from outside, including short-lived children."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pyarrow.parquet as pq
import pytest

from bench.telemetry.sampler import SAMPLE_COLUMNS, Sampler

MB = 1024 * 1024

# A parent that starts a child; the child allocates ~200 MB, touches it, spins ~1.2 s of CPU, then
# writes and fsyncs 8 MB.  The grandchild-free parent just waits.
CHILD = textwrap.dedent("""
    import os, sys, time
    buf = bytearray(200 * 1024 * 1024)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    t = time.process_time()
    x = 0
    while time.process_time() - t < 1.2:
        x += 1
    with open(sys.argv[1], "wb") as f:
        f.write(os.urandom(8 * 1024 * 1024))
        f.flush()
        os.fsync(f.fileno())
    time.sleep(0.3)  # activity in the last interval before an exit can be missed (documented)
""")
PARENT = textwrap.dedent("""
    import os, subprocess, sys
    subprocess.run([sys.executable, "-c", sys.argv[1], sys.argv[2]], check=True)
    t = os.times()
    print(t.user + t.system + t.children_user + t.children_system)
""")

# A parent that runs many short-lived children (each ~60 ms of CPU, many of them shorter than one
# sampling interval), then prints its own CPU + reaped children's CPU: the ground truth.
CHURN = textwrap.dedent("""
    import os, subprocess, sys
    spin = "import time\\nt=time.process_time()\\nwhile time.process_time()-t<0.06: pass"
    for _ in range(15):
        subprocess.run([sys.executable, "-c", spin], check=True)
    t = os.times()
    print(t.user + t.system + t.children_user + t.children_system)
""")

pytestmark = pytest.mark.serial  # CPU, memory and sampling intervals measured: alone


def test_sampler_sees_a_childs_memory_cpu_and_io(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", PARENT, CHILD, str(tmp_path / "out.bin")],
                            stdout=subprocess.PIPE, text=True)
    with Sampler(proc.pid, interval_s=0.1) as s:
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    truth = float(out)  # CPU of the parent and its reaped child, by the kernel
    summary = s.summary
    rows = s.samples

    assert max(r["procs"] for r in rows) == 2  # parent + child, found by walking the tree
    # the child's 200 MB are seen in the summed RSS and in its kernel high-water mark
    assert summary.peak_rss_bytes >= 200 * MB
    assert summary.peak_hwm_bytes >= 200 * MB
    assert summary.peak_rss_bytes < 400 * MB
    # ~1.2 s of spinning plus start-up, all of it seen (less the parent's start before sampling)
    cpu_total = rows[-1]["cpu_s"]
    assert 1.2 <= cpu_total <= truth + 0.02
    assert cpu_total >= truth - 0.25, (cpu_total, truth)
    # cores per tick integrate to the CPU seconds; the spinning shows in p95 (the machine is shared,
    # so the child may not get a whole core)
    integral = sum(r["cores"] * (b["t_s"] - a["t_s"]) for a, b, r in zip(rows, rows[1:], rows[1:]))
    assert integral == pytest.approx(cpu_total, rel=0.01)
    assert summary.p95_cores >= summary.mean_cores > 0.1
    assert summary.mean_cores == pytest.approx(cpu_total / (rows[-1]["t_s"] - rows[0]["t_s"]), rel=0.01)
    assert summary.write_bytes >= 8 * MB  # fsync'ed to storage
    assert summary.read_chars == rows[-1]["read_chars"] > 0  # rchar: the interpreter read its modules at least
    assert summary.samples >= 10 and summary.interval_s == 0.1
    # samples are ~10 Hz
    ts = [r["t_s"] for r in rows]
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    assert sorted(gaps)[len(gaps) // 2] == pytest.approx(0.1, abs=0.03)
    assert s.self_cpu_s < 0.5

    path = s.write_samples(tmp_path / "x.samples.parquet")
    table = pq.read_table(path)
    assert tuple(table.column_names) == SAMPLE_COLUMNS
    assert table.num_rows == len(rows)
    assert max(table.column("rss_bytes").to_pylist()) == summary.peak_rss_bytes


def test_cpu_of_short_lived_children_is_not_lost(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", CHURN], stdout=subprocess.PIPE, text=True)
    with Sampler(proc.pid, interval_s=0.1) as s:
        out, _ = proc.communicate(timeout=60)
    truth = float(out.strip())
    measured = s.samples[-1]["cpu_s"]
    # everything but the root's own start-up before the first sample and its last < 0.1 s
    assert truth - 0.25 <= measured <= truth + 0.05, (measured, truth)
    assert measured >= 15 * 0.06


def test_summary_of_a_process_that_is_already_gone():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with Sampler(proc.pid) as s:
        pass
    assert s.summary.samples == 0 or s.summary.peak_rss_bytes == 0
    assert s.stop() is s.summary  # idempotent


def test_on_sample_callback_gets_the_summed_rss():
    seen = []
    proc = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(50 << 20); time.sleep(0.6)"])
    with Sampler(proc.pid, on_sample=seen.append) as s:
        proc.wait(timeout=30)
    # every tick that found memory, never the last one's 0 B (the tree gone: the progress line kept "RSS 0 B")
    assert min(seen) > 0 and len(seen) == sum(1 for row in s.samples if row["rss_bytes"])
    assert s.samples[-1]["rss_bytes"] == 0  # the sampler's own last row: nothing left
    assert max(seen) >= 50 * MB and max(seen) == s.summary.peak_rss_bytes


FORKER = textwrap.dedent("""
    import os, time
    b = bytearray(150 * 1024 * 1024)
    for i in range(0, len(b), 4096):
        b[i] = 1
    time.sleep(0.3)
    pid = os.fork()  # the child shares all 150 MB copy-on-write and never execs
    if pid == 0:
        time.sleep(0.8)
        os._exit(0)
    os.waitpid(pid, 0)
    time.sleep(0.2)
""")


def test_a_fork_is_not_counted_twice():
    proc = subprocess.Popen([sys.executable, "-c", FORKER])
    with Sampler(proc.pid) as s:
        proc.wait(timeout=30)
    rows = s.samples
    assert max(r["procs"] for r in rows) == 2  # the fork was seen ...
    both = [r["rss_bytes"] for r in rows if r["procs"] == 2]
    alone = [r["rss_bytes"] for r in rows if r["procs"] == 1 and r["rss_bytes"] > 150 * MB]
    assert alone and both
    # ... but its copy-on-write pages were not added a second time
    assert max(both) < max(alone) + 20 * MB, (max(both), max(alone))


def test_a_failing_callback_does_not_stop_the_sampling():
    def boom(rss):
        raise RuntimeError("watchdog bug")

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])
    with Sampler(proc.pid, on_sample=boom) as s:
        proc.wait(timeout=30)
    assert isinstance(s.callback_error, RuntimeError)
    assert s.summary.samples >= 5
