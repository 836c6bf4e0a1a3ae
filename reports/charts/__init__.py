"""Charts as inline SVG (matplotlib, Agg-free SVG backend): no files, no external resources.

Each function returns an SVG string ready to be placed in the HTML.  Element ids inside each SVG are
prefixed with a unique chart id, so several SVGs can live in one document without clashing.  A chart is a pure
function of its arguments: one drawn again with the same arguments in the same process is the drawing kept
(`chart`), under a new id prefix.  Engine
colours come from the results (`RunResult.engine_color`, resolved by reports.model.assign_colors):
every chart takes them as a dict engine -> colour.

Its rooms, one a section of what the report shows: `base` (the memo, style, SVG and ticks every chart shares),
`bars` (a result set's engines: time, cost, floor, memory, cores, phases), `timelines`, `campaigns` (sweeps,
frontiers, tunes), `resources` (nodes, storage caps) and `streaming` (cycles, append sinks).  This module is their
one import face, and the one place that chooses matplotlib's backend (before any of them imports pyplot).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("svg")

from reports.charts.bars import (  # noqa: E402
    cores_chart,
    cost_chart,
    duration_chart,
    floor_chart,
    memory_chart,
    phases_chart,
)
from reports.charts.base import ID_SLOT, MUTED, _memo  # noqa: E402
from reports.charts.campaigns import (  # noqa: E402
    GB_AXIS,
    PARTITIONS_AXIS,
    XAxis,
    frontier_chart,
    scaling_chart,
    speedup_scaling_chart,
    tune_chart,
)
from reports.charts.resources import cap_chart, cluster_chart  # noqa: E402
from reports.charts.streaming import cycle_panels_chart, sink_chart  # noqa: E402
from reports.charts.timelines import cpu_timeline, memory_timeline, timeline_chart  # noqa: E402

__all__ = ["GB_AXIS", "ID_SLOT", "MUTED", "PARTITIONS_AXIS", "XAxis", "_memo", "cap_chart", "cluster_chart",
           "cores_chart", "cost_chart", "cpu_timeline", "cycle_panels_chart", "duration_chart", "floor_chart",
           "frontier_chart", "memory_chart", "memory_timeline", "phases_chart", "scaling_chart", "sink_chart",
           "speedup_scaling_chart", "timeline_chart", "tune_chart"]
