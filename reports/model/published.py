"""The published figures beside the measured ones, and the reasons, most important first, why they differ (scale,
machine, versions, outcomes)."""

from __future__ import annotations

from bench.core.cost import run_cost
from bench.core.errors import UserError
from bench.core.fmt import fmt_scale
from bench.core.machine import HARNESS_PACKAGES
from bench.core.published import PUBLISHED_RAM_BYTES, PUBLISHED_VCPU
from reports.model.view import ResultSet


def _gb(v: float) -> str:
    """Bytes as decimal GB, MB below 1 GB, in the sentences beside the published figures (not bench.core.fmt.fmt_gb,
    whose input is already in GB and whose digits differ; the template's `gb` filter has other digits too: one
    format for both would change the rendered text)."""
    return f"{v / 1e9:,.0f} GB" if v >= 10e9 else f"{v / 1e9:,.1f} GB" if v >= 1e9 else f"{v / 1e6:,.1f} MB"


def published(rs: ResultSet) -> None:
    """Published figures beside the measured ones, and why they differ."""
    pub = rs.published
    if pub is None:
        if any(lr.r.source for lr in rs.runs):
            rs.reasons.append("Your own table (--source-table): the published figures are for the scenario's "
                              "generated table, so none are compared.")
        elif rs.record.content:
            rs.reasons.append("This scenario has no published figures to compare with.")
        return
    for row in rs.rows:
        row.published_s = pub.duration_s.get(row.engine)
        row.published_status = pub.status.get(row.engine) or ("ok" if row.published_s else None)
        if row.published_s:
            try:
                row.published_cost = run_cost(row.published_s, pub.instance_type, ran_on=pub.instance_type).total_usd
            except UserError:
                row.published_cost = None
            if pub.logical_bytes:
                row.published_throughput_mb_s = pub.logical_bytes / row.published_s / 1e6
    durations = {e: s for e, s in pub.duration_s.items() if s}
    if len(durations) >= 2:
        rs.published_speedup = max(durations.values()) / min(durations.values())
    # reasons, most important first
    b = rs.before
    files = b.data_files + b.delete_files
    size = (f"{_gb(b.uncompressed_bytes)} uncompressed, {_gb(b.data_bytes + b.delete_bytes)} on disk, in "
            f"{files:,} files" if b.uncompressed_bytes else
            f"{_gb(b.data_bytes + b.delete_bytes)} on disk in {files:,} files" if files else "a smaller table")
    n = rs.record.table().total_files
    pub_files = round(n * pub.scale) if n is not None else None
    pub_size = ", ".join(x for x in (f"~{_gb(pub.logical_bytes)} uncompressed" if pub.logical_bytes else "",
                                     f"{pub_files:,} files" if pub_files else "") if x) or "the full table"
    rs.reasons.append(
        f"Scale: measured at scale {fmt_scale(rs.scale)}"
        + (f" of bytes and rows, {fmt_scale(rs.file_scale)} of file counts (--file-scale)" if rs.file_scale else "")
        + f" ({size}); published at scale {fmt_scale(pub.scale)} "
        f"({pub_size}). Durations do not scale linearly: fixed costs (start-up, planning, commits) dominate "
        f"small tables, so compare throughput and the speedup's direction rather than seconds.")
    cores = rs.env.cores
    ram = rs.env.memory.total_bytes
    rs.reasons.append(
        f"Machine: measured on {rs.machine}; published on {pub.machine}."
        + (f" {cores} cores vs {PUBLISHED_VCPU} vCPU limits the parallelism of every engine."
           if cores and cores < PUBLISHED_VCPU else "")
        + (f" {ram / 1e9:.0f} GB RAM vs {PUBLISHED_RAM_BYTES / 1e9:.0f} GB changes the memory budget."
           if ram and ram < PUBLISHED_RAM_BYTES * 15 / 16 else ""))  # (a 64 GB node reports a little less)
    v = rs.versions
    engine_packages = [f"{k} {v[k]}" for k in sorted(v) if v.get(k) and k not in HARNESS_PACKAGES]
    rs.reasons.append("Versions: measured with " + (", ".join(engine_packages) or "the recorded versions") +
                      "; the published benchmark did not state its engine or Iceberg versions.")
    for row in rs.rows:
        if row.published_status and row.published_status != "ok" and row.stats.verified:
            rs.reasons.append(f"Outcome: {row.engine} was published as {row.published_status.upper()} but "
                              f"succeeded here (a smaller table needs less memory).")
        elif row.published_status == "ok" and row.stats.runs and not row.stats.verified:
            rs.reasons.append(f"Outcome: {row.engine} succeeded in the published run but not here "
                              f"({row.status_text}).")
    if pub.notes:
        rs.reasons.append(f"Published notes: {pub.notes}")
