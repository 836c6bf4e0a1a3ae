"""The fault-injection suite: the harness killed with SIGKILL at each phase of a run, the catalog
server killed under an engine, an engine hung past its time limit, a full warehouse disk, a locked SQLite
catalog and a corrupt result file.  For each: a failed result with its evidence or one line on exit; no
process of the killed tree alive 2 s later; the dataset's files and the earlier results byte-identical;
`bench doctor --warehouse` repairs what is left, and the last run on the same warehouse verifies.

One warehouse (on a small tmpfs this module mounts, so the disk can be filled) and one generated table for
the whole module; the tests run in file order and build on each other."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers import ROOT, TINY, bench_env, run_bench

SCENARIO = "bin-packing"
DELETES = "deletes-standard"
TMPFS_MB = 128
ORPHAN_WAIT_S = 2.0
REPORT_KILL_CPU_S = 0.8  # the report killed after this much CPU (its imports alone take more than half of it)
BENCH = str(Path(sys.executable).parent / "bench")


class Faults:
    """The module's shared state."""

    def __init__(self, base: Path, mounted: str | None):
        self.base, self.mounted = base, mounted
        self.wh = base / "wh"
        self.results = base.parent / "results"  # not on the tmpfs: a full warehouse disk must not stop them
        self.baseline: Path | None = None
        self.baseline_digest = ""
        self.dataset_digest = ""
        self.n = 0

    @property
    def parked(self) -> Path:
        return self.base / ".wh.parked"  # bench.core.dataset.parked_dir: beside the warehouse

    def run_args(self, engines: str, *extra: str) -> list[str]:
        self.n += 1
        return ["run", SCENARIO, "--scale", TINY, "--engines", engines, "--warehouse", str(self.wh),
                "--results-dir", str(self.results), "--run-id", self.run_id, *extra]

    @property
    def run_id(self) -> str:
        return f"f{self.n}"

    @property
    def last_run(self) -> Path:
        return self.results / self.run_id


def _mount_tmpfs(path: Path) -> str | None:
    """Mount a small tmpfs at `path`; None (with the reason) when this machine does not let us."""
    path.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        return "no mount(8)"
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_MB}m", "tmpfs", str(path)],
                       capture_output=True, text=True)
    return None if p.returncode == 0 else (p.stderr.strip() or f"mount exited {p.returncode}")


def digest(root: Path, files: list[str] | None = None) -> str:
    """sha256 over the relative paths and bytes of `files` under `root` (default: every file)."""
    h = hashlib.sha256()
    rels = sorted(files) if files is not None else sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    for rel in rels:
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes())
    return h.hexdigest()


def dataset_digest(wh: Path) -> str:
    """The bin-packing dataset: its manifest and every file it lists, byte for byte."""
    manifests = [m for m in sorted((wh / "datasets").glob("smallfiles_*.json")) if m.name.count(".") == 1]
    assert len(manifests) == 1, manifests
    ds = json.loads(manifests[0].read_text())
    location = Path(ds["location"].removeprefix("file://"))
    return hashlib.sha256(manifests[0].read_bytes()).hexdigest() + digest(location, list(ds["table_files"]))


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    base = tmp_path_factory.mktemp("faults") / "fs"
    reason = _mount_tmpfs(base)
    f = Faults(base, None if reason else str(base))
    f.skip_reason = reason
    try:
        gen = run_bench("datagen", SCENARIO, "--scale", TINY, "--warehouse", f.wh)
        assert gen.returncode == 0, gen.stderr
        f.dataset_digest = dataset_digest(f.wh)
        yield f
    finally:
        if f.mounted:
            subprocess.run(["umount", "-l", f.mounted], check=False)


def start(args: list[str], log: Path, phases: Path | None = None) -> subprocess.Popen:
    """`bench ...` in its own session (as a user's terminal would run it), output to `log`."""
    env = bench_env(**({"BENCH_PHASE_LOG": str(phases)} if phases else {}))
    with open(log, "w") as out:
        return subprocess.Popen([BENCH, *args], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                start_new_session=True)


