"""Result files -> the report's view model.  Reads only result JSON, samples files and scenarios."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bench.cost import DEFAULT_INSTANCE, PRICES, parse_instance, run_cost
from bench.environment import describe_machine
from bench.errors import UserError
from bench.results import RunResult, iter_result_files
from bench.stats import EngineStats, Speedup, all_speedups, engine_stats

PUBLISHED_INSTANCE = "m5.4xlarge"


@dataclass
class LoadedRun:
    result: RunResult
    path: Path
    samples: Any = None  # pandas DataFrame or None
    samples_note: str = ""  # why there are no samples

    @property
    def r(self) -> RunResult:
        return self.result


def load_runs(paths) -> list[LoadedRun]:
    """Every RunResult JSON under `paths` (files or directories), with its samples file if present."""
    out: list[LoadedRun] = []
    seen: set[Path] = set()
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise UserError(f"no such results file or directory: {p}")
        for f in iter_result_files(p):
            f = f.resolve()
            if f in seen:
                continue
            seen.add(f)
            try:
                data = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError) as e:
                if p.is_file():
                    raise UserError(f"{f} is not a readable JSON result: {e}") from None
                continue  # some other file beside the results
            if not (isinstance(data, dict) and "run_id" in data and "engine" in data):
                if p.is_file():
                    raise UserError(f"{f} is not a bench result (no run_id/engine)")
                continue  # job.json, outcome.json, ... beside the results
            try:
                r = RunResult.model_validate(data)
            except ValidationError as e:
                raise UserError(f"{f} is not a valid result: {str(e).splitlines()[0]}") from None
            out.append(LoadedRun(r, f))
    if not out:
        raise UserError(f"no results found in {', '.join(map(str, paths))} (expected "
                        f"<run-id>/<scenario>--<engine>--rep<N>.json files written by `bench run`)")
    for lr in out:
        _attach_samples(lr)
    return out


def _attach_samples(lr: LoadedRun) -> None:
    sf = lr.r.samples_file
    if not sf:
        lr.samples_note = "no samples file recorded"
        return
    p = Path(sf)
    candidates = [p] if p.is_absolute() else [lr.path.parent / p, Path.cwd() / p]
    for c in candidates:
        if c.exists():
            try:
                import pyarrow.parquet as pq

                lr.samples = pq.read_table(c).to_pandas()
            except Exception as e:  # noqa: BLE001 - a broken samples file is shown, not fatal
                lr.samples_note = f"samples file unreadable: {type(e).__name__}: {e}"
            return
    lr.samples_note = f"samples file missing: {sf}"


@dataclass
class EngineRow:
    engine: str
    stats: EngineStats
    cost_median: float | None
    cost_min: float | None
    cost_max: float | None
    cost_values: list[float]
    p95_cores_median: float | None
    read_bytes_median: float | None
    write_bytes_median: float | None
    files_out: list[int]
    bytes_out: list[int]
    after: Any  # TableStats of the first ok run, or None
    status_text: str
    published_s: float | None = None
    published_status: str | None = None
    published_cost: float | None = None
    throughput_mb_s: float | None = None
    published_throughput_mb_s: float | None = None


@dataclass
class ResultSet:
    run_id: str
    scenario_name: str
    scale: float
    runs: list[LoadedRun]
    scenario: Any = None  # bench.scenario.Scenario or None
    scenario_note: str = ""
    engines: list[str] = field(default_factory=list)
    stats: dict[str, EngineStats] = field(default_factory=dict)
    speedups: list[Speedup] = field(default_factory=list)
    rows: list[EngineRow] = field(default_factory=list)
    env: dict = field(default_factory=dict)
    env_differs: bool = False
    machine: str = ""
    instance: Any = None  # InstancePrice used for cost
    reasons: list[str] = field(default_factory=list)
    published_speedup: float | None = None
    budget: int | None = None
    enforcement: list[str] = field(default_factory=list)
    versions: dict = field(default_factory=dict)
    anchor: str = ""

    @property
    def measured(self) -> list[LoadedRun]:
        return [lr for lr in self.runs if not lr.r.warmup]

    @property
    def before(self):
        return self.runs[0].r.before

    @property
    def headline_speedup(self) -> Speedup | None:
        usable = [s for s in self.speedups if s.ratio.n]
        if not usable:
            return None
        return max(usable, key=lambda s: s.ratio.median)


def fmt_scale(v: float) -> str:
    return f"{v:.10f}".rstrip("0").rstrip(".") if v < 0.01 else f"{v:g}"


def _median(vals):
    import statistics

    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def group(runs: list[LoadedRun]) -> list[tuple[tuple[str, str, float], list[LoadedRun]]]:
    """Result sets: one per (run id, scenario, scale), in the order first seen."""
    groups: dict[tuple[str, str, float], list[LoadedRun]] = defaultdict(list)
    for lr in runs:
        groups[(lr.r.run_id, lr.r.scenario, lr.r.scale)].append(lr)
    for v in groups.values():
        v.sort(key=lambda lr: (lr.r.warmup is False, lr.r.rep, lr.r.engine))
    return list(groups.items())


def build(runs: list[LoadedRun], instance_type: str | None = None) -> list[ResultSet]:
    from bench.scenario import load_scenario

    sets = []
    for i, ((run_id, scenario, scale), members) in enumerate(group(runs)):
        rs = ResultSet(run_id=run_id, scenario_name=scenario, scale=scale, runs=members,
                       anchor=f"set-{i + 1}")
        try:
            rs.scenario = load_scenario(scenario)
        except UserError as e:
            rs.scenario_note = str(e)
        results = [lr.r for lr in members]
        rs.engines = list(dict.fromkeys(r.engine for r in results))
        rs.stats = engine_stats(results)
        rs.speedups = all_speedups(results)
        rs.env = members[0].r.environment or {}
        rs.env_differs = any((lr.r.environment or {}).get("cpu") != rs.env.get("cpu") or
                             (lr.r.environment or {}).get("packages") != rs.env.get("packages")
                             for lr in members)
        rs.machine = describe_machine(rs.env)
        rs.instance = _instance_for(results, instance_type)
        rs.budget = next((r.memory_budget_bytes for r in results if r.memory_budget_bytes), None)
        rs.enforcement = sorted({r.memory_enforcement for r in results if r.memory_enforcement})
        rs.versions = dict(members[0].r.versions)
        rs.rows = [_engine_row(rs, e) for e in rs.engines]
        _published(rs)
        sets.append(rs)
    return sets


def _instance_for(results: list[RunResult], requested: str | None):
    if requested:
        return parse_instance(requested)
    recorded = {r.cost.get("instance_type") for r in results if r.cost.get("instance_type")}
    if len(recorded) == 1:
        name = recorded.pop()
        price = next(r.cost.get("usd_per_hour") for r in results if r.cost.get("instance_type") == name)
        if name in PRICES and PRICES[name].usd_per_hour == price:
            return PRICES[name]
        return parse_instance(f"{name}={price}")
    return parse_instance(DEFAULT_INSTANCE)


def run_cost_usd(r: RunResult, instance) -> float | None:
    """The run's cost at `instance`: the recorded one when it was priced the same way, else recomputed
    from the duration with the same formula."""
    c = r.cost or {}
    if (c.get("instance_type") == instance.name and c.get("usd_per_hour") == instance.usd_per_hour
            and c.get("total_usd") is not None):
        return float(c["total_usd"])
    if r.duration_s is None or r.status != "ok":
        return None
    return run_cost(r.duration_s, f"{instance.name}={instance.usd_per_hour}")["total_usd"]


def _engine_row(rs: ResultSet, engine: str) -> EngineRow:
    st = rs.stats[engine]
    runs = [lr.r for lr in rs.measured if lr.r.engine == engine]
    ok = [r for r in runs if r.status == "ok"]
    costs = [c for c in (run_cost_usd(r, rs.instance) for r in ok) if c is not None]
    statuses = ", ".join(f"{n} {s}" for s, n in sorted(st.statuses.items(), key=lambda kv: kv[0] != "ok"))
    bytes_in = _median([r.bytes_in for r in ok])
    return EngineRow(
        engine=engine, stats=st,
        cost_median=_median(costs), cost_min=min(costs) if costs else None,
        cost_max=max(costs) if costs else None, cost_values=costs,
        p95_cores_median=_median([r.telemetry.p95_cores for r in runs]),
        read_bytes_median=_median([r.telemetry.read_bytes for r in runs]),
        write_bytes_median=_median([r.telemetry.write_bytes for r in runs]),
        files_out=[r.files_out for r in ok if r.files_out is not None],
        bytes_out=[r.bytes_out for r in ok if r.bytes_out is not None],
        after=ok[0].after if ok else None,
        status_text=statuses or "no measured run",
        throughput_mb_s=(bytes_in / st.duration_s.median / 1e6
                         if bytes_in and st.duration_s.median else None),
    )


def _published(rs: ResultSet) -> None:
    """Published figures beside the measured ones, and why they differ."""
    sc = rs.scenario
    pub = sc.published if sc is not None else None
    if pub is None:
        if sc is not None:
            rs.reasons.append("This scenario has no published figures to compare with.")
        return
    pub_bytes = sc.table.total_bytes * pub.scale if sc.table.kind == "smallfiles" else None
    for row in rs.rows:
        row.published_s = pub.duration_s.get(row.engine)
        row.published_status = pub.status.get(row.engine) or ("ok" if row.published_s else None)
        if row.published_s:
            row.published_cost = run_cost(row.published_s, PUBLISHED_INSTANCE)["total_usd"]
            if pub_bytes:
                row.published_throughput_mb_s = pub_bytes / row.published_s / 1e6
    durations = {e: s for e, s in pub.duration_s.items() if s}
    if len(durations) >= 2:
        hi, lo = max(durations.values()), min(durations.values())
        rs.published_speedup = hi / lo
    # reasons, most important first
    measured_bytes = rs.before.data_bytes + rs.before.delete_bytes
    size = (f"{measured_bytes / 1e6:,.1f} MB in {rs.before.data_files + rs.before.delete_files:,} files"
            if measured_bytes else "a smaller table")
    pub_size = (f"~{pub_bytes / 1e9:,.0f} GB in {sc.table.files:,} files" if pub_bytes else "the full table")
    rs.reasons.append(
        f"Scale: measured at scale {fmt_scale(rs.scale)} ({size}); published at scale {fmt_scale(pub.scale)} "
        f"({pub_size}). "
        f"Durations do not scale linearly: fixed costs (JVM start, planning, commits) dominate small "
        f"tables, so compare throughput and the speedup's direction rather than seconds.")
    cpu = rs.env.get("cpu", {}) if rs.env else {}
    mem = rs.env.get("memory", {}) if rs.env else {}
    cores = cpu.get("usable_cores") or cpu.get("logical_cores")
    ram = mem.get("total_bytes")
    rs.reasons.append(
        f"Machine: measured on {rs.machine}; published on {pub.machine}."
        + (f" {cores} cores vs 16 vCPU limits the parallelism of both engines." if cores and cores < 16 else "")
        + (f" {ram / 1e9:.0f} GB RAM vs 64 GB changes the memory budget." if ram and ram < 60e9 else ""))
    v = rs.versions
    parts = [f"{k} {v[k]}" for k in ("pyspark", "iceberg-compaction", "snowpark-connect-deps-iceberg",
                                     "pyiceberg") if v.get(k)]
    rs.reasons.append("Versions: measured with " + (", ".join(parts) or "the recorded versions") +
                      "; the published benchmark did not state its Spark, Iceberg or RisingWave versions.")
    for row in rs.rows:
        if row.published_status and row.published_status != "ok" and row.stats.ok:
            rs.reasons.append(f"Outcome: {row.engine} was published as {row.published_status.upper()} but "
                              f"succeeded here (smaller table, so less memory needed).")
        elif row.published_status == "ok" and row.stats.runs and not row.stats.ok:
            rs.reasons.append(f"Outcome: {row.engine} succeeded in the published run but not here "
                              f"({row.status_text}).")
    if pub.notes:
        rs.reasons.append(f"Published notes: {pub.notes}")
