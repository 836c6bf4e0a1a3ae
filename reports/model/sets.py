"""Result sets: the loaded runs grouped one set per (run id, scenario, scale, run directory), each set built section
by section, in the order the report reads them: the cost column (stored, or re-priced with --instance-type, and the
caption that says which), the method block (engine orders, cache policies, input fingerprints, the user's own
table's pin, the verifier's rules), the published figures beside the measured ones (and the reasons, most
important first, why they differ), and what readers gained (each reader query's time before and after each
engine's compaction, over verified runs).

Reads only what a run left behind: the result JSON files, the samples Parquet files and `run.json`
beside them.  Never today's scenario files (a result carries the scenario it ran, `scenario_record`),
never recomputing what the runner stored (cost, verification, phases): only `--instance-type`
re-prices, and says so.  Every statistic is over verified runs (bench.core.stats); runs that failed,
ran out of memory, timed out or were rejected by the verifier are listed with their reasons.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from pydantic import ValidationError

from bench.core.cost import parse_instance, run_cost
from bench.core.errors import UserError
from bench.core.fmt import fmt_scale
from bench.core.machine import HARNESS_PACKAGES
from bench.core.published import PUBLISHED_RAM_BYTES, PUBLISHED_VCPU
from bench.core.records.engine_run import Cost
from bench.core.records.reads import QueryRead
from bench.core.records.scenario import ScenarioRecord
from bench.core.results import RunResult
from bench.core.stats import all_speedups, engine_stats, floors, median
from reports.model.colors import assign_colors
from reports.model.engines import engine_row, memory_notes
from reports.model.loading import Loaded, LoadedRun
from reports.model.view import CostView, Method, ReadRow, ReadsView, Report, ResultSet, group_by
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
            f"These results carry no scenario record: the definition of "
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


def method(rs: ResultSet) -> Method:
    orders: dict[str, list[str]] = {}
    for lr in rs.runs:
        if lr.r.engine_order:
            orders.setdefault(lr.r.tag, list(lr.r.engine_order))
    distinct = {tuple(o) for o in orders.values()}
    rotates = None if len(rs.engines) < 2 or len(orders) < 2 else len(distinct) > 1
    cache: Counter[str] = Counter()
    for lr in rs.runs:
        c = lr.r.cache
        text = c.mode + (f" ({c.note})" if c.note else "")
        if c.mode == "warm" and c.warmed_bytes:
            text += f", {c.warmed_bytes / 1e6:,.1f} MB read to warm it"
        if c.mode == "cold" and not c.dropped:
            text += " — NOT dropped"
        cache[text] += 1
    n = len(rs.runs)
    cache_lines = [t if len(cache) == 1 else f"{t}: {k} of {n} runs" for t, k in cache.items()]
    inputs = Counter((lr.r.input.fingerprint or "not recorded", lr.r.input.identical_to_dataset) for lr in rs.runs)
    input_lines = []
    for (fp, same), k in inputs.items():
        where = "every run" if k == n else f"{k} of {n} runs"
        input_lines.append(f"fingerprint {fp}: " + ("identical to the dataset" if same else
                                                    "NOT identical to the dataset") + f" ({where})")
    input_lines += _source_lines(rs)
    rules = next((lr.r.verification.rules for lr in rs.runs if lr.r.verification.rules), [])
    return Method(orders=list(orders.items()), rotates=rotates, cache=cache_lines, inputs=input_lines,
                  rules=list(rules))


def _source_lines(rs: ResultSet) -> list[str]:
    """Runs on the user's own table (`--source-table`): which table, and whether it stayed unchanged."""
    out = []
    for (table, snap, clone), runs in group_by([lr.r for lr in rs.runs if lr.r.source],
                                                     lambda r: (r.source.table, r.source.snapshot_id, r.source.clone)):
        changed = [r for r in runs if r.source.unchanged is False]
        unchecked = [r for r in runs if r.source.unchanged is None]
        state = (f"CHANGED after {len(changed)} of {len(runs)} runs: {changed[0].source.differences[0]}" if changed
                 else f"unchanged after every run (fingerprint {runs[0].source.fingerprint_before} over "
                      f"{runs[0].source.files} pinned files: size and sampled content)"
                      + (f"; {len(unchecked)} not checked" if unchecked else ""))
        out.append(f"your own table {table}, pinned at snapshot {snap}, compacted as its zero-copy clone {clone}: "
                   f"the pinned snapshot {state}")
    return out


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


def _query_reads(runs: list[LoadedRun], name: str) -> list[tuple[RunResult, QueryRead]]:
    return [(lr.r, q) for lr in runs if lr.r.reads is not None for q in lr.r.reads.queries if q.name == name]


def reads_view(rs: ResultSet) -> ReadsView | None:
    """What readers gained: per query, the before-time (median over the verified runs), the after-time
    per engine (median over its verified runs whose after-reads were measured) and the ratio of the
    medians.  Failed reads checks are listed from every measured run."""
    with_reads = [(lr, lr.r.reads) for lr in rs.measured if lr.r.reads is not None]
    if not with_reads:
        return None
    good = [lr for lr, rec in with_reads if lr.counts and rec.reader]
    names = list(dict.fromkeys(q.name for _, rec in with_reads for q in rec.queries))
    engines = [e for e in rs.engines if any(r.engine == e and r.reads is not None and r.reads.after_usable
                                            for r in (lr.r for lr in good))]
    rows = []
    for name in names:
        qs = _query_reads(good, name)
        row = ReadRow(query=name, sql=next((q.sql for _, q in qs), ""))
        before = [q.before_s for _, q in qs if q.before_s is not None]
        row.before_s, row.before_n = median(before), len(before)
        row.files_before = next((q.files_opened_before for _, q in qs if q.files_opened_before is not None), None)
        row.deletes_before = next((q.delete_files_merged_before for _, q in qs
                                   if q.delete_files_merged_before is not None), None)
        for e in engines:
            mine = [q for r, q in qs if r.engine == e and r.reads is not None and r.reads.after_usable
                    and q.after_s is not None]
            row.after_s[e], row.after_n[e] = median([q.after_s for q in mine]), len(mine)
            after = row.after_s[e]
            row.ratio[e] = row.before_s / after if row.before_s and after else None
            row.files_after[e] = mine[0].files_opened_after if mine else None
            row.deletes_after[e] = mine[0].delete_files_merged_after if mine else None
        rows.append(row)
    readers = sorted({f"{rec.reader or 'none'}: {rec.reader_reason}" for _, rec in with_reads})
    cache = sorted({f"{rec.cache} ({rec.cache_note})" if rec.cache_note else rec.cache for _, rec in with_reads})
    failures = [f"{lr.r.engine} {lr.r.tag}: {rec.message or rec.reader_reason}" for lr, rec in with_reads
                if not rec.ok]
    notes = sorted({f"{lr.r.engine}: {rec.after_note}" for lr, rec in with_reads if rec.after_note})
    source = next((q.counts_source for _, rec in with_reads for q in rec.queries if q.counts_source), "")
    return ReadsView(engines=engines, rows=rows, readers=readers, cache=cache, counts_source=source,
                     failures=failures, notes=notes)
