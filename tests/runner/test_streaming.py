"""Continuous maintenance under streaming CDC ingest (tiny scale, both real engines and the
baseline `none`, 2 cycles): the same writer for everyone, a maintenance step per cycle with each engine's
own tools, the table verified against the generator after every cycle, and the report's section."""

import re
from pathlib import Path

from bench.core.results import RunResult
from tests.helpers import TINY, run_bench


def _results(run_dir) -> dict[str, RunResult]:
    return {r.engine: r for r in (RunResult.model_validate_json(f.read_text()) for f in run_dir.glob("*.json")
                                  if f.name != "run.json")}


EXPIRING = """\
name: streaming-expiring
description: streaming-cdc with the expiry in every cycle, after the compaction and keeping one snapshot, so that
  an engine's expiry deletes the dataset's own files (data, manifests, lists); manifests rewritten every 2nd cycle
kind: deletes
table: {table}
target_file_size_bytes: 134217728
output:
  codec: snappy
local_scale: 0.005
engines:
  spark:
    profile: local
    spark_conf:  # the published 1000 shuffle partitions make a tiny table's expiry take 30 s of 2 cores
      spark.sql.shuffle.partitions: 2
  risingwave:
    strategy: files_with_deletes
streaming:
  cycles: 2
  commits_per_cycle: 3
  rows_per_commit: 1000
  update_share: 0.1
  delete_share: 0.05
  in_batch_delete_share: 0.05
  append_only_share: 0.25
  cadence_s: 0.5
  mode: sequential
  maintenance:
    - op: compact
    - op: expire_snapshots
      retain_last: 1
      older_than_s: 0
    - op: rewrite_manifests
      every: 2
"""


