"""`bench selfcheck telemetry`: what the 10 Hz sampler itself costs.

(a) The sampler's own CPU (its thread's CPU clock) while it samples a Spark-like process tree: a
    root process, a child with many threads (like a JVM) and two grandchildren.  Goal <= 1% of a core.
(b) A fixed CPU + I/O workload (a subprocess hashing data while its child writes and fsyncs files),
    timed with and without the sampler around it, in one run, repetitions interleaved (ABBA order)
    so that drift of a shared machine hits both sides alike.  Goal: median ratio <= 1.03.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from bench.core.errors import UserError, one_line_errors
from bench.telemetry.sampler import Sampler

# root -> "jvm" child with N idle threads -> 2 grandchildren sleeping.
TREE_CHILD = """
import subprocess, sys, threading, time
ev = threading.Event()
for _ in range(int(sys.argv[1])):
    threading.Thread(target=ev.wait, daemon=True).start()
kids = [subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1]))",
                          sys.argv[2]]) for _ in range(2)]
time.sleep(float(sys.argv[2]))
for k in kids:
    k.wait()
"""
TREE = """
import subprocess, sys
sys.exit(subprocess.call([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]]))
"""

# CPU: sha256 over a buffer in the root; I/O: its child writes, fsyncs and reads back files.
WORKLOAD_IO = """
import os, sys
d = sys.argv[1]
block = os.urandom(1 << 20)
for i in range(int(sys.argv[2])):
    p = os.path.join(d, f"f{i}")
    with open(p, "wb") as f:
        for _ in range(16):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    with open(p, "rb") as f:
        while f.read(1 << 20):
            pass
    os.unlink(p)
"""
WORKLOAD = """
import hashlib, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[4]])
buf = b"x" * (8 << 20)
h = hashlib.sha256()
for _ in range(int(sys.argv[3])):
    h.update(buf)
