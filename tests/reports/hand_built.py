"""Hand-built results for the report's tests (fast, no browser): a RunResult with every field a real run
writes, a run directory of them, the rendered HTML as text, and one row of one of its tables."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from bench.core.cost import run_cost
from bench.core.results import RunResult, RunState, save, write_run_state
from reports.render import render_html

GiB = 1024**3

PUBLISHED = {"source": "hand-written", "scale": 1.0, "machine": "AWS m5.4xlarge (16 vCPU, 64 GB, EBS)",
             "instance_type": "m5.4xlarge", "logical_bytes": 193_000_000_000,
             "duration_s": {"risingwave": 277, "spark": 1533}, "status": {"risingwave": "ok", "spark": "ok"},
             "notes": "hand-written notes"}
SCENARIO = {"name": "bin-packing", "description": "Bin-pack many small files (hand-written).", "kind": "binpack",
            "table": {"kind": "smallfiles", "files": 17358, "total_bytes": 193_000_000_000},
            "published": PUBLISHED}
RULES = ["content: rows and checksum equal the ground truth", "complete: at most one small file per partition"]
COLORS = {"spark": "#E25A1C", "risingwave": "#2F5BEA"}
SPARK_CAPS = [{"name": "JVM heap", "role": "heap", "bytes": 8 * GiB, "source": "Runtime.maxMemory()"},
              {"name": "JVM metaspace", "role": "metaspace", "bytes": None,
               "source": "-XX:MaxMetaspaceSize (no limit set)"}]


def checks(ok: bool) -> dict:
    checks = [{"name": "content_duckdb", "ok": True, "message": "1000 rows, checksum equal"},
              {"name": "compaction_complete", "ok": ok,
               "message": "1 small file" if ok else "12 small files could still be merged: the compaction is partial"},
              {"name": "row_group_size", "ok": ok, "message": "row groups smaller than advised", "required": False}]
    return {"verified": ok, "checks": checks, "rules": RULES,
            "differences": [] if ok else [f"{c['name']}: {c['message']}" + ("" if c.get("required", True)
                                                                             else " (advisory)")
                                          for c in checks if not c["ok"]]}


def make_result(engine, rep, status="ok", duration=10.0, verified=None, run_id="hand", samples=None, order=None,
            scenario=SCENARIO, sha="abc123", **kw) -> RunResult:
    ok = status == "ok"
    verified = ok if verified is None else verified
    order = order or ["spark", "risingwave"]
    phases = ([{"name": "plan", "seconds": duration * 0.2, "detail": "planning the rewrite"},
               {"name": "rewrite", "seconds": duration * 0.7, "detail": "reading and writing files"},
               {"name": "commit", "seconds": duration * 0.1, "detail": "one catalog commit"}] if ok else [])
    fields = dict(
        run_id=run_id, scenario="bin-packing", engine=engine, engine_name=engine.split(":")[0], rep=rep, scale=0.001,
        seed=1,
        scenario_record={"name": "bin-packing", "sha256": sha, "content": scenario} if scenario is not None else {},
        status=status, verified=verified and ok, duration_s=duration if ok else None,
        phases=phases, setup_s=1.5,
        setup_phases=[{"name": "session start", "seconds": 1.5, "detail": "process and session start-up"}],
        process_wall_s=(duration or 5) + 2, files_in=16, files_out=1 if ok else None, bytes_in=10_000_000,
        engine_order=order, order_position=order.index(engine) if engine in order else 0,
        engine_color=COLORS.get(engine),
        cache={"mode": "cold", "requested": "cold", "dropped": True, "note": "sync, then drop_caches"},
        input={"fingerprint": "fp0123456789", "identical_to_dataset": True},
        before={"data_files": 16, "data_bytes": 10_000_000, "uncompressed_bytes": 30_000_000, "rows": 1000},
        after={"data_files": 1, "data_bytes": 9_000_000, "rows": 1000} if ok else None,
        verification=checks(verified) if ok else {"rules": RULES},
        telemetry={"peak_rss_bytes": 500_000_000 if ok else 7_900_000_000, "peak_hwm_bytes": 400_000_000,
                   "mean_cores": 1.5, "p95_cores": 1.9, "samples": 10, "interval_s": 0.1},
        memory_budget_bytes=16 * GiB, memory_enforcement="cgroup v2 memory.max on the engine's process tree",
        memory_caps=SPARK_CAPS if engine == "spark" else [],
        catalog_server={"cpu_s": 0.4 + rep, "peak_rss_bytes": 150_000_000, "requests": 8 + rep, "commits": 1,
                        "commit_s": 0.05, "request_s": 0.2},
        cost=run_cost(duration if ok else None), samples_file=samples,
        error=None if ok else {"oom": "oom: killed by the kernel OOM killer in the engine's cgroup",
                               "heap-oom": "java.lang.OutOfMemoryError: Java heap space",
                               "failed": "engine crashed"}.get(status, status),
    )
    fields.update(kw)
    return RunResult(**fields)


def write_results(tmp_path: Path, results, run_id="hand", state="complete", pid=0, expected=None,
                  engines=("spark", "risingwave")) -> Path:
    for r in results:
        save(tmp_path, r)
    write_run_state(tmp_path / run_id, RunState(run_id=run_id, state=state, pid=pid, scenario="bin-packing",
                                                engines=list(engines), reps=2,
                                                expected_results=len(results) if expected is None else expected,
                                                started_at="2025-01-01T00:00:00Z"))
    return tmp_path / run_id


def render(*args, **kw) -> str:
    """The report's HTML with entities decoded, so text reads as on screen."""
    return unescape(render_html(*args, **kw))


def table_row(html: str, table: str, **attrs) -> str:
    """The row of `table` whose data-* attributes are `attrs` (a nested table inside it included)."""
    start = html.index(f'data-table="{table}"')
    sel = "".join(rf'(?=[^>]*data-{k}="{re.escape(str(v))}")' for k, v in attrs.items())
    m = re.compile(rf"<tr{sel}[^>]*>").search(html, start)
    assert m, (table, attrs)
    depth = 0
    for tok in re.finditer(r"<table|</table>|</tr>", html[m.end():]):
        if tok.group(0) == "<table":
            depth += 1
        elif tok.group(0) == "</table>":
            depth -= 1
        elif depth == 0:
            return html[m.start():m.end() + tok.end()]
    raise AssertionError((table, attrs))