def wait_for(what: str, predicate, proc: subprocess.Popen, log: Path, timeout_s: float = 240.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            raise AssertionError(f"bench ended ({proc.returncode}) before {what}: {log.read_text()[-2000:]}")
        time.sleep(0.02)
    proc.kill()
    raise AssertionError(f"timed out waiting for {what}: {log.read_text()[-2000:]}")


def kill_harness(proc: subprocess.Popen) -> list[str]:
    """SIGKILL the harness (only it: its children are on their own); the command lines of the processes
    of its tree still alive ORPHAN_WAIT_S later."""
    tree = psutil.Process(proc.pid).children(recursive=True)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _, alive = psutil.wait_procs(tree, timeout=ORPHAN_WAIT_S)
    left = []
    for p in alive:
        try:
            left.append(" ".join(p.cmdline())[:200])
            p.kill()  # do not leave them to the rest of the suite
        except psutil.NoSuchProcess:
            pass
    return left


def running_on(path: Path) -> list[str]:
    """Command lines of the processes that name `path` (a run's directory: its engine workers)."""
    return [" ".join(p.info["cmdline"]) for p in psutil.process_iter(["cmdline"])
            if str(path) in " ".join(p.info["cmdline"] or [])]


def doctor(f: Faults, repair: bool) -> subprocess.CompletedProcess:
    return run_bench("doctor", "--warehouse", f.wh, *(["--repair"] if repair else []))


def assert_intact(f: Faults) -> None:
    """After the doctor's repair: the dataset and the earlier results are byte-identical."""
    assert dataset_digest(f.wh) == f.dataset_digest
    if f.baseline is not None:
        assert digest(f.baseline) == f.baseline_digest


def results_of(run_dir: Path) -> dict[str, dict]:
    return {json.loads(p.read_text())["engine"]: json.loads(p.read_text())
            for p in run_dir.glob(f"{SCENARIO}--*.json")}


def test_baseline_and_an_engine_hung_past_its_time_limit(faults):
    """A verified run (the earlier results every later fault must leave alone), and a hung engine: timed
    out, its process tree killed, recorded with its evidence."""
    args = faults.run_args("rewrite,hang", "--timeout", "20", "--readers", "on")
    p = run_bench(*args, timeout=400)
    assert p.returncode == 0, p.stderr
    faults.baseline = faults.last_run
    res = results_of(faults.baseline)
    assert res["rewrite"]["status"] == "ok" and res["rewrite"]["verified"] is True
    hang = res["hang"]
    assert hang["status"] == "timeout" and "time limit of 20 s exceeded" in hang["error"]
    assert any("sleeping forever" in ln for ln in hang["log_tail"])  # the evidence: the engine's own log
    assert not running_on(faults.baseline)  # its worker is gone
    faults.baseline_digest = digest(faults.baseline)
    assert dataset_digest(faults.wh) == faults.dataset_digest


def test_kill_during_datagen(faults, tmp_path):
    """The issue's case: the generator's pool workers (and its Java commit JVM) die with it; the doctor
    finds the partial dataset and drops it."""
    log = tmp_path / "datagen.log"
    proc = start(["datagen", DELETES, "--scale", TINY, "--warehouse", str(faults.wh)], log)

    def writing() -> bool:
        kids = psutil.Process(proc.pid).children(recursive=True)
        return sum(1 for k in kids if "datagen" in " ".join(k.cmdline())) >= 2  # pool workers (forked)
    wait_for("the generator's pool workers", writing, proc, log)
    assert kill_harness(proc) == []
    found = doctor(faults, repair=False)
    assert found.returncode == 1 and "partial" in found.stdout, found.stdout + found.stderr
    fixed = doctor(faults, repair=True)
    assert "dropped the partial dataset" in fixed.stdout, fixed.stdout + fixed.stderr
    assert f"pid {proc.pid} " in fixed.stdout and "cleared the lock's description" in fixed.stdout, fixed.stdout
    assert_intact(faults)  # (the last test checks the doctor finds nothing left)


# phase: (engines, extra options, what says the phase has begun: a line of the run's output or a task in
# its phase log)
PHASES = {
    "restore": ("rewrite", (), ("out", "restoring ")),
    "parked-setup": ("rewrite", (), ("parked", "")),
    "compaction": ("hang", ("--timeout", "300"), ("out", "[hang rep0] compacting:")),
    # Spark: the engine worker's JVM (a grandchild of the harness) must die too; killed when the harness has
    # put the table back after the engine's setup (its compaction has begun)
    "spark-compaction": ("spark", (), ("unparked", "")),
    "verification": ("rewrite", (), ("phase", "verifying")),
    "reads": ("rewrite", ("--readers", "on"), ("phase", "reads after compaction")),
}


@pytest.mark.parametrize("phase", list(PHASES))
def test_kill_at_each_phase(faults, tmp_path, phase):
    engines, extra, (where, marker) = PHASES[phase]
    log, phases = tmp_path / "run.log", tmp_path / "phases"
    proc = start(faults.run_args(engines, *extra), log, phases)

    seen_parked = []

    def begun() -> bool:
        if where == "parked":
            return any(faults.parked.glob("*"))
        if where == "unparked":
            if any(faults.parked.glob("*")):
                seen_parked.append(True)
            return bool(seen_parked) and not any(faults.parked.glob("*"))
        src = log if where == "out" else phases
        return src.exists() and marker in src.read_text()
    wait_for(f"the {phase} phase", begun, proc, log)
    if engines == "spark":
        assert any(p.name() == "java" for p in psutil.Process(proc.pid).children(recursive=True))
    assert kill_harness(proc) == [], f"orphans after a kill during {phase}"
    fixed = doctor(faults, repair=True)
    assert fixed.returncode == 1, fixed.stderr  # at least the dead harness's lock description was left
    if phase == "parked-setup":  # the table is out of the warehouse: the doctor says so and puts it back
        assert "is parked at" in fixed.stdout and "restored" in fixed.stdout, fixed.stdout
    assert "could not" not in fixed.stdout, fixed.stdout
    assert f"names pid {proc.pid} " in fixed.stdout, fixed.stdout  # the dead harness's lock description
    assert_intact(faults)


def test_kill_during_report(faults, tmp_path):
    """`bench report` killed while it renders: the results are untouched; no half-written page."""
    out = tmp_path / "report.html"
    log = tmp_path / "report.log"
    proc = start(["report", str(faults.baseline), "--out", str(out)], log)
    # killed once it has worked a while (its imports done, reading the results or rendering): the kill must land
    cpu = lambda: sum(psutil.Process(proc.pid).cpu_times()[:2]) if proc.poll() is None else 0.0  # noqa: E731
    wait_for("the report's work", lambda: cpu() >= REPORT_KILL_CPU_S, proc, log)
    assert proc.poll() is None, "the report ended before the kill: nothing was tested"
    assert kill_harness(proc) == [] and proc.returncode == -signal.SIGKILL
    assert not out.exists() or out.read_text().rstrip().endswith("</html>")
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".report.html")]  # no temporary left
    assert_intact(faults)


