"""`bench aws up|status|fetch|down`: the full-scale benchmark on AWS, driven through terraform/.

`up` packs this checkout (or names a git ref), applies the Terraform module, and returns at once: the
instance runs the benchmark, uploads to ``s3://<bucket>/runs/<run-id>/`` and terminates itself.  With
``--nodes N`` the scenarios are spread over N such instances (Terraform's ``node_scenarios``); node i > 0
uploads to ``runs/<run-id>/node-<i>/``.
`status` tells whether each node's ``status.json`` (written last) is there, `fetch` downloads the run and
renders one report over every node's results, `down` destroys what Terraform created (keeping the
results bucket by default).

Terraform is run as a subprocess (``BENCH_TERRAFORM`` overrides the executable, for tests); the state
stays in terraform/ as with any Terraform module, and the settings of the last `up` are kept in
``.cache/aws/`` so that `down` destroys with the same variables.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from bench.core.errors import UserError, one_line_errors
from bench.core.settings import env_settings
from bench.engines import default_engines

if TYPE_CHECKING:  # imported where used: `bench` imports this module on every start (pydantic is slow to load)
    from bench.core.campaign import Plan
    from bench.core.storage import StorageOption

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TF_DIR = PROJECT_ROOT / "terraform"
STATE_DIR = Path(env_settings().aws_state_dir or PROJECT_ROOT / ".cache" / "aws")  # the rehearsal: its own
# Never shipped to the instance: environments, caches, data and results.
EXCLUDED_TOP = {".venv", ".cache", ".git", "results", "warehouse", "build", ".pytest_cache"}
EXCLUDED_PARTS = {"__pycache__", ".terraform", ".mypy_cache", ".ruff_cache"}


# ----- terraform ---------------------------------------------------------------------------------------
def terraform_bin() -> str:
    exe = env_settings().terraform
    found = shutil.which(exe)
    if not found:
        raise UserError(f"terraform not found ({exe!r}): install Terraform >= 1.6 "
                        "(https://developer.hashicorp.com/terraform/install) or set BENCH_TERRAFORM")
    return found


def tf(tf_dir: Path, *args: str, capture: bool = False) -> str:
    """Run terraform in ``tf_dir``; raise UserError with its exit code when it fails."""
    cmd = [terraform_bin(), f"-chdir={tf_dir}", *args]
    env = {**os.environ, "TF_IN_AUTOMATION": "1"}
    proc = subprocess.run(cmd, env=env, text=True,
                          stdout=subprocess.PIPE if capture else None)
    if proc.returncode != 0:
        raise UserError(f"`terraform {' '.join(args[:1])}` failed (exit {proc.returncode}); see above")
    return proc.stdout if capture else ""


def tf_outputs(tf_dir: Path) -> dict:
    raw = tf(tf_dir, "output", "-json", capture=True)
    outs = {k: v.get("value") for k, v in (json.loads(raw or "{}") or {}).items()}
    if not outs.get("results_bucket"):
        raise UserError(f"no Terraform outputs in {tf_dir}: run `bench aws up` first "
                        "(or pass --bucket and --run-id)")
    return outs


# ----- the harness archive -----------------------------------------------------------------------------
def _source_files(root: Path) -> list[Path]:
    """Tracked and untracked-but-not-ignored files (git), else a walk without the excluded folders."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"],
                             check=True, capture_output=True).stdout.decode()
        rels = [Path(p) for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        rels = [p.relative_to(root) for p in root.rglob("*") if p.is_file()]
    keep = []
    for rel in rels:
        if rel.parts[0] in EXCLUDED_TOP or EXCLUDED_PARTS & set(rel.parts):
            continue
        if rel.suffix in (".pyc", ".tfstate") or rel.name.endswith(".tfstate.backup"):
            continue
        if (root / rel).is_file():
            keep.append(rel)
    return sorted(keep)


def source_revision(root: Path, files: list[Path]) -> str:
    """``git:<sha>`` (``+dirty`` when the tree differs), else ``tree:<hash of the files>``."""
    h = hashlib.sha256()
    for rel in files:
        h.update(rel.as_posix().encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    tree = h.hexdigest()[:16]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], check=True,
                               capture_output=True, text=True).stdout.strip()
        return f"git:{sha}" + (f"+dirty(tree:{tree})" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return f"tree:{tree}"


def pack_harness(root: Path, out: Path) -> tuple[Path, str, int]:
    """Write the harness source as a .tar.gz (with a ``.bench-source`` revision file)."""
    files = _source_files(root)
    if not any(f.as_posix() == "bench/cli.py" for f in files):
        raise UserError(f"{root} does not look like the harness (no bench/cli.py)")
    rev = source_revision(root, files)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w:gz") as tar:
        for rel in files:
            tar.add(root / rel, arcname=rel.as_posix(), recursive=False)
        data = (rev + "\n").encode()
        info = tarfile.TarInfo(".bench-source")
        info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
        tar.addfile(info, io.BytesIO(data))
    return out, rev, len(files)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def _split(csv: str | None) -> list[str] | None:
    return [s.strip() for s in csv.split(",") if s.strip()] if csv else None


def _user_vars(terraform_dir: Path, tf_vars) -> dict:
    """The --var NAME=VALUE pairs, each NAME a variable the module declares."""
    declared = {m for f in Path(terraform_dir).glob("*.tf")
                for m in re.findall(r'^variable\s+"([^"]+)"', f.read_text(), flags=re.M)}
    pairs = dict(_parse_var(v) for v in tf_vars)
    unknown = sorted(set(pairs) - declared)
    if unknown:
        raise UserError(f"--var {unknown[0]}: not a variable of the module in {terraform_dir} (see its variables.tf)")
    return pairs


def _parse_var(v: str):
    """``KEY=VALUE``; VALUE is parsed as JSON when it is JSON (numbers, booleans, lists)."""
    k, sep, val = v.partition("=")
    if not sep or not k:
        raise UserError(f"--var must be NAME=VALUE, got {v!r}")
    try:
        return k, json.loads(val)
    except json.JSONDecodeError:
        return k, val


TF_STORAGE = ["gp3-baseline", "gp3-max", "s3"]  # terraform/variables.tf `storage`


# ----- commands ----------------------------------------------------------------------------------------
tf_dir_option = click.option("--terraform-dir", type=click.Path(file_okay=False, path_type=Path),
                             default=DEFAULT_TF_DIR, show_default=True, help="The Terraform module.")


@click.group("aws")
def aws():
    """Run the benchmark at full scale on AWS (terraform/) and fetch its results."""


def _stacked(*options: Any) -> Any:
    """The click options given, as one decorator (in the order given, as if stacked one above the other)."""
    def apply(fn: Any) -> Any:
        for option in reversed(options):
            fn = option(fn)
        return fn
    return apply


# `bench aws up`'s options of the data volume, the warehouse and a Spark cluster's workers
_up_storage_options = _stacked(
    click.option("--max-disk-performance", is_flag=True, default=False,
                 help="gp3 at 16000 IOPS / 1000 MiB/s instead of the 3000 / 125 MiB/s baseline."),
    click.option("--warehouse-on-s3", is_flag=True, default=False,
                 help="Warehouse on S3 (needs harness support for s3:// warehouses)."),
    click.option("--storage", type=click.Choice(TF_STORAGE), default=None,
                 help="Where the table lives, one choice (Terraform's `storage`): gp3-baseline, gp3-max, or s3 (the "
                      "warehouse on S3, what a full reproduction in 90 minutes needs; see `bench plan --storage`). "
                      "Not with --max-disk-performance or --warehouse-on-s3."),
    click.option("--spark-workers", "spark_workers", type=click.IntRange(min=0, max=32), default=None,
                 help="Spark worker nodes beside the bench node (default 0: one node). N > 0 runs Spark on a "
                      "standalone cluster of 1 + N instances and needs --warehouse-on-s3."),
)

# `bench aws up`'s options of a user's own table
_up_source_options = _stacked(
    click.option("--source-catalog", type=click.Path(dir_okay=False), default=None,
                 help="Your own table instead of generated ones: its catalog file (as for `bench run`), shipped to "
                      "the instance; no secrets in it (the instance role is the credential)."),
    click.option("--source-table", metavar="NS.TABLE", default=None, help="Your own table in that catalog."),
    click.option("--source-snapshot", type=int, default=None, metavar="ID",
                 help="The snapshot of your table to clone (default: its current one)."),
    click.option("--source-location", metavar="s3://BUCKET/PREFIX", default=None,
                 help="Where your table's files are: the instance role may read only there, never write "
                      "(default: the table's location, loaded through the catalog here)."),
    click.option("--source-glue", is_flag=True, default=False,
                 help="The catalog is AWS Glue: let the role read the table's Glue database and table entries."),
)


@aws.command("up")
@tf_dir_option
@click.option("--scenarios", default=None, help="Comma-separated scenarios (default: the five published).")
@click.option("--scale", type=float, default=None, help="1.0 = the published size (the default).")
@click.option("--file-scale", "file_scale", type=click.FloatRange(min=0, min_open=True), default=None, metavar="F",
              help="The file counts of scale F, the bytes of --scale (bench run --file-scale; default: --scale).")
@click.option("--engines", default=None, help=f"Comma-separated engines (default: {default_engines()}).")
@click.option("--reps", type=click.IntRange(min=1), default=None, help="Repetitions per engine.")
@click.option("--region", default=None, help="AWS region (default: us-east-1).")
@click.option("--instance-type", default=None, help="Default m5.4xlarge, as published.")
@click.option("--max-lifetime", "max_lifetime", type=click.IntRange(min=15), default=None,
              help="Hard deadline in minutes (default 480).")
@_up_storage_options
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Spread the scenarios over N identical benchmark instances at once (Terraform's node_scenarios): "
                   "each scenario whole on one node, with every engine; the longest planned first onto the least "
                   "loaded node. Not with --spark-workers or --source-table.")
@click.option("--spot", is_flag=True, default=False,
              help="One-time Spot instances (Terraform's spot), up to the on-demand price unless --var "
                   "spot_max_price=USD: cheaper, but AWS may interrupt and so terminate a node; what it uploaded "
                   "stays, it writes no status.json.")
@click.option("--git-ref", default=None,
              help="Install the harness from git at this ref (needs --git-url) instead of packing this checkout.")
@click.option("--git-url", default=None, help="Git URL of the harness, with --git-ref.")
@click.option("--run-id", default=None, help="Name of the run (default: UTC time).")
@click.option("--var", "tf_vars", multiple=True, metavar="NAME=VALUE",
              help="Any other variable of terraform/variables.tf (repeatable).")
@click.option("--plan-from", "plan_from", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to look for sweeps and frontiers to plan from (default: ./results).")
@_up_source_options
@click.option("--auto-approve", is_flag=True, default=False, help="Do not ask before applying.")
@one_line_errors
def up(terraform_dir, scenarios, scale, file_scale, engines, reps, region, instance_type, max_lifetime,
       max_disk_performance, warehouse_on_s3, storage, spark_workers, nodes, spot, git_ref, git_url,
       run_id, tf_vars, plan_from, source_catalog, source_table, source_snapshot, source_location, source_glue,
       auto_approve):
    """Create the instance; it runs the benchmark, uploads the results and terminates itself.

    Before provisioning it prints the plan of the run (`bench plan`, from the sweeps and frontiers found
    under --plan-from) and sizes the data volume and the deadline from it, unless they are given.  With
    --source-catalog/--source-table every scenario runs on a zero-copy clone of your own table in S3,
    which the instance may read and never write.  With --nodes N the scenarios are spread over N instances
    that run at once, each uploading its own results and status.json."""
    _check_nodes(nodes, spark_workers, bool(source_table or source_catalog))
    user_vars = _user_vars(terraform_dir, tf_vars)
    run_id = run_id or new_run_id()
    values: dict = {"run_id": run_id}
    if spot:
        values["spot"] = True
    source = _source_values(source_catalog, source_table, source_snapshot, source_location, source_glue, scale)
    if source:
        if storage not in (None, "s3"):
            raise UserError(f"--storage {storage}: your own table is cloned into a warehouse on S3 (--storage s3)")
        values |= source
        warehouse_on_s3 = storage is None  # --storage s3 puts the warehouse on S3 by itself
        click.echo(f"your own table {source_table} at {source['source_s3_uri']} (read-only for the instance); its "
                   f"clone and every file the engines write go to this run's warehouse prefix")
    for key, val in (("scenarios", _split(scenarios)), ("scale", scale), ("engines", _split(engines)),
                     ("reps", reps), ("region", region), ("instance_type", instance_type),
                     ("max_lifetime_minutes", max_lifetime)):
        if val is not None:
            values[key] = val
    values |= _storage_values(storage, max_disk_performance, warehouse_on_s3, spark_workers)
    values["uploader_path"] = str(PROJECT_ROOT / "bench" / "cloud.py")  # embedded in the user data, from anywhere
    values |= user_vars
    _add_file_scale(values, file_scale, bool(source))
    if source:
        click.echo("plan: none for your own table (`bench plan` models generated tables by scale; `bench inspect "
                   "SCENARIO --source-catalog ...` gives the expected time per engine): Terraform's defaults size "
                   "the volume and the deadline unless given with --var / --max-lifetime")
    else:
        plan = _apply_plan(values, plan_from or PROJECT_ROOT / "results",
                           plan_storage(storage, max_disk_performance, warehouse_on_s3), nodes, file_scale)
        if nodes > 1:
            _spread_over_nodes(values, plan, nodes)
    # packed last, once every option has been checked: a --var of the user's still wins over the packed archive
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    values = _harness_values(git_ref, git_url, run_id) | values
    _apply(terraform_dir, values, run_id, auto_approve)
    _say_launched(tf_outputs(terraform_dir))


def _check_nodes(nodes: int, spark_workers: int | None, own_table: bool) -> None:
    """Several benchmark nodes go with neither a Spark cluster nor a user's own table."""
    if nodes > 1 and spark_workers:
        raise UserError("--nodes and --spark-workers do not go together: several benchmark nodes, or one with a "
                        "Spark cluster")
    if nodes > 1 and own_table:
        raise UserError("--nodes and --source-table do not go together: your own table runs on one node")


def _add_file_scale(values: dict, file_scale: float | None, own_table: bool) -> None:
    """--file-scale: every scenario's `bench run` on the instance gets it (Terraform's extra_run_args)."""
    if file_scale is not None:
        if own_table:
            raise UserError("--file-scale shapes the generated tables; with --source-table your table is the input")
        values["extra_run_args"] = " ".join(x for x in (str(values.get("extra_run_args") or ""),
                                                        f"--file-scale {file_scale!r}") if x)


def _say_launched(outs: dict) -> None:
    """What `up` launched and where its results will land."""
    extra = list(outs.get("node_instance_ids") or [])
    click.echo(f"run {outs.get('run_id')}: instance {outs.get('instance_id')} is running the benchmark;\n"
               f"results will land in {outs.get('results_uri')} (status.json last).\n"
               + "".join(f"node {i}: instance {iid}, results in {outs.get('results_uri')}node-{i}/\n"
                         for i, iid in enumerate(extra, 1))
               + f"{'Each node terminates' if extra else 'It terminates'} itself when done, at the latest "
               f"{outs.get('deadline_minutes')} min after boot.\n"
               "Next: `bench aws status`, then `bench aws fetch`, then `bench aws down`.")


def _storage_values(storage: str | None, max_disk_performance: bool, warehouse_on_s3: bool,
                    spark_workers: int | None) -> dict:
    """The Terraform variables of the data volume, the warehouse and a Spark cluster's workers."""
    if storage and (max_disk_performance or warehouse_on_s3):
        raise UserError("--storage decides the volume and the warehouse alone: not with --max-disk-performance "
                        "or --warehouse-on-s3")
    values: dict = {}
    if storage:
        values["storage"] = storage
    if max_disk_performance:
        values["data_volume_max_performance"] = True
    if warehouse_on_s3:
        values["warehouse_on_s3"] = True
    if spark_workers:
        if not (warehouse_on_s3 or storage == "s3"):
            raise UserError("--spark-workers needs --warehouse-on-s3: the workers read and write the warehouse too")
        values["spark_workers"] = spark_workers
    return values


def _harness_values(git_ref: str | None, git_url: str | None, run_id: str) -> dict:
    """Where the instance gets the harness: a git ref, or this checkout packed into STATE_DIR."""
    if git_ref or git_url:
        if not (git_ref and git_url):
            raise UserError("--git-ref and --git-url go together")
        click.echo(f"harness: {git_url} at {git_ref}")
        return {"harness_git_url": git_url, "harness_ref": git_ref, "harness_archive_path": ""}
    archive, rev, n = pack_harness(PROJECT_ROOT, STATE_DIR / f"harness-{run_id}.tar.gz")
    click.echo(f"harness: this checkout ({rev}), {n} files -> {archive}")
    return {"harness_archive_path": str(archive)}


def _apply(terraform_dir: Path, values: dict, run_id: str, auto_approve: bool) -> None:
    """Write the run's variable file (and last-run.json), then `terraform apply` it."""
    var_file = STATE_DIR / f"run-{run_id}.tfvars.json"
    var_file.write_text(json.dumps(values, indent=2) + "\n")
    (STATE_DIR / "last-run.json").write_text(json.dumps(
        {"run_id": run_id, "var_file": str(var_file), "terraform_dir": str(terraform_dir)}) + "\n")
    if not (terraform_dir / ".terraform").exists():
        tf(terraform_dir, "init", "-input=false")
    apply = ["apply", f"-var-file={var_file}"]
    if auto_approve:  # (-input=false without -auto-approve would make terraform refuse to apply)
        apply += ["-input=false", "-auto-approve"]
    tf(terraform_dir, *apply)


def _source_values(catalog: str | None, table: str | None, snapshot: int | None, location: str | None,
                   glue: bool, scale: float | None) -> dict:
    """Terraform variables of `up --source-*` (checked here: the file parses, the location is on S3)."""
    from bench.core.catalog.s3 import is_s3
    from bench.core.source import SourceRef, catalog_properties, load_source

    if catalog is None and table is None:
        if snapshot is not None or location is not None or glue:
            raise UserError("--source-snapshot, --source-location and --source-glue need --source-catalog and "
                            "--source-table")
        return {}
    if catalog is None or table is None:
        raise UserError("--source-catalog and --source-table go together")
    if scale is not None:
        raise UserError("--scale shapes the generated tables; with --source-table your table is the input")
    catalog_properties(catalog)  # an unreadable or malformed file: one line now
    if location is None:
        try:
            location = load_source(SourceRef(catalog_file=catalog, table=table, snapshot_id=snapshot)).location()
        except UserError as e:
            raise UserError(f"{e}; or give --source-location s3://BUCKET/PREFIX") from None
    if not is_s3(location) or "/" not in location[len("s3://"):].strip("/"):
        raise UserError(f"--source-location {location}: the table's files must be on S3 under a prefix "
                        "(s3://BUCKET/PREFIX) for the instance to read them")
    return {"source_catalog_path": str(Path(catalog).resolve()), "source_table": table,
            "source_snapshot": "" if snapshot is None else str(snapshot), "source_s3_uri": location.rstrip("/"),
            "source_glue": glue}


PUBLISHED_SCENARIOS = ["bin-packing", "bin-packing-zstd", "deletes-standard", "deletes-high", "deletes-massive"]


def plan_storage(storage: str | None, max_disk: bool, warehouse_on_s3: bool) -> StorageOption:
    """The storage option (bench.core.storage) the plan models for Terraform's choice: S3 at the network's
    sustained baseline (a run of an hour outlasts the burst), gp3 at the instance's EBS maximum, or its baseline."""
    from bench.core.storage import storage_option

    if storage == "s3" or (storage is None and warehouse_on_s3):
        return storage_option("s3-sustained")
    if storage == "gp3-max" or (storage is None and max_disk):
        return storage_option("gp3-max")
    return storage_option("gp3-baseline")


def _apply_plan(values: dict, sources: Path, storage: StorageOption, nodes: int = 1,
                file_scale: float | None = None) -> Plan | None:
    """Print the plan of this run and size the volume and the deadline from it (unless set); the plan, or None
    when there was nothing to plan from.  With several nodes the deadline is the longest node's."""
    from bench.campaigns.plan import DEFAULT_TIMEOUT_S, make_plan
    from bench.campaigns.verdict import plan_table

    scenarios = values.get("scenarios") or PUBLISHED_SCENARIOS
    if not Path(sources).is_dir():
        click.echo(f"plan: no {sources} to plan from; Terraform's defaults size the volume and the deadline")
        return None
    plan = make_plan(list(scenarios), float(values.get("scale", 1.0)), values.get("instance_type"),
                     int(values.get("reps", 1)), [Path(sources)], storage, nodes=nodes,
                     timeout_s=float(values.get("engine_timeout_seconds", DEFAULT_TIMEOUT_S)),
                     file_scale=file_scale)
    click.echo(plan_table(plan))
    if not plan.complete:
        click.echo("plan: incomplete (a scenario has no sweep): Terraform's defaults size the volume and the deadline")
        return plan
    if "data_volume_size_gb" not in values:
        values["data_volume_size_gb"] = max(20, plan.ebs_gb)
        click.echo(f"plan: data volume {values['data_volume_size_gb']} GB")
    if "max_lifetime_minutes" not in values:
        values["max_lifetime_minutes"] = max(60, plan.deadline_minutes)
        click.echo(f"plan: deadline {values['max_lifetime_minutes']} min")
    return plan


def _spread_over_nodes(values: dict, plan: Plan | None, nodes: int) -> None:
    """Terraform's node_scenarios: the plan's spread (longest planned wall first onto the least loaded node), or
    without a complete plan the scenarios in their order, dealt out in turn.  One group: nothing to set."""
    from bench.campaigns.plan import assign_nodes

    if "node_scenarios" in values:  # given with --var: the user's spread wins
        click.echo(f"nodes: node_scenarios as given: {values['node_scenarios']}")
        return
    scenarios = list(values.get("scenarios") or PUBLISHED_SCENARIOS)
    if plan is not None and plan.complete and plan.nodes:
        groups = [n.scenarios for n in plan.nodes]
    else:
        groups = assign_nodes(dict.fromkeys(scenarios), nodes)
    if len(groups) < nodes:
        click.echo(f"nodes: {nodes} asked for, {len(groups)} scenario(s): {len(groups)} node(s), a scenario is never "
                   "split")
    if len(groups) == 1:
        return
    values["node_scenarios"] = groups
    run = values["run_id"]
    for i, group in enumerate(groups):
        where = f"runs/{run}/" + (f"node-{i}/" if i else "")
        click.echo(f"node {i} ({'the benchmark instance, ' if not i else ''}results in {where}): {', '.join(group)}")


def _locate(terraform_dir: Path, bucket: str | None, run_id: str | None) -> tuple[str, str, dict]:
    if bucket and run_id:
        return bucket, run_id, {}
    outs = tf_outputs(terraform_dir)
    return bucket or outs["results_bucket"], run_id or outs["run_id"], outs


bucket_option = click.option("--bucket", default=None, help="Results bucket (default: Terraform output).")
run_id_option = click.option("--run-id", default=None, help="Run (default: Terraform output).")


@aws.command("status")
@tf_dir_option
@bucket_option
@run_id_option
@one_line_errors
def status(terraform_dir, bucket, run_id):
    """Is the run over?  Prints status.json when it is, else what has been uploaded so far."""
    from bench import cloud

    bucket, run_id, outs = _locate(terraform_dir, bucket, run_id)
    uri = f"s3://{bucket}/{cloud.run_prefix(run_id)}"
    client = cloud.make_client(outs.get("region"))
    keys = cloud.list_keys(uri, client=client)
    n = node_count(outs, [k[len(cloud.run_prefix(run_id)):] for k in keys])
    if n == 1:  # one node: as it always was
        if outs.get("instance_id"):
            click.echo(f"instance {outs['instance_id']}: {_instance_state(outs['instance_id'], outs.get('region'))}")
        st = cloud.read_status(uri, client=client)
        if st is None:
            click.echo(f"{uri}: running or not started ({len(keys)} objects so far, no status.json yet)")
            sys.exit(3)
        click.echo(f"{uri}: finished, status {st.get('status')} ({len(keys)} objects)")
        click.echo(json.dumps(st, indent=2, sort_keys=True))
        return
    ids = [outs.get("instance_id"), *(outs.get("node_instance_ids") or [])]
    running = 0
    for i in range(n):
        node_uri = uri + node_prefix(i)
        mine = [k for k in keys if node_of(k[len(cloud.run_prefix(run_id)):]) == i]
        state = _instance_state(ids[i], outs.get("region")) if i < len(ids) and ids[i] else None
        head = f"node {i} {node_uri}" + (f" (instance {ids[i]}: {state})" if state else "")
        st = cloud.read_status(node_uri, client=client)
        if st is not None:
            click.echo(f"{head}: finished, status {st.get('status')} ({len(mine)} objects)")
            click.echo(json.dumps(st, indent=2, sort_keys=True))
        elif state == "terminated":  # gone without its last upload: it cannot come any more
            click.echo(f"{head}: lost, its instance is terminated without a status.json (a Spot interruption?); "
                       f"{len(mine)} objects uploaded before")
        else:
            running += 1
            click.echo(f"{head}: running or not started ({len(mine)} objects so far, no status.json yet)")
    if running:
        click.echo(f"{running} of {n} nodes not finished")
        sys.exit(3)
    click.echo(f"all {n} nodes finished")


def node_prefix(i: int) -> str:
    """Where node i's objects are inside the run's prefix: node 0 (the benchmark instance) at its top."""
    return f"node-{i}/" if i else ""


_NODE_KEY = re.compile(r"node-([0-9]+)/")


def node_of(rel: str) -> int:
    """The node an object (its key inside the run's prefix) belongs to: 0 unless under node-<i>/."""
    m = _NODE_KEY.match(rel)
    return int(m.group(1)) if m else 0


def node_count(outs: dict, rels: list[str]) -> int:
    """The run's benchmark nodes: Terraform's output `nodes`, else the highest node-<i>/ seen under the prefix
    (a node that uploaded nothing yet cannot be seen that way)."""
    if isinstance(outs.get("nodes"), int) and outs["nodes"] >= 1:
        return int(outs["nodes"])
    return 1 + max((node_of(r) for r in rels), default=0)


def _instance_state(instance_id: str, region: str | None) -> str:
    try:
        import boto3

        r = boto3.client("ec2", region_name=region).describe_instances(InstanceIds=[instance_id])
        return r["Reservations"][0]["Instances"][0]["State"]["Name"]
    except Exception as e:  # noqa: BLE001 - informative only (terminated instances vanish, no permission...)
        return f"state unknown ({type(e).__name__})"


@aws.command("fetch")
@tf_dir_option
@bucket_option
@run_id_option
@click.option("--dest", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to put the run (default: results/aws/<run-id>).")
@click.option("--report/--no-report", default=True, show_default=True,
              help="Render the HTML report locally from the fetched results.")
@click.option("--report-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the report goes (default: report.html beside the fetched results).")
@one_line_errors
def fetch(terraform_dir, bucket, run_id, dest, report, report_out):
    """Download the run's results, logs and status, then render the report locally."""
    from bench import cloud

    bucket, run_id, outs = _locate(terraform_dir, bucket, run_id)
    uri = f"s3://{bucket}/{cloud.run_prefix(run_id)}"
    dest = dest or PROJECT_ROOT / "results" / "aws" / run_id
    client = cloud.make_client(outs.get("region"))
    files = cloud.download(uri, dest, client=client)
    click.echo(f"fetched {len(files)} files from {uri} to {dest}")
    n = node_count(outs, [f.relative_to(dest.resolve()).as_posix() for f in files])
    for i in range(n):
        st = cloud.read_status(uri + node_prefix(i), client=client)
        said = st.get("status") if st else "not finished yet (no status.json)"
        click.echo(f"{'status' if n == 1 else f'node {i} status'}: {said}")
    if report:
        render_report(dest, report_out, n)


def render_report(run_dir: Path, out: Path | None = None, nodes: int = 1) -> Path | None:
    """The report of the fetched results, as `bench report <run_dir>/results` writes it; with several nodes, one
    report over every node's results (<run_dir>/results, <run_dir>/node-<i>/results) in <run_dir>."""
    from reports.render import render_report as render

    dirs = [run_dir / node_prefix(i) / "results" for i in range(nodes)]
    found = [d for d in dirs if d.is_dir()]
    for d in dirs:
        if d not in found:
            click.echo(f"report: no results in {d}" + ("; skipped" if not found and nodes == 1 else ""))
    if not found:
        if nodes > 1:
            click.echo("report: skipped")
        return None
    if nodes > 1:  # not report.html there: that is node 0's own, as its bootstrap rendered it
        out = out or run_dir / "report-all-nodes.html"
    out = render(found, out=out)  # one node: beside the results, as `bench report` writes it
    click.echo(f"report: {out}")
    return out


@aws.command("down")
@tf_dir_option
@click.option("--keep-results/--delete-results", default=True, show_default=True,
              help="Keep a created results bucket (and its results) out of the destroy.")
@click.option("--auto-approve", is_flag=True, default=False, help="Do not ask before destroying.")
@one_line_errors
def down(terraform_dir, keep_results, auto_approve):
    """Destroy what `up` created (the instance is normally gone already)."""
    last = STATE_DIR / "last-run.json"
    var_args = []
    if last.exists():
        var_file = Path(json.loads(last.read_text())["var_file"])
        if var_file.exists():
            var_args = [f"-var-file={var_file}"]
    outs = tf_outputs(terraform_dir)
    state = tf(terraform_dir, "state", "list", capture=True).split()
    if keep_results:
        bucket_addrs = [a for a in state if a.startswith("aws_s3_bucket")]
        if bucket_addrs:
            tf(terraform_dir, "state", "rm", *bucket_addrs)
            click.echo(f"keeping bucket {outs['results_bucket']} and its results (no longer managed by "
                       "Terraform; delete it yourself when done)")
    elif any(a.startswith("aws_s3_bucket.results") for a in state):
        # force_destroy must be in the state before a destroy can empty a versioned bucket
        tf(terraform_dir, "apply", "-input=false", "-auto-approve", *var_args,
           "-var=results_bucket_force_destroy=true", "-target=aws_s3_bucket.results")
    destroy = ["destroy", *var_args]
    if auto_approve:
        destroy += ["-input=false", "-auto-approve"]
    tf(terraform_dir, *destroy)
    click.echo("destroyed")
