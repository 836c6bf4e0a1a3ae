"""The plan of a full reproduction from the fits: datagen time, disk space, engine times, memory frontiers,
wall time, cost, the EBS size and deadline it needs (`bench aws up` uses it); a model throughout."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from bench.campaigns.frontier import frontier_at
from bench.campaigns.points import core_runs
from bench.core.campaign import (
    HARNESS_STEPS,
    FrontierSummary,
    HarnessScalingSummary,
    Plan,
    PlannedEngine,
    PlannedNode,
    PlannedScenario,
    SweepSummary,
    find_summaries,
)
from bench.core.cost import (
    S3_USD_PER_GB_MONTH,
    SECONDS_PER_MONTH,
    Gp3Volume,
    InstancePrice,
    gp3_usd,
    parse_instance,
    s3_usd,
)
from bench.core.errors import UserError
from bench.core.fit import CoreScaling, node_model, scaling_for
from bench.core.fmt import fmt_scale
from bench.core.published import PUBLISHED_INSTANCE
from bench.core.storage import StorageOption, custom_storage, storage_option
from bench.core.units import GiB
from bench.scenario import Scenario, load_scenario


def latest(summaries: list, kind: str, scenario: str):
    # a frontier over partition counts is of a reshaped table at one scale: no size to plan from
    mine = [s for s in summaries if s.kind == kind and s.scenario == scenario and not getattr(s, "partitions", None)]
    return max(mine, key=lambda s: s.started_at) if mine else None


def recipe_objects(sc: Scenario, scale: float) -> int:
    """Data and delete files the scenario's recipe writes at `scale` (its declared counts; metadata files,
    a few per commit, not counted)."""
    t = sc.table
    full = sum(int(getattr(t, k, 0) or 0) for k in ("files", "data_files", "position_delete_files",
                                                      "equality_delete_files"))
    return int(math.ceil(full * scale))


def harness_scalings(summaries: list) -> dict[str, CoreScaling]:
    """Per harness step, the latest complete `bench selfcheck scaling` measurement found."""
    found = [x for x in summaries if isinstance(x, HarnessScalingSummary) and x.state == "complete"]
    out: dict[str, CoreScaling] = {}
    for x in sorted(found, key=lambda x: x.started_at):
        out |= {c.engine: c for c in x.steps if c.engine in HARNESS_STEPS}
    return out


def harness_assumption(measured: dict[str, CoreScaling], cores: int) -> str:
    """The plan's assumption line for the harness's own steps: measured scaling where usable, else perfect."""
    def how(step: str) -> str:
        sc = measured.get(step)
        if sc is None:
            return f"{step}: perfectly to {cores} cores (not measured: run `bench selfcheck scaling`)"
        if not sc.usable:
            return (f"{step}: perfectly to {cores} cores (its 1 -> 2 core measurement kept {sc.busy_1 or 0:.2f} "
                    f"of one core busy: not used)")
        busy = f", {sc.busy_1:.2f} and {sc.busy_2 or 0:.2f} cores busy" if sc.busy_1 is not None else ""
        return (f"{step}: {sc.t1_s:.2f} s on 1 core, {sc.t2_s:.2f} s on 2{busy}: efficiency {sc.efficiency:.2f}, "
                f"Amdahl parallel fraction {sc.parallel_fraction:.3f}, so {sc.speedup(cores):.1f}x of one core on "
                f"{cores} cores (model)")
    return ("the harness's own steps, each at least its bytes at that storage (datagen's writes; the input read "
            "once per dataset, its bytes alone; verification, each run's output read twice, by name and by field "
            "id), else as measured here scaled by size and by cores: " + "; ".join(how(x) for x in HARNESS_STEPS
                                                                                  if x != "input read"))


NODE_SETUP_S = 300.0  # each node's boot and setup in a plan: an assumption (see make_plan's assumptions)
DEFAULT_TIMEOUT_S = 3600.0  # the time limit of one engine run: bench run --timeout's and Terraform's default


def assign_nodes(walls: dict[str, float | None], nodes: int) -> list[list[str]]:
    """Spread scenarios over `nodes` nodes: the longest planned wall first, each onto the node with the least
    planned so far (LPT); a scenario without a planned wall goes last, in the order given.  A scenario is never
    split: both engines of it run on one node, on one input.  Never more nodes than scenarios."""
    if nodes < 1:
        raise UserError(f"--nodes {nodes}: give at least 1")
    names = list(dict.fromkeys(walls))
    n = min(nodes, len(names)) or 1
    groups: list[list[str]] = [[] for _ in range(n)]
    load = [0.0] * n
    known = sorted((x for x in names if walls[x] is not None), key=lambda x: -(walls[x] or 0.0))
    for name in known + [x for x in names if walls[x] is None]:
        i = min(range(n), key=lambda k: (load[k], len(groups[k]), k))
        groups[i].append(name)
        load[i] += walls[name] or 0.0
    return [g for g in groups if g]


def plan_assumptions(st: StorageOption, inst: InstancePrice, measured: dict[str, CoreScaling],
                     core_scalings: list[CoreScaling], nodes: int, node_setup_s: float,
                     timeout_s: float | None) -> list[str]:
    """The plan's stated assumptions, one line each (a model throughout: these are what it assumes)."""
    engine_times = (f"engine times: the per-core throughput measured in the latest sweep, scaled perfectly to "
                    f"{inst.vcpu} cores, capped by that storage over the bytes each run reads and writes; fixed "
                    f"costs as measured")
    if core_scalings:
        engine_times = (f"engine times: the per-core throughput measured in the latest sweep, scaled to "
                        f"{inst.vcpu} cores by Amdahl's law fitted to each engine's measured 1 -> 2 "
                        f"core efficiency ({'; '.join(c.describe() for c in core_scalings)}), "
                        "linearly for an engine without one, capped by that storage over the bytes each "
                        "run reads and writes; fixed costs as measured")
    out = [
        f"storage: {st.label}, {st.mb_s:,.0f} MB/s{' per direction' if st.duplex else ''} ({st.assumption})",
        engine_times,
        harness_assumption(measured, inst.vcpu),
        "engine start-up (session and catalog warm-up) and the harness's restore and cache step per "
        "run: as measured here, not scaled",
        "reads (reader queries before and after each run): as measured here scaled by size and cores "
        "when the sweep ran them; a sweep runs compaction only, so they are not planned then (run "
        "with --readers off, or plan them from a run with readers)",
        "memory: the frontier fit (if any) against the instance's RAM; a run predicted to run out "
        "of memory is planned for its modelled time all the same (when it would run out is not "
        "modelled), up to the time limit",
        (f"time limit of one engine run: {timeout_s / 60:g} min (bench run --timeout, Terraform's "
         "engine_timeout_seconds): a run modelled longer is planned at the limit, recorded as a timeout "
         "(unless it runs out of memory first), with no output to verify" if timeout_s else
         "time limit of one engine run: none"),
        f"each node's boot and setup (EC2's boot, apt, pip, `bench setup`): "
        f"{node_setup_s / 60:g} min, assumed, not measured (`make test-deps`, more than a node "
        "installs, took 3.6 min on a fresh machine here)",
        "not planned: the report and the upload of the results",
        "disk: the largest scenario's input and output, plus 30 % and 20 GB of headroom",
        "cost: on-demand price x the planned time, plus the storage's own price for that time "
        "(provisioned gp3 above its baseline; on S3 its PUT and GET requests for the recipe's data "
        "and delete files and the outputs, and its GB-months)"]
    if nodes > 1:
        out.append(
            f"{nodes} nodes of this type at once: the scenarios spread over them, the longest planned first onto "
            "the least loaded node; both engines of a scenario on one node, on one input (as on one node); the "
            "wall is the longest node's, the cost the sum of the nodes' times; nodes do not slow each other (each "
            "its own volume; on S3 one bucket, assumed not to throttle)")
    return out


