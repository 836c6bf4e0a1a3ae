"""The engines table: one row per engine of a result set (its verified runs' statistics, costs, phases, memory and
catalog-server usage, what stands in for a missing number), and the notes that explain its oom and heap-oom runs."""

from __future__ import annotations

from bench.core.fmt import fmt_bytes
from bench.core.spread import Spread
from bench.core.stats import EngineStats, median
from reports.model.loading import LoadedRun
from reports.model.view import EngineRow, PhaseRow, ResultSet
from reports.source import why_not_verified


def missing_text(st: EngineStats) -> str:
    """What stands where an engine's number would be when it has no verified run."""
    parts = [f"NOT VERIFIED ×{st.unverified}" if st.unverified > 1 else "NOT VERIFIED"] if st.unverified else []
    parts += [f"{s.upper()} ×{n}" if n > 1 else s.upper() for s, n in st.statuses.items() if s != "ok"]
    return f"no verified run ({', '.join(parts) or 'none measured'})"



def engine_row(rs: ResultSet, engine: str) -> EngineRow:
    st = rs.stats[engine]
    mine = [lr for lr in rs.runs if lr.r.engine == engine]
    runs = [lr for lr in mine if not lr.r.warmup]
    good = [lr for lr in runs if lr.counts]
    ok = [lr for lr in runs if lr.r.status == "ok"]
    costs = [lr.cost.total_usd for lr in good if lr.cost is not None and lr.cost.total_usd is not None]
    parts = [f"{st.verified} verified"] if st.verified else []
    if st.unverified:
        parts.append(f"{st.unverified} NOT verified")
    parts += [f"{n} {s}" for s, n in st.statuses.items() if s != "ok"]
    after_run = (good or ok)[0] if good or ok else None
    row = EngineRow(
        engine=engine, color=rs.colors[engine], stats=st, verified_runs=good,
        missing=None if st.verified else missing_text(st),
        cost_median=median(costs), cost_min=min(costs) if costs else None,
        cost_max=max(costs) if costs else None, cost_values=costs,
        p95_cores_median=median([lr.r.telemetry.p95_cores for lr in good]),
        read_bytes_median=median([lr.r.telemetry.read_bytes for lr in good]),
        write_bytes_median=median([lr.r.telemetry.write_bytes for lr in good]),
        after=after_run.r.after if after_run else None, after_verified=bool(good),
        status_text=", ".join(parts) or "no measured run", why_not=why_not_verified([lr.r for lr in runs]),
    )
    # throughput: the uncompressed (logical) size of the input, the same measure as the published one
    logical = median([lr.r.before.uncompressed_bytes or None for lr in good])
    if logical and st.duration_s.median:
        row.throughput_mb_s = logical / st.duration_s.median / 1e6
    row.phases = _phases(good, st)
    # memory
    row.budget = next((lr.r.memory_budget_bytes for lr in mine if lr.r.memory_budget_bytes), None)
    row.enforcement = next((lr.r.memory_enforcement for lr in mine if lr.r.memory_enforcement), "")
    with_caps = [lr.r.memory_caps for lr in (runs + mine) if lr.r.memory_caps]
    row.caps = with_caps[0] if with_caps else []
    row.caps_differ = any([c.model_dump() for c in caps] != [c.model_dump() for c in row.caps] for caps in with_caps)
    peaks = [(lr.r.telemetry.peak_rss_bytes, lr.r.status) for lr in runs if lr.r.telemetry.peak_rss_bytes]
    if peaks:
        row.peak_any, row.peak_any_status = max(peaks, key=lambda p: p[0])
    # the loopback REST catalog server's work during this engine's runs
    served = [lr for lr in good if lr.r.catalog_server is not None]
    row.catalog_measured = len(served)
    for name in ("cpu_s", "peak_rss_bytes", "requests", "commits", "commit_s", "request_s"):
        row.catalog[name] = Spread.of(getattr(lr.r.catalog_server, name) for lr in served)
    return row


def _phases(good: list[LoadedRun], st: EngineStats) -> list[PhaseRow]:
    """Median seconds of each phase over verified runs: setup phases first (excluded from the compaction
    time), then the compaction's own, in the order the engine ran them."""
    out: list[PhaseRow] = []
    details: dict[tuple[bool, str], str] = {}
    for lr in good:
        for setup, phases in ((True, lr.r.setup_phases), (False, lr.r.phases)):
            for p in phases:
                if p.detail:
                    details.setdefault((setup, p.name), p.detail)
    setup_names = list(dict.fromkeys(p.name for lr in good for p in lr.r.setup_phases))
    for n in setup_names:
        out.append(PhaseRow(n, True, Spread.of(sum(p.seconds for p in lr.r.setup_phases if p.name == n)
                                               for lr in good), details.get((True, n), "")))
    total = st.duration_s.median
    for n, spread in st.phases.items():
        share = spread.median / total if total and spread.median is not None else None
        out.append(PhaseRow(n, False, spread, details.get((False, n), ""), share))
    return out


def memory_notes(rs: ResultSet) -> None:
    """oom and heap-oom, explained next to the runs (and published outcomes) that have them."""
    for row in rs.rows:
        mine = [lr for lr in rs.measured if lr.r.engine == row.engine]
        n_oom = sum(1 for lr in mine if lr.r.status == "oom")
        n_heap = sum(1 for lr in mine if lr.r.status == "heap-oom")
        caps = "; ".join(f"{c.name} {fmt_bytes(c.bytes) if c.bytes else 'no limit'}" for c in row.caps)
        if n_oom:
            rs.memory_notes.append(
                f"{row.engine}: {n_oom} run{'s' if n_oom > 1 else ''} OOM — the harness's memory budget "
                f"({fmt_bytes(row.budget)}) was exceeded: the kernel killed the engine in its cgroup, or the RSS "
                f"watchdog stopped it ({row.enforcement or 'enforcement not recorded'}).")
        if n_heap:
            rs.memory_notes.append(
                f"{row.engine}: {n_heap} run{'s' if n_heap > 1 else ''} HEAP-OOM — the engine's own limit "
                f"({caps or 'not recorded'}) was hit while its process tree was below the harness's budget "
                f"({fmt_bytes(row.budget)}): a limit of the engine's configuration, not of the machine.")
        if row.published_status in ("oom", "heap-oom"):
            what = ("its own memory limit (heap-oom)" if row.published_status == "heap-oom" else
                    "out of memory (the published figures do not say which limit)")
            pub = rs.published
            rs.memory_notes.append(
                f"{row.engine} was published as {row.published_status.upper()}: {what} on "
                f"{pub.machine if pub else 'the published machine'}"
                + (f" ({pub.notes})" if pub and pub.notes else "") + ".")
