"""`bench report` and `bench export`: registered in bench/cli.py with one line each."""

from __future__ import annotations

from pathlib import Path

import click

from bench.cost import DEFAULT_INSTANCE, PRICES
from bench.errors import UserError, one_line_errors


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path())
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="HTML file to write (default: reports/<run-id>.html).")
@click.option("--instance-type", default=None,
              help="On-demand price used for cost: one of " + ", ".join(PRICES) + ", or NAME=USD_PER_HOUR "
                   "(default: the one recorded in the results, else " + DEFAULT_INSTANCE + ").")
@click.option("--title", default=None, help="Title of the report.")
@one_line_errors
def report_cmd(results, out, instance_type, title):
    """Render RESULTS (run directories or result files; several are combined) as one HTML file."""
    from reports.render import render_report

    path = render_report(list(results), out=out, instance_type=instance_type, title=title)
    click.echo(f"report: {Path(path).resolve()}")


@click.command("export")
@click.argument("results", nargs=-1, required=True, type=click.Path())
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), default=None,
              help="Write a CSV file, one row per run.")
@click.option("--parquet", "parquet_path", type=click.Path(dir_okay=False), default=None,
              help="Write a Parquet file, one row per run.")
@one_line_errors
def export_cmd(results, csv_path, parquet_path):
    """Export RESULTS as a flat table (one row per engine run, nested fields as dotted columns)."""
    from reports.export import export

    if not csv_path and not parquet_path:
        raise UserError("say where to export: --csv FILE and/or --parquet FILE")
    for line in export(list(results), csv_path=csv_path, parquet_path=parquet_path):
        click.echo(line)
