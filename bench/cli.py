"""`bench`: the command line.  Thin: parses options, then calls the runner and friends."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from bench.aws_cli import aws
from bench.core.cost import instance_type_option
from bench.core.errors import UserError, one_line_errors
from bench.core.progress import Progress
from bench.core.published import PUBLISHED_STORAGE_NAMES
from bench.core.units import SCALE_HELP, check_scale
from bench.engines import FLAGS, campaign_engines, default_engines
from bench.rehearse.command import rehearse
from reports.cli import docs_cmd, export_cmd, report_cmd

# Every `bench` process imports this module: it imports click and light modules only (no pydantic, pyarrow,
# pyiceberg, duckdb, psutil); each command imports what it needs when it runs (`python -X importtime`).


class LazyGroup(click.Group):
    """A group some of whose subcommands ("name": "module:attribute") are imported only when used (click's
    "Lazily Loading Subcommands"); the group's help lists them with the others."""

    def __init__(self, *args, lazy_subcommands: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = lazy_subcommands or {}

    def list_commands(self, ctx):
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx, cmd_name):
        if cmd_name in self.lazy_subcommands and cmd_name not in self.commands:
            module, _, attribute = self.lazy_subcommands[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
        return super().get_command(ctx, cmd_name)


def positive_scale(ctx, param, value):
    if value is None:
        return value
    try:
        return check_scale(value)
    except UserError:
        raise click.BadParameter(SCALE_HELP) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="iceberg-compaction-bench")
def main():
    """Rerunnable, verified benchmark of Apache Iceberg compaction engines."""


@main.command("list")
@one_line_errors
def list_cmd():
    """List scenarios and engines."""
    from bench.engines import engine_class, engine_names, environment
    from bench.scenario import list_scenarios, profile_names

    click.echo("scenarios:")
    for s in list_scenarios():
        click.echo(f"  {s.name:<22} {s.kind:<8} local scale {s.local_scale:<8g} {s.description.strip()}")
    click.echo("engines:")
    for n in engine_names():
        try:
            desc = engine_class(n).description
            where = environment.describe(n, engine_class(n).environment)
        except ImportError as e:
            desc, where = f"(cannot be imported: {e})", "?"
        click.echo(f"  {n:<12} {desc}")
        click.echo(f"  {'':<12} runs in: {where}")
        profiles = profile_names(n)
        if profiles:
            click.echo(f"  {'':<12} profiles: {', '.join(f'{n}:{p}' for p in profiles)}")


@main.command()
@click.option("--engines", default=None, help="Comma-separated engines to check (default: all).")
@click.option("--warehouse", default=None,
              help="Instead: find what a killed run left on this warehouse (a parked or altered table, a partial "
                   "dataset, the lock of a dead process, stale cgroups or traffic shapers, leftover processes).")
@click.option("--repair", is_flag=True, help="With --warehouse: repair the leftovers found, saying what was done.")
@one_line_errors
def doctor(engines, warehouse, repair):
    """Check every prerequisite at once and say how to fix what is missing (exit 1 when something is).  With
    --warehouse: the leftovers of a killed run (exit 0 when there are none, 1 when some were found)."""
    from bench.doctor import run_doctor, run_leftovers

    if repair and not warehouse:
        raise UserError("--repair needs --warehouse W (the warehouse whose leftovers to repair)")
    sys.exit(run_leftovers(warehouse, repair) if warehouse else run_doctor(engines))


@main.command()
@click.option("--engines", default=None,
              help="Also build these engines' own environments (comma-separated, e.g. repark): once per machine, "
                   "cached under ~/.cache/iceberg-compaction-bench/engines/; engines without one need nothing more.")
@one_line_errors
def setup(engines):
    """Fetch the jars of Iceberg's Java library the lock names, each Spark line's AWS SDK bundle among them, from
    Maven Central once (idempotent, cached); with --engines, build the engines' own environments from the package
    registry."""
    from bench.core.iceberg_java.runtime import provision
    from bench.engines import build_environments, parse_engines

    if engines:
        parse_engines(engines)  # an unknown name is refused before anything is fetched or built
    for line in provision():
        click.echo(line)
    if engines:
        for line in build_environments(engines):
            click.echo(line)


