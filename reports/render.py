"""Render result sets into one self-contained HTML file (Jinja2 template + inline SVG charts)."""

from __future__ import annotations

import datetime as _dt
import os
import statistics
from importlib import metadata
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from bench.cost import PRICE_DATE, PRICE_SOURCE
from bench.results import write_atomic
from reports import charts
from reports.model import ResultSet, build, fmt_scale, load_runs, run_cost_usd

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATUS_CLASS = {"ok": "ok", "failed": "bad", "oom": "bad", "timeout": "warn"}


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["secs"] = charts.fmt_seconds
    env.filters["usd"] = charts.fmt_usd
    env.filters["bytes"] = charts.fmt_bytes
    env.filters["num"] = lambda v, d=2: "—" if v is None else f"{v:,.{d}f}"
    env.filters["int"] = lambda v: "—" if v is None else f"{int(v):,}"
    env.filters["ratio"] = lambda v: "—" if v is None else (f"{v:.1f}×" if v >= 10 else f"{v:.2f}×")
    env.filters["raw"] = lambda v: "" if v is None else repr(float(v)) if isinstance(v, float) else str(v)
    env.filters["scale"] = fmt_scale
    env.globals["color"] = charts.engine_color
    env.globals["status_class"] = lambda s: STATUS_CLASS.get(s, "warn")
    return env


def _missing_text(rs: ResultSet):
    def text(engine: str) -> str:
        st = rs.stats[engine]
        bad = ", ".join(f"{s.upper()} ×{n}" if n > 1 else s.upper() for s, n in st.statuses.items() if s != "ok")
        return f"no successful run ({bad or 'none measured'})"
    return text


def _timeline_series(rs: ResultSet):
    """All measured runs with samples; the run closest to its engine's median duration is drawn bold."""
    series, notes = [], []
    for engine in rs.engines:
        runs = [lr for lr in rs.measured if lr.r.engine == engine]
        durs = [lr.r.duration_s for lr in runs if lr.r.status == "ok" and lr.r.duration_s]
        med = statistics.median(durs) if durs else None
        best = min(runs, key=lambda lr: abs((lr.r.duration_s or 1e18) - med)) if med is not None else (
            runs[0] if runs else None)
        for lr in runs:
            if lr.samples is None:
                notes.append(f"{engine} rep {lr.r.rep}: {lr.samples_note}")
                continue
            series.append((engine, f"rep {lr.r.rep}", lr is best, lr.samples))
    return series, notes


def _charts(rs: ResultSet) -> dict[str, Markup]:
    eng = rs.engines
    dur_rows, cost_rows, mem_rows, hwm_rows, core_rows, p95_rows = [], [], [], [], [], []
    for row in rs.rows:
        d = row.stats.duration_s
        dur_rows.append((row.engine, d.median, d.min, d.max, d.values))
        cost_rows.append((row.engine, row.cost_median, row.cost_min, row.cost_max, row.cost_values))
        m = row.stats.peak_rss_bytes
        mem_rows.append((row.engine, m.median, m.min, m.max, m.values))
        hwm_rows.append((row.engine, row.stats.peak_hwm_bytes.max))
        c = row.stats.mean_cores
        core_rows.append((row.engine, c.median, c.min, c.max, c.values))
        p95_rows.append((row.engine, row.p95_cores_median))
    series, _ = _timeline_series(rs)
    cpu = rs.env.get("cpu", {}) if rs.env else {}
    cores = cpu.get("usable_cores") or cpu.get("logical_cores")
    return {
        "duration": Markup(charts.duration_chart(dur_rows, eng, _missing_text(rs))),
        "cost": Markup(charts.cost_chart(cost_rows, eng, rs.instance.name, _missing_text(rs))),
        "memory": Markup(charts.memory_chart(mem_rows, hwm_rows, eng, rs.budget)),
        "memory_timeline": Markup(charts.memory_timeline(series, eng, rs.budget)),
        "cpu_timeline": Markup(charts.cpu_timeline(series, eng, cores)),
        "cores": Markup(charts.cores_chart(core_rows, p95_rows, eng, cores)),
    }


def render_html(paths, instance_type: str | None = None, title: str | None = None) -> str:
    runs = load_runs(paths)
    sets = build(runs, instance_type)
    env = _env()
    tpl = env.get_template("report.html.j2")
    css = (TEMPLATES / "report.css").read_text()
    views = []
    for rs in sets:
        series, notes = _timeline_series(rs)
        views.append({"rs": rs, "charts": _charts(rs), "sample_notes": notes,
                      "run_costs": {id(lr): run_cost_usd(lr.r, rs.instance) for lr in rs.runs}})
    try:
        version = metadata.version("iceberg-compaction-bench")
    except metadata.PackageNotFoundError:
        version = "dev"
    if title is None:
        names = list(dict.fromkeys(rs.scenario_name for rs in sets))
        engines = list(dict.fromkeys(e for rs in sets for e in rs.engines))
        title = f"{', '.join(names)}: {' vs '.join(engines)}"
    return tpl.render(
        title=title, css=Markup(css), views=views, sets=sets,
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=version, price_source=PRICE_SOURCE, price_date=PRICE_DATE,
        sources=[str(p) for p in paths], id=id, n_runs=len(runs),
    )


def default_out(paths) -> Path:
    runs = {Path(p).resolve().name.removesuffix(".json") for p in paths}
    name = "+".join(sorted(runs))[:120] if runs else "report"
    return Path("reports") / f"{name}.html"


def render_report(paths, out=None, instance_type: str | None = None, title: str | None = None) -> Path:
    """Write the report for the results under `paths`; returns the file written."""
    text = render_html(paths, instance_type=instance_type, title=title)
    out = Path(out) if out else default_out(paths)
    write_atomic(out, text)
    os.chmod(out, 0o644)
    return out