@dataclass
class PlanTarget:
    """What a plan plans for: the instance and its storage, the scale and reps, the time limit of one run,
    and the measured scalings (the engines' 1 -> 2 core runs, the harness's steps)."""
    inst: InstancePrice
    st: StorageOption
    scale: float
    reps: int
    timeout_s: float | None
    measured: dict[str, CoreScaling]
    core_scalings: list[CoreScaling]
    file_scale: float | None = None  # --file-scale: the file counts of this scale (None: those of `scale`)

    def harness(self, step: str, here: int | None) -> float:
        """How much shorter a harness step is on the target's cores than on the sweep's: measured (Amdahl on the
        step's 1 -> 2 core efficiency) where `bench selfcheck scaling` found it usable, else perfectly."""
        sc = self.measured.get(step)
        if sc is None or not sc.usable:
            return (here or 1) / self.inst.vcpu
        return sc.speedup(here or 1) / sc.speedup(self.inst.vcpu)


@dataclass
class ScenarioBounds:
    """One planned scenario's lower bounds and S3 requests: the engines' bytes at the storage (`bytes_s`), the
    harness's own bytes (datagen's, the input read's, the verifier's), the published engine times."""
    bytes_s: float = 0.0
    harness_bytes_s: float = 0.0
    published_s: float = 0.0
    puts: int = 0
    gets: int = 0
    complete: bool = True


