"""A plan said: its table, and whether it fits the budgets it was given (and if not, by how much and where
the time goes)."""

from __future__ import annotations

from dataclasses import dataclass

from bench.campaigns.plan import assign_nodes
from bench.core.campaign import Plan
from bench.core.fmt import fmt_bytes, fmt_scale


def plan_table(plan: Plan) -> str:
    def t(s: float | None) -> str:
        return "-" if s is None else f"{s / 60:,.1f} min"

    st = plan.storage
    rows = [f"plan (a MODEL, not a measurement): {plan.instance_type} ({plan.cores} vCPU, "
            f"{fmt_bytes(plan.ram_bytes)}), {plan.reps} rep(s) per engine, "
            + (f"storage {st.name} ({st.label}, {st.mb_s:,.0f} MB/s{' per direction' if st.duplex else ''})" if st
               else f"storage {plan.storage_mb_s:,.0f} MB/s")]
    for ps in plan.scenarios:
        rows.append(f"  {ps.scenario} at scale {fmt_scale(ps.scale)}: {ps.logical_bytes / 1e9:,.0f} GB logical, "
                    f"{ps.dataset_bytes / 1e9:,.0f} GB on disk, datagen {t(ps.datagen_s)}, wall {t(ps.wall_s)}")
        for e in ps.engines:
            mem = (f", needs ~{fmt_bytes(e.min_budget_bytes)} -> {e.predicted_memory}" if e.min_budget_bytes else "")
            if e.modelled_s is not None:
                mem += (f"; modelled {t(e.modelled_s)}: cut at the time limit (a timeout, unless out of memory "
                        "first; nothing to verify)")
            rows.append(f"    {e.engine:<12} {t(e.seconds)} per run ({e.bound}-bound), start-up "
                        f"{e.setup_s or 0:.0f} s, restore {e.restore_s or 0:.0f} s, verification {t(e.verify_s)}"
                        + (f", reads {t(e.reads_s)}" if e.reads_s is not None else "") + mem)
        rows += [f"    note: {n}" for n in ps.notes]
    missing = [p.scenario for p in plan.scenarios if not p.engines]
    if plan.cost_usd is not None and plan.total_s:
        paid = plan.node_s or plan.total_s
        if len(plan.nodes) > 1:
            rows += [f"  node {i + 1}: {', '.join(n.scenarios)}: {t(n.wall_s)} (with its boot and setup "
                     f"{t(plan.node_setup_s)})" for i, n in enumerate(plan.nodes)]
        rows.append(f"  total {t(plan.total_s)}"
                    + (f" (the longest of {len(plan.nodes)} nodes at once; {t(paid)} of node time)"
                       if len(plan.nodes) > 1 else "")
                    + f", cost ${plan.cost_usd:,.2f} (compute ${plan.usd_per_hour * paid / 3600:,.2f} at "
                    f"${plan.usd_per_hour:g}/h, storage ${plan.storage_usd or 0:,.2f})"
                    + (f" for the planned scenarios only ({', '.join(missing)}: no sweep, not counted)"
                       if missing else ""))
        rows.append("  shares" + (" of the node time" if len(plan.nodes) > 1 else "") + ": "
                    + ", ".join(f"{k} {t(v)} ({v / paid:.0%})"
                                for k, v in sorted(plan.steps.items(), key=lambda kv: -kv[1])))
        rows += plan_verdict(plan)
    else:
        rows.append("  total: unknown (no scenario has a sweep)")
    rows.append(f"  EBS: {plan.ebs_gb} GB at {plan.storage_mb_s:.0f} MB/s; deadline {plan.deadline_minutes} min")
    rows += [f"  assumes: {a}" for a in plan.assumptions]
    return "\n".join(rows)


@dataclass
class NodesAnswer:
    """The fewest nodes (scenarios spread longest first) whose longest node fits a time budget: `nodes` and that
    spread's `wall_s`; or None when none can, `longest` alone taking `wall_s` (`cut`: it has runs cut at the
    time limit)."""
    nodes: int | None
    wall_s: float = 0.0
    longest: str = ""
    cut: bool = False


def nodes_to_fit(plan: Plan, budget_s: float) -> NodesAnswer | None:
    """How many nodes at once fit `budget_s` (None: nothing planned)."""
    walls = {ps.scenario: ps.wall_s for ps in plan.scenarios if ps.wall_s}
    if not walls:
        return None
    longest = max(walls, key=lambda x: walls[x] or 0.0)
    alone = plan.node_setup_s + (walls[longest] or 0.0)
    if alone > budget_s:
        mine = next((ps for ps in plan.scenarios if ps.scenario == longest), None)
        return NodesAnswer(nodes=None, wall_s=alone, longest=longest,
                           cut=bool(mine and any(e.modelled_s is not None for e in mine.engines)))
    for n in range(1, len(walls) + 1):
        wall = max(plan.node_setup_s + sum(walls[x] or 0.0 for x in g) for g in assign_nodes(walls, n))
        if wall <= budget_s:
            return NodesAnswer(nodes=n, wall_s=wall, longest=longest)
    return NodesAnswer(nodes=None, wall_s=alone, longest=longest)  # unreachable: one scenario per node is `alone`