def engine_option_flags(fn):
    """--option ENGINE.KEY=VALUE (repeatable) and the registry's shortcuts (e.g. --spark-mode); the
    command receives them merged as `options` (ENGINE -> {KEY: VALUE})."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from bench.scenario import parse_option_overrides

        items = list(kwargs.pop("option_items", ()) or ())
        for flag, spec in FLAGS.items():
            value = kwargs.pop(flag.replace("-", "_"), None)
            if value is not None:
                items.append(f"{spec.engine}.{spec.option}={value}")
        return fn(*args, options=parse_option_overrides(items), **kwargs)

    wrapper = one_line_errors(wrapper)  # a bad --option is one line too
    for flag, spec in FLAGS.items():
        wrapper = click.option(f"--{flag}", flag.replace("-", "_"), default=None, help=spec.help,
                               type=click.Choice(spec.choices) if spec.choices else str,
                               metavar=None if spec.choices else spec.metavar)(wrapper)
    return click.option("--option", "option_items", multiple=True, metavar="ENGINE.KEY=VALUE",
                        help="Set an engine option for this run (over the scenario's and the profile's), e.g. "
                             "risingwave.max_input_parallelism=8 or spark.spark_conf.spark.sql.files."
                             "maxPartitionBytes=64m; repeatable.")(wrapper)


def scale_option(fn):
    return click.option("--scale", type=float, default=None, callback=positive_scale,
                        help="1.0 = the published size (default: the scenario's local scale).")(fn)


def file_scale_option(fn):
    return click.option("--file-scale", "file_scale", type=float, default=None, callback=positive_scale,
                        metavar="F",
                        help="The file counts (data files, delete files) of scale F, the bytes and rows of --scale: "
                             "e.g. --scale 0.002 --file-scale 0.02 is 10x the files at the same bytes (default: "
                             "--scale, today's table).")(fn)


def data_options(fn):
    """--seed, --warehouse, --no-wait: the input table and its warehouse."""
    fn = click.option("--no-wait", "no_wait", is_flag=True, default=False,
                      help="Exit at once (status 2) when another run holds the warehouse, instead of waiting.")(fn)
    fn = click.option("--warehouse", metavar="DIR|URI", default=None,
                      help="Warehouse: a directory, file:// URI or s3://bucket/prefix (default: "
                           "$BENCH_WAREHOUSE or ./warehouse). S3 settings come from the AWS_* "
                           "environment; the catalog then lives in a local state dir (see docs/user-guide.md).")(fn)
    return click.option("--seed", type=int, default=42, show_default=True, help="Seed of the data generator.")(fn)


def common_run_options(fn):
    """The options of bench.runner.context.CommonOptions, for every command that runs engines (run, sweep, frontier,
    tune): the command receives them as `common`, the keyword arguments of CommonOptions but the scenario."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, seed, warehouse, no_wait, cache, results_dir, run_id, timeout, options, file_scale, **kwargs):
        common = dict(seed=seed, warehouse=warehouse, wait=not no_wait, cache=cache, results_dir=results_dir,
                      run_id=run_id, timeout_s=timeout, options=options, file_scale=file_scale)
        return fn(*args, common=common, **kwargs)

    wrapper = engine_option_flags(wrapper)
    for opt in reversed([
        data_options,
        file_scale_option,
        click.option("--cache", type=click.Choice(["cold", "warm"]), default=None, envvar="BENCH_CACHE",
                     help="Page cache before each engine run: cold (sync + drop caches; the default where the "
                          "harness may, i.e. as root) or warm (sync + read the input once); $BENCH_CACHE."),
        click.option("--results-dir", type=click.Path(file_okay=False), default=None,
                     help="Where results go (default: ./results); a campaign makes its directory there."),
        click.option("--run-id", default=None,
                     help="Name of this run (a campaign: of its directory; default: a timestamp)."),
        click.option("--timeout", type=click.IntRange(min=1), default=3600, show_default=True,
                     help="Time limit of one engine run, seconds."),
    ]):
        wrapper = opt(wrapper)
    return wrapper


