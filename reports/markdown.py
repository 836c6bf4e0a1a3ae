"""Results -> Markdown: the measured tables the docs quote, and the generated blocks of the docs pages.

`bench report RESULTS... --markdown FILE` writes the tables of any runs; `bench docs` re-renders every
block of the docs pages between

    <!-- BEGIN generated: docs/reference/*-bin-packing -->
    ...
    <!-- END generated -->

from the runs its header names (paths or globs, relative to the repository), and `bench docs --check`
fails with a diff when a page differs from what its runs render.  The numbers come from the report's
own view model (reports.model, over bench.core.stats): verified runs only, speedups paired by
repetition.  The text depends on the result files alone (no clock, no absolute path), so the same
runs always render the same page.
"""

from __future__ import annotations

import difflib
import glob
import re
from pathlib import Path

from bench.core.errors import UserError
from bench.core.fileio import write_atomic
from bench.core.fmt import fmt_bytes, fmt_ratio, fmt_scale, fmt_seconds
from bench.core.spread import Spread
from bench.core.stats import floor_multiples
from reports.conformance import case_run_sets, locate, matrix_markdown
from reports.counts import counts_markdown
from reports.floorcheck import floor_checks, summary_lines
from reports.model.loading import load_runs
from reports.model.sets import build
from reports.model.view import ResultSet

BLOCK = re.compile(r"^(<!-- BEGIN generated: (?P<src>[^>\n]*?) -->\n)(?P<body>.*?)^(<!-- END generated -->)",
                   re.S | re.M)
PAGES = ("README.md", "docs/*.md")
CONFINEMENT = "confinement: "  # a block header's prefix: the runs' storage-cap and core-limit sections
CONFORMANCE = "conformance: "  # a block header's prefix: the conformance matrix of a `bench conformance` run
SINKS = "sinks: "  # a block header's prefix: the append-sink presets side by side over the runs it names
COUNTS = "counts: "  # a block header's prefix: a count sweep's points and lines (its counts.json)


def _spread(s: Spread, fmt) -> str:
    if s.median is None:
        return "—"
    if s.n == 1 or s.min == s.max:
        return fmt(s.median)
    return f"{fmt(s.median)} ({fmt(s.min)}–{fmt(s.max)})"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _rel(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            pass
    return path.name


def _files(values: list[int | None]) -> str:
    vals = sorted({v for v in values if v is not None})
    if not vals:
        return "—"
    return str(vals[0]) if len(vals) == 1 else f"{vals[0]}–{vals[-1]}"


def _engine_table(rs: ResultSet) -> list[str]:
    """The engines' table (times, phases, memory, files, × each floor) and its caption."""
    out: list[str] = []
    multiples = {(m.engine, m.floor): m for m in floor_multiples([lr.r for lr in rs.runs])}
    floor_cols = [f for f in rs.floor_labels if any(k[1] == f for k in multiples)]
    header = ["engine", "verified", "compaction time", "phases (median)", "setup (median)", "time to result",
              "peak RSS", "files in → out"] + [f"× {f}" for f in floor_cols]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "---|" * len(header))
    for row in rs.rows:
        st = row.stats
        good = [lr.r for lr in row.verified_runs]
        if row.missing:
            cells = [row.engine, row.status_text, row.missing, "", "", "", "", ""]
        else:
            phases = "; ".join(f"{p.name} {fmt_seconds(p.seconds.median)}" for p in row.phases if not p.setup)
            cells = [row.engine, f"{st.verified} of {st.runs}" + (f" ({row.status_text})" if st.verified < st.runs
                                                                    else ""),
                     _spread(st.duration_s, fmt_seconds), phases or "—", fmt_seconds(st.setup_s.median),
                     _spread(st.time_to_result_s, fmt_seconds), _spread(st.peak_rss_bytes, fmt_bytes),
                     f"{_files([r.files_in for r in good])} → {_files([r.files_out for r in good])}"]
        for f in floor_cols:
            m = multiples.get((row.engine, f))
            cells.append(_spread(m.ratio, fmt_ratio) if m is not None and m.ratio.n else "—")
        out.append(_row(cells))
    out += ["", "Times are the compaction (the sum of the phases; session start-up and catalog warm-up are the "
                "setup column, outside it, while the table is out of the engine's reach; time to result is both), "
                "medians with min–max over verified runs"
            + (f"; × {', '.join(floor_cols)}: an engine's time as a multiple of the floor's, paired by repetition "
               f"(a floor commits nothing and is in no speedup)" if floor_cols else "") + "."]
    return out