def plan_engine(t: PlanTarget, sc: Scenario, sw: SweepSummary, fr: FrontierSummary | None, ps: PlannedScenario,
                e: str, b: ScenarioBounds, objects: int) -> PlannedEngine | None:
    """One engine of a planned scenario from its sweep's fit (and frontier), its bounds added to `b`; None
    without a fit or a verified point."""
    fit = sw.time_fits.get(e)
    mine = [p for p in sw.points if p.engine == e and p.verified]
    if fit is None or not mine:
        return None
    st, reps, gb = t.st, t.reps, ps.logical_bytes / 1e9
    top_e = max(mine, key=lambda p: p.scale)
    read_b = top_e.disk_gb / top_e.gb * gb * 1e9 if top_e.gb else ps.dataset_bytes
    write_b = (top_e.output_disk_gb or 0.0) / top_e.gb * gb * 1e9 if top_e.gb else ps.output_bytes
    model = node_model(t.inst.name, t.inst.vcpu, st.effective_mb_s(read_b, write_b), top_e.mean_cores or 1.0,
                       (read_b + write_b) / ps.logical_bytes if ps.logical_bytes else 1.0, f"{sw.cores} cores",
                       scaling_for(t.core_scalings, sc.name, e))
    m = model.seconds(fit, gb)
    pe = PlannedEngine(engine=e, seconds=m["seconds"], bound=m["bound"], setup_s=top_e.setup_s,
                       restore_s=top_e.restore_s, source=f"sweep {sw.sweep_id}: {fit.note}")
    shrink = (sw.cores or 1) / t.inst.vcpu * gb / top_e.gb if top_e.gb else None
    if top_e.verify_s is not None and top_e.gb:
        pe.verify_s = max(top_e.verify_s * t.harness("verification", sw.cores) * gb / top_e.gb,
                          st.seconds(2 * write_b, 0.0))
    if top_e.reads_s is not None and shrink is not None:
        pe.reads_s = top_e.reads_s * shrink
    if fr is not None:
        pe.min_budget_bytes = frontier_at(fr, e, gb)
        if pe.min_budget_bytes is not None:
            pe.predicted_memory = "oom" if pe.min_budget_bytes > int(t.inst.memory_gib * GiB) else "ok"
            ps.sources.append(f"frontier {fr.frontier_id}")
    if pe.seconds is not None and t.timeout_s and pe.seconds > t.timeout_s:
        # the run's time limit ends it (a recorded timeout, unless it runs out of memory first): it
        # spends the limit, writes no complete output and has nothing to verify
        pe.modelled_s, pe.seconds, pe.verify_s = pe.seconds, t.timeout_s, None
    if pe.seconds is None:
        b.complete = False
    else:
        cut = pe.modelled_s is not None
        b.bytes_s += reps * min(st.seconds(read_b, write_b), pe.seconds)
        b.harness_bytes_s += 0.0 if cut else reps * st.seconds(2 * write_b, 0.0)
        for step, secs in ((f"{e} runs", pe.seconds), ("engine start-up", pe.setup_s),
                           ("verification", pe.verify_s), ("restore", pe.restore_s), ("reads", pe.reads_s)):
            ps.steps[step] = ps.steps.get(step, 0.0) + reps * (secs or 0.0)
        out_files = max(1, int(math.ceil(write_b / sc.target_file_size_bytes))) \
            if sc.target_file_size_bytes and not cut else 0
        b.puts += reps * out_files
        b.gets += reps * (objects + 2 * out_files)  # the engine reads the input, the verifier the output twice
    pub_s = sc.published.duration_s.get(e) if sc.published and t.scale == sc.published.scale else None
    if pub_s:
        b.published_s += reps * pub_s
    return pe