def test_catalog_server_killed_mid_compaction(faults, tmp_path):
    """The loopback REST catalog server dies while an engine that commits through it compacts (it has
    rewritten the table and is about to commit): a failed result with its evidence; nothing left running."""
    log = tmp_path / "run.log"
    proc = start(faults.run_args("restrewrite"), log)
    engine_log = faults.last_run / "work" / f"{SCENARIO}--restrewrite--rep0" / "engine.log"
    wait_for("the engine's rewrite", lambda: engine_log.exists() and "committing through" in engine_log.read_text(),
             proc, log)
    server = [k for k in psutil.Process(proc.pid).children(recursive=True)
              if "bench.core.catalog.rest" in " ".join(k.cmdline())]
    assert len(server) == 1
    server[0].kill()
    proc.wait(timeout=300)
    res = results_of(faults.last_run)  # the engine's failure is a recorded result, never a harness exit
    r = res["restrewrite"]
    assert r["status"] == "failed" and r["error"], (r["status"], r["error"])
    assert "Connection refused" in r["error"]  # the evidence: the engine's own error
    assert "committing through" in engine_log.read_text()  # it was killed mid-compaction
    assert not running_on(faults.last_run)
    assert_intact(faults)


def test_sqlite_catalog_locked_by_another_process(faults, tmp_path):
    """Another process holds an exclusive lock on the catalog's SQLite file for the whole run."""
    locker = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        "print('locked', flush=True)\n"
        "time.sleep(600)\n"), str(faults.wh / "catalog.db")], stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout.readline().strip() == "locked"
        p = run_bench(*faults.run_args("rewrite"), timeout=400)
    finally:
        locker.kill()
        locker.wait()
    # the catalog cannot be opened: the run refuses in one line before any engine runs (no result written)
    assert not results_of(faults.last_run)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and "database is locked" in lines[0], p.stderr
    assert_intact(faults)