def result_set_markdown(rs: ResultSet, root: Path | None = None, level: int = 3) -> str:
    """One run set (scenario, scale, run): the headline, the per-engine table and the readers' table."""
    first = rs.first
    run_dir = rs.runs[0].path.parent
    started = (rs.run_state.state.started_at if rs.run_state and rs.run_state.state.started_at
               else first.started_at)
    reps = sorted({lr.r.rep for lr in rs.measured})
    caches = sorted({lr.r.cache.mode for lr in rs.measured})
    b = rs.before
    size = (f"{b.data_files + b.delete_files} files ({b.data_files} data, {b.delete_files} delete), "
            f"{fmt_bytes(b.uncompressed_bytes)} uncompressed" if b.uncompressed_bytes else
            f"{b.data_files + b.delete_files} files")
    files_at = f", file counts of scale {fmt_scale(rs.file_scale)}" if rs.file_scale else ""
    on = (f"your table {rs.source.table} at snapshot {rs.source.snapshot_id}" if rs.source else
          f"scale {fmt_scale(rs.scale)}{files_at}")
    out = [f"{'#' * level} {rs.scenario_name}, {on}", ""]
    out.append(f"Run `{first.run_id}` (`{_rel(run_dir, root)}`), started {started or 'at an unrecorded time'}, "
               f"{len(reps)} repetition{'s' if len(reps) != 1 else ''}, cache {'/'.join(caches) or '?'}, "
               f"on {rs.machine}. Input: {size}." + (f" Runtimes: {rs.runtimes}." if rs.runtimes else ""))
    if rs.incomplete and rs.run_state is not None:
        out += ["", f"**{rs.run_state.warning}**"]
    out.append("")
    head = rs.headline_speedup
    if head is not None:
        r = head.ratio
        spread = "" if r.n == 1 else f", min–max {fmt_ratio(r.min)}–{fmt_ratio(r.max)}"
        gap = rs.version_gap(head.faster, head.slower)
        out.append(f"**Headline: {head.faster} {fmt_ratio(r.median)} faster than {head.slower}** (median of "
                   f"{r.n} paired verified repetition{'s' if r.n != 1 else ''}{spread}"
                   + (f"; repetitions {', '.join(map(str, head.unpaired_reps))} unpaired" if head.unpaired_reps
                      else "") + (f"; different runtimes: {gap}" if gap else "") + ").")
        for s in rs.speedups:
            if s is not head and s.ratio.n:
                gap = rs.version_gap(s.faster, s.slower)
                out.append(f"Also: {s.faster} {_spread(s.ratio, fmt_ratio)} faster than {s.slower} "
                           f"({s.ratio.n} pairs{f'; different runtimes: {gap}' if gap else ''}).")
    elif len(rs.committing) >= 2:
        out.append("**No headline:** no repetition has a verified run of two committing engines.")
    out.append("")
    out += _engine_table(rs)
    out += _unfinished(rs)
    out += _opens(rs)
    out += _catalog(rs)
    for check in floor_checks([lr.r for lr in rs.runs]):
        out += [""] + summary_lines(check)
    if rs.reads is not None and rs.reads.rows and rs.reads.engines:
        rv = rs.reads
        out += ["", "What readers gained (median before → median after per engine; ratio = before / after, "
                    f"above 1 the reader gained; reader: {'; '.join(rv.readers)}):", ""]
        per = " / ".join(rv.engines)
        header = (["query", "before"] + [f"after {e}" for e in rv.engines] +
                  [f"files opened (before → {per})", f"delete files merged (before → {per})"])
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        for q in rv.rows:
            cells = [q.query, fmt_seconds(q.before_s)]
            cells += [f"{fmt_seconds(q.after_s.get(e))} ({fmt_ratio(q.ratio.get(e))})" for e in rv.engines]
            files_after = " / ".join(str(q.files_after.get(e)) for e in rv.engines)
            deletes_after = " / ".join(str(q.deletes_after.get(e)) for e in rv.engines)
            cells += [f"{q.files_before} → {files_after}", f"{q.deletes_before} → {deletes_after}"]
            out.append(_row(cells))
        if rv.failures:
            out += ["", "Reads checks that failed: " + "; ".join(rv.failures)]
    return "\n".join(out) + "\n"


