"""bench.core.children, for real: a parent killed with SIGKILL takes its children along (a process group it
guarded, a pool worker, a grandchild in the guarded group that escaped the parent-death signal)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil

from tests.helpers import ROOT

# a parent that starts: a guarded process group whose leader starts a grandchild (no parent-death signal of
# its own: only the group kill reaches it), a thread-spawned child (the reaper alone guards it), and a
# fork-context pool whose worker runs a task for ever; then prints the pids and sleeps
PARENT = r"""
import os, sys, threading, time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing as mp
from bench.core import children

leader = children.popen([sys.executable, "-c",
    "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
    "time.sleep(600)"], start_new_session=True)
box = []
t = threading.Thread(target=lambda: box.append(children.popen([sys.executable, "-c", "import time; time.sleep(600)"])))
t.start(); t.join()
ex = ProcessPoolExecutor(1, mp_context=mp.get_context("fork"), initializer=children.pool_initializer,
                         initargs=(os.getpid(),))
ex.submit(time.sleep, 600)
time.sleep(1.0)
print(leader.pid, box[0].pid, children.reaper_pid(), flush=True)
time.sleep(600)
"""


def test_every_child_dies_with_a_killed_parent():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, env=env,
                              start_new_session=True)
    try:
        leader, threaded, reaper = map(int, parent.stdout.readline().split())
        tree = psutil.Process(parent.pid).children(recursive=True)
        pids = {p.pid for p in tree}
        assert {leader, threaded, reaper} <= pids
        assert len(tree) >= 5  # + the grandchild and the pool worker
        time.sleep(0.5)
        assert all(p.is_running() for p in tree)  # the thread's end did not kill its child
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        _, alive = psutil.wait_procs(tree, timeout=2.0)
        assert not alive, [p.cmdline() for p in alive]
    finally:
        for p in psutil.Process(os.getpid()).children(recursive=True):
            p.kill()


def _open_fds() -> set[tuple[str, str]]:
    """This process's open descriptors, each with what it refers to (a pipe, a file, ...)."""
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.add((fd, os.readlink(f"/proc/self/fd/{fd}")))
        except FileNotFoundError:  # the listing's own descriptor, closed by now
            pass
    return out


def test_a_failed_spawn_releases_the_engine_cgroup_and_pipes(monkeypatch, tmp_path):
    """run_engine_process when the engine's process cannot even start: its memory cgroup is removed and the
    handshake pipes are closed (before the fix a failed spawn leaked both)."""
    from types import SimpleNamespace

    import pytest

    from bench.core.progress import Quiet
    from bench.runner import process
    from bench.telemetry.limits import _own_cgroup

    own = _own_cgroup()
    mine = (lambda: sorted(own[1].glob(f"bench-{os.getpid()}-*"))) if own else (lambda: [])
    made = []
    real_limiter = process.Limiter

    def limiter(budget):
        lim = real_limiter(budget)
        made.append(lim.cgroup)
        return lim

    def cannot_start(*args, **kwargs):
        raise OSError("exec format error (simulated)")
    monkeypatch.setattr(process, "Limiter", limiter)
    monkeypatch.setattr(process.children, "popen", cannot_start)
    ctx = SimpleNamespace(budget=256 << 20, storage_cap=None, cap_device=None, cpus=None, cap_port=None,
                          served=None, progress=Quiet(), timeout_s=10, shared=None)
    job = SimpleNamespace(model_dump_json=lambda indent=None: "{}")
    before = _open_fds()
    with pytest.raises(OSError, match="simulated"):
        process.run_engine_process(ctx, SimpleNamespace(engine="arrow-floor", tag="rep0"), job, tmp_path / "work")
    # the four pipe ends closed: no descriptor open now that was not before (not a count: it also fell, 31 to
    # 30, when something else in this pytest worker closed a file meanwhile, once on four workers)
    assert _open_fds() - before == set()
    if own is not None:
        assert made and made[0] is not None  # a cgroup was made for the run ...
        assert not made[0].exists() and mine() == []  # ... and removed