@main.command()
@click.argument("scenario")
@scale_option
@file_scale_option
@data_options
@one_line_errors
def datagen(scenario, scale, file_scale, seed, warehouse, no_wait):
    """Generate (or reuse) the input table of SCENARIO."""
    from bench.runner.context import prepare_dataset

    progress = Progress()
    ds = prepare_dataset(scenario, scale=scale, seed=seed, warehouse=warehouse, progress=progress,
                         wait=not no_wait, file_scale=file_scale)
    progress.info(f"dataset {ds.table}: {ds.files} files, {ds.bytes / 1e6:.1f} MB, {ds.rows} rows "
                  f"({'reused' if ds.reused else 'generated'})")


def source_options(required: bool):
    """--source-catalog, --source-table, --source-snapshot: the user's own table (bench.core.source)."""
    def deco(fn):
        for opt in reversed([
            click.option("--source-catalog", type=click.Path(dir_okay=False), required=required, default=None,
                         help="YAML file of pyiceberg catalog properties (type, uri, warehouse, ...; as a "
                              ".pyiceberg.yaml catalog entry; ${VAR} from the environment) of your own table."),
            click.option("--source-table", metavar="NS.TABLE", required=required, default=None,
                         help="Your table in that catalog: run on a zero-copy clone of it instead of a "
                              "generated table (the original is never written and is checked unchanged)."),
            click.option("--source-snapshot", type=int, default=None, metavar="ID",
                         help="The snapshot of the source table to use (default: its current one)."),
        ]):
            fn = opt(fn)
        return fn
    return deco


def source_ref(source_catalog, source_table, source_snapshot):
    from bench.core.source import SourceRef

    if source_catalog is None and source_table is None:
        if source_snapshot is not None:
            raise UserError("--source-snapshot needs --source-catalog and --source-table")
        return None
    if source_catalog is None or source_table is None:
        raise UserError("--source-catalog and --source-table go together")
    return SourceRef(catalog_file=source_catalog, table=source_table, snapshot_id=source_snapshot)


@main.command()
@click.argument("scenario")
@scale_option
@click.option("--engines", default=None, help=f"Comma-separated engines (default: {default_engines()}).")
@click.option("--reps", type=click.IntRange(min=1), default=1, show_default=True,
              help="Measured repetitions per engine (their order rotates from one to the next).")
@click.option("--warmup/--no-warmup", default=False, help="One warm-up run per engine, excluded from statistics.")
@click.option("--cases", default=None, metavar="C1,C2",
              help="Live-writer scenarios: run only these cases (append, position-delete, equality-delete).")
@click.option("--cow-branch", is_flag=True,
              help="Live-writer scenarios: copy-on-write through two branches: the writer commits to the "
                   "branch 'ingest', the engine compacts that branch, the harness then publishes the "
                   "engine's snapshot to main (whose readers must see no delete file).")
@click.option("--stream-mode", type=click.Choice(["sequential", "concurrent", "branch"]), default=None,
              help="Streaming scenarios: sequential (the writer pauses during maintenance), concurrent (it keeps "
                   "committing at its cadence while maintenance runs) or branch (it commits to 'ingest', "
                   "maintenance publishes to main); over the scenario's streaming.mode.")
@click.option("--cycles", type=click.IntRange(min=1), default=None,
              help="Streaming scenarios: this many cycles (commits, then one maintenance step) instead of the "
                   "scenario's streaming.cycles.")
@click.option("--where", default=None, metavar="EXPR",
              help="Compact only the partitions this Iceberg expression selects (pyiceberg's syntax, e.g. "
                   "\"event_date >= '2025-12-25'\"), over the scenario's partition_filter; it must select whole "
                   "partitions.  Engines without a partition filter are recorded unsupported.")
@click.option("--readers", type=click.Choice(["on", "off", "spark-sql"]), default="on", show_default=True,
              envvar="BENCH_READERS",
              help="Time the reader queries (full scan, key range, point lookup) before and after each "
                   "compaction and check their answers against the generator (off: quick runs; spark-sql: "
                   "read with Spark SQL even where DuckDB could).")
