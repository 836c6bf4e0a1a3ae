"""A reproducer for every maintenance cell of a conformance matrix that is not correct: what the engine's maintainers
can run without the harness.

`reproducers/<case>--<engine>/` beside the matrix holds
    table.tar  the case's table as written: written again by the case's own writer, one table per cell, in
               `reproducers/warehouse/` (Iceberg's paths are absolute: the script runs where it was written);
    case.json  the operation as every engine was asked it and what the spec requires of the table after it
               (the files that must stay, those that must go, the snapshots that must stay and those that expire),
               resolved on this table as the matrix resolves it on the suite's;
    run.py     puts the table back as written (its files, their ages as the case states them, the catalog's
               pointer), replays the operation through the engine's own API (`Engine.reproducer`) in the engine's
               interpreter (its first line), and prints what is wrong; exit 1 when it shows the failure, 0 when not
               (a rewrite that must take files out of a ref: its new head's snapshot summary says how many it
               removed; the script reads no manifest).
The campaign runs each script once, on its own, and records what it printed and whether it showed the failure. The
script compares files and snapshots, not rows (the matrix's readers read those): a wrong-rows or resurrected cell's
script shows the files and snapshots the operation left.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

from pyiceberg.table import Table

from bench.core import children
from bench.core.fileio import write_atomic
from bench.core.records.conformance import ConformanceCell, Reproducer
from bench.core.uri import local_path
from bench.engines import engine_class, worker_launch
from bench.engines.base import MaintenanceOp
from bench.verify.maintenance import Resolved
from datagen.conformance import Case, orphan_path

DIR = "reproducers"
WAREHOUSE = "warehouse"  # under DIR: the cells' tables, each written again by its case's writer
SCRIPT_TIMEOUT_S = 600.0
OUTPUT_CHARS = 3000  # of what the script printed, kept in the record
# in a reproducer whose case names files a rewrite must take out of the refs it commits to: what the new head of each
# such ref says it removed (its snapshot summary, in the metadata JSON: the script reads no manifest, so it needs no
# Avro library the engine's interpreter may lack)
LIVE_CHECK = r'''
def left_live(metadata_file, ref, before):
    """Why `ref`'s head after the operation has not taken out the files to be replaced, or "" when it has."""
    md = json.load((gzip.open if metadata_file.endswith(".gz.metadata.json") else open)(
        metadata_file.removeprefix("file://").removeprefix("file:"), "rt"))
    head = (md.get("refs") or {}).get(ref, {}).get("snapshot-id")
    if head == before:
        return f"{ref}'s head did not move: none of the {len(CASE['must_leave'])} file(s) to be replaced was taken out"
    snap = next((s for s in md.get("snapshots") or [] if s["snapshot-id"] == head), {})
    removed = int((snap.get("summary") or {}).get("removed-position-delete-files", 0))
    if removed < len(CASE["must_leave"]):
        return (f"{ref}'s new head removed {removed} position-delete file(s), fewer than the "
                f"{len(CASE['must_leave'])} to be replaced: {', '.join(CASE['must_leave'])}")
    return ""
'''

SCRIPT = '''#!{python}
r"""{title}

The matrix's verdict: {verdict}: {evidence}

Puts the case's table back as written (table.tar into {location}, its files as old as the case states, the
catalog's pointer at the metadata file as written), replays `{operation}` through {engine}'s own API (operate()
below), then compares the files and snapshots it left with what the spec requires (case.json).  Exit 1: it shows
the failure; 0: it does not.  Run: {python} {script}
"""
import gzip
import json
import os
import shutil
import sqlite3
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASE = json.loads((HERE / "case.json").read_text())
{operate}
{live_check}

def put_back():
    location = Path(CASE["location"])
    shutil.rmtree(location, ignore_errors=True)
    with tarfile.open(HERE / "table.tar") as t:
        t.extractall(location.parent, **({{"filter": "tar"}} if hasattr(tarfile, "tar_filter") else {{}}))
    now = time.time()
    if CASE["files_age_s"] is not None:
        for f in (p for p in location.rglob("*") if p.is_file()):
            os.utime(f, (now - CASE["files_age_s"], now - CASE["files_age_s"]))
    for path, age in CASE["orphans"].items():
        os.utime(path, (now - age, now - age))
    ns, name = CASE["table"].split(".")
    with sqlite3.connect(Path(CASE["warehouse"]) / "catalog.db") as db:
        db.execute("UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = NULL "
                   "WHERE table_namespace = ? AND table_name = ?", (CASE["metadata_file"], ns, name))


def snapshots(metadata_file):
    path = metadata_file.removeprefix("file://").removeprefix("file:")
    opener = gzip.open if path.endswith(".gz.metadata.json") else open
    with opener(path, "rt") as f:
        return {{s["snapshot-id"] for s in json.load(f).get("snapshots") or []}}


put_back()
try:
    after, result = operate(CASE["table"], CASE["metadata_file"], CASE["warehouse"], CASE["operation"])
