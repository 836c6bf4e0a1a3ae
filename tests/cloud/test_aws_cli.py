"""`bench aws up|status|fetch|down` with a recording stand-in for the terraform executable (no AWS and
no provider here) and a real local S3 server (moto) for status and fetch."""

from __future__ import annotations

import json
import shutil
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench import aws_cli, cloud
from bench.cli import main
from tests.cloud.helpers import BUCKET
from tests.helpers import ROOT

FAKE_TF = r'''#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_TF_LOG"], "a") as f:
    f.write(json.dumps(args) + "\n")
cmd = [a for a in args if not a.startswith("-chdir=")]
if cmd[:2] == ["output", "-json"]:
    print(open(os.environ["FAKE_TF_OUTPUTS"]).read())
elif cmd[:2] == ["state", "list"]:
    print("module.bench.aws_instance.this[0]\naws_s3_bucket.results[0]\naws_s3_bucket_versioning.results[0]\n"
          "aws_iam_role.bench")
'''


@pytest.fixture()
def fake_tf(tmp_path, monkeypatch):
    exe = tmp_path / "terraform"
    exe.write_text(FAKE_TF.replace("{python}", sys.executable))
    exe.chmod(0o755)
    log = tmp_path / "tf.log"
    outputs = tmp_path / "outputs.json"
    tf_dir = tmp_path / "tfmodule"
    tf_dir.mkdir()
    # the module's variables, which `up` checks every --var against before it packs anything
    shutil.copy(ROOT / "terraform" / "variables.tf", tf_dir / "variables.tf")
    monkeypatch.setenv("BENCH_TERRAFORM", str(exe))
    monkeypatch.setenv("FAKE_TF_LOG", str(log))
    monkeypatch.setenv("FAKE_TF_OUTPUTS", str(outputs))
    monkeypatch.setattr(aws_cli, "STATE_DIR", tmp_path / "state")

    def set_outputs(**values):
        outputs.write_text(json.dumps({k: {"value": v, "type": "string", "sensitive": False}
                                       for k, v in values.items()}))

    def calls():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    set_outputs(run_id="r1", results_bucket=BUCKET, results_uri=f"s3://{BUCKET}/runs/r1/",
                instance_id="i-0123", region="us-east-1", deadline_minutes=480)
    return type("FakeTF", (), {"dir": tf_dir, "calls": staticmethod(calls),
                               "set_outputs": staticmethod(set_outputs)})


def test_up_packs_the_checkout_and_applies(fake_tf, tmp_path):
    r = CliRunner().invoke(main, ["aws", "up", "--terraform-dir", str(fake_tf.dir), "--run-id", "r1",
                                  "--scenarios", "bin-packing,bin-packing-zstd", "--scale", "0.5",
                                  "--file-scale", "1", "--max-disk-performance", "--var", "enable_ssm=true",
                                  "--var", "memory_budget=64G", "--auto-approve"])
    assert r.exit_code == 0, r.output
    calls = fake_tf.calls()
    assert [c[1] for c in calls[:2]] == ["init", "apply"]   # no .terraform yet -> init first
    apply = calls[1]
    assert apply[0] == f"-chdir={fake_tf.dir}" and "-auto-approve" in apply
    var_file = Path(next(a for a in apply if a.startswith("-var-file=")).split("=", 1)[1])
    values = json.loads(var_file.read_text())
    assert values["run_id"] == "r1" and values["scale"] == 0.5
    assert values["extra_run_args"] == "--file-scale 1.0"  # every `bench run` on the instance: the published counts
    assert values["scenarios"] == ["bin-packing", "bin-packing-zstd"]
    assert values["data_volume_max_performance"] is True
    assert values["enable_ssm"] is True and values["memory_budget"] == "64G"
    with tarfile.open(values["harness_archive_path"]) as tar:
        names = tar.getnames()
        rev = tar.extractfile(".bench-source").read().decode().strip()
    assert {"bench/cli.py", "bench/cloud.py", "terraform/bootstrap.sh", "pyproject.toml"} <= set(names)
    assert not [n for n in names if n.split("/")[0] in (".venv", ".cache", ".git", "results")
                or "__pycache__" in n]
    assert rev.startswith(("git:", "tree:"))
    assert "s3://bench-results/runs/r1/" in r.output and "bench aws status" in r.output


