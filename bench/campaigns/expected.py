"""What to expect on a user's table: the latest sweep's (and frontier's) fits of its scenario, at its size."""

from __future__ import annotations

from pathlib import Path

from bench.campaigns.frontier import frontier_at
from bench.campaigns.plan import latest
from bench.core.campaign import find_summaries
from bench.scenario import load_scenario


def expected_on_table(scenario: str, logical_bytes: int, sources: list[Path]) -> dict:
    """Expected time and peak memory per engine, on this node, for a table of `logical_bytes` (Parquet
    uncompressed) under `scenario`: the latest sweep's fits (and frontier's, for the smallest budget) of
    that scenario found under `sources`.  A model fitted on generated tables of the scenario's shape, not a
    measurement; {"model": None, "note": ...} when there is no fit."""
    sc = load_scenario(scenario)
    summaries = find_summaries(sources)
    sw, fr = latest(summaries, "sweep", sc.name), latest(summaries, "frontier", sc.name)
    where = ", ".join(map(str, sources))
    if sw is None or not sw.time_fits:
        return {"model": None, "note": f"no fitted model of {sc.name} under {where}: run bench sweep "
                                       f"{sc.name} --scales ... first"}
    gb = logical_bytes / 1e9
    engines: dict[str, dict] = {}
    for e, fit in sw.time_fits.items():
        measured = sorted(p.gb for p in sw.points if p.engine == e and p.verified)
        mem = sw.memory_fits.get(e)
        engines[e] = {
            "seconds": max(fit.predict(gb), 0.0), "interval": fit.interval(gb), "time_fit": fit.note,
            "peak_rss_bytes": max(mem.predict(gb), 0.0) if mem is not None and mem.n else None,
            "min_budget_bytes": frontier_at(fr, e, gb) if fr is not None else None,
            "extrapolated": bool(measured) and not measured[0] <= gb <= measured[-1],
            "measured_gb": [measured[0], measured[-1]] if measured else []}
    return {"model": f"sweep {sw.sweep_id} of {sw.scenario} ({sw.started_at}, {sw.machine or 'this node'}, "
                     f"{sw.cores} cores)" + (f" and frontier {fr.frontier_id}" if fr is not None else "")
                     + f", found under {where}",
            "gb": gb, "engines": engines,
            "note": "a MODEL, not a measurement: time = fixed + per_GB x the table's logical GB and peak memory "
                    "the same way, fitted on generated tables of this scenario's shape on the sweep's node; "
                    "your table's schema, file sizes, partitions and deletes differ from them"}
