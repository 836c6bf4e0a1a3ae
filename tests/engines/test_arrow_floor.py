"""The `arrow-floor` engine: the physical floor of the same rewrite, committing nothing.  Its output is
verified like any engine's (staged as a scratch table), then removed; a floor that loses rows, commits
to the table or lists a file it did not write is not verified."""

import json
from pathlib import Path

from tests.helpers import TINY, run_bench


def _results(run_dir: Path) -> dict:
    return {json.loads(p.read_text())["engine"]: json.loads(p.read_text())
            for p in run_dir.glob("*--rep0.json")}


def _failed(r: dict) -> set[str]:
    return {c["name"] for c in r["verification"]["checks"] if not c["ok"] and c["required"]}


def test_floor_is_verified_without_a_commit_and_wrong_floors_are_caught(tmp_path, shared_warehouse):
    p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "arrow-floor,lossyfloor,committingfloor,"
                  "ghostfloor", "--results-dir", tmp_path, "--warehouse", shared_warehouse, "--run-id", "floor")
    assert p.returncode == 0, p.stderr[-3000:]
    res = _results(tmp_path / "floor")
    floor = res["arrow-floor"]
    assert floor["status"] == "ok" and floor["verified"], floor["verification"]["differences"]
    assert floor["commits"] == "none" and floor["engine_name"] == "arrow-floor"
    checks = {c["name"]: c for c in floor["verification"]["checks"]}
    for name in ("nothing_committed", "content_duckdb_read_parquet", "content_pyiceberg_scan", "output_codec",
                 "compaction_complete", "file_count"):
        assert checks[name]["ok"] and checks[name]["required"], name
    assert "new_snapshot" not in checks  # nothing was committed, and that is what is checked
    assert floor["after"]["rows"] == floor["before"]["rows"] and floor["files_out"] < floor["files_in"]
    assert floor["engine_result"]["files_written"] == floor["files_out"]
    # listing the live files is timed: the table is out of reach while an engine sets up
    assert [ph["name"] for ph in floor["phases"]][:4] == ["list live files", "read deletes", "select files",
                                                          "read, apply deletes, write"]
    assert floor["duration_s"] > 0 and floor["setup_s"] > 0
    # its written files and the scratch table are gone; the run's log stays
    work = tmp_path / "floor" / "work" / "bin-packing--arrow-floor--rep0"
    assert (work / "engine.log").exists()
    assert not (work / "floor-output").exists() and not (work / "staged-output").exists()
    # each wrong floor is caught by the check that names its flaw
    assert _failed(res["lossyfloor"]) == {"content_duckdb_read_parquet", "content_pyiceberg_scan"}
    assert _failed(res["committingfloor"]) == {"nothing_committed"}
    assert _failed(res["ghostfloor"]) == {"output_staged"}
    assert "do not exist" in res["ghostfloor"]["verification"]["differences"][0]
    for r in res.values():  # whatever the floors did, every engine started from the dataset, byte for byte
        assert r["input"]["identical_to_dataset"] is True
    assert not list((tmp_path / "floor" / "work").rglob("floor-*.parquet"))
