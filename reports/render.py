"""Render result sets into one self-contained HTML file (Jinja2 template + inline SVG charts).

The report reads result files only (and the samples files and run.json beside them, and the summaries of sweeps,
memory frontiers and tuning searches: sweep.json, frontier.json, tune.json), draws charts, fills a template.
Reports depend on bench.core alone (an import-linter contract).

    path = render_report(["results/<run-id>"], out="reports/<name>.html")  # costs as stored in the results
    path = render_report(["results/<run-id>"], instance_type="r5.4xlarge")  # re-priced, labelled so
"""

from __future__ import annotations

import datetime as _dt
import functools
from importlib import metadata
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template, select_autoescape
from markupsafe import Markup

from bench.core.cost import PRICE_DATE, PRICE_SOURCE
from bench.core.errors import UserError
from bench.core.fileio import check_writable, write_atomic
from bench.core.fit import MIN_BUSY
from bench.core.fmt import fmt_bytes, fmt_gb, fmt_r2, fmt_ratio, fmt_scale, fmt_seconds, fmt_usd
from reports import campaigns, cluster, compare, confine, conformance, countview, floorcheck, safety, streaming
from reports.charts.bars import cores_chart, cost_chart, duration_chart, floor_chart, memory_chart, phases_chart
from reports.charts.resources import cap_chart, cluster_chart
from reports.charts.timelines import cpu_timeline, memory_timeline
from reports.model.colors import assign_colors
from reports.model.engines import missing_text
from reports.model.loading import load_runs
from reports.model.sets import build
from reports.model.view import STATUS_MEANING, Report, ResultSet

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATUS_CLASS = {"ok": "ok", "failed": "bad", "oom": "bad", "heap-oom": "bad", "timeout": "warn"}
CHARTS = ("duration", "cost", "phases", "memory", "memory_timeline", "cores", "cpu_timeline")


def facts_text(v) -> str:
    """A recorded fact as readable text, never a Python repr: a mapping as 'key: value, ...', a list joined by
    commas, a size under a key that says so in human units."""
    if v is None:
        return "—"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {fmt_bytes(x) if k.endswith('bytes') and isinstance(x, int | float) else facts_text(x)}"
                         for k, x in v.items() if x not in (None, "", [], {})) or "—"
    if isinstance(v, list | tuple | set):
        return ", ".join(facts_text(x) for x in v) or "—"
    return str(v)


@functools.cache
def _env() -> Environment:
    """One environment per process: it compiles the report's template once (0.35 s), and its loader still
    recompiles a template whose file changed."""
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html", "j2"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["secs"] = fmt_seconds
    env.filters["usd"] = fmt_usd
    env.filters["bytes"] = fmt_bytes
    env.filters["num"] = lambda v, d=2: "—" if v is None else f"{v:,.{d}f}"
    env.filters["int"] = lambda v: "—" if v is None else f"{int(v):,}"
    env.filters["ratio"] = fmt_ratio
    env.filters["raw"] = lambda v: "" if v is None else repr(float(v)) if isinstance(v, float) else str(v)
    env.filters["scale"] = fmt_scale
    env.filters["gb"] = lambda v: "—" if v is None else f"{v / 1e9:,.0f} GB" if v >= 10e9 else f"{v / 1e9:,.2f} GB"
    env.filters["pct"] = lambda v: "—" if v is None else f"{100 * v:.0f} %"
    env.filters["gbf"] = fmt_gb  # a size already in (logical) GB
    env.filters["r2"] = fmt_r2
    env.filters["facts"] = facts_text
    env.globals["status_class"] = lambda s: STATUS_CLASS.get(s, "warn")
    env.globals["status_meaning"] = lambda s: STATUS_MEANING.get(s, "")
    env.globals["bound_text"] = floorcheck.bound_text
    return env


def template() -> Template:
    """The report's compiled template."""
    return _env().get_template("report.html.j2")


def _missing_text(rs: ResultSet):
    return lambda engine: missing_text(rs.stats[engine])


def _timeline_series(rs: ResultSet):
    """All measured runs with samples (dashed when they do not count); the verified run closest to its
    engine's median time is drawn bold."""
    series, notes = [], []
    for engine in rs.engines:
        runs = [lr for lr in rs.measured if lr.r.engine == engine]
        med = rs.stats[engine].duration_s.median
        good = [lr for lr in runs if lr.counts and lr.r.duration_s is not None]
        best = min(good, key=lambda lr: abs((lr.r.duration_s or 0.0) - med)) if good and med is not None else (
            runs[0] if runs else None)
        for lr in runs:
            if lr.samples is None:
                notes.append(f"{engine} rep {lr.r.rep}: {lr.samples_note}")
                continue
            series.append((engine, f"rep {lr.r.rep}", lr is best, lr.counts, lr.samples))
    # a set copied without its samples (a reference run keeps JSON only): one line, not a line per run
    if not series and len(notes) > 1 and all("samples file missing" in n for n in notes):
        notes = [f"none of the {len(notes)} runs has its samples here (the first: {notes[0]})"]
    return series, notes


