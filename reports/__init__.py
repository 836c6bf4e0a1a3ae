"""The HTML comparison report: reads result files only (and the samples files and run.json beside
them, and the summaries of sweeps, memory frontiers and tuning searches: sweep.json, frontier.json,
tune.json), draws charts, fills a template.  Depends on bench.core alone (an import-linter contract).

    from reports import render_report
    path = render_report(["results/<run-id>"], out="reports/<name>.html")  # costs as stored in the results
    path = render_report(["results/<run-id>"], instance_type="r5.4xlarge")  # re-priced, labelled so
"""

from __future__ import annotations


def render_report(paths, out=None, instance_type=None, title=None):
    from reports.render import render_report as _render

    return _render(paths, out=out, instance_type=instance_type, title=title)


__all__ = ["render_report"]