def test_up_from_git_and_bad_input(fake_tf):
    r = CliRunner().invoke(main, ["aws", "up", "--terraform-dir", str(fake_tf.dir), "--git-ref", "v1"])
    assert r.exit_code == 2 and "--git-ref and --git-url go together" in r.output
    (fake_tf.dir / ".terraform").mkdir()
    r = CliRunner().invoke(main, ["aws", "up", "--terraform-dir", str(fake_tf.dir), "--run-id", "r2",
                                  "--git-ref", "v1", "--git-url", "https://example.invalid/h.git"])
    assert r.exit_code == 0, r.output
    calls = fake_tf.calls()
    assert calls[0][1] == "apply" and "-auto-approve" not in calls[0]   # asks; no init needed
    assert "-input=false" not in calls[0]   # or terraform would refuse to ask
    var_file = next(a for a in calls[0] if a.startswith("-var-file=")).split("=", 1)[1]
    values = json.loads(Path(var_file).read_text())
    assert values["harness_git_url"] == "https://example.invalid/h.git" and values["harness_ref"] == "v1"
    assert values["harness_archive_path"] == ""
    r = CliRunner().invoke(main, ["aws", "up", "--terraform-dir", str(fake_tf.dir), "--spark-workers", "2"])
    assert r.exit_code == 2 and "--spark-workers needs --warehouse-on-s3" in r.output
    r = CliRunner().invoke(main, ["aws", "up", "--terraform-dir", str(fake_tf.dir), "--run-id", "r4",
                                  "--spark-workers", "2", "--warehouse-on-s3", "--git-ref", "v1", "--git-url",
                                  "https://e.invalid/h.git", "--auto-approve"])
    assert r.exit_code == 0, r.output
    apply = [c for c in fake_tf.calls() if c[1] == "apply"][-1]
    var_file = next(a for a in apply if a.startswith("-var-file=")).split("=", 1)[1]
    values = json.loads(Path(var_file).read_text())
    assert values["spark_workers"] == 2 and values["warehouse_on_s3"] is True


def test_status_and_fetch(fake_tf, s3, tmp_path, monkeypatch):
    for k, v in s3.env.items():
        monkeypatch.setenv(k, v)
    args = ["--terraform-dir", str(fake_tf.dir)]
    fake_tf.set_outputs(run_id="r3", results_bucket=BUCKET, region="us-east-1")
    r = CliRunner().invoke(main, ["aws", "status", *args])
    assert r.exit_code == 3 and "no status.json yet" in r.output
    local = tmp_path / "run"
    (local / "results").mkdir(parents=True)
    (local / "results" / "bin-packing--risingwave--rep0.json").write_text('{"engine": "risingwave"}')
    cloud.publish(f"s3://{BUCKET}/runs/r3/", {"results": local / "results"}, {"status": "ok"})
    r = CliRunner().invoke(main, ["aws", "status", *args])
    assert r.exit_code == 0 and "finished, status ok" in r.output
    dest = tmp_path / "fetched"
    r = CliRunner().invoke(main, ["aws", "fetch", *args, "--dest", str(dest), "--no-report"])
    assert r.exit_code == 0, r.output
    assert json.loads((dest / "results" / "bin-packing--risingwave--rep0.json").read_text()) == {
        "engine": "risingwave"}
    assert json.loads((dest / "status.json").read_text())["status"] == "ok"
    # without Terraform state: bucket and run given explicitly
    r = CliRunner().invoke(main, ["aws", "fetch", "--bucket", BUCKET, "--run-id", "nope",
                                  "--dest", str(tmp_path / "x"), "--no-report"])
    assert r.exit_code == 2 and "nothing under s3://bench-results/runs/nope/" in r.output


