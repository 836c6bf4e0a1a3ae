"""The cost column: the cost stored in each result when it ran, or every run re-priced (--instance-type), and the
caption that says which."""

from __future__ import annotations

from bench.core.cost import run_cost
from bench.core.results import Cost, RunResult
from reports.model.view import CostView, ResultSet


def costs(rs: ResultSet, instance_type: str | None) -> CostView:
    """The cost shown per run: the one stored when it ran, or re-priced when --instance-type asks."""
    stored = list(dict.fromkeys(lr.r.cost.instance_type for lr in rs.runs if lr.r.cost.instance_type))
    stored_label = ", ".join(stored) or "not recorded"
    if instance_type:
        for lr in rs.runs:
            lr.cost = _reprice(lr.r, instance_type)
        c = next(lr.cost for lr in rs.runs if lr.cost is not None)
        hyp = any(lr.cost.hypothetical for lr in rs.runs if lr.cost is not None)
        caption = (f"Re-priced with --instance-type: the on-demand price of {c.instance_type} "
                   f"(${c.usd_per_hour:g}/h) × the compaction time stored in each result"
                   + (f" — hypothetical: the {c.instance_type} price applied to this machine's time." if hyp else
                      f"; the runs were measured on {c.instance_type}.")
                   + f" The costs stored in the results (computed when the runs ran) are at {stored_label}.")
        return CostView(label=f"{c.instance_type} (re-priced)", usd_per_hour=c.usd_per_hour, repriced=True,
                        hypothetical=hyp, caption=caption, stored_label=stored_label)
    for lr in rs.runs:
        lr.cost = lr.r.cost
    priced = [lr.r.cost for lr in rs.runs if lr.r.cost.instance_type]
    if not priced:
        return CostView(label="not recorded", usd_per_hour=None, repriced=False, hypothetical=True,
                        caption="These results carry no cost (give --instance-type to price them).",
                        stored_label=stored_label)
    hyp = any(c.hypothetical for c in priced)
    rates = sorted({c.usd_per_hour for c in priced})
    label = stored[0] if len(stored) == 1 else "mixed: " + stored_label
    rate = f"${rates[0]:g}/h" if len(rates) == 1 else "/".join(f"${r:g}" for r in rates) + " per hour"
    if hyp:
        caption = (f"Cost = the on-demand price of {stored_label} ({rate}), the published node, applied to "
                   f"the compaction time measured on this machine ({rs.machine}): hypothetical, this is not "
                   f"what the run cost here. Computed when each run ran and stored in its result.")
    else:
        caption = (f"Cost = the on-demand price of {stored_label} ({rate}) × the compaction time, measured "
                   f"on a {stored_label}. Computed when each run ran and stored in its result.")
    return CostView(label=label, usd_per_hour=rates[0] if len(rates) == 1 else None, repriced=False,
                    hypothetical=hyp, caption=caption, stored_label=stored_label)


def _reprice(r: RunResult, instance_type: str) -> Cost:
    duration = r.duration_s if r.status == "ok" else None
    c = run_cost(duration, instance_type, ran_on=r.environment.instance_type)
    if c.total_usd is not None:  # storage and S3 terms do not depend on the price
        c.storage_usd, c.s3_usd, c.extra = r.cost.storage_usd, r.cost.s3_usd, dict(r.cost.extra)
        c.total_usd += (c.storage_usd or 0.0) + (c.s3_usd or 0.0)
    c.note = "re-priced by bench report --instance-type: " + c.note
    return c

