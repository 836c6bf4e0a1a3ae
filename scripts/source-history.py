"""Harness time on a source table against the length of its history (a pinned live source table).

Builds `hist.events` in a SQLite catalog of its own under DIR: one commit of 12 small files (the snapshot that
is pinned, the same for every length), then SNAPSHOTS - 1 appends of one small file each (its history); then runs
`bench run bin-packing --source-table hist.events --source-snapshot <the first>` with the given engines and
prints, from the results, the harness's time outside the engine processes (the whole command's wall time minus
each engine process's wall time) and the harness's steps the results record: making the clone and reading its
ground truth, taking the pin, restoring the clone before each engine run, verifying after it, checking the source
against the pin.

    .venv/bin/python scripts/source-history.py DIR --snapshots 1000 [--engines spark,risingwave]

Not part of `make test`: building 1,000 snapshots takes minutes (each pyiceberg append rewrites a manifest list
and a metadata file that grow with the history).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "note", StringType(), required=False))
PINNED_FILES = 12
ROWS_PER_FILE = 2000


def batch(start: int, rows: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + rows), pa.int64()),
                     "note": [f"event-{i:08d}-" + "x" * (i % 50) for i in range(start, start + rows)]},
                    schema=SCHEMA.as_arrow())


def build(root: Path, snapshots: int) -> tuple[Path, int, float]:
    """The table under `root` with `snapshots` snapshots; returns (catalog file, pinned snapshot id, seconds)."""
    import pyarrow.parquet as pq

    t0 = time.perf_counter()
    root.mkdir(parents=True, exist_ok=True)
    props = {"uri": f"sqlite:///{root}/catalog.db", "warehouse": f"file://{root}/lake"}
    catalog = SqlCatalog("hist", **props)
    catalog.create_namespace_if_not_exists("hist")
    tbl = catalog.create_table("hist.events", SCHEMA, properties={"format-version": "2"})
    staged = root / "staged"
    staged.mkdir(exist_ok=True)
    paths = []
    for i in range(PINNED_FILES):  # the pinned snapshot: 12 small files in one commit (add_files)
        p = staged / f"part-{i:03d}.parquet"
        pq.write_table(batch(i * ROWS_PER_FILE, ROWS_PER_FILE), p)
        paths.append(str(p))
    tbl.add_files(paths)
    pinned = tbl.current_snapshot().snapshot_id
    for n in range(1, snapshots):  # the history after it: one small append a snapshot
        tbl.append(batch(10**7 + n * 10, 10))
    cfg = root / "source.yaml"
    cfg.write_text("catalog:\n  hist:\n    type: sql\n" + "".join(f"    {k}: {v}\n" for k, v in props.items()))
    assert len(tbl.metadata.snapshots) == snapshots
    return cfg, pinned, time.perf_counter() - t0


def measure(root: Path, cfg: Path, pinned: int, engines: str) -> dict:
    results = root / "results"
    shutil.rmtree(results, ignore_errors=True)  # each measurement from scratch: a new clone, its ground truth read
    shutil.rmtree(root / "wh", ignore_errors=True)
    t0 = time.perf_counter()
    p = subprocess.run([str(Path(sys.executable).with_name("bench")), "run", "bin-packing", "--source-catalog",
                        str(cfg), "--source-table", "hist.events", "--source-snapshot", str(pinned), "--engines",
                        engines, "--warehouse", str(root / "wh"), "--results-dir", str(results), "--run-id", "h",
                        "--readers", "off"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"bench run failed ({p.returncode}): {p.stderr[-2000:]}")
    runs = [json.loads(f.read_text()) for f in sorted((results / "h").glob("bin-packing--*.json"))]
    engine_wall = sum(r["process_wall_s"] or 0 for r in runs)
    clone = json.loads((root / "wh" / "datasets" / f"{runs[0]['source']['clone'].split('.')[-1]}.json").read_text())
    steps = {"clone_and_truth_s": clone["generation_s"], "pin_s": runs[0]["source"]["pin_s"],
             "restore_s": sum((r.get("setup_io") or {}).get("restore_s") or 0 for r in runs),
             "verify_s": sum(r["verify_s"] or 0 for r in runs),
             "observe_s": sum(r["source"]["observe_s"] or 0 for r in runs)}
    return {"wall_s": round(wall, 2), "engine_process_s": round(engine_wall, 2),
            "harness_s": round(wall - engine_wall, 2), "recorded_harness_steps_s": round(sum(steps.values()), 2),
            **{k: round(v, 3) for k, v in steps.items()},
            "pinned_files": runs[0]["source"]["files"], "verified": [r["verified"] for r in runs],
            "engines": [r["engine"] for r in runs]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--snapshots", type=int, required=True)
    ap.add_argument("--engines", default="spark,risingwave")
    ap.add_argument("--reps", type=int, default=1, help="measurements, each from scratch")
    ap.add_argument("--measure-only", action="store_true", help="measure the table already built under DIR")
    a = ap.parse_args()
    if a.measure_only:
        cfg, built = a.dir / "source.yaml", None
        props = dict(line.strip().split(": ", 1) for line in cfg.read_text().splitlines()[3:])
        tbl = SqlCatalog("hist", **props).load_table("hist.events")
        snaps = sorted(tbl.metadata.snapshots, key=lambda s: s.sequence_number or 0)
        pinned, a.snapshots = snaps[0].snapshot_id, len(snaps)
    else:
        cfg, pinned, built = build(a.dir, a.snapshots)
    for _ in range(a.reps):
        out = {"snapshots": a.snapshots, "build_s": None if built is None else round(built, 1),
               **measure(a.dir, cfg, pinned, a.engines)}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