@click.option("--strategy", type=click.Choice(["binpack", "sort", "zorder"]), default=None,
              help="Rewrite strategy instead of the scenario's rewrite.strategy: binpack, sort (by the table's "
                   "sort order) or zorder (the scenario's zorder_columns); the same dataset either way.")
@click.option("--memory-budget", default=None,
              help="Memory budget per engine run, e.g. 8G (default: the published 64 GB scaled to this node).")
@click.option("--catalog-uri", default=None,
              help="Use an external Iceberg REST catalog instead of the embedded one.")
@click.option("--target-file-size", default=None, help="Override the scenario's target file size, e.g. 512M.")
@instance_type_option()
@click.option("--storage-cap", default=None, metavar="READ[,WRITE]",
              help="Throttle the engine's process tree on the warehouse's block device (a cgroup per engine run: "
                   "v1 blkio, v2 io.max), e.g. 125MiB/s or 250MiB/s,60MiB/s; what it writes is fsynced as it goes "
                   "and at the end, inside its timed compaction (phase flush). An S3 warehouse on 127.0.0.1: its "
                   "server's loopback traffic shaped per direction (tc). 'none': no limit, recorded alike (the "
                   "baseline).")
@click.option("--cores", type=int, default=None, metavar="N",
              help="Confine the engine's process tree to N cores (cpuset cgroup, else CPU affinity) and tell the "
                   "engine N (Spark local[N], RisingWave's parallelism per core).")
@source_options(required=False)
@common_run_options
@one_line_errors
def run(scenario, scale, engines, reps, warmup, cases, cow_branch, stream_mode, cycles, where, readers, strategy,
        memory_budget, catalog_uri, target_file_size, instance_type, storage_cap, cores, source_catalog,
        source_table, source_snapshot, common):
    """Run SCENARIO against the engines, verify every compaction and record results."""
    from bench.runner.context import RunOptions
    from bench.runner.run import run_scenario

    opts = RunOptions(scenario=scenario, **common, scale=scale, engines=engines, reps=reps, warmup=warmup,
                      memory_budget=memory_budget, catalog_uri=catalog_uri, target_file_size=target_file_size,
                      instance_type=instance_type, readers=readers != "off",
                      reader="spark-sql" if readers == "spark-sql" else "auto", cow_branch=cow_branch,
                      cases=[c.strip() for c in cases.split(",") if c.strip()] if cases else None,
                      strategy=strategy, where=where, storage_cap=storage_cap, cores=cores,
                      stream_mode=stream_mode, cycles=cycles,
                      source=source_ref(source_catalog, source_table, source_snapshot))
    run_scenario(opts, Progress())