def test_warehouse_disk_full(faults, tmp_path):
    if faults.mounted is None:
        pytest.skip(f"cannot mount a small tmpfs for the warehouse here: {faults.skip_reason}")
    ballast, log = faults.base / "ballast", tmp_path / "run.log"
    proc = start(faults.run_args("rewrite"), log)
    try:
        # filled once the run has restored the input (which frees what earlier runs wrote) and parked it for
        # the engine's setup: 256 KiB left, less than the engine's output
        wait_for("the engine's setup (the table parked)", lambda: any(faults.parked.glob("*")), proc, log)
        with open(ballast, "wb") as fh:
            os.posix_fallocate(fh.fileno(), 0, max(0, shutil.disk_usage(faults.base).free - (256 << 10)))
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        ballast.unlink(missing_ok=True)
    # the disk filled while the engine set up: its write fails, a recorded result with the evidence
    r = results_of(faults.last_run)["rewrite"]
    assert r["status"] != "ok" and r["error"], r["status"]
    evidence = (r["error"] or "") + " ".join(r.get("log_tail") or [])
    assert "No space left" in evidence or "ENOSPC" in evidence, evidence
    assert_intact(faults)


def test_corrupt_result_file(faults, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(faults.baseline, copy)
    victim = next(copy.glob(f"{SCENARIO}--rewrite--*.json"))
    victim.write_text(victim.read_text()[:200])  # cut short, as a full disk would leave it
    before = digest(copy)
    p = run_bench("report", copy, "--out", tmp_path / "r.html")
    # a file named as a result is never skipped silently: one line naming it, no page
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and victim.name in lines[0], p.stderr
    assert not (tmp_path / "r.html").exists()
    assert digest(copy) == before  # the report never rewrites results
    assert_intact(faults)


def test_doctor_repairs_a_stale_cgroup(faults):
    """A memory cgroup named for a harness that is gone (bench-<pid>-<id>): reported, then removed."""
    from bench.telemetry.limits import _own_cgroup

    own = _own_cgroup()
    if own is None:
        pytest.skip("no writable memory cgroup for this process")
    dead = 4194000
    while psutil.pid_exists(dead):
        dead += 1
    stale = own[1] / f"bench-{dead}-faultsuite"
    try:
        for _ in range(5):  # the other pytest worker's next run sweeps stale cgroups too: then again
            stale.mkdir(exist_ok=True)
            found = doctor(faults, repair=True)
            if stale.exists() or str(stale) in found.stdout:
                break
        assert "cgroup(s) of a killed run" in found.stdout and str(stale) in found.stdout, found.stdout
        assert "removed" in found.stdout and not stale.exists()
    finally:
        if stale.exists():
            stale.rmdir()


def test_the_next_run_verifies(faults):
    """After every fault above, on the same warehouse: a clean doctor and a verified run on the dataset's
    exact input."""
    assert doctor(faults, repair=False).returncode == 0
    p = run_bench(*faults.run_args("rewrite"), timeout=400)
    assert p.returncode == 0, p.stderr
    r = results_of(faults.last_run)["rewrite"]
    assert r["status"] == "ok" and r["verified"] is True and r["input"]["identical_to_dataset"]
    assert_intact(faults)
