"""The "cluster" section: an engine that ran on a cluster (its results' `deployment` is of a cluster mode: a
standalone master with one or more workers, on this node or on several), its time and cost against the
number of nodes, beside the fastest engine that ran on one node as the reference.

Points come from every run set of one scenario and scale in the report (cluster sizes are usually
separate runs, one per cluster size the Terraform provisions).  Every number is over verified runs.  Where the
cluster engine ran at two or more node counts, a model is fitted to its medians,

    time(n) = fixed + parallel / n        (least squares in 1/n)

and the node count at which it would match the reference is given, labelled as a model: it assumes the
parallel part divides evenly over nodes and nothing else grows with them (no shuffle or storage limit).
With one node count, the section says that the model needs more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bench.core.spread import Spread
from reports.model.view import ResultSet, by_scenario_scale

MODEL = "time(n) = fixed + parallel / n, least squares over the medians in 1/n"
ASSUMPTIONS = ("the parallel part divides evenly over the nodes; the fixed part (driver, planning, commit) "
               "does not grow with them; storage and network do not cap the throughput")


@dataclass
class ClusterRow:
    run_id: str
    label: str
    color: str
    nodes: int
    workers: int | None
    executors: int | None
    cores: int | None
    time: Spread
    cost_median: float | None
    is_reference: bool = False


@dataclass
class ClusterModel:
    label: str
    fixed_s: float
    parallel_s: float
    points: int
    match_nodes: float | None  # nodes at which time(n) = the reference's time; None: never
    sentence: str


@dataclass
class ClusterSection:
    scenario: str
    scale: float
    rows: list[ClusterRow]
    reference: ClusterRow | None
    models: list[ClusterModel] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def chart_series(self) -> dict[str, list[tuple[int, float, float, float]]]:
        """label -> [(nodes, median, min, max)] of the cluster labels."""
        out: dict[str, list[tuple[int, float, float, float]]] = {}
        for r in self.rows:
            t = r.time
            if not r.is_reference and t.median is not None and t.min is not None and t.max is not None:
                out.setdefault(r.label, []).append((r.nodes, t.median, t.min, t.max))
        return out


def _fit(points: list[tuple[int, float]]) -> tuple[float, float] | None:
    """(fixed, parallel) of time = fixed + parallel / n over (n, time), least squares; None below two n."""
    xs = [1.0 / n for n, _ in points]
    if len(set(xs)) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(t for _, t in points) / len(points)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (t - my) for x, (_, t) in zip(xs, points)) / sxx
    return my - b * mx, b


def _model(label: str, points: list[tuple[int, float]], ref: ClusterRow | None) -> ClusterModel | None:
    fit = _fit(points)
    if fit is None:
        return None
    fixed, parallel = fit
    match: float | None = None
    if ref is not None and ref.time.median is not None:
        t_ref = ref.time.median
        if parallel > 0 and t_ref > fixed:
            match = parallel / (t_ref - fixed)
        elif parallel <= 0 and fixed <= t_ref:
            match = 1.0
    if ref is None or ref.time.median is None:
        sentence = f"model: {fixed:.1f} s + {parallel:.1f} s / n (no single-node reference in this report)"
    elif match is None:
        sentence = (f"model: {fixed:.1f} s + {parallel:.1f} s / n never reaches {ref.label}'s "
                    f"{ref.time.median:.1f} s on one node (its fixed part alone is longer)")
    else:
        sentence = (f"model: {fixed:.1f} s + {parallel:.1f} s / n matches {ref.label}'s {ref.time.median:.1f} s "
                    f"on one node at about {math.ceil(match)} node{'s' if math.ceil(match) != 1 else ''} "
                    f"({match:.2f})")
    return ClusterModel(label=label, fixed_s=fixed, parallel_s=parallel, points=len(points), match_nodes=match,
                        sentence=sentence)


def _facts(rs: ResultSet, label: str) -> tuple[bool, int, int | None, int | None, int | None]:
    """(ran on a cluster, nodes, workers, executors, cores) of a label, from its first counting run."""
    runs = [lr.r for lr in rs.runs if lr.r.engine == label and lr.counts] or \
           [lr.r for lr in rs.runs if lr.r.engine == label]
    if not runs:
        return False, 1, None, None, None
    r = runs[0]
    d = r.deployment
    on_cluster = d is not None and d.on_cluster
    workers = (d.workers or 1) if d is not None and on_cluster else None
    execs = d.executors if d is not None and on_cluster else None
    cores = d.cores if d is not None and d.cores is not None else r.cores
    return on_cluster or r.nodes > 1, max(1, r.nodes), workers, execs, cores


def cluster_sections(sets: list[ResultSet]) -> list[ClusterSection]:
    """One section per (scenario, scale) whose run sets hold a cluster engine."""
    out = []
    for (scenario, scale), group in by_scenario_scale(sets):
        rows: list[ClusterRow] = []
        singles: list[ClusterRow] = []
        for rs in group:
            for label in rs.engines:
                if label in rs.floor_labels:
                    continue
                on_cluster, nodes, workers, execs, cores = _facts(rs, label)
                row_stats = rs.stats.get(label)
                if row_stats is None:
                    continue
                eng_row = next((x for x in rs.rows if x.engine == label), None)
                row = ClusterRow(run_id=rs.run_id, label=label, color=rs.colors.get(label, "#7B8794"), nodes=nodes,
                                 workers=workers, executors=execs, cores=cores, time=row_stats.duration_s,
                                 cost_median=eng_row.cost_median if eng_row else None)
                (rows if on_cluster else singles).append(row)
        if not rows:
            continue
        # the reference: the fastest single-node label of a run set that holds the cluster runs (same run,
        # same conditions), else of any run set of this scenario and scale
        cluster_runs = {r.run_id for r in rows}
        timed = [r for r in singles if r.time.median is not None and r.run_id in cluster_runs] or \
                [r for r in singles if r.time.median is not None]
        ref = min(timed, key=lambda r: r.time.median or 0.0) if timed else None
        if ref is not None:
            ref.is_reference = True
        section = ClusterSection(scenario=scenario, scale=scale, rows=sorted(rows, key=lambda r: (r.label, r.nodes)),
                                 reference=ref)
        by_label: dict[str, dict[int, list[float]]] = {}
        for r in rows:
            if r.time.median is not None:
                by_label.setdefault(r.label.split(":")[0], {}).setdefault(r.nodes, []).append(r.time.median)
        for base, per_n in by_label.items():
            pts = [(n, sorted(v)[len(v) // 2]) for n, v in sorted(per_n.items())]
            m = _model(base, pts, ref)
            if m is not None:
                section.models.append(m)
            else:
                section.notes.append(
                    f"{base} ran on {pts[0][0] if pts else '?'} node{'s' if pts and pts[0][0] != 1 else ''} only: "
                    "the model time(n) = fixed + parallel / n needs verified runs at two or more node counts "
                    "(e.g. clusters of 1, 3 and 5 nodes)")
        out.append(section)
    return out


__all__ = ["ASSUMPTIONS", "MODEL", "ClusterSection", "cluster_sections"]