def _catalog(rs: ResultSet) -> list[str]:
    """The loopback REST catalog's work during each engine's verified runs (medians), and its share of the engine's
    compaction time: the catalog's round trips, the same server for every engine that goes through it."""
    measured = [row for row in rs.rows if row.catalog_measured and row.catalog["requests"].median is not None]
    rows = [row for row in measured if row.catalog["requests"].median]
    if not rows:
        return []
    silent = [row.engine for row in measured if not row.catalog["requests"].median]
    out = ["", "The REST catalog during each engine's runs (medians over verified runs; server time: the server "
               "handling the engine's requests, commits included):", "",
           "| engine | requests | commits | server time | share of its compaction time |", "|---|---|---|---|---|"]
    for row in rows:
        c, d = row.catalog, rs.stats[row.engine].duration_s.median
        share = f"{c['request_s'].median / d:.1%}" if d and c["request_s"].median is not None else "—"
        out.append(_row([row.engine, f"{c['requests'].median:,.0f}", f"{c['commits'].median:,.0f}",
                         fmt_seconds(c["request_s"].median), share]))
    if silent:
        out += ["", f"No request to it from {', '.join(silent)} (their catalog reached otherwise, or none)."]
    return out


def streaming_markdown(rs: ResultSet, root: Path | None = None, level: int = 3) -> str:
    """A streaming run set: each engine's totals against the baseline `none`, then the series per cycle
    (the report's own view, reports.streaming): maintenance seconds and cost per GB ingested, write
    amplification, the final reads against the baseline's, and every cycle's files, reads and verdicts."""
    from reports.streaming import streaming_sections

    [v] = streaming_sections([rs])
    rows = [row for row in v.rows if row.r.streaming is not None]
    out = [f"{'#' * level} {v.scenario}, scale {fmt_scale(v.scale)}: {v.cycles} cycles, {v.mode}", "",
           f"Run `{rs.first.run_id}` (`{_rel(rs.runs[0].path.parent, root)}`) on {rs.machine}: each cycle the "
           f"writer commits {v.commits_per_cycle} x {v.rows_per_commit:,} rows, then each engine runs one "
           f"maintenance step ({', '.join(v.maintenance)}); the baseline `none` runs none. Every cycle is "
           "verified against the generator.", "",
           "| engine | verified | safe cycles | maintenance | s per GB ingested | $ per GB ingested | write "
           "amplification | files at the end (data + delete) | stored at the end (every file under the table) | "
           "full scan at the end (× baseline) | point lookup at the end (× baseline) | commit conflicts |",
           "|" + "---|" * 12]
    for row in rows:
        t, cs = row.t, row.r.streaming.cycles  # type: ignore[union-attr]
        last = cs[-1] if cs else None

        base = bool(row.r.streaming and row.r.streaming.baseline)
        out.append(_row([row.engine, str(row.r.verified), f"{sum(c.verdict == 'safe' for c in cs)} of {len(cs)}",
                         "none" if base else fmt_seconds(t.maintenance_s),
                         "—" if t.maintenance_s_per_gb is None else f"{t.maintenance_s_per_gb:,.0f} s",
                         "—" if t.cost_usd_per_gb is None else f"${t.cost_usd_per_gb:.3f}",
                         "—" if t.write_amplification is None else f"{t.write_amplification:.2f}",
                         f"{last.table.data_files} + {last.table.delete_files}" if last else "—",
                         f"{last.stored_files:,} files, {fmt_bytes(last.stored_bytes)}" if last else "—",
                         _final_read(t, "full-scan"), _final_read(t, "point-lookup"),
                         "—" if base else str(t.maintenance_conflicts)]))
    out += ["", "× baseline: the baseline's time over the engine's (above 1, readers are faster than without "
                "maintenance). Cost: the maintenance seconds at the run's instance price. Write amplification: "
                "bytes maintenance wrote over bytes ingested. Stored: every file under the table's location, live "
                "or not (an expiry that deletes the files it made unreachable keeps it down; one that only removes "
                "snapshots from the metadata does not).", "", _op_totals(rows), "",
            "Per cycle (full scan; live data + delete files; maintenance seconds), one column per engine:", "",
            "| cycle | " + " | ".join(row.engine for row in rows) + " |", "|---|" + "---|" * len(rows)]
    for n in range(1, max((len(row.r.streaming.cycles) for row in rows), default=0) + 1):  # type: ignore[union-attr]
        cells = [str(n)]
        for row in rows:
            c = next((c for c in row.r.streaming.cycles if c.cycle == n), None)  # type: ignore[union-attr]
            cells.append("—" if c is None else
                         f"{fmt_seconds(c.reads.get('full-scan'))}; {c.table.data_files} + {c.table.delete_files}"
                         + (f"; {fmt_seconds(c.maintenance_s)}" if c.maintenance_s is not None else "")
                         + ("" if c.verdict == "safe" else f"; **{c.verdict}**"))
        out.append(_row(cells))
    return "\n".join(out) + "\n"