except Exception as e:
    print(f"{engine} refused or failed: {{type(e).__name__}}: {{e}}")
    sys.exit(1)
print(f"{engine}'s own result: {{result}}")
listed = snapshots(after)
wrong = [f"DELETED, still reachable from a kept snapshot or ref (data loss): {{p}}"
         for p in CASE["must_exist"] if not os.path.exists(p)]
wrong += [f"EXPIRED, though the case keeps it: snapshot {{s}}" for s in CASE["kept"] if s not in listed]
wrong += [f"not removed, though nothing reaches it: {{p}}" for p in CASE["must_remove"] if os.path.exists(p)]
wrong += [f"still listed, though due to expire: snapshot {{s}}" for s in CASE["expired"] if s in listed]
wrong += [why for ref in (CASE["advances"] if CASE["must_leave"] else [])
          if (why := left_live(after, ref, CASE["heads"].get(ref)))]
print("\\n".join(wrong) or "nothing wrong: every file and snapshot is as the spec requires")
sys.exit(1 if wrong else 0)
'''


def cell_dir(cell: ConformanceCell) -> str:
    """The cell's directory under DIR (a case name is already [a-z0-9-])."""
    return f"{cell.case}--{re.sub(r'[^a-z0-9-]+', '-', cell.engine.lower())}"


def rel_dir(cell: ConformanceCell) -> str:
    """The cell's directory relative to the conformance run's (Reproducer.dir)."""
    return f"{DIR}/{cell_dir(cell)}"


def copy_of(case: Case, cell: ConformanceCell) -> Case:
    """The case under the cell's name: its own table, written by the case's writer beside the others."""
    return case.model_copy(update={"name": cell_dir(cell)})


def write(cell: ConformanceCell, case: Case, tbl: Table, op: MaintenanceOp, expected: Resolved, root: Path,
          warehouse: Path) -> Reproducer:
    """The cell's reproducer (`tbl`: its copy of the case's table as written, `expected` resolved on it) under
    `root`, and what its script showed when run once."""
    cls = engine_class(cell.engine)
    out = root / cell_dir(cell)
    rel = rel_dir(cell)
    if not cls.reproducer:
        return Reproducer(case=cell.case, engine=cell.engine, dir=rel, why=f"{cls.name} declares no reproducer")
    out.mkdir(parents=True, exist_ok=True)
    location = Path(local_path(tbl.location()))
    with tarfile.open(out / "table.tar", "w") as t:
        t.add(location, arcname=location.name)
    orphans = {orphan_path(tbl.location(), s.orphan.name): s.orphan.age_s for s in case.steps if s.orphan}
    write_atomic(out / "case.json", json.dumps({
        "case": cell.case, "engine": cell.engine, "table": case.table,
        "metadata_file": tbl.metadata_location, "location": str(location), "warehouse": str(warehouse),
        "operation": op.model_dump(mode="json"), "files_age_s": case.files_age_s, "orphans": orphans,
        "must_exist": sorted(expected.must_exist), "must_remove": sorted(expected.must_remove),
        "must_leave": sorted(expected.must_leave), "advances": sorted(expected.advancing),
        "heads": {ref: head for ref, (head, _) in expected.refs.items()},
        "kept": sorted(expected.kept), "expired": sorted(expected.expired)}, indent=1))
    python, env = worker_launch(cell.engine)
    script = out / "run.py"
    write_atomic(script, SCRIPT.format(
        python=python, title=f"Reproducer: {cls.name} on the conformance case {cell.case}", verdict=cell.verdict,
        evidence=cell.evidence.replace('"""', "'''")[:600], location=location, operation=op.describe(),
        engine=cls.name, script=script, operate=cls.reproducer, live_check=LIVE_CHECK if expected.must_leave else ""))
    script.chmod(0o755)
    return run(cell, rel, [python, str(script)], env, out / "output.txt")


def run(cell: ConformanceCell, rel: str, cmd: list[str], env: dict[str, str], log: Path) -> Reproducer:
    """The script once, on its own: exit 1 shows the failure, 0 does not; anything else is the script's error."""
    with log.open("wb") as f:
        try:
            rc = children.run(cmd, timeout=SCRIPT_TIMEOUT_S, stdin=subprocess.DEVNULL, stdout=f,
                              stderr=subprocess.STDOUT, env={**os.environ, **env}).returncode
        except subprocess.TimeoutExpired:
            rc = None
    text = log.read_text(errors="replace")
    said = text[-OUTPUT_CHARS:]
    if rc in (0, 1):
        return Reproducer(case=cell.case, engine=cell.engine, dir=rel, shown=rc == 1, output=said)
    why = f"the script timed out after {SCRIPT_TIMEOUT_S:g} s" if rc is None else f"the script exited {rc}"
    return Reproducer(case=cell.case, engine=cell.engine, dir=rel, output=said, why=why)
