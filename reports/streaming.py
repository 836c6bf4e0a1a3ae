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
from bench.core.results import RunResult
from reports import charts
from reports.model import ResultSet

MEANING = {
    "safe": "every reader sees exactly the table the writer committed (rows and checksum from the generator)",
    "unsafe": "a reader sees other rows: rows lost, or rows the writer deleted are back (evidence: which keys)",
    "inconclusive": "no reader could read the table",
}


@dataclass
class StreamRow:
    engine: str
    color: str
    r: RunResult

    @property
    def t(self):
        assert self.r.streaming is not None
        return self.r.streaming.totals


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
                       first.commits_per_cycle, first.rows_per_commit, list(first.maintenance))
        for r in sorted(runs, key=lambda r: (not (r.streaming and r.streaming.baseline), r.engine)):
            v.rows.append(StreamRow(r.engine, rs.colors.get(r.engine) or r.engine_color or charts.MUTED, r))
            for c in r.streaming.cycles if r.streaming else []:
                if c.verdict == "unsafe":
                    v.unsafe.append(f"{r.engine} cycle {c.cycle}: {c.reason}")
        colors = {row.engine: row.color for row in v.rows}
        panels = [(title, fmt, {row.engine: [(c.cycle, get(c)) for c in row.r.streaming.cycles]
                                for row in v.rows if row.r.streaming is not None})
                  for title, fmt, get in PANELS]
        v.chart = Markup(charts.cycle_panels_chart(panels, colors))
        views.append(v)
    return views