def plan_scenario(t: PlanTarget, name: str, summaries: list, sources: list[Path]) -> tuple[PlannedScenario,
                                                                                          ScenarioBounds]:
    """One scenario of the plan from its latest sweep (and frontier): its sizes, steps, wall and bounds."""
    sc = load_scenario(name)
    sw = latest(summaries, "sweep", sc.name)
    fr = latest(summaries, "frontier", sc.name)
    ps = PlannedScenario(scenario=sc.name, scale=t.scale, logical_bytes=0, dataset_bytes=0, output_bytes=0)
    b = ScenarioBounds()
    if sw is None or not sw.points:
        ps.notes.append(f"no sweep of {sc.name} found under {', '.join(map(str, sources))}: run "
                        f"`bench sweep {sc.name} --scales ...` first")
        b.complete = False
        return ps, b
    st = t.st
    ps.sources.append(f"sweep {sw.sweep_id}")
    top = max(sw.points, key=lambda p: p.scale)
    gb = top.gb / top.scale * t.scale
    ps.logical_bytes = gb * 1e9
    ps.dataset_bytes = top.disk_gb / top.gb * gb * 1e9 if top.gb else 0
    outs = [p for p in sw.points if p.output_disk_gb]
    ps.output_bytes = (max(p.output_disk_gb or 0 for p in outs) / top.gb * gb * 1e9) if outs and top.gb else 0
    if sw.datagen_fit is not None and sw.datagen_fit.per_gb > 0:
        ps.datagen_s = max(max(sw.datagen_fit.predict(gb), 0.0) * t.harness("datagen", sw.cores),
                           st.seconds(0.0, ps.dataset_bytes))
        ps.steps["datagen"] = ps.datagen_s
    else:
        ps.notes.append("no datagen fit in the sweep: datagen not planned")
    ps.steps["input read once"] = st.seconds(ps.dataset_bytes, 0.0)
    b.harness_bytes_s += st.seconds(0.0, ps.dataset_bytes) + st.seconds(ps.dataset_bytes, 0.0)
    objects = recipe_objects(sc, t.scale if t.file_scale is None else t.file_scale)
    if t.file_scale is not None:
        ps.notes.append(f"file counts of scale {fmt_scale(t.file_scale)} ({objects:,} data and delete files): S3 "
                        f"requests are counted for them, but the engine times come from the sweep's fits against "
                        f"bytes, which do not see file counts (a count sweep, `bench sweep {sc.name} --scale S "
                        f"--file-scales ...`, measures them)")
    b.puts += objects
    b.gets += objects  # the baseline read
    for e in sw.engines:
        pe = plan_engine(t, sc, sw, fr, ps, e, b, objects)
        if pe is not None:
            ps.engines.append(pe)
    if not any(pe.reads_s is not None for pe in ps.engines):
        ps.notes.append("reads: not planned (the sweep measured none: it runs compaction only)")
    ps.wall_s = sum(ps.steps.values())
    return ps, b


def plan_nodes(plan: Plan, bounds: dict[str, ScenarioBounds], nodes: int, node_setup_s: float) -> None:
    """Spread the planned scenarios over the nodes (each its boot and setup, then its scenarios one after the
    other); the plan's wall (the longest node), node time and lower bounds of the wall."""
    plan.node_setup_s = node_setup_s
    walls = {ps.scenario: ps.wall_s for ps in plan.scenarios}
    for group in assign_nodes(walls, nodes):
        mine = [bounds.get(x, ScenarioBounds()) for x in group]
        harness_s = sum(b.harness_bytes_s for b in mine)
        plan.nodes.append(PlannedNode(scenarios=group, wall_s=node_setup_s + sum(walls[x] or 0.0 for x in group),
                                      bytes_bound_s=sum(b.bytes_s for b in mine) + harness_s, harness_bytes_s=harness_s,
                                      published_s=sum(b.published_s for b in mine)))
    if node_setup_s:
        plan.steps["node boot and setup"] = node_setup_s * len(plan.nodes)
    longest = max(plan.nodes, key=lambda n: n.wall_s)
    plan.total_s = longest.wall_s  # a budget of minutes holds the longest node
    plan.node_s = sum(n.wall_s for n in plan.nodes)  # what is paid for
    # the lower bounds of the wall: the node whose scenarios' bytes (or published times) take longest
    plan.bytes_bound_s = max(n.bytes_bound_s for n in plan.nodes)
    bound = max(plan.nodes, key=lambda n: n.published_s + n.harness_bytes_s)
    plan.published_s = bound.published_s or None
    plan.harness_bytes_s = bound.harness_bytes_s