def test_down_keeps_the_results_bucket(fake_tf):
    r = CliRunner().invoke(main, ["aws", "down", "--terraform-dir", str(fake_tf.dir), "--auto-approve"])
    assert r.exit_code == 0, r.output
    cmds = [c[1:] for c in fake_tf.calls()]
    rm = next(c for c in cmds if c[:2] == ["state", "rm"])
    assert rm[2:] == ["aws_s3_bucket.results[0]", "aws_s3_bucket_versioning.results[0]"]
    assert cmds[-1][0] == "destroy" and "-auto-approve" in cmds[-1]
    assert "keeping bucket bench-results" in r.output


def test_missing_terraform_is_one_clear_line(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCH_TERRAFORM", str(tmp_path / "no-terraform-here"))
    r = CliRunner().invoke(main, ["aws", "status", "--terraform-dir", str(tmp_path)])
    assert r.exit_code == 2 and "terraform not found" in r.output


def test_up_prints_the_plan_and_sizes_volume_and_deadline_from_it(fake_tf, tmp_path):
    """A sweep of the run's scenario in --plan-from: `up` prints the plan and takes the volume size and
    the deadline from it (a plan cannot be made without one: then Terraform's defaults, said so)."""
    from bench.core.campaign import Point, SweepSummary, write_summary
    from bench.core.fit import fit_line
    from bench.core.spread import Spread

    xs = [0.2, 0.4, 1.0, 1.0]
    s = SweepSummary(sweep_id="sw", scenario="bin-packing", scales=[0.001, 0.002, 0.005], reps=1,
                     engines=["risingwave"], state="complete", started_at="2026-11-23T00:00:00Z", cores=2,
                     time_fits={"risingwave": fit_line(xs, [1 + 4 * x for x in xs], "duration_s", "s")},
                     points=[Point(engine="risingwave", scale=0.005, gb=0.965, disk_gb=0.965, output_disk_gb=0.42,
                                   runs=1, verified=1, duration_s=Spread(median=4.9), setup_s=0.1, verify_s=2.0,
                                   mean_cores=1.6)])
    write_summary(tmp_path / "plans" / "sw", s)
    def args(run_id, scenario="bin-packing", plans=tmp_path / "plans"):
        return ["aws", "up", "--terraform-dir", str(fake_tf.dir), "--run-id", run_id, "--scenarios", scenario,
                "--git-ref", "v1", "--git-url", "https://example.invalid/h.git", "--auto-approve",
                "--plan-from", str(plans)]

    r = CliRunner().invoke(main, args("p1"))
    assert r.exit_code == 0, r.output
    assert "plan (a MODEL, not a measurement): m5.4xlarge" in r.output
    apply = next(c for c in fake_tf.calls() if c[1] == "apply")
    values = json.loads(Path(next(a for a in apply if a.startswith("-var-file=")).split("=", 1)[1]).read_text())
    assert values["data_volume_size_gb"] >= 193 * 1.3 and values["max_lifetime_minutes"] >= 60
    assert f"data volume {values['data_volume_size_gb']} GB" in r.output
    # given explicitly, the user's values win; without any sweep, nothing is invented
    r = CliRunner().invoke(main, [*args("p2"), "--max-lifetime", "300", "--var", "data_volume_size_gb=2000"])
    assert r.exit_code == 0, r.output
    apply = [c for c in fake_tf.calls() if c[1] == "apply"][-1]
    values = json.loads(Path(next(a for a in apply if a.startswith("-var-file=")).split("=", 1)[1]).read_text())
    assert values["max_lifetime_minutes"] == 300 and values["data_volume_size_gb"] == 2000
    # one storage choice: Terraform's `storage`, and the plan models it (S3 at the network's sustained rate)
    r = CliRunner().invoke(main, [*args("p4"), "--storage", "s3"])
    assert r.exit_code == 0, r.output
    apply = [c for c in fake_tf.calls() if c[1] == "apply"][-1]
    values = json.loads(Path(next(a for a in apply if a.startswith("-var-file=")).split("=", 1)[1]).read_text())
    assert values["storage"] == "s3" and "warehouse_on_s3" not in values
    assert "storage s3-sustained (S3, the network's baseline, 625 MB/s per direction)" in r.output
    r = CliRunner().invoke(main, [*args("p5"), "--storage", "gp3-max", "--warehouse-on-s3"])
    assert r.exit_code == 2 and "--storage decides the volume and the warehouse alone" in r.output
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(main, args("p3", "deletes-high", tmp_path / "empty"))
    assert r.exit_code == 0, r.output
    assert "no sweep of deletes-high" in r.output and "Terraform's defaults" in r.output


def test_up_on_your_own_table_ships_its_catalog_file_and_reads_its_prefix_only(fake_tf, tmp_path):
    """`up --source-catalog --source-table`: the Terraform variables of a read-only source (its catalog file,
    table, snapshot, S3 prefix, Glue) and an S3 warehouse for its clone; no plan invented; bad input is one
    line before Terraform runs."""
    from tests.runner.foreign import make_foreign_table

    cat = tmp_path / "prod.yaml"
    cat.write_text("type: glue\nwarehouse: s3://my-lake/\n")

    def up(*extra):
        return CliRunner().invoke(main, ["aws", "up", "--terraform-dir", str(fake_tf.dir), "--run-id", "own",
                                         "--scenarios", "bin-packing", "--git-ref", "v1", "--git-url",
                                         "https://example.invalid/h.git", "--auto-approve", *extra])

    r = up("--source-catalog", str(cat), "--source-table", "lake.events", "--source-location", "s3://my-lake/events/",
           "--source-snapshot", "42", "--source-glue")
    assert r.exit_code == 0, r.output
    apply = next(c for c in fake_tf.calls() if c[1] == "apply")
    values = json.loads(Path(next(a for a in apply if a.startswith("-var-file=")).split("=", 1)[1]).read_text())
    assert values["source_catalog_path"] == str(cat.resolve()) and values["source_table"] == "lake.events"
    assert values["source_s3_uri"] == "s3://my-lake/events" and values["source_snapshot"] == "42"
    assert values["source_glue"] is True and values["warehouse_on_s3"] is True and "scale" not in values
    assert "plan: none for your own table" in r.output and "(read-only for the instance)" in r.output
    applies = len([c for c in fake_tf.calls() if c[1] == "apply"])
    local = make_foreign_table(tmp_path / "local", commits=1, rows=5)  # its location: a local directory
    for args, says in ((["--source-table", "lake.events"], "go together"),
                       (["--source-location", "s3://x/y"], "need --source-catalog and --source-table"),
                       (["--source-catalog", str(cat), "--source-table", "lake.events", "--scale", "0.1"],
                        "--scale shapes the generated tables"),
                       (["--source-catalog", str(cat), "--source-table", "lake.events", "--source-location",
                         "/data/events"], "must be on S3 under a prefix"),
                       (["--source-catalog", str(tmp_path / "none.yaml"), "--source-table", "a.b"], "cannot read it"),
                       (["--source-catalog", str(local), "--source-table", "shop.orders"], "must be on S3")):
        bad = up(*args)
        assert bad.exit_code == 2 and says in bad.output and len(bad.output.strip().splitlines()) == 1, bad.output
    assert len([c for c in fake_tf.calls() if c[1] == "apply"]) == applies


# ----- several benchmark nodes (--nodes) and spot instances (--spot) --------------------------------------
def _applied_values(fake_tf) -> dict:
    apply = [c for c in fake_tf.calls() if c[1] == "apply"][-1]
    return json.loads(Path(next(a for a in apply if a.startswith("-var-file=")).split("=", 1)[1]).read_text())


def _up(fake_tf, run_id, *extra):
    return CliRunner().invoke(main, ["aws", "up", "--terraform-dir", str(fake_tf.dir), "--run-id", run_id,
                                     "--git-ref", "v1", "--git-url", "https://example.invalid/h.git",
                                     "--auto-approve", *extra])


def test_up_nodes_without_a_plan_deals_the_scenarios_out_and_spot_sets_its_variables(fake_tf, tmp_path):
    (tmp_path / "empty").mkdir()
    plan_from = ["--plan-from", str(tmp_path / "empty")]
    r = _up(fake_tf, "n2", "--scenarios", "bin-packing,bin-packing-zstd,deletes-high", "--nodes", "2",
            "--spot", "--var", "spot_max_price=0.40", *plan_from)
    assert r.exit_code == 0, r.output
    values = _applied_values(fake_tf)
    assert values["node_scenarios"] == [["bin-packing", "deletes-high"], ["bin-packing-zstd"]]
    assert values["spot"] is True and values["spot_max_price"] == 0.4   # Terraform takes it as the string "0.4"
    assert "node 0 (the benchmark instance, results in runs/n2/): bin-packing, deletes-high" in r.output
    assert "node 1 (results in runs/n2/node-1/): bin-packing-zstd" in r.output
    # one node (the default): nothing new in the variables, on demand
    r = _up(fake_tf, "n1", "--scenarios", "bin-packing,deletes-high", *plan_from)
    assert r.exit_code == 0, r.output
    values = _applied_values(fake_tf)
    assert not {"node_scenarios", "spot", "spot_max_price"} & set(values)
    # never more nodes than scenarios: two scenarios on --nodes 5 are two nodes
    r = _up(fake_tf, "n5", "--scenarios", "bin-packing,deletes-high", "--nodes", "5", *plan_from)
    assert r.exit_code == 0, r.output
    assert _applied_values(fake_tf)["node_scenarios"] == [["bin-packing"], ["deletes-high"]]
    assert "5 asked for, 2 scenario(s): 2 node(s)" in r.output
    # one scenario on --nodes 3: one node, as today
    r = _up(fake_tf, "n3", "--scenarios", "bin-packing", "--nodes", "3", *plan_from)
    assert r.exit_code == 0, r.output
    assert "node_scenarios" not in _applied_values(fake_tf)


def test_up_nodes_from_the_plan_longest_first(fake_tf, tmp_path):
    """With a complete plan the groups are the plan's (longest planned wall first onto the least loaded node)."""
    from bench.core.campaign import Point, SweepSummary, write_summary
    from bench.core.fit import fit_line
    from bench.core.spread import Spread

    xs = [0.2, 0.4, 1.0, 1.0]
    for name, gb in (("bin-packing", 0.965), ("bin-packing-zstd", 2.0), ("deletes-high", 0.5)):  # sizes at 0.005
        write_summary(tmp_path / "plans" / name, SweepSummary(
            sweep_id=name, scenario=name, scales=[0.001, 0.002, 0.005], reps=1, engines=["risingwave"],
            state="complete", started_at="2026-11-23T00:00:00Z", cores=2,
            time_fits={"risingwave": fit_line(xs, [1 + 4 * x for x in xs], "duration_s", "s")},
            points=[Point(engine="risingwave", scale=0.005, gb=gb, disk_gb=gb, output_disk_gb=gb / 2, runs=1,
                          verified=1, duration_s=Spread(median=4.9), setup_s=0.1, verify_s=2.0, mean_cores=1.6)]))
    r = _up(fake_tf, "pn", "--scenarios", "bin-packing,bin-packing-zstd,deletes-high", "--nodes", "2",
            "--plan-from", str(tmp_path / "plans"))
    assert r.exit_code == 0, r.output
    values = _applied_values(fake_tf)
    groups = values["node_scenarios"]
    assert sorted(sum(groups, [])) == ["bin-packing", "bin-packing-zstd", "deletes-high"] and len(groups) == 2
    assert groups[0] == ["bin-packing-zstd"], r.output   # the longest alone, the two others on the second node
    assert "max_lifetime_minutes" in values and "data_volume_size_gb" in values


@pytest.mark.parametrize("extra, says", [
    (["--nodes", "2", "--spark-workers", "1", "--warehouse-on-s3"], "--nodes and --spark-workers"),
    (["--nodes", "2", "--source-table", "lake.events"], "--nodes and --source-table"),
])
def test_up_nodes_and_spot_bad_input_is_one_line(fake_tf, extra, says):
    r = _up(fake_tf, "bad", *extra)
    assert r.exit_code == 2 and says in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not [c for c in fake_tf.calls() if c[1] == "apply"]


def test_status_and_fetch_over_two_nodes(fake_tf, s3, tmp_path, monkeypatch):
    """Node 0 under runs/<run-id>/, node 1 under runs/<run-id>/node-1/: finished only when both are (exit 3
    before); fetch renders one report over both nodes' results."""
    for k, v in s3.env.items():
        monkeypatch.setenv(k, v)
    states = {"i-0": "running", "i-1": "running"}
    monkeypatch.setattr(aws_cli, "_instance_state", lambda iid, region: states[iid])
    args = ["--terraform-dir", str(fake_tf.dir)]
    fake_tf.set_outputs(run_id="r5", results_bucket=BUCKET, region="us-east-1", nodes=2, instance_id="i-0",
                        node_instance_ids=["i-1"])
    local = tmp_path / "run"
    (local / "results").mkdir(parents=True)
    (local / "results" / "a.json").write_text("{}")
    cloud.publish(f"s3://{BUCKET}/runs/r5/node-1/", {"results": local / "results"})   # node 1: partial
    r = CliRunner().invoke(main, ["aws", "status", *args])
    assert r.exit_code == 3, r.output
    assert "node 0 s3://bench-results/runs/r5/ (instance i-0: running): running or not started (0 objects" in r.output
    assert "node 1 s3://bench-results/runs/r5/node-1/ (instance i-1: running): running or not started (1 objects" \
        in r.output
    cloud.publish(f"s3://{BUCKET}/runs/r5/", {"results": local / "results"}, {"status": "ok"})   # node 0 done
    r = CliRunner().invoke(main, ["aws", "status", *args])
    assert r.exit_code == 3 and "node 0 s3://bench-results/runs/r5/ (instance i-0: running): finished, status ok " \
        "(2 objects)" in r.output and "1 of 2 nodes not finished" in r.output, r.output
    cloud.publish(f"s3://{BUCKET}/runs/r5/node-1/", {}, {"status": "failed"})   # node 1 done
    r = CliRunner().invoke(main, ["aws", "status", *args])
    assert r.exit_code == 0 and "node 1 s3://bench-results/runs/r5/node-1/ (instance i-1: running): finished, " \
        "status failed" in r.output and "all 2 nodes finished" in r.output, r.output
    # without Terraform's outputs the nodes are counted from the keys under the run's prefix
    r = CliRunner().invoke(main, ["aws", "status", "--bucket", BUCKET, "--run-id", "r5"])
    assert r.exit_code == 0 and "all 2 nodes finished" in r.output, r.output

    rendered = []
    monkeypatch.setattr("reports.render.render_report", lambda paths, out=None: rendered.append((paths, out)) or out)
    dest = tmp_path / "fetched"
    r = CliRunner().invoke(main, ["aws", "fetch", *args, "--dest", str(dest)])
    assert r.exit_code == 0, r.output
    assert (dest / "results" / "a.json").is_file() and (dest / "node-1" / "results" / "a.json").is_file()
    assert "node 0 status: ok" in r.output and "node 1 status: failed" in r.output
    assert rendered == [([dest / "results", dest / "node-1" / "results"], dest / "report-all-nodes.html")]


def test_status_a_node_lost_without_status_json(fake_tf, s3, monkeypatch):
    """A node whose instance is terminated without a status.json (a Spot interruption) is lost, not running."""
    for k, v in s3.env.items():
        monkeypatch.setenv(k, v)
    states = {"i-0": "terminated", "i-1": "terminated"}
    monkeypatch.setattr(aws_cli, "_instance_state", lambda iid, region: states[iid])
    fake_tf.set_outputs(run_id="r6", results_bucket=BUCKET, region="us-east-1", nodes=2, instance_id="i-0",
                        node_instance_ids=["i-1"])
    cloud.publish(f"s3://{BUCKET}/runs/r6/", {}, {"status": "ok"})
    r = CliRunner().invoke(main, ["aws", "status", "--terraform-dir", str(fake_tf.dir)])
    assert r.exit_code == 0 and "node 1 s3://bench-results/runs/r6/node-1/ (instance i-1: terminated): lost" \
        in r.output, r.output
    states["i-1"] = "shutting-down"   # not terminated yet: its last upload may still come
    r = CliRunner().invoke(main, ["aws", "status", "--terraform-dir", str(fake_tf.dir)])
    assert r.exit_code == 3, r.output
