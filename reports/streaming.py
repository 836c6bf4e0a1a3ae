"""The streaming sections: one per streaming run (a result set whose results carry `streaming` records):
time series per engine over the cycles (read latency, scan planning, files, delete files, manifests,
snapshots, metadata bytes, maintenance seconds, main's lag in branch mode), each cycle's verdict, and a
totals table; over several streaming runs (`bench report A B`), one table comparing their totals.  From
the results' `streaming` records only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from markupsafe import Markup

from bench.core.fmt import nbytes, seconds
from bench.core.records.live import SinkRecord
from bench.core.results import RunResult
from reports.charts.base import MUTED
from reports.charts.streaming import cycle_panels_chart, sink_chart
from reports.model.view import ResultSet

MEANING = {
    "safe": "every reader sees exactly the table the writer committed (rows and checksum from the generator)",
    "unsafe": "a reader sees other rows: rows lost, or rows the writer deleted are back (evidence: which keys)",
    "inconclusive": "no reader could read the table",
}


class _Streamed:
    """A row of one streaming run: its totals as `t`."""

    r: RunResult

    @property
    def t(self):
        assert self.r.streaming is not None
        return self.r.streaming.totals


def _color(rs: ResultSet, r: RunResult) -> str:
    return rs.colors.get(r.engine) or r.engine_color or MUTED


@dataclass
class StreamRow(_Streamed):
    engine: str
    color: str
    r: RunResult


@dataclass
class StreamView:
    run_id: str
    scenario: str
    scale: float
    mode: str
    cycles: int
    commits_per_cycle: int
    rows_per_commit: int
    maintenance: list[str]
    sink: SinkRecord | None = None  # the writer is an append sink
    rows: list[StreamRow] = field(default_factory=list)
    chart: Markup = Markup("")
    unsafe: list[str] = field(default_factory=list)  # "engine cycle n: reason"


def _ms(v: float) -> str:
    return f"{v * 1000:.0f} ms" if v >= 0.01 else f"{v * 1000:.1f} ms"


def _count(v: float) -> str:
    return f"{v:,.0f}"


PANELS: list[tuple[str, Callable[[float], str], Callable]] = [
    ("Full scan", _ms, lambda c: c.reads.get("full-scan")),
    ("Key range", _ms, lambda c: c.reads.get("key-range")),
    ("Point lookup", _ms, lambda c: c.reads.get("point-lookup")),
    ("Scan planning (manifests read)", _ms, lambda c: c.planning_s),
    ("Live data files", _count, lambda c: c.table.data_files),
    ("Live delete files", _count, lambda c: c.table.delete_files),
    ("Manifests", _count, lambda c: c.manifests),
    ("Snapshots", _count, lambda c: c.snapshots),
    ("Metadata bytes", nbytes, lambda c: c.metadata_bytes),
    ("Maintenance seconds", seconds, lambda c: c.maintenance_s),
    ("Writer commit (mean)", _ms, lambda c: c.writer_commit_s_mean),
    ("Main's lag (writer commits)", _count, lambda c: c.main_lag_commits),
]


def streaming_sections(sets: list[ResultSet]) -> list[StreamView]:
    views = []
    for rs in sets:
        runs = [lr.r for lr in rs.runs if lr.r.streaming is not None]
        if not runs:
            continue
        first = next((r.streaming for r in runs if r.streaming and r.streaming.maintenance), runs[0].streaming)
        assert first is not None
        v = StreamView(rs.run_id, rs.scenario_name, rs.scale, first.mode, first.cycles_planned,
                       first.commits_per_cycle, first.rows_per_commit, list(first.maintenance), first.sink)
        for r in sorted(runs, key=lambda r: (not (r.streaming and r.streaming.baseline), r.engine)):
            v.rows.append(StreamRow(r.engine, _color(rs, r), r))
            for c in r.streaming.cycles if r.streaming else []:
                if c.verdict == "unsafe":
                    v.unsafe.append(f"{r.engine} cycle {c.cycle}: {c.reason}")
        colors = {row.engine: row.color for row in v.rows}
        panels = [(title, fmt, {row.engine: [(c.cycle, get(c)) for c in row.r.streaming.cycles]
                                for row in v.rows if row.r.streaming is not None})
                  for title, fmt, get in PANELS]
        v.chart = Markup(cycle_panels_chart(panels, colors))
        views.append(v)
    return views


# --- append sinks: the presets side by side -------------------------------------------------------------
@dataclass
class SinkRow(_Streamed):
    """One engine's (or the baseline's) run of one sink preset in one mode."""

    preset: str
    mode: str
    run_id: str
    engine: str
    color: str
    baseline: bool
    r: RunResult
    planning_vs_baseline: float | None = None  # the baseline's final scan planning time over this run's

    @property
    def sink(self):
        assert self.r.streaming is not None and self.r.streaming.sink is not None
        return self.r.streaming.sink


@dataclass
class SinkView:
    rows: list[SinkRow]
    chart: Markup = Markup("")


SINK_MARKERS = {"sequential": "o", "concurrent": "s", "branch": "^"}


def sink_rows(sets: list[ResultSet]) -> list[SinkRow]:
    """Every streaming run whose writer is an append sink, by preset (fewest rows per flush first), mode, the
    baseline first, then engine."""
    rows = []
    for rs in sets:
        base = next((lr.r for lr in rs.runs if lr.r.streaming and lr.r.streaming.baseline), None)
        base_planning = base.streaming.totals.final_planning_s if base is not None and base.streaming else None
        for lr in rs.runs:
            st = lr.r.streaming
            if st is None or st.sink is None:
                continue
            mine = st.totals.final_planning_s
            rows.append(SinkRow(st.sink.preset or rs.scenario_name, st.mode, rs.run_id, lr.r.engine, _color(rs, lr.r),
                                st.baseline, lr.r,
                                round(base_planning / mine, 3) if base_planning and mine else None))
    return sorted(rows, key=lambda x: (x.sink.rows_per_flush, x.preset, x.mode, not x.baseline, x.engine))


def sink_comparison(sets: list[ResultSet]) -> SinkView | None:
    """The append-sink presets side by side (a table and the chart of cost per GB ingested against files per
    GB, per engine), or None without any sink run."""
    rows = sink_rows(sets)
    if not rows:
        return None
    points: dict[str, list[tuple[float, float, str, str]]] = {}
    for row in rows:
        if row.t.files_per_gb is not None and row.t.cost_usd_per_gb is not None:
            points.setdefault(row.engine, []).append((row.t.files_per_gb, row.t.cost_usd_per_gb, row.preset,
                                                      SINK_MARKERS.get(row.mode, "o")))
    colors = {row.engine: row.color for row in rows}
    modes = dict.fromkeys(row.mode for row in rows)  # in the rows' order: a set's order follows the hash seed
    return SinkView(rows, Markup(sink_chart(points, colors, {m: SINK_MARKERS.get(m, "o") for m in modes})))