def sink_markdown(paths, root: Path | None = None, level: int = 3) -> str:
    """The append-sink presets side by side over the runs under `paths` (the report's own view,
    reports.streaming.sink_comparison): per preset, mode and engine, files and manifests per GB ingested,
    maintenance seconds and cost per GB, write amplification, the final reads and planning against the baseline,
    the writer's conflicts against the compactor's commits, and whether every cycle was safe."""
    from reports.streaming import sink_rows

    report = build(load_runs(list(paths)))
    rows = sink_rows(report.sets)
    if not rows:
        raise UserError("no append-sink streaming run among " + ", ".join(_rel(Path(p), root) for p in paths))
    sets = [rs for rs in report.sets if any(row.run_id == rs.run_id for row in rows)]
    scales = sorted({rs.scale for rs in sets})
    runs = [f"Run `{rs.run_id}` (`{_rel(rs.runs[0].path.parent, root)}`): {rs.scenario_name}, "
            f"{next(row.mode for row in rows if row.run_id == rs.run_id)}, on {rs.machine}."
            for rs in sorted(sets, key=lambda rs: rs.run_id)]
    out = [f"{'#' * level} Append-sink presets side by side, scale {', '.join(fmt_scale(s) for s in scales)}", "",
           *[f"- {r}" for r in runs], "",
           "| preset (batch, interval, roll at) | mode | engine | flushes per cycle × rows | data files per GB | "
           "manifests per GB | maintenance s per GB | $ per GB | write amplification | full scan at the end "
           "(× baseline) | planning at the end (× baseline) | writer conflicts; retries; failed | compactor commits "
           "| every cycle safe |", "|" + "---|" * 14]
    for row in rows:
        t, s = row.t, row.sink
        none = row.baseline
        preset = f"{row.preset} ({s.batch_size:,}, {s.flush_interval_s:g} s, {fmt_bytes(s.target_file_size_bytes)})"
        out.append(_row([preset, row.mode, row.engine, f"{s.flushes_per_cycle} × {s.rows_per_flush:,}",
                         "—" if t.files_per_gb is None else f"{t.files_per_gb:,.0f}",
                         "—" if t.manifests_per_gb is None else f"{t.manifests_per_gb:,.0f}",
                         "—" if none or t.maintenance_s_per_gb is None else f"{t.maintenance_s_per_gb:,.0f} s",
                         "—" if none or t.cost_usd_per_gb is None else f"${t.cost_usd_per_gb:.3f}",
                         "—" if none or t.write_amplification is None else f"{t.write_amplification:.2f}",
                         _final_read(t, "full-scan"),
                         "—" if t.final_planning_s is None else fmt_seconds(t.final_planning_s)
                         + (f" ({fmt_ratio(row.planning_vs_baseline)})" if row.planning_vs_baseline and not none
                            else ""),
                         f"{t.writer_conflicts}; {t.writer_retries}; {t.commits_failed}",
                         "—" if none else str(t.maintenance_commits),
                         f"{'yes' if t.all_cycles_safe else 'no'} ({t.cycles - t.unsafe_cycles} of {t.cycles})"]))
    out += ["", "Data files per GB: the files the sink committed over the GB (10^9 bytes) it committed; manifests per "
                "GB: the manifest files written during the run (the sink's and the maintenance's). Files per GB depend "
                "on the scale (each flush's volume shrinks with it, the flush count does not): compare presets at one "
                "scale. × baseline: the baseline's time over the engine's."]
    return "\n".join(out) + "\n"


def _op_totals(rows) -> str:
    """Each engine's maintenance seconds per operation, summed over the cycles: where its time went."""
    parts = []
    for row in rows:
        if row.r.streaming.baseline:
            continue
        tot: dict[str, float] = {}
        for c in row.r.streaming.cycles:
            for op, sec in c.op_seconds.items():
                tot[op] = tot.get(op, 0.0) + sec
        parts.append(f"{row.engine}: " + ", ".join(f"{op} {fmt_seconds(sec)}" for op, sec in tot.items()))
    return "Maintenance by operation, over every cycle: " + "; ".join(parts) + "."


def _final_read(t, query: str) -> str:
    s, x = t.final_reads.get(query), t.final_reads_vs_baseline.get(query)
    return "—" if s is None else fmt_seconds(s) + (f" ({fmt_ratio(x)})" if x else "")