def budget_off_scale(rs: ResultSet) -> bool:
    """The memory chart leaves the budget out when it is far beyond every peak it draws."""
    peaks: list[float] = [lr.r.telemetry.peak_rss_bytes for lr in rs.measured if lr.r.telemetry.peak_rss_bytes]
    peaks += [row.stats.peak_hwm_bytes.max for row in rs.rows if row.stats.peak_hwm_bytes.max]
    return bool(rs.budget and peaks and rs.budget > 4 * max(peaks))


def _charts(rs: ResultSet, series) -> dict[str, Markup]:
    colors = rs.colors
    dur_rows, cost_rows, mem_rows, hwm_rows, core_rows, p95_rows, phase_rows = [], [], [], [], [], [], []
    excluded_peaks: dict[str, list[float]] = {}
    for row in rs.rows:
        d = row.stats.duration_s
        dur_rows.append((row.engine, d.median, d.min, d.max, d.values))
        cost_rows.append((row.engine, row.cost_median, row.cost_min, row.cost_max, row.cost_values))
        m = row.stats.peak_rss_bytes
        mem_rows.append((row.engine, m.median, m.min, m.max, m.values))
        hwm_rows.append((row.engine, row.stats.peak_hwm_bytes.max))
        excluded_peaks[row.engine] = [lr.r.telemetry.peak_rss_bytes for lr in rs.measured
                                      if lr.r.engine == row.engine and not lr.counts and lr.r.telemetry.peak_rss_bytes]
        c = row.stats.mean_cores
        core_rows.append((row.engine, c.median, c.min, c.max, c.values))
        p95_rows.append((row.engine, row.p95_cores_median))
        setup = row.stats.setup_s.median if row.verified_runs else None
        phase_rows.append((row.engine, setup, [(p.name, p.seconds.median) for p in row.phases if not p.setup]))
    cores = rs.env.cores
    missing = _missing_text(rs)
    return {
        "duration": Markup(duration_chart(dur_rows, colors, missing)),
        "cost": Markup(cost_chart(cost_rows, colors, rs.cost.label if rs.cost else "", missing)),
        "phases": Markup(phases_chart(phase_rows, colors, missing)),
        "memory": Markup(memory_chart(mem_rows, hwm_rows, colors, rs.budget, excluded_peaks, missing)),
        "memory_timeline": Markup(memory_timeline(series, colors, rs.budget)),
        "cpu_timeline": Markup(cpu_timeline(series, colors, cores)),
        "cores": Markup(cores_chart(core_rows, p95_rows, colors, cores, missing)),
    }


