"""`bench aws rehearse`: the click command (bench/cli.py adds it to the `aws` group)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from bench.core.errors import UserError, one_line_errors

STORAGE = ["gp3-baseline", "gp3-max", "s3"]  # as `bench aws up --storage`


@click.command("rehearse")
@click.option("--results-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Where the fetched run goes (results, logs, status.json, report.html) and the rehearsal's own "
                   "logs and rehearsal.json (under rehearsal/).")
@click.option("--scenarios", default="bin-packing", show_default=True, help="Scenarios the booted instance runs.")
@click.option("--scale", type=float, default=0.00005, show_default=True, help="Tiny: seconds per engine.")
@click.option("--engines", default="spark,risingwave", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="The emulator's port on 127.0.0.1 (0: any free one).")
@click.option("--boot/--no-boot", default=True, show_default=True,
              help="Boot the instance here (its user data in a sandbox), then status and fetch; --no-boot: apply "
                   "and destroy only.")
@click.option("--replan", is_flag=True, default=False,
              help="Plan again right after the apply and list what would change: what the emulator reads back "
                   "differently from what was applied.")
@click.option("--storage", type=click.Choice(STORAGE), default=None, help="As `bench aws up --storage`.")
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True,
              help="As `bench aws up --nodes` (node 0 is the one booted).")
@click.option("--spark-workers", type=click.IntRange(0, 32), default=0, show_default=True,
              help="As `bench aws up --spark-workers` (needs --storage s3; the workers are applied, not booted).")
@click.option("--spot", is_flag=True, default=False, help="As `bench aws up --spot`.")
@click.option("--source-catalog", type=click.Path(dir_okay=False), default=None, help="As `bench aws up`.")
@click.option("--source-table", metavar="NS.TABLE", default=None, help="As `bench aws up`.")
@click.option("--source-location", metavar="s3://BUCKET/PREFIX", default=None, help="As `bench aws up`.")
@one_line_errors
def rehearse(results_dir, scenarios, scale, engines, port, boot, replan, storage, nodes, spark_workers, spot,
             source_catalog, source_table, source_location):
    """Rehearse `bench aws up/status/fetch/down` with no AWS account: the real Terraform module and the real AWS
    provider (from a local plugin directory, $BENCH_TF_PLUGIN_DIR, default /opt/tf-plugins) applied against a local
    AWS emulator (moto, on 127.0.0.1), the instance's user data run here in a sandbox at a tiny scale, the results
    fetched into --results-dir with report.html, everything destroyed but the results bucket.  Exit 0 when every
    phase worked and every engine's result is verified, 1 when a phase failed (one line says which), 2 on bad
    input or a missing prerequisite.  What it cannot show (real AMIs, quotas, prices, network, EBS performance):
    docs/aws.md."""
    from bench.rehearse.flow import Options, RehearsalFailed
    from bench.rehearse.flow import rehearse as run

    up_args: list[str] = []
    if storage:
        up_args += ["--storage", storage]
    if nodes > 1:
        up_args += ["--nodes", str(nodes)]
    if spark_workers:
        up_args += ["--spark-workers", str(spark_workers)]
    if spot:
        up_args.append("--spot")
    for flag, value in (("--source-catalog", source_catalog), ("--source-table", source_table),
                        ("--source-location", source_location)):
        if value:
            up_args += [flag, str(Path(value).resolve()) if flag == "--source-catalog" else value]
    if spark_workers and storage != "s3":
        raise UserError("--spark-workers needs --storage s3 (as `bench aws up`)")
    opts = Options(results_dir=results_dir, scenarios=scenarios, scale=scale, engines=engines, port=port,
                   boot=boot, replan=replan, up_args=up_args, spark_workers=spark_workers, spot=spot)
    try:
        summary = run(opts, click.echo)
    except RehearsalFailed as e:
        click.echo(f"rehearsal failed: {e}", err=True)
        sys.exit(1)
    what = f"{results_dir}/report.html" if boot else "applied and destroyed (--no-boot)"
    click.echo(f"rehearsal ok in {summary['seconds']:.0f} s: {what}; its record: "
               f"{results_dir}/rehearsal/rehearsal.json")
