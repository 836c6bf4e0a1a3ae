"""Result sets: the loaded runs grouped one set per (run id, scenario, scale, run directory), each set built section
by section (the modules beside this one), in the order the report reads them."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from pydantic import ValidationError

from bench.core.cost import parse_instance
from bench.core.results import ScenarioRecord
from bench.core.stats import all_speedups, engine_stats, floors
from reports.model.colors import assign_colors
from reports.model.costs import costs
from reports.model.engines import engine_row, memory_notes
from reports.model.loading import Loaded, LoadedRun
from reports.model.method import method
from reports.model.published import published
from reports.model.reads import reads_view
from reports.model.view import Report, ResultSet
from reports.source import source_header


def group(runs: list[LoadedRun]) -> list[tuple[tuple[str, str, float, Path], list[LoadedRun]]]:
    """Result sets: one per (run id, scenario, scale, run directory), in the order first seen (campaigns
    reuse run ids such as a tune's cfg-00 and confirm: their directories tell them apart)."""
    groups: dict[tuple[str, str, float, Path], list[LoadedRun]] = defaultdict(list)
    for lr in runs:
        groups[(lr.r.run_id, lr.r.scenario, lr.r.scale, lr.path.parent)].append(lr)
    for v in groups.values():
        v.sort(key=lambda lr: (lr.r.warmup is False, lr.r.rep, lr.r.order_position, lr.r.engine))
    return list(groups.items())


def build(loaded: Loaded, instance_type: str | None = None) -> Report:
    colors = assign_colors(loaded.runs)
    reprice = parse_instance(instance_type) if instance_type else None  # an unknown type is a UserError
    sets = []
    for i, ((run_id, scenario, scale, run_dir), members) in enumerate(group(loaded.runs)):
        rs = ResultSet(run_id=run_id, scenario_name=scenario, scale=scale, runs=members, anchor=f"set-{i + 1}")
        rs.run_state = loaded.states.get(run_dir)
        results = [lr.r for lr in members]
        rs.engines = list(dict.fromkeys(r.engine for r in results))
        rs.colors = {e: colors[e] for e in rs.engines}
        rs.stats = engine_stats(results)
        rs.speedups = all_speedups(results)  # between engines that commit: a floor is compared on its own
        rs.floor_labels = floors(results)
        _scenario(rs)
        first = rs.first
        rs.env = first.environment
        rs.env_differs = any(lr.r.environment.cpu != rs.env.cpu or lr.r.environment.packages != rs.env.packages
                             for lr in members)
        rs.machine = rs.env.describe()
        rs.runtimes = runtimes(rs)
        rs.cost = costs(rs, instance_type if reprice else None)
        rs.budget = next((r.memory_budget_bytes for r in results if r.memory_budget_bytes), None)
        rs.enforcement = sorted({r.memory_enforcement for r in results if r.memory_enforcement})
        rs.versions = dict(first.versions)
        rs.rows = [engine_row(rs, e) for e in rs.engines]
        rs.method = method(rs)
        published(rs)
        memory_notes(rs)
        rs.reads = reads_view(rs)
        rs.partition_runs = [lr for lr in members if lr.r.partitions is not None]
        sets.append(rs)
    with_results = {lr.path.parent for rs in sets for lr in rs.runs}
    incomplete_only = [st for d, st in loaded.states.items() if d not in with_results]
    return Report(sets, incomplete_only, len(loaded.runs))


def runtimes(rs: ResultSet) -> str:
    """The Iceberg release each engine recorded (or, where no run of it lived to report one, the runtime it
    declared), and the Iceberg Java of the harness's own JVMs where the results record it."""
    parts = []
    for e in rs.engines:
        runs = [lr.r for lr in rs.runs if lr.r.engine == e]
        v = next((r.versions["iceberg"] for r in runs if r.versions.get("iceberg")), None)
        declared = next((r.engine_runtime for r in runs if r.engine_runtime), "")
        if v is not None:
            parts.append(f"{e} Iceberg {v}")
        elif declared:
            parts.append(f"{e} {declared} (as declared: no run reported its versions)")
    harness = [f"the harness's own JVMs Iceberg {rs.env.iceberg_java}"] if rs.env.iceberg_java else []
    return "; ".join([*parts, *harness])


def _scenario(rs: ResultSet) -> None:
    """The scenario as it was run, from the results themselves."""
    records = [lr.r.scenario_record for lr in rs.runs]
    rs.record = next((rec for rec in records if rec.sha256 or rec.content), ScenarioRecord())
    if not (rs.record.sha256 or rs.record.content):
        rs.scenario_notes.append(
            f"These results carry no scenario record (written by an older harness): the definition of "
            f"scenario {rs.scenario_name!r} as it was run is unknown, so no description or published "
            f"figures are shown.")
        return
    rs.description = rs.record.description
    rs.source = source_header([lr.r for lr in rs.runs])
    try:  # a run on the user's own table (--source-table) has nothing published to compare with
        rs.published = None if any(lr.r.source for lr in rs.runs) else rs.record.published()
    except ValidationError as e:
        rs.scenario_notes.append(f"The published figures in the scenario record are unreadable: "
                                 f"{str(e).splitlines()[0]}")
    hashes = Counter(rec.sha256 or "none" for rec in records)
    if len(hashes) > 1:
        parts = ", ".join(f"{h} ({n} run{'s' if n != 1 else ''})" for h, n in hashes.items())
        rs.scenario_notes.append(
            f"The runs of this set were run with {len(hashes)} different definitions of scenario "
            f"{rs.scenario_name!r} (sha256 {parts}): they may not be comparable. The description and "
            f"published figures shown are those of sha256 {rs.record.sha256}.")