sys.exit(child.wait())
"""


def sampler_cpu(seconds: float, threads: int, interval_s: float) -> dict:
    proc = subprocess.Popen([sys.executable, "-c", TREE, TREE_CHILD, str(threads), str(seconds)])
    try:
        time.sleep(min(1.0, seconds / 4))  # let the tree come up
        t0 = time.monotonic()
        with Sampler(proc.pid, interval_s=interval_s) as s:
            time.sleep(seconds - min(1.0, seconds / 4) - 0.3)
        wall = time.monotonic() - t0
    finally:
        proc.wait(timeout=seconds + 30)
    ticks = s.summary.samples
    procs = max((r["procs"] for r in s.samples), default=0)
    return {"cpu_s": s.self_cpu_s, "wall_s": wall, "ticks": ticks, "procs": procs,
            "fraction": s.self_cpu_s / wall, "ms_per_tick": 1000 * s.self_cpu_s / max(ticks, 1)}


def _run_workload(work_dir: str, hash_rounds: int, io_files: int, sampled: bool,
                  interval_s: float) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the workload's whole tree, from the kernel's rusage)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", WORKLOAD, WORKLOAD_IO, work_dir, str(hash_rounds),
                             str(io_files)])
    if sampled:
        with Sampler(proc.pid, interval_s=interval_s):
            _, status, ru = os.wait4(proc.pid, 0)
    else:
        _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"the workload failed with exit status {proc.returncode}")
    return wall, ru.ru_utime + ru.ru_stime


def workload_overhead(reps: int, hash_rounds: int, io_files: int, interval_s: float,
                      work_dir: str | None = None) -> dict:
    with tempfile.TemporaryDirectory(dir=work_dir, prefix="bench-selfcheck-") as d:
        _run_workload(d, hash_rounds, io_files, False, interval_s)  # warm-up: caches, imports
        with_s: list[float] = []
        without_s: list[float] = []
        cpu_with: list[float] = []
        cpu_without: list[float] = []
        load_before = os.getloadavg()[0]
        for i in range(reps):
            order = (True, False) if i % 2 == 0 else (False, True)  # ABBA: drift hits both alike
            for sampled in order:
                wall, cpu = _run_workload(d, hash_rounds, io_files, sampled, interval_s)
                (with_s if sampled else without_s).append(wall)
                (cpu_with if sampled else cpu_without).append(cpu)
        load_after = os.getloadavg()[0]
    pair_ratios = [a / b for a, b in zip(with_s, without_s)]
    return {"with": with_s, "without": without_s,
            "ratio_of_medians": statistics.median(with_s) / statistics.median(without_s),
            "ratio_of_minimums": min(with_s) / min(without_s),
            "pair_ratios": pair_ratios, "median_pair_ratio": statistics.median(pair_ratios),
            "cpu_ratio": statistics.median(cpu_with) / statistics.median(cpu_without),
            # run-to-run spread of the unsampled workload: noise the overhead has to be seen through
            "noise": max(without_s) / min(without_s),
            "load": (load_before, load_after)}


def run_selfcheck(seconds: float = 10.0, threads: int = 100, reps: int = 8, hash_rounds: int = 120,
                  io_files: int = 6, interval_s: float = 0.1, work_dir: str | None = None):
    """Yield report lines; the last line says whether both goals were met."""
    if work_dir is not None and not Path(work_dir).is_dir():
        raise UserError(f"--work-dir {work_dir} is not a directory")
    a = sampler_cpu(seconds, threads, interval_s)
    yield (f"(a) sampler CPU at {1 / interval_s:g} Hz over a tree of {a['procs']} processes "
           f"(one with {threads} threads): {a['cpu_s'] * 1000:.0f} ms CPU in {a['wall_s']:.1f} s "
           f"= {100 * a['fraction']:.2f}% of one core ({a['ms_per_tick']:.2f} ms per tick, "
           f"{a['ticks']} ticks); goal <= 1%")
    b = workload_overhead(reps, hash_rounds, io_files, interval_s, work_dir)
    med_w, med_wo = statistics.median(b["with"]), statistics.median(b["without"])
    yield (f"(b) CPU+IO workload, {reps} interleaved pairs: median {med_wo:.3f} s without sampler, "
           f"{med_w:.3f} s with (min-max {min(b['without']):.3f}-{max(b['without']):.3f} / "
           f"{min(b['with']):.3f}-{max(b['with']):.3f} s)")
    yield (f"    wall ratio with/without: {b['ratio_of_medians']:.4f} of medians (goal <= 1.03), "
           f"{b['median_pair_ratio']:.4f} median of pairs (range {min(b['pair_ratios']):.3f}-"
           f"{max(b['pair_ratios']):.3f}), {b['ratio_of_minimums']:.4f} of minimums")
    yield (f"    workload CPU ratio with/without (kernel rusage): {b['cpu_ratio']:.4f}; run-to-run spread "
           f"without sampler {b['noise']:.3f}x; load average {b['load'][0]:.2f} -> {b['load'][1]:.2f} "
           f"on {os.cpu_count()} cores")
    ok_a = a["fraction"] <= 0.01
    ok_b = b["ratio_of_medians"] <= 1.03
    noisy = b["noise"] > 1.10
    if noisy:
        verdict_b = (f"{'within' if ok_b else 'over'} goal but INCONCLUSIVE: run-to-run spread "
                     f"{b['noise']:.2f}x exceeds the 3% to resolve; rerun on an idle machine")
    else:
        verdict_b = "ok" if ok_b else "OVER GOAL"
    yield f"result: sampler CPU {'ok' if ok_a else 'OVER GOAL'}; wall-time overhead {verdict_b}"


@click.command("telemetry")
@click.option("--seconds", type=click.FloatRange(min=3), default=10.0, show_default=True,
              help="How long to sample the idle tree in (a).")
@click.option("--threads", type=click.IntRange(min=1), default=100, show_default=True,
              help="Threads of the JVM-like process in (a).")
@click.option("--reps", type=click.IntRange(min=2), default=8, show_default=True,
              help="Interleaved with/without pairs in (b).")
@click.option("--interval", type=click.FloatRange(min=0.01), default=0.1, show_default=True,
              help="Sampling interval, seconds.")
@click.option("--work-dir", type=click.Path(file_okay=False), default=None,
              help="Where the I/O workload writes (default: the temp directory).")
@one_line_errors
def selfcheck_telemetry(seconds, threads, reps, interval, work_dir):
    """Cost of the sampler: its own CPU (goal <= 1% of a core) and wall-time overhead (goal <= 1.03)."""
    for line in run_selfcheck(seconds=seconds, threads=threads, reps=reps, interval_s=interval, work_dir=work_dir):
        click.echo(line)
