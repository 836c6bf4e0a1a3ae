"""Spark on a cluster of several workers (issue: the same benchmark on N nodes).

Offline, the multi-node code paths run on one machine: a standalone cluster with two workers on
127.0.0.1, each with its own work directory, started by the harness (`spark:standalone-2w`) or already
running (`--spark-master`, as on the Terraform cluster), runs the real compaction at tiny scale and is torn
down.  The rest needs no JVM: the memory plan with W workers, the refusal of a local warehouse for a
cluster on other machines, the cost of every node, the report's cluster section and its model.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bench.core.cost import run_cost
from bench.engines.spark import memory
from bench.engines.spark.cluster import StandaloneCluster, parse_master
from bench.engines.spark.engine import SparkEngine
from bench.engines.spark.options import SparkOptions
from tests.engines.spark_processes import kill_leftovers, results, wait_until_gone
from tests.helpers import TINY, run_bench

MiB = 1024**2
GiB = 1024**3


# ------------------------------------------------------------------------------------------------
# no JVM


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("budget_gib", [6, 8, 24])
def test_plan_with_workers_fits_the_budget_and_splits_the_executor(workers, budget_gib):
    budget = budget_gib * GiB
    plan = memory.memory_plan("local", budget, ram_bytes=24 * GiB, mode="standalone", workers=workers)
    parts = plan["budget_parts_bytes"]
    assert parts["total"] <= budget and plan["workers"] == workers
    assert parts["daemons"] == (1 + workers) * memory.DAEMON_RESERVE
    conf = plan["conf"]
    assert parts["executor_heap"] == workers * memory.parse_size(conf["spark.executor.memory"])
    one = memory.memory_plan("local", None, ram_bytes=24 * GiB, mode="standalone", workers=1)["conf"]
    many = memory.memory_plan("local", None, ram_bytes=24 * GiB, mode="standalone", workers=workers)["conf"]
    assert abs(memory.parse_size(many["spark.executor.memory"]) * workers
               - memory.parse_size(one["spark.executor.memory"])) <= workers * MiB  # split, not multiplied


def test_min_budget_grows_per_worker_and_below_it_is_one_line():
    one, two = memory.min_budget_bytes("standalone", 1), memory.min_budget_bytes("standalone", 2)
    per_worker = memory.DAEMON_RESERVE + memory.SPARK_MIN_HEAP + memory.EXECUTOR_MIN_OVERHEAD
    assert one == 2496 * MiB and two - one == per_worker
    assert SparkEngine().min_budget({"mode": "standalone", "workers": 2}) == two
    from bench.core.errors import UserError

    with pytest.raises(UserError, match="2 executor"):
        memory.memory_plan("local", two - MiB, mode="standalone", workers=2)


def test_external_cluster_options_and_sizes():
    o = SparkOptions.model_validate({"master": "spark://10.0.0.5:7077"})
    assert o.deploy == "external" and o.master_host == "10.0.0.5" and o.webui() == "http://10.0.0.5:8080"
    for bad in ({"master": "http://x:1"}, {"master": "spark://x"}, {"workers": 2},
                {"master": "spark://h:1", "workers": 2, "mode": "standalone"}):
        with pytest.raises(ValueError):
            SparkOptions.model_validate(bad)
    assert parse_master("spark://127.0.0.1:7077") == ("127.0.0.1", 7077)
    # the published 40g + 8g on a worker that offers enough; the same 5:1 split below that
    assert memory.external_executor_sizes(57_600) == (40 * GiB, 8 * GiB)
    heap, overhead = memory.external_executor_sizes(6_000)
    assert heap + overhead <= 6_000 * MiB and heap // overhead == 5
    plan = memory.memory_plan("paper", 8 * GiB, mode="external")
    assert plan["mode"] == "external" and memory.parse_size(plan["conf"]["spark.driver.memory"]) <= 6 * GiB


def test_cost_counts_every_node():
    one = run_cost(100.0, "m5.4xlarge", nodes=1)
    three = run_cost(100.0, "m5.4xlarge", nodes=3)
    assert three.compute_usd == pytest.approx(3 * one.compute_usd) and three.nodes == 3
    assert "3 nodes" in three.basis


def test_cluster_model_fits_fixed_plus_parallel_over_nodes():
    from bench.core.spread import Spread
    from reports.cluster import ClusterRow, _fit, _model

    pts = [(1, 90.0), (2, 50.0), (4, 30.0)]  # 10 s + 80 s / n
    fixed, parallel = _fit(pts)
    assert fixed == pytest.approx(10.0) and parallel == pytest.approx(80.0)
    ref = ClusterRow(run_id="r", label="risingwave", color="#000", nodes=1, workers=None, executors=None, cores=16,
                     time=Spread.of([30.0]), cost_median=None, is_reference=True)
    m = _model("spark", pts, ref)
    assert m.match_nodes == pytest.approx(4.0) and "about 4 nodes" in m.sentence
    slow_ref = ClusterRow(**{**ref.__dict__, "time": Spread.of([5.0])})
    assert _model("spark", pts, slow_ref).match_nodes is None  # the fixed part alone is longer: never
    assert _fit([(2, 50.0), (2, 51.0)]) is None  # one node count: no model


def test_a_cluster_on_other_machines_refuses_a_local_warehouse(tmp_path):
    r = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "spark", "--spark-master",
                  "spark://10.255.0.1:7077", "--warehouse", tmp_path / "wh", "--results-dir", tmp_path / "res")
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "cannot read the local warehouse" in err[0] and "s3://" in err[0], r.stderr
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").rglob("*.json"))
    assert not (tmp_path / "wh").exists() or not any((tmp_path / "wh").rglob("*.parquet"))


# ------------------------------------------------------------------------------------------------
# real clusters of two workers


@pytest.mark.spark
@pytest.mark.slow
def test_two_local_workers_started_by_the_harness(tmp_path, shared_warehouse):
    """spark:standalone-2w: a master and two workers on 127.0.0.1, each with its own work dir, one executor
    each; verified; nothing left running."""
    t0 = time.time()
    try:
        p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "spark:standalone-2w", "--reps", "1",
                      "--warehouse", shared_warehouse, "--results-dir", tmp_path, "--run-id", "w2", timeout=600)
        left = wait_until_gone(tmp_path, t0, timeout_s=5)
    finally:
        kill_leftovers(tmp_path, t0)
    assert p.returncode == 0, p.stderr[-3000:]
    assert left == []
    [r] = results(tmp_path)
    assert r["status"] == "ok" and r["verified"] is True, (r["error"], r["log_tail"])
    s = r["engine_settings"]
    assert s["mode"] == "standalone" and s["cluster"]["worker_count"] == 2 and r["nodes"] == 1
    d = r["deployment"]
    assert (d["mode"], d["workers"], d["executors"], d["nodes"]) == ("standalone", 2, 2, 1)
    assert len(d["executor_memory_bytes"]) == 2 and sum(d["executor_cores"]) == d["cores"]
    assert s["executor_count"] == 2 and len(s["executor_memory_mib_worker"]) == 2
    assert s["budget_parts_bytes"]["total"] <= r["memory_budget_bytes"]
    dirs = [Path(d) for d in s["cluster"]["worker_dirs"]]
    assert len(set(dirs)) == 2 and all(d.is_relative_to(tmp_path) for d in dirs)
    assert all(list(d.glob("app-*/*/stderr")) for d in dirs)  # one executor ran under each worker's own dir
    # the report's cluster section: one node count, so no model, and it says so
    from reports.render import render_html

    html = render_html([tmp_path / "w2"])
    assert 'data-section="cluster"' in html and 'data-engine="spark:standalone-2w" data-nodes="1"' in html
    assert "needs verified runs at two or more node counts" in html and "data-cluster-model" not in html


@pytest.mark.spark
@pytest.mark.slow
def test_an_existing_cluster_by_master_url(tmp_path, shared_warehouse):
    """--spark-master: the harness starts no daemon; the driver runs in the engine process, one executor
    on each of the cluster's workers; the cluster is still there afterwards (not the harness's to stop)."""
    t0 = time.time()
    cluster = StandaloneCluster(tmp_path / "cluster", cores=1, worker_memory_mib=1200, workers=2,
                                daemon_java_options=memory.daemon_java_options())
    try:
        cluster.start()
        p = run_bench("run", "bin-packing", "--scale", TINY, "--engines", "spark", "--reps", "1",
                      "--spark-master", cluster.master_url, "--option", f"spark.master_webui={cluster.master_webui}",
                      "--warehouse", shared_warehouse, "--results-dir", tmp_path / "res", "--run-id", "ext",
                      timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        assert len(cluster.alive_workers()) == 2  # untouched by the run
        [r] = results(tmp_path / "res")
        assert r["status"] == "ok" and r["verified"] is True, (r["error"], r["log_tail"])
        s = r["engine_settings"]
        assert s["mode"] == "external" and s["master"] == cluster.master_url and r["nodes"] == 1
        assert s["cluster"]["started_by_harness"] is False and len(s["cluster"]["workers"]) == 2
        assert s["executor_count"] == 2 and s["executor_cores"] == [1, 1]
        d = r["deployment"]
        assert (d["mode"], d["master"], d["workers"], d["executors"]) == ("external", cluster.master_url, 2, 2)
        assert d["executor_cores"] == [1, 1] and d["cores"] == 2 and d["nodes"] == 1 and d["hosts"] == ["127.0.0.1"]
        assert s["spark_memory"]["spark.executor.memory"] == "1000m"  # 5:1 of the 1200 MiB each worker offers
        assert r["cost"]["nodes"] == 1
        assert all(list(cluster.worker_dir(i).glob("app-*/*/stderr")) for i in range(2))
        phases = [ph["name"] for ph in r["setup_phases"]]
        assert phases[:3] == ["cluster contact", "session start", "executor start"]
        assert json.loads(json.dumps(s["external_workers"]))[0]["cores"] == 1
    finally:
        cluster.stop()
        kill_leftovers(tmp_path, t0)
    assert wait_until_gone(tmp_path, t0, timeout_s=5) == []
