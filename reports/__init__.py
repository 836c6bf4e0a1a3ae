"""The HTML comparison report: reads result files only, draws charts, fills a template.

    from reports import render_report
    path = render_report(["results/<run-id>"], out="reports/<name>.html", instance_type="m5.4xlarge")
"""

from __future__ import annotations


def render_report(paths, out=None, instance_type=None, title=None):
    from reports.render import render_report as _render

    return _render(paths, out=out, instance_type=instance_type, title=title)


__all__ = ["render_report"]
