"""`bench report` and `bench export`: registered in bench/cli.py with one line each.

Where reports go: the report of one directory (a run, a campaign, a results directory) is written beside its
results, `<dir>/report.html`, unless --out says otherwise; a report over several results needs --out.  This
folder is the renderer's package: output written into it would mix generated files with code (and the
package data), and a report that lives beside its results travels with them (copied, uploaded, fetched)."""

from __future__ import annotations

from pathlib import Path

import click

from bench.core.cost import DEFAULT_INSTANCE, PRICES
from bench.core.errors import UserError, one_line_errors
from bench.core.fileio import check_writable, write_atomic


@click.command("report")
@click.argument("results", nargs=-1, required=True, type=click.Path())
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="HTML file to write (default, for one directory: report.html in it, beside its results; "
                   "required for several).")
@click.option("--instance-type", default=None,
              help="Re-price every run at this instance type's on-demand price (labelled as re-priced, "
                   "hypothetical): one of " + ", ".join(PRICES) + ", or NAME=USD_PER_HOUR. Default: the cost "
                   "stored in each result when it ran (at " + DEFAULT_INSTANCE + " unless the run said otherwise).")
@click.option("--title", default=None, help="Title of the report.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), default=None,
              help="Write the measured tables as Markdown to this file ('-': stdout) instead of the HTML "
                   "report (the tables docs/results.md quotes; see `bench docs`).")
@one_line_errors
def report_cmd(results, out, instance_type, title, markdown_path):
    """Render RESULTS (run directories or result files; several are combined) as one HTML file.

    A sweep, memory-frontier or tune directory (its sweep.json / frontier.json / tune.json) adds its
    scaling, frontier or tuning section above the run sets it contains, even before any result is
    written.  A run directory whose
    run.json says the run is unfinished is reported as incomplete, even with no result in it yet."""
    if markdown_path:
        from reports.markdown import render_markdown

        if out or instance_type or title:
            raise UserError("--markdown writes the tables only: --out, --instance-type and --title are for HTML")
        target = check_writable(markdown_path, "--markdown") if markdown_path != "-" else None
        text = render_markdown(list(results), root=Path.cwd())
        if target is None:
            click.echo(text, nl=False)
            return
        write_atomic(target, text, mode=0o644)
        click.echo(f"markdown: {Path(markdown_path).resolve()}")
        return
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


@click.command("docs")
@click.argument("pages", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 with a diff when a page differs from what its reference runs render.")
@one_line_errors
def docs_cmd(pages, check):
    """Re-render the measured tables of the docs from the reference runs they name.

    Every block of PAGES (default: README.md and docs/*.md) between `<!-- BEGIN generated: RUNS -->`
    and `<!-- END generated -->` is replaced by `bench report RUNS --markdown` (RUNS: paths or globs
    relative to the current directory, the repository's root)."""
    import sys

    from reports.markdown import update_pages

    diffs = update_pages(Path.cwd(), list(pages) or None, check=check)
    if check and diffs:
        click.echo("".join(diffs), nl=False)
        click.echo(f"error: {len(diffs)} page(s) differ from their reference runs: run `make docs`", err=True)
        sys.exit(1)
    click.echo(f"{len(diffs)} page(s) {'differ' if check else 'updated'}" if diffs else "docs: up to date")