@main.command()
@click.argument("scenario", required=False)
@source_options(required=True)
@click.option("--from", "sources", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Where to look for the fitted sweeps and frontiers of SCENARIO (default: ./results).")
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON.")
@one_line_errors
def inspect(scenario, source_catalog, source_table, source_snapshot, sources, as_json):
    """Describe your own Iceberg table (files, deletes, partitions, snapshots) and, with SCENARIO, what
    that scenario would rewrite and the expected time and memory per engine from the fitted models, before
    anything runs."""
    import json

    from bench.campaigns.expected import expected_on_table
    from bench.runner.expiry import pinned_expiry
    from bench.runner.source import inspect_source, render

    ref = source_ref(source_catalog, source_table, source_snapshot)
    d = inspect_source(ref, scenario)
    if scenario:
        d["expected"] = expected_on_table(scenario, d["data_files"]["logical_bytes"],
                                          [Path(s) for s in sources] or [Path("results")])
    d["expiry"] = pinned_expiry(ref, d["snapshot"]["id"], d.get("expected"))
    click.echo(json.dumps(d, indent=1, default=str) if as_json else render(d))


@main.command()
@click.argument("scenario")
@click.option("--scales", default=None, help="Comma-separated scales, e.g. 0.001,0.002,0.005,0.01,0.02.")
@click.option("--file-scales", "file_scales", default=None, metavar="F1,F2,...",
              help="A count sweep instead: the file counts of these scales, all holding the bytes of the one --scale "
                   "(e.g. --scale 0.005 --file-scales 0.005,0.02,0.05,0.1); time, memory and phases fitted against "
                   "the input's files.")
@click.option("--scale", type=float, default=None, callback=positive_scale,
              help="With --file-scales: the one scale of bytes and rows (default: the scenario's local scale).")
@click.option("--reps", type=click.IntRange(min=1), default=3, show_default=True, help="Repetitions per scale.")
@click.option("--memory-budget", default=None, help="Memory budget per engine run (default: the node's RAM).")
@click.option("--engines", default=None, help=f"Comma-separated engines (default: {campaign_engines()}).")
@click.option("--core-runs", default=None, type=click.Path(exists=True, file_okay=False), metavar="DIR",
              help="Results of `bench run --cores 1` and `--cores 2`: the published-node model scales each engine by "
                   "its measured efficiency (Amdahl) instead of linearly.")
@common_run_options
@one_line_errors
def sweep(scenario, scales, file_scales, scale, reps, memory_budget, engines, core_runs, common):
    """Run SCENARIO at several scales and fit time and memory against input size per engine (or, with
    --file-scales, at one scale over several file counts and fit them against the input's files)."""
    from bench.campaigns.shared import parse_scales
    from bench.campaigns.sweep import SweepOptions
    from bench.campaigns.sweep import sweep as run_sweep

    if file_scales is not None:
        from bench.campaigns.counts import CountSweepOptions, count_sweep

        if scales is not None or core_runs is not None or common.get("file_scale") is not None:
            raise UserError("--file-scales sweeps the file counts at one --scale: drop --scales, --file-scale and "
                            "--core-runs")
        from bench.scenario import load_scenario

        one = scale if scale is not None else load_scenario(scenario).local_scale
        count_sweep(CountSweepOptions(scenario=scenario, **common | {"file_scale": None}, scale=one,
                                      file_scales=parse_scales(file_scales, "--file-scales", least=2), reps=reps,
                                      engines=engines, memory_budget=memory_budget), Progress())
        return
    if scales is None or scale is not None:
        raise UserError("give --scales S1,S2,... (a size sweep), or --scale S with --file-scales F1,F2,... (a count "
                        "sweep)")
    run_sweep(SweepOptions(scenario=scenario, **common, scales=parse_scales(scales), reps=reps, engines=engines,
                           memory_budget=memory_budget, core_runs=core_runs), Progress())


@main.command()
@click.argument("scenario")
@click.option("--scale", type=float, default=None, callback=positive_scale, help="One scale.")
@click.option("--scales", default=None, help="Several scales (comma-separated), to fit the frontier against size.")
@click.option("--floor", default=None, help="Lowest budget to try (default: each engine's own minimum).")
@click.option("--ceiling", default=None, help="Highest budget (default: this node's RAM).")
@click.option("--precision", default="64M", show_default=True,
              help="Stop when the passing and failing budgets are this close (or 5 %% of the budget).")
@click.option("--max-slowdown", type=float, default=10.0, show_default=True,
              help="A run slower than this many times the unconstrained one counts as failing (thrashing).")
@click.option("--engines", default=None, help=f"Comma-separated engines (default: {campaign_engines()}).")
@click.option("--partitions", default=None,
              help="Partition counts (comma-separated, e.g. 8,64,512) of a partitioned SCENARIO at the one --scale: "
                   "a frontier per count, each its own dataset (memory against partitions).")
@common_run_options
@source_options(required=False)
@one_line_errors
def frontier(scenario, scale, scales, floor, ceiling, precision, max_slowdown, engines, partitions, source_catalog,
             source_table, source_snapshot, common):
    """Find, per engine, the smallest memory budget at which SCENARIO completes verified (on a generated
    table at one or more scales, or on a zero-copy clone of your own table)."""
    from bench.campaigns.frontier import FrontierOptions
    from bench.campaigns.frontier import frontier as run_frontier
    from bench.campaigns.shared import parse_partitions, parse_scales

    source = source_ref(source_catalog, source_table, source_snapshot)
    if source is None and (scale is None) == (scales is None):
        raise UserError("give --scale S or --scales S1,S2,... (one of them), or --source-catalog/--source-table")
    run_frontier(FrontierOptions(scenario=scenario, **common, source=source,
                                 scales=[scale] if scale else parse_scales(scales) if scales else [],
                                 engines=engines, lowest=floor, ceiling=ceiling, precision=precision,
                                 max_slowdown=max_slowdown,
                                 partitions=parse_partitions(partitions) if partitions else None), Progress())


@main.command()
@click.option("--engines", default="spark,risingwave", show_default=True, help="Comma-separated engines.")
@click.option("--cases", default=None, help="Only these cases (comma-separated; default: every case of "
              "the cases file).")
@click.option("--cases-file", default=None, type=click.Path(dir_okay=False),
              help="The cases file (default scenarios/conformance/cases.yaml; schema: datagen.conformance.Case).")
@click.option("--results-dir", default="results", show_default=True, type=click.Path(file_okay=False),
              help="The matrix goes to DIR/<run-id>/conformance.json, each case's runs beside it.")
@click.option("--warehouse", default=None, help="Warehouse directory (default $BENCH_WAREHOUSE or ./warehouse); the "
              "cases' tables are written under it once and reused.")
@click.option("--run-id", default=None, help="Name of the run's directory (default: a timestamp).")
@click.option("--timeout", "timeout_s", type=click.IntRange(min=1), default=600, show_default=True,
              help="Time limit of one engine run, seconds.")
@click.option("--fail-on", default=None, metavar="VERDICTS",
              help="Exit 1 (after writing the record and printing the matrix) when any cell has one of these "
                   "verdicts, comma-separated: wrong (= wrong-rows and wrong-metadata), wrong-rows, wrong-metadata, "
                   "failed, unsupported, harness-cannot; and a maintenance case's deleted-live, resurrected, "
                   "kept-garbage (--fail-on deleted-live,resurrected: no data lost). A gate for an engine upgrade.")
@click.option("--reproducers/--no-reproducers", default=True, show_default=True,
              help="For every maintenance cell that is not correct, DIR/<run-id>/reproducers/<case>--<engine>/: the "
                   "case's table as written and a script that replays the operation with the engine's own API (run "
                   "once here; its answer is in the record).")
@one_line_errors
def conformance(engines, cases, cases_file, results_dir, warehouse, run_id, timeout_s, fail_on, reproducers):
    """Each engine's correctness on edge-case tables that state the rows they must end with (each written by the
    writer its case names: pyiceberg, or Spark SQL / Iceberg's Java API, for Spark its own library, its cells marked
    self-written): a matrix
    engine x case (correct / wrong-rows / wrong-metadata, with evidence / failed, with the engine's error /
    unsupported, with its reason / harness-cannot, the harness's defect), with the versions it comes from.  A
    maintenance case (expire-snapshots, remove-orphan-files, rewrite-manifests, rewrite-position-deletes) runs on the
    suite's own copy of its table and is judged deleted-live (a file still reachable was deleted), resurrected,
    wrong-rows or kept-garbage."""
    from bench.campaigns.conformance import ConformanceOptions, failing, matrix_line, parse_fail_on
    from bench.campaigns.conformance import conformance as run_conformance

    gate = parse_fail_on(fail_on)
    rec = run_conformance(ConformanceOptions(engines=engines, cases=cases.split(",") if cases else None,
                                             results_dir=results_dir, warehouse=warehouse, run_id=run_id,
                                             timeout_s=timeout_s, cases_file=cases_file,
                                             reproducers=reproducers), Progress())
    for line in matrix_line(rec):
        click.echo(line)
    bad = failing(rec, gate)
    if bad:
        click.echo(f"--fail-on {fail_on}: {len(bad)} cell(s): "
                   + ", ".join(f"{c.case} {c.engine} {c.verdict}" for c in bad), err=True)
        sys.exit(1)


@main.command()
@click.argument("engine")
@click.argument("scenario")
@click.option("--scale", type=float, default=None, callback=positive_scale,
              help="Scale of the runs (default: the scenario's local scale).")
@click.option("--budget-minutes", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="Stop starting new configurations after this long.")
@click.option("--max-configs", type=click.IntRange(min=1), default=16, show_default=True,
              help="At most this many configurations (the published one included).")
@click.option("--reps", type=click.IntRange(min=1), default=1, show_default=True,
              help="Repetitions of each configuration in the search.")
@click.option("--confirm-reps", type=click.IntRange(min=0), default=3, show_default=True,
              help="Paired repetitions of published vs tuned in the confirmation run (0: none).")
@click.option("--min-gain", type=float, default=0.05, show_default=True,
              help="A value is kept only if it is at least this share faster than the best so far.")
@click.option("--profile", default="tuned", show_default=True,
              help="Profile to write the best configuration to (scenarios/profiles/ENGINE/PROFILE.yaml).")
@click.option("--write-profile/--no-write-profile", default=True, show_default=True)
@click.option("--memory-budget", default=None, help="Memory budget per engine run (default: the node's RAM).")
@common_run_options
@source_options(required=False)
@one_line_errors
def tune(engine, scenario, scale, budget_minutes, max_configs, reps, confirm_reps, min_gain, profile, write_profile,
         memory_budget, source_catalog, source_table, source_snapshot, common):
    """Search ENGINE's knobs on SCENARIO (coordinate descent), write the best as ENGINE:tuned, confirm it.
    Configurations are also cut off at 3x the published one's time."""
    from bench.campaigns.tune import TuneOptions
    from bench.campaigns.tune import tune as run_tune

    run_tune(TuneOptions(engine=engine, scenario=scenario, **common, scale=scale, reps=reps,
                         source=source_ref(source_catalog, source_table, source_snapshot),
                         confirm_reps=confirm_reps, max_configs=max_configs, budget_minutes=budget_minutes,
                         min_gain=min_gain, profile=profile, write_profile=write_profile,
                         memory_budget=memory_budget), Progress())


@main.command()
@click.argument("scenarios", nargs=-1, required=True)
@click.option("--scale", type=float, default=1.0, show_default=True, callback=positive_scale)
@instance_type_option("The target")
@click.option("--reps", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--from", "sources", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Where to look for sweeps, frontiers and runs with --cores 1|2 (default: ./results).")
@click.option("--storage", type=click.Choice(list(PUBLISHED_STORAGE_NAMES)), default=None,
              help="Where the table lives on the target (an m5.4xlarge's options; each states its assumption in "
                   "docs/method.md; default gp3-baseline).")
@click.option("--storage-mb-s", type=float, default=None,
              help="Or a volume of this throughput in MB/s, shared by reads and writes.")
@click.option("--budget-minutes", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Say whether the plan fits this wall time, and by how much it does not.")
@click.option("--budget-usd", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Say whether the plan fits this cost, and by how much it does not.")
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Spread the scenarios over this many nodes at once (each scenario whole on one node, as "
                   "bench aws up --nodes N does): the wall is the longest node's, the cost the sum.")
@click.option("--node-setup-minutes", type=click.FloatRange(min=0), default=None,
              help="Each node's boot and setup (default 5, an assumption).")
@click.option("--timeout", type=click.IntRange(min=1), default=3600, show_default=True,
              help="Time limit of one engine run, seconds, as the reproduction will use it (bench run --timeout, "
                   "Terraform's engine_timeout_seconds): a run modelled longer is planned at the limit.")
@file_scale_option
@one_line_errors
def plan(scenarios, scale, instance_type, reps, sources, storage, storage_mb_s, budget_minutes, budget_usd, nodes,
         node_setup_minutes, timeout, file_scale):
    """Expected time, memory, disk and cost of a full reproduction, from the fitted models."""
    from bench.campaigns.plan import make_plan
    from bench.campaigns.verdict import plan_table
    from bench.core.storage import storage_option

    if storage and storage_mb_s:
        raise UserError("--storage and --storage-mb-s: give one")
    p = make_plan(list(scenarios), scale, instance_type, reps, [Path(s) for s in sources] or [Path("results")],
                  storage_option(storage) if storage else storage_mb_s, budget_minutes, budget_usd, nodes,
                  None if node_setup_minutes is None else node_setup_minutes * 60, timeout, file_scale)
    click.echo(plan_table(p))


@main.group(cls=LazyGroup, lazy_subcommands={"telemetry": "bench.telemetry.selfcheck:selfcheck_telemetry"})
def selfcheck():
    """Benchmarks of the harness itself."""


@selfcheck.command("datagen")
@click.option("--files", type=click.IntRange(min=2), default=87, show_default=True,
              help="Files to write (87 = the local scale of bin-packing).")
@click.option("--file-mb", type=float, default=11.0, show_default=True)
@click.option("--codec", type=click.Choice(["uncompressed", "zstd"]), default="uncompressed", show_default=True)
@click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True)
@one_line_errors
def selfcheck_datagen(files, file_mb, codec, rounds):
    """Datagen throughput against a plain pyarrow write of the same bytes (goal ratio >= 0.8)."""
    from datagen.selfcheck import datagen_throughput

    for line in datagen_throughput(files=files, file_mb=file_mb, codec=codec, rounds=rounds):
        click.echo(line)


@selfcheck.command("rates")
@click.option("--warehouse", default=None, help="The warehouse whose datasets are measured (default: the local one).")
@click.option("--table", "tables", multiple=True, help="A dataset table (repeatable; default: every dataset).")
@click.option("--files", type=click.IntRange(min=1), default=64, show_default=True,
              help="Data files measured per table (the first, by path).")
@click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True,
              help="Rounds of each measurement; the best is kept.")
@click.option("--readers", type=click.IntRange(min=1), default=4, show_default=True,
              help="Files read at a time for the device's cold read throughput.")
@one_line_errors
def selfcheck_rates(warehouse, tables, files, rounds, readers):
    """This machine's rates on a dataset's files (cold read, decode, encode, hash join), for arrow-floor's bound."""
    from bench.telemetry.rates import run_rates

    for line in run_rates(warehouse, list(tables), max_files=files, rounds=rounds, readers=readers):
        click.echo(line)


@selfcheck.command("scaling")
@click.option("--files", type=click.IntRange(min=2), default=87, show_default=True,
              help="Files of the table generated and read (87 = the local scale of bin-packing).")
@click.option("--file-mb", type=click.FloatRange(min=0, min_open=True), default=11.0, show_default=True)
@click.option("--codec", type=click.Choice(["uncompressed", "zstd"]), default="uncompressed", show_default=True)
@click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True,
              help="Rounds, the order of 1 and 2 cores alternating; the medians are kept.")