def render_markdown(paths, root: Path | None = None, one_per_scale: bool = False) -> str:
    """The Markdown tables of every run set under `paths`, sorted by scenario and scale.
    `one_per_scale`: refuse two runs of one scenario at one scale (the docs give each one headline)."""
    views = locate(paths)
    matrices = "".join(matrix_markdown(v) + "\n" for v in views)
    report = build(load_runs(list(paths), allow_empty=bool(views)))
    _, others = case_run_sets(report.sets, views)  # a conformance run's own runs are its matrix's cells
    sets = sorted(others, key=lambda rs: (rs.scenario_name, rs.scale, rs.run_id))
    if one_per_scale:
        seen: dict[tuple[str, float], str] = {}
        for rs in sets:
            key = (rs.scenario_name, rs.scale)
            if key in seen:
                raise UserError(f"two runs of {rs.scenario_name} at scale {fmt_scale(rs.scale)} ({seen[key]}, "
                                f"{rs.run_id}): the docs give one scenario at one scale one headline; keep one")
            seen[key] = rs.run_id
    return matrices + "\n".join(streaming_markdown(rs, root) if any(lr.r.streaming for lr in rs.runs) else
                                result_set_markdown(rs, root) for rs in sets)


def confinement_markdown(paths, root: Path | None = None, level: int = 3) -> str:
    """The runs under --storage-cap (time against the cap per engine beside the model) and under --cores (each
    engine's 1 -> 2 core efficiency), from the report's own sections (reports.confine): verified runs only."""
    from bench.core.units import MiB
    from reports.confine import MODEL, cap_sections, core_sections

    report = build(load_runs(list(paths)))
    caps, cores = cap_sections(report.sets), core_sections(report.sets)
    if not caps and not cores:
        raise UserError("no run under --storage-cap or --cores among " + ", ".join(_rel(Path(p), root) for p in paths))
    out: list[str] = []
    for c in caps:
        runs = sorted({p.run_id for p in c.points})
        out += [f"{'#' * level} {c.scenario}, scale {fmt_scale(c.scale)}: time against a storage cap", "",
                f"Runs {', '.join(f'`{r}`' for r in runs)}; mechanism: "
                + "; ".join(sorted({p.mechanism for p in c.points if p.mechanism})) + ".", "",
                "| cap (read, write) | engine | verified | compaction time | model | model, reads alone | "
                "read from the device | written through the throttle | flush |", "|" + "---|" * 9]
        for p in sorted(c.points, key=lambda p: (-(p.cap_mib_s or float("inf")), p.label)):
            cap = "none" if p.cap_mib_s is None else \
                ", ".join("—" if v is None else f"{v / MiB:g} MiB/s" for v in (p.read_bps, p.write_bps))
            share = p.through_throttle
            out.append(_row([cap, p.label, str(p.time.n), _spread(p.time, fmt_seconds),
                             fmt_seconds(p.model_s) if p.model_s else "—",
                             fmt_seconds(p.model_reads_s) if p.model_reads_s else "—",
                             fmt_bytes(p.device_read_bytes) if p.device_read_bytes is not None else "—",
                             f"{share:.0%} of {fmt_bytes(p.flushed_bytes)}" if share is not None else "—",
                             fmt_seconds(p.flush_s) if p.flush_s is not None else "—"]))
        out += [""] + [f"- {s}" for s in c.speedups] + [f"- note: {n}" for n in c.notes]
        out += ["", f"Model: {MODEL} (the uncapped run's mean cores). Read from the device and written through the "
                    "throttle: the cgroup's own counters of one run.", ""]
    for section in cores:
        out += [f"{'#' * level} {section.scenario}, scale {fmt_scale(section.scale)}: 1 -> 2 cores", "",
                "| engine | 1 core | 2 cores | cores busy (1, 2) | efficiency | Amdahl parallel fraction | "
                "16 cores (model) | used by the node model |", "|---|---|---|---|---|---|---|---|"]
        for k in section.scalings:
            busy = f"{k.busy_1:.2f}, {k.busy_2:.2f}" if k.busy_1 is not None and k.busy_2 is not None else "—"
            out.append(_row([k.engine, fmt_seconds(k.t1_s), fmt_seconds(k.t2_s), busy, f"{k.efficiency:.2f}",
                             f"{k.parallel_fraction:.3f}", f"{k.speedup(16):.1f}x",
                             "yes" if k.usable else "no: its core was not kept busy on 1 core"]))
        evidence = "; ".join(f"{k.engine} {k.note}" for k in section.scalings)
        dirs = sorted({r.split("/", 1)[0] for k in section.scalings for r in k.runs})
        out += ["", f"Medians of verified runs ({evidence}) of {', '.join(f'`{d}`' for d in dirs)}.", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _sources(src: str, root: Path, page: Path) -> list[Path]:
    paths: list[Path] = []
    for pattern in src.split():
        hits = sorted(glob.glob(str(root / pattern)))
        if not hits:
            raise UserError(f"{_rel(page, root)}: no reference run matches {pattern} (run `make reference`, or "
                            f"change the block's header)")
        paths += [Path(h) for h in hits]
    return paths


def render_page(page: Path, root: Path) -> str:
    """The page with every generated block rendered again from the runs its header names."""
    text = page.read_text()

    def block(m: re.Match) -> str:
        src = m.group("src")
        if src.startswith(CONFINEMENT):  # one block over many runs: the confined runs' sections
            body = confinement_markdown(_sources(src.removeprefix(CONFINEMENT), root, page), root=root)
        elif src.startswith(SINKS):  # one table over many runs: the sink presets side by side
            body = sink_markdown(_sources(src.removeprefix(SINKS), root, page), root=root)
        elif src.startswith(COUNTS):  # a count sweep: its points and lines against the input's files
            body = counts_markdown(_sources(src.removeprefix(COUNTS), root, page))
        elif src.startswith(CONFORMANCE):  # the matrix alone (its runs' own tables are not quoted)
            body = "\n".join(matrix_markdown(v) for v in locate(_sources(src.removeprefix(CONFORMANCE), root, page)))
        else:
            body = render_markdown(_sources(src, root, page), root=root, one_per_scale=True)
        return m.group(1) + body + "\n" + m.group(4)  # a blank line: the table ends before the marker

    return BLOCK.sub(block, text)


def pages_with_blocks(root: Path, pages=None) -> list[Path]:
    if pages:
        return [Path(p) for p in pages]
    found = [Path(p) for pattern in PAGES for p in sorted(glob.glob(str(root / pattern)))]
    return [p for p in found if BLOCK.search(p.read_text())]


def update_pages(root: Path, pages=None, check: bool = False) -> list[str]:
    """Render the generated blocks of `pages` (default: README.md and docs/*.md that have any).
    Writes the pages that differ, or with `check` writes nothing; returns a unified diff per page that
    differs (empty: every page is what its runs render)."""
    diffs = []
    for page in pages_with_blocks(root, pages):
        if not page.exists():
            raise UserError(f"no such page: {page}")
        old = page.read_text()
        new = render_page(page, root)
        if new != old:
            name = _rel(page, root)
            diffs.append("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                      f"{name} (in the repository)", f"{name} (rendered)")))
            if not check:
                write_atomic(page, new, mode=0o644)
    return diffs


def _opens(rs) -> list[str]:
    """Each run's opens of the input's delete (and data) files, as the harness counted them: how each engine's work
    grows with the delete files, and how far a run that ended without a result had got."""
    lines = []
    for lr in rs.measured:
        o = lr.r.delete_opens
        if o is None or o.opens is None or not o.delete_files:
            continue
        about = "about " if o.watched_files is not None else ""
        lines.append(f"- {lr.r.engine} rep {lr.r.rep} ({lr.r.status}): {o.describe()}; data files: {about}"
                     f"{o.data_opens:,} opens of {o.data_files:,}.")
    return ["", "The input's files opened while each engine compacted (counted by the harness):", "", *lines] \
        if lines else []


def _unfinished(rs) -> list[str]:
    """The runs that ended without a result (time-out, OOM, crash): what they had reached when they ended, from
    their telemetry (peak memory, bytes read from disk, cores), so a failure is evidence, not a blank row."""
    lines = []
    for lr in rs.measured:
        r = lr.r
        if r.status in ("ok", "unsupported"):
            continue
        t = r.telemetry
        lines.append(f"- {r.engine} rep {r.rep}: **{r.status}** ({(r.error or '').split(';')[0]}); by then peak RSS "
                     f"{fmt_bytes(t.peak_rss_bytes)}, read from disk {fmt_bytes(t.read_bytes)} "
                     f"({fmt_bytes(r.bytes_in)} of input), mean cores busy {t.mean_cores or 0:.2f}.")
    return ["", "Runs that ended without a result:", "", *lines] if lines else []