@dataclass
class PlanVerdict:
    """Whether a plan fits the budgets it was given, as numbers (`plan_verdict` says them): each None where
    the plan has no such budget or figure."""
    over_s: float | None = None  # the wall minus the time budget (<= 0: fits)
    largest_step: tuple[str, float] = ("-", 0.0)
    nodes: NodesAnswer | None = None  # when over the time budget: the nodes at once that would fit it
    bytes_over_budget: bool = False  # the bytes alone at this storage take longer than the time budget
    least_s: float | None = None  # the published engine times plus the harness's own bytes at this storage
    least_over_budget: bool = False
    over_usd: float | None = None  # the cost minus the dollar budget (<= 0: fits)
    least_usd: float | None = None  # least_s at the instance's price, compute only (one node)
    max_usd_per_hour: float | None = None  # over the dollar budget: the instance price that would hold it
    storage_over_usd: bool = False  # over the dollar budget: the storage alone costs more than it


def verdict(plan: Plan) -> PlanVerdict:
    """The plan against its time and dollar budgets, and its lower bounds against them."""
    v = PlanVerdict()
    total = plan.total_s or 0.0
    v.largest_step = max(plan.steps.items(), key=lambda kv: kv[1], default=("-", 0.0))
    if plan.budget_s:
        v.over_s = total - plan.budget_s
        if v.over_s > 0:
            v.nodes = nodes_to_fit(plan, plan.budget_s)
        v.bytes_over_budget = bool(plan.bytes_bound_s and plan.bytes_bound_s > plan.budget_s)
    if plan.published_s:
        v.least_s = plan.published_s + (plan.harness_bytes_s or 0.0)
        v.least_over_budget = bool(plan.budget_s and v.least_s > plan.budget_s)
    if plan.budget_usd and plan.cost_usd is not None:
        v.over_usd = plan.cost_usd - plan.budget_usd
        if v.least_s is not None and len(plan.nodes) <= 1:
            v.least_usd = plan.usd_per_hour * v.least_s / 3600
        paid_h = (plan.node_s or total) / 3600
        left = plan.budget_usd - (plan.storage_usd or 0.0)
        if v.over_usd > 0 and paid_h:
            v.max_usd_per_hour = left / paid_h if left > 0 else None
            v.storage_over_usd = left <= 0
    return v


def plan_verdict(plan: Plan) -> list[str]:
    """Whether the plan fits the budget it was given, and if not by how much and where the time goes."""
    v, rows = verdict(plan), []
    if plan.budget_s and v.over_s is not None:
        over, biggest = v.over_s, v.largest_step
        rows.append(f"  budget {plan.budget_s / 60:,.0f} min: " + (
            f"fits, {-over / 60:,.1f} min to spare" if over <= 0 else
            f"does NOT fit: {over / 60:,.1f} min over ({over / plan.budget_s:.0%}); the largest step is "
            f"{biggest[0]} ({biggest[1] / 60:,.1f} min)"))
        if over > 0:
            rows.append("  " + nodes_needed(v.nodes))
    if plan.bytes_bound_s:
        rows.append(f"  the bytes alone at this storage: {plan.bytes_bound_s / 60:,.1f} min (datagen's writes, the "
                    f"input read once, each run's reads and writes, the verification's two reads of each output)"
                    + (": more than the budget, so no faster engine, datagen or verifier fits it on this storage"
                       if v.bytes_over_budget else ""))
    if plan.published_s and v.least_s is not None:
        rows.append(f"  the published engine times alone: {plan.published_s / 60:,.1f} min (each planned run's "
                    f"published time; runs published as out of memory not counted); with the harness's own bytes at "
                    f"this storage (datagen, the input read once, verification): {v.least_s / 60:,.1f} min"
                    + (": more than the budget for any reproduction that reproduces the published times"
                       if v.least_over_budget else ""))
    if plan.budget_usd and v.over_usd is not None:
        rows += _usd_verdict(plan, v)
    return rows


def _usd_verdict(plan: Plan, v: PlanVerdict) -> list[str]:
    over_usd, budget = v.over_usd or 0.0, plan.budget_usd or 0.0
    rows = [f"  budget ${budget:,.2f}: " + (
        f"fits, ${-over_usd:,.2f} to spare" if over_usd <= 0 else
        f"does NOT fit: ${over_usd:,.2f} over ({over_usd / budget:.0%})")]
    if v.least_usd is not None:
        rows.append(f"  the published engine times and the harness's own bytes alone, at ${plan.usd_per_hour:g}/h "
                    f"(compute only, no storage): ${v.least_usd:,.2f}"
                    + (": more than the budget for any reproduction that reproduces the published times at "
                       "this price" if v.least_usd > budget else ""))
    if v.max_usd_per_hour is not None:
        rows.append(f"  ${budget:,.2f} holds at an instance price of ${v.max_usd_per_hour:,.3f}/h or less"
                    f" ({v.max_usd_per_hour / plan.usd_per_hour:.0%} of ${plan.usd_per_hour:g}/h): a spot price, if "
                    "AWS's of the day is that low (not known offline: plan with "
                    f"--instance-type {plan.instance_type.split('=')[0]}=PRICE, run with bench aws up --spot)")
    elif v.storage_over_usd:
        rows.append(f"  the storage alone costs ${plan.storage_usd or 0:,.2f}: no instance price fits ${budget:,.2f}")
    return rows


def nodes_needed(a: NodesAnswer | None) -> str:
    """The fewest nodes whose longest node fits the budget, or why none can, said."""
    if a is None:
        return "nodes: nothing planned"
    if a.nodes is None:
        limit = " or a shorter time limit per run (--timeout) for its runs cut at it" if a.cut else ""
        return (f"no number of nodes fits it: {a.longest} alone takes {a.wall_s / 60:,.1f} min on one node (a "
                f"scenario is never split: both engines run on one node, on one input); only faster runs{limit} "
                "would")
    return (f"with {a.nodes} nodes at once it fits: {a.wall_s / 60:,.1f} min (bench plan --nodes {a.nodes}; "
            f"bench aws up --nodes {a.nodes})")