def test_streaming_cycles_are_verified_after_every_engine_and_reported(tmp_path, shared_warehouse):
    """An expiry that deletes files is part of the maintenance measured: Spark's deletes the dataset's
    own files (its data files once compacted away, its manifests and manifest lists; RisingWave's engine expires
    snapshots without deleting files).  The engine after it, and the next run on the same warehouse (branch
    mode), start from the byte-identical dataset (put back from its vault) and verify every cycle, with every
    maintenance operation fired; the vault stays byte for byte what datagen made."""
    import hashlib
    import json

    import yaml

    from bench.core.dataset import load_manifest, spare_dir

    cdc = yaml.safe_load((Path(__file__).parents[2] / "scenarios" / "streaming-cdc.yaml").read_text())
    scenario = tmp_path / "streaming-expiring.yaml"
    scenario.write_text(EXPIRING.format(table=json.dumps(cdc["table"])))
    results = tmp_path / "results"
    p = run_bench("datagen", scenario, "--scale", TINY, "--warehouse", shared_warehouse)
    assert p.returncode == 0, p.stderr[-3000:]
    name = re.search(r"dataset ([\w.]+)", p.stderr + p.stdout).group(1).split(".")[-1]
    ds, vault = load_manifest(shared_warehouse, name), spare_dir(shared_warehouse, name)

    def vaulted() -> dict[str, str]:
        return {rel: hashlib.sha256((vault / rel).read_bytes()).hexdigest() for rel in ds.table_files}

    kept = vaulted()
    # repark (its own environment) after RisingWave's engine: each of its operations published by compare-and-swap
    p = run_bench("run", scenario, "--scale", TINY, "--engines", "spark,risingwave,repark,arrow-floor", "--warehouse",
                  shared_warehouse, "--results-dir", results, "--run-id", "st", "--cycles", "2", timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    runs = _results(results / "st")
    order = ["none", "spark", "risingwave", "repark"]
    assert [runs[e].order_position for e in order] == list(range(len(order)))
    previous = None
    for engine in order:
        r = runs[engine]
        assert r.status == "ok" and r.verified and not r.counts, (engine, r.error)
        assert r.input.identical_to_dataset and r.input.fingerprint == runs["none"].input.fingerprint
        assert len(r.streaming.cycles) == 2 and all(c.verdict == "safe" for c in r.streaming.cycles)
        if engine != "none":  # every maintenance operation fired
            assert [o.op for o in r.streaming.cycles[0].op_results] == ["compact", "expire_snapshots",
                                                                        "rewrite_manifests"], engine
        if previous is not None and previous.engine == "spark":  # what its expiry deleted was put back
            deleted = sum(o.result["deleted_data_files_count"] + o.result["deleted_manifest_lists_count"]
                          for c in previous.streaming.cycles for o in c.op_results if o.op == "expire_snapshots")
            assert deleted > 0 and r.input.restored_from_vault > 0, (engine, deleted, r.input)
        previous = r
    assert vaulted() == kept
    # repark: three operations, each its own round trip and compare-and-swap
    ops = {o.op: o.result for o in runs["repark"].streaming.cycles[0].op_results}
    assert all(res["metadata"]["committed"] for res in ops.values()), ops
    assert ops["compact"]["rewritten_data_files_count"] > 0, ops
    assert ops["rewrite_manifests"]["added_manifests_count"] > 0, ops
    assert ops["expire_snapshots"]["deleted_manifest_lists_count"] > 0, ops  # it deletes what it expired
    # (an untimed gap of a millisecond or more between its steps is a phase "other": a loaded machine's)
    assert [p.name for p in runs["repark"].streaming.cycles[0].phases
            if p.op == "expire_snapshots" and not p.name.endswith(": other")] == [
        "expire_snapshots: register", "expire_snapshots: expire_snapshots", "expire_snapshots: commit"]
    floor = runs["arrow-floor"]
    assert floor.status == "unsupported" and "commits nothing" in floor.error
    base = runs["none"].streaming
    assert base.baseline and not base.maintenance
    for engine in ("none", "spark", "risingwave"):
        r = runs[engine]
        st = r.streaming
        assert [c.cycle for c in st.cycles] == [1, 2]
        for c, b in zip(st.cycles, base.cycles):
            # the same writer for every engine: the same rows, the same expected table after every cycle
            assert (c.commits, c.rows_ingested, c.expected_rows, c.expected_checksum) == \
                   (3, b.rows_ingested, b.expected_rows, b.expected_checksum)
            assert c.content_ok and c.verdict == "safe" and len([a for a in c.readers if a.answered]) == 2
            assert c.reads_ok and set(c.reads) == {"full-scan", "key-range", "point-lookup"}, c.reads_message
            assert c.manifests > 0 and c.snapshots > 0 and c.metadata_bytes > 0 and c.planning_s is not None
            # a single run's integrity held across the cycle (history advisory: every cycle expires snapshots)
            assert c.integrity and all(x.ok for x in c.integrity if x.required), c.integrity
            assert {x.name for x in c.integrity} >= {"same_table", "same_schema", "commits_are_replace"}
        if engine == "none":
            assert all(c.maintenance_status == "none" and c.maintenance_s is None for c in st.cycles)
            assert st.cycles[1].table.delete_files > st.cycles[0].table.delete_files > 0  # deletes pile up
            continue
        first, second = st.cycles
        # the scenario's order, each operation when due: all three in cycle 1, the manifests not in cycle 2
        assert [o.op for o in first.op_results] == list(first.op_seconds) == ["compact", "expire_snapshots",
                                                                             "rewrite_manifests"]
        assert [o.op for o in second.op_results] == list(second.op_seconds) == ["compact", "expire_snapshots"]
        for c in st.cycles:
            assert c.maintenance_status == "ok" and c.maintenance_s > 0 and c.peak_rss_bytes
            assert c.setup_parked  # the table out of the engine's reach while it set up, as for a single run
            assert c.table.delete_files == 0 and c.table.data_files < b.table.data_files  # compacted copy-on-write
            assert c.bytes_read > 0 and c.bytes_written > 0 and c.maintenance_snapshots >= 1
            assert abs(sum(p.seconds for p in c.phases) - c.maintenance_s) < 1e-6
        t = st.totals
        assert t.cycles == 2 and t.commits == 6 and t.bytes_ingested > 0
        assert t.write_amplification == t.bytes_written / t.bytes_ingested > 0
        assert t.maintenance_s_per_gb > 0 and t.cost_usd_per_gb > 0
        assert set(t.final_reads_vs_baseline) == {"full-scan", "key-range", "point-lookup"}

    # branch mode, RisingWave alone (Spark cannot rewrite manifests on a branch, which the scenario's maintenance
    # asks: recorded unsupported): the writer commits to `ingest` while maintenance runs, clean maintenance snapshots
    # are published to main, main's lag is measured
    p = run_bench("run", "streaming-cdc", "--scale", TINY, "--cycles", "2", "--engines", "risingwave,spark",
                  "--stream-mode", "branch", "--warehouse", shared_warehouse, "--results-dir", results,
                  "--run-id", "br", "--storage-cap", "none", "--cores", "1", timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    br = _results(results / "br")
    assert br["spark"].status == "unsupported" and "rewrite_manifests cannot work on a branch" in br["spark"].error
    rw, none = br["risingwave"].streaming, br["none"].streaming
    assert rw.mode == "branch" and br["risingwave"].verified, br["risingwave"].verification.differences
    assert br["risingwave"].input.identical_to_dataset  # after the sequential run's engines, Spark's expiry included
    for c in rw.cycles:
        assert c.verdict == "safe" and c.evidence["ingest"]["verdict"] == "safe"
        assert c.main_lag_commits is not None and "head_was_maintenance" in c.evidence
        if c.published:  # main is a maintenance snapshot without delete files, behind ingest by the lag
            assert c.table.delete_files == 0 and c.main_lag_commits < c.commits + (c.cycle - 1) * 3 + 10
    # --storage-cap / --cores reach maintenance too: each step flushed on its clock, the engine told 1 core
    assert br["risingwave"].core_limit.cores == 1 and br["risingwave"].cores == 1
    for c in rw.cycles:
        flush = [ph for ph in c.phases if ph.name == "flush"]
        assert len(flush) == 1 and c.storage_cap.flush_s == flush[0].seconds and c.storage_cap.flushed_files >= 1
        assert c.storage_cap.writeback_interval_s == 0.5 and c.storage_cap.requested == "none"
    assert [c.main_lag_commits for c in none.cycles] == [3, 6]  # without maintenance main never moves
    assert rw.totals.max_main_lag_commits is not None
    # the report: a section per streaming run with its series and totals, and the two runs compared
    out = tmp_path / "report.html"
    p = run_bench("report", results / "st", results / "br", "--out", out)
    assert p.returncode == 0, p.stderr[-2000:]
    html = out.read_text()
    assert html.count('data-section="streaming"') == 2 and 'data-section="streaming-compare"' in html
    assert 'data-mode="sequential"' in html and 'data-mode="branch"' in html
    assert html.count('data-chart="streaming-series"') == 2 and "Live delete files" in html
    rows = re.findall(r'<tr data-run="(st|br)" data-engine="([^"]+)"', html)
    assert {("st", "spark"), ("st", "risingwave"), ("st", "none"), ("br", "risingwave"), ("br", "none")} <= set(rows)
    wa = runs["risingwave"].streaming.totals.write_amplification
    assert f'data-write-amplification="{wa!r}"' in html