def render_html(paths, instance_type: str | None = None, title: str | None = None) -> str:
    located = campaigns.locate(paths)  # sweeps, frontiers and tunes: shown above the run sets they contain
    matrices = conformance.locate(paths)
    counted = countview.locate_counts(paths)  # count sweeps: time and memory against file counts
    loaded = load_runs([p for p in paths if not countview.is_counts_file(p)], allow_empty=bool(located or matrices
                                                                                                  or counted))
    report: Report = build(loaded, instance_type)
    _, report.sets = conformance.case_run_sets(report.sets, matrices)  # a conformance run's own runs: its cells
    camp = campaigns.build(located, report.sets, assign_colors(loaded.runs))
    count_sweeps = countview.count_sections(counted, assign_colors(loaded.runs))
    tpl = template()
    css = (TEMPLATES / "report.css").read_text()
    floors = compare.floor_views(report.sets)
    views = []
    streams = streaming.streaming_sections(report.sets)
    for rs in report.sets:
        series, notes = _timeline_series(rs)
        mine = floors.get(rs.anchor, [])
        views.append({"rs": rs, "charts": _charts(rs, series), "sample_notes": notes,
                      "budget_off_scale": budget_off_scale(rs), "floors": mine,
                      "floor_charts": [Markup(floor_chart(f.chart_rows(), {**f.source.colors, **rs.colors},
                                                                 f.floor, f.same_set)) for f in mine],
                      "variants": compare.variant_groups(rs),
                      "touch": conformance.touch_notes(rs.runs),  # a run on a user's table: the cases it touches
                      # a set of streaming runs: its streaming section's number (its compaction sections left out)
                      "streaming": next((i for i, v in enumerate(streams, 1) if v.run_id == rs.run_id
                                         and all(lr.r.streaming for lr in rs.runs)), 0)})
    clusters = [{"s": c, "chart": Markup(cluster_chart(
                    c.chart_series(), {r.label: r.color for r in c.rows},
                    (c.reference.label, c.reference.time.median, c.reference.color)
                    if c.reference and c.reference.time.median is not None else None,
                    [(m.label, m.fixed_s, m.parallel_s) for m in c.models]))}
                for c in cluster.cluster_sections(report.sets)]
    caps = [{"s": c, "chart": Markup(cap_chart(c.chart_series(), {p.label: p.color for p in c.points},
                                                      c.models, c.read_models))}
            for c in confine.cap_sections(report.sets)]
    try:
        version = metadata.version("iceberg-compaction-bench")
    except metadata.PackageNotFoundError:
        version = "dev"
    if title is None:
        scenarios = [v.s.scenario for v in camp.all if not isinstance(v, campaigns.HarnessView)]
        scenarios += [v.s.scenario for v in count_sweeps]
        names = list(dict.fromkeys(scenarios + [rs.scenario_name for rs in report.sets] +
                                   [st.state.scenario or st.state.run_id for st in report.incomplete_only]))
        engines = list(dict.fromkeys([e for v in camp.all for e in v.engines] + [e for v in count_sweeps
                                                                               for e in v.s.engines] +
                                     [e for rs in report.sets for e in rs.engines]))
        title = (f"{', '.join(names)}: {' vs '.join(engines)}" if engines else
                 f"{', '.join(names)}: incomplete run" if names else
                 "; ".join(f"{v.title} (run {v.rec.run_id})" for v in matrices) if matrices else
                 campaigns.HARNESS_TITLE)
    return tpl.render(
        title=title, css=Markup(css), views=views, sets=report.sets, incomplete_only=report.incomplete_only,
        generated=_dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=version, price_source=PRICE_SOURCE, price_date=PRICE_DATE,
        sources=[str(p) for p in paths], n_runs=report.n_runs, campaigns=camp, clusters=clusters,
        cluster_model=cluster.MODEL, cluster_assumptions=cluster.ASSUMPTIONS,
        caps=caps, caps_model=confine.MODEL, cores=confine.core_sections(report.sets), min_busy=MIN_BUSY,
        safety=safety.safety_sections(report.sets), safety_meaning=safety.MEANING,
        streaming=streams, streaming_meaning=streaming.MEANING, sinks=streaming.sink_comparison(report.sets),
        conformance=matrices, touch_lookup=conformance.LOOKUP,
        reader_findings_meaning=conformance.READER_FINDINGS, conformance_bad=conformance.BAD,
        self_written_meaning=conformance.SELF_WRITTEN, conformance_versions=conformance.versions_line,
        conformance_runtimes=conformance.runtimes_line, conformance_change=conformance.change_text,
        conformance_writer=conformance.writer_short,
        sort_comparisons=compare.sort_comparisons(report.sets), count_sweeps=count_sweeps,
    )


REPORT_FILE = "report.html"  # a directory's report, beside its results (loaders read only *.json)
# the reference runs the docs render from: the repository holds their results only
REFERENCE_ROOT = Path(__file__).resolve().parents[1] / "docs" / "reference"


def default_out(paths) -> Path:
    """Where the report of `paths` goes without --out: beside the results of one directory (a run, a campaign
    or a results directory), unless that is one of the repository's reference runs; a report over anything else
    must be told where to go."""
    paths = [Path(p) for p in paths]
    if len(paths) != 1 or paths[0].is_file():
        raise UserError("a report over several results (or over result files) needs --out FILE.html; the report of "
                        f"one directory goes beside its results ({REPORT_FILE} in it)")
    if paths[0].resolve().is_relative_to(REFERENCE_ROOT):
        raise UserError(f"{paths[0]} is a reference run kept in the repository (results only): say where its "
                        "report goes with --out FILE.html")
    return paths[0] / REPORT_FILE  # a directory (one that is missing fails on loading)


def render_report(paths, out=None, instance_type: str | None = None, title: str | None = None) -> Path:
    """Write the report for the results under `paths` (the output checked before any is read); returns the file
    written."""
    out = check_writable(out, "--out") if out else check_writable(default_out(paths), "the report")
    text = render_html(paths, instance_type=instance_type, title=title)
    write_atomic(out, text, mode=0o644)
    return out