@click.option("--results-dir", type=click.Path(file_okay=False), default=None,
              help="Where results go (default: ./results).")
@click.option("--run-id", default=None, help="Name of its directory there (default: a timestamp).")
@click.option("--work-dir", type=click.Path(file_okay=False), default=None,
              help="Where the temporary warehouses go (default: $BENCH_SELFCHECK_DIR, else the system's temp dir).")
@one_line_errors
def selfcheck_scaling(files, file_mb, codec, rounds, results_dir, run_id, work_dir):
    """The harness's own steps (datagen, input read, verification) on 1 and 2 cores: their scaling, for bench plan."""
    from bench.campaigns.harness_scaling import Options, harness_scaling

    harness_scaling(Options(files=files, file_mb=file_mb, codec=codec, rounds=rounds, results_dir=results_dir,
                            run_id=run_id, work_dir=work_dir), echo=click.echo)


aws.add_command(rehearse)
main.add_command(aws)
main.add_command(report_cmd)
main.add_command(export_cmd)
main.add_command(docs_cmd)


def entry() -> None:
    """Console entry point: usage errors too become one line and exit status 2."""
    try:
        rv = main.main(standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as e:
        click.echo(e.ctx.get_help() if e.ctx else str(e))
        sys.exit(0)
    except click.UsageError as e:
        hint = f" (see `{e.ctx.command_path} --help`)" if e.ctx else ""
        click.echo(f"error: {e.format_message()}{hint}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        click.echo(f"error: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    except click.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    entry()
