"""`bench doctor --warehouse W --repair` ends only what a harness started on W (its ledger: pid and start
time), never a process whose command line merely names the warehouse (a user's shell or editor), which it
names in one line; a ledger entry whose pid now belongs to another process (another start time) is left alone."""

import json
import subprocess
import sys

from click.testing import CliRunner

from bench.cli import main
from bench.core.catalog import CatalogSettings
from bench.core.children import start_time
from bench.core.lock import PROCESS_LEDGER, WarehouseLock


def _sleeper(*words: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *words])


def test_repair_ends_the_harness_children_only(tmp_path):
    wh = tmp_path / "wh"
    settings = CatalogSettings.for_warehouse(str(wh))
    with WarehouseLock(settings.lock_path):  # as a run takes it: the ledger starts empty
        pass
    editor = _sleeper(str(wh / "notes.txt"))  # a user's process naming the warehouse
    orphan = _sleeper("engine-worker")  # what a killed harness left running
    reused = _sleeper("another-program")  # a pid the ledger names, with another start time
    try:
        ledger = settings.lock_path.parent / PROCESS_LEDGER
        ledger.write_text("".join(json.dumps(e) + "\n" for e in (
            {"op": "+", "pid": orphan.pid, "start": start_time(orphan.pid), "group": False, "by": 1},
            {"op": "+", "pid": reused.pid, "start": "1", "group": False, "by": 1})))
        found = CliRunner().invoke(main, ["doctor", "--warehouse", str(wh)])
        assert found.exit_code == 1 and f"process {orphan.pid} started by a harness" in found.output, found.output
        assert f"process {reused.pid}" not in found.output
        fixed = CliRunner().invoke(main, ["doctor", "--warehouse", str(wh), "--repair"])
        assert f"ended pid {orphan.pid}" in fixed.output, fixed.output
        assert orphan.wait(timeout=10) == -9  # ended by the doctor
        assert editor.poll() is None and reused.poll() is None  # left alone
        alone = [ln for ln in fixed.output.splitlines() if ln.startswith("not ended")]
        assert len(alone) == 1 and str(editor.pid) in alone[0] and "Traceback" not in fixed.output, fixed.output
    finally:
        for p in (editor, orphan, reused):
            p.kill()
            p.wait()