def plan_price(plan: Plan, t: PlanTarget, bounds: list[ScenarioBounds]) -> None:
    """The plan's cost (the nodes' time at the instance's price, plus the storage's own) and deadline."""
    st = t.st
    vol = Gp3Volume(plan.ebs_gb, st.volume_iops, st.volume_mib_s)  # each node has its own data volume
    plan.storage_usd = sum(sum(gp3_usd(n.wall_s, vol).values()) for n in plan.nodes)
    if st.warehouse == "s3":
        puts, gets = sum(b.puts for b in bounds), sum(b.gets for b in bounds)
        s3_gb_s = 0.0
        for ps in plan.scenarios:
            s3_gb_s += (ps.dataset_bytes + ps.output_bytes) / 1e9 * (ps.wall_s or 0.0)
        plan.storage_usd += s3_usd({"put": puts, "get": gets}) + s3_gb_s / SECONDS_PER_MONTH * S3_USD_PER_GB_MONTH
    plan.cost_usd = t.inst.usd_per_hour * (plan.node_s or 0.0) / 3600 + plan.storage_usd
    plan.deadline_minutes = min(2880, int(math.ceil(((plan.total_s or 0.0) * 1.5 / 60 + 30) / 10) * 10))


def make_plan(scenarios: list[str], scale: float, instance_type: str | None, reps: int, sources: list[Path],
              storage: StorageOption | float | None = None, budget_minutes: float | None = None,
              budget_usd: float | None = None, nodes: int = 1, node_setup_s: float | None = None,
              timeout_s: float | None = DEFAULT_TIMEOUT_S, file_scale: float | None = None) -> Plan:
    """Each step of a full reproduction from the fitted models (a model throughout): `storage` is where the
    table lives on the target (a bench.core.storage option, or a volume's MB/s; default gp3's baseline)."""
    st = storage if isinstance(storage, StorageOption) else custom_storage(storage) if storage \
        else storage_option("gp3-baseline")
    inst = parse_instance(instance_type or PUBLISHED_INSTANCE)
    node_setup_s = NODE_SETUP_S if node_setup_s is None else node_setup_s
    if node_setup_s < 0:
        raise UserError(f"--node-setup-minutes {node_setup_s / 60:g}: give 0 or more")
    summaries = find_summaries(sources)
    measured = harness_scalings(summaries)
    core_scalings = core_runs(sources)
    plan = Plan(instance_type=inst.name, cores=inst.vcpu, ram_bytes=int(inst.memory_gib * GiB),
                usd_per_hour=inst.usd_per_hour, reps=reps, storage_mb_s=st.mb_s, storage=st,
                budget_s=budget_minutes * 60 if budget_minutes else None, budget_usd=budget_usd,
                assumptions=plan_assumptions(st, inst, measured, core_scalings, nodes, node_setup_s, timeout_s),
                core_scalings=core_scalings, harness_scalings=list(measured.values()))
    t = PlanTarget(inst=inst, st=st, scale=scale, reps=reps, timeout_s=timeout_s, measured=measured,
                   core_scalings=core_scalings, file_scale=None if file_scale == scale else file_scale)
    bounds: list[ScenarioBounds] = []
    for name in scenarios:
        ps, b = plan_scenario(t, name, summaries, sources)
        for k, v in ps.steps.items():
            plan.steps[k] = plan.steps.get(k, 0.0) + v
        plan.scenarios.append(ps)
        bounds.append(b)
    plan.complete = all(b.complete for b in bounds)
    biggest = max((p.dataset_bytes + p.output_bytes for p in plan.scenarios), default=0.0)
    plan.ebs_gb = int(math.ceil((biggest * 1.3 / 1e9 + 20) / 10) * 10)
    if not sum(ps.wall_s or 0.0 for ps in plan.scenarios):
        return plan
    plan_nodes(plan, {ps.scenario: b for ps, b in zip(plan.scenarios, bounds)}, nodes, node_setup_s)
    plan_price(plan, t, bounds)
    return plan
