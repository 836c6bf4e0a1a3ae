"""The user's own table in place of a generated one: `bench inspect` (what the table is, what a scenario
would rewrite) and, for `bench run --source-table`, its clone as the run's dataset, with the ground truth
read from the source snapshot by two readers of different code paths, and the check that the original
did not change."""

from __future__ import annotations

import hashlib
import statistics
import time
from collections import Counter, defaultdict
from typing import Any

from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from bench.core.catalog import CatalogSettings
from bench.core.dataset import GeneratedTable, GroundTruth, save_manifest
from bench.core.errors import UserError
from bench.core.fmt import fmt_bytes
from bench.core.pin import SourceFingerprint, pinned_files
from bench.core.progress import Progress
from bench.core.records.scenario import RefPin, SourceRecord
from bench.core.records.verification import ReaderAnswer, ReaderFinding
from bench.core.source import SourceRef, check_disjoint, load_source, snapshot, write_clone
from bench.core.table.deletes import classify, scope
from bench.core.table.entries import LiveFiles, live_files
from bench.core.table.shape import shape
from bench.runner.expiry import render_expiry
from bench.scenario import Scenario
from bench.verify.readers import read
from bench.verify.referee import agree, findings_against
from bench.verify.reference import NAME as REFERENCE
from bench.verify.stats import table_stats
from datagen.conformance import load_cases, touched
from datagen.dataset import drop_incomplete, reuse, seal

# the ground truth: one reader resolving columns by field id (or through the catalog), one of our own code path
# (field id too: bench.verify.columns); when they disagree or one cannot read, the reference reader decides
TRUTH_READERS = (("pyiceberg-scan", "duckdb-iceberg", "pyiceberg-avro"),
                 ("duckdb-read-parquet", "duckdb-merge-on-read"))
HISTOGRAM = [(1 << 20, "< 1 MiB"), (8 << 20, "1-8 MiB"), (32 << 20, "8-32 MiB"), (128 << 20, "32-128 MiB"),
             (512 << 20, "128-512 MiB"), (None, ">= 512 MiB")]


def _first_answer(group: tuple[str, ...], tbl: Table, snapshot_id: int | None,
                  settings: CatalogSettings | None) -> tuple[ReaderAnswer | None, list[ReaderAnswer]]:
    """The first reader of `group` that answered and is not advisory, and every answer tried."""
    tried = []
    for name in group:
        a = read(name, tbl, snapshot_id, settings)
        tried.append(a)
        if a.answered and not a.advisory:
            return a, tried
    return None, tried


def decide_truth(tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None
                 ) -> tuple[tuple[int, str], str, list[ReaderFinding]]:
    """((rows, checksum), who read it, reader findings) of the snapshot: the two readers of TRUTH_READERS when they
    agree; otherwise the reference reader's (Iceberg's Java library), each reader that disagreed with it (or failed
    where it read) a finding; UserError (one line, before any engine runs) only when the reference cannot read it
    either."""
    picked, tried = [], []
    for group in TRUTH_READERS:
        a, t = _first_answer(group, tbl, snapshot_id, settings)
        tried += t
        picked += [a] if a is not None else []
    if len(picked) == 2 and agree(picked):
        return picked[0].got(), f"read: {picked[0].reader} + {picked[1].reader}", []
    ref = read(REFERENCE, tbl, snapshot_id, settings)
    if not ref.answered:
        said = "; ".join(f"{a.reader}: {a.rows} rows, checksum {a.checksum}" if a.answered else
                         f"{a.reader}: {a.why_not[:160]}" for a in tried)
        raise UserError(" ".join(f"the verifier cannot read {'.'.join(tbl.name())} (column types "
                                 f"{', '.join(sorted({str(f.field_type) for f in tbl.schema().fields}))}): the "
                                 f"reference reader (Iceberg's Java library) cannot read it either "
                                 f"({ref.why_not[:300]}), and its readers disagree or fail ({said})".split())[:1200])
    findings = findings_against(ref, tried, "the source snapshot")
    agreeing = [a.reader for a in tried if a.answered and a.content == ref.content]
    return ref.got(), f"read: {REFERENCE} (the reference reader; agreeing: {', '.join(agreeing) or 'none'})", findings


def ground_truth(tbl: Table, snapshot_id: int | None, settings: CatalogSettings | None) -> GroundTruth:
    """Rows and checksum of the snapshot (`decide_truth`), with the snapshot's file facts."""
    (rows, checksum), computed_by, findings = decide_truth(tbl, snapshot_id, settings)
    files = live_files(tbl, snapshot_id)
    data = [e.data_file for e in files.data]
    return GroundTruth(
        rows=rows, checksum=checksum, computed_by=computed_by, findings=findings,
        rows_written=sum(df.record_count for df in data), data_files=len(data),
        data_bytes=sum(df.file_size_in_bytes for df in data), position_delete_files=len(files.position),
        equality_delete_files=len(files.equality),
        position_delete_bytes=sum(e.data_file.file_size_in_bytes for e in files.position),
        equality_delete_bytes=sum(e.data_file.file_size_in_bytes for e in files.equality),
        partition_spec="" if tbl.spec().is_unpartitioned() else str(tbl.spec()))


def clone_name(src: Table, snap_id: int | None) -> tuple[str, str]:
    """(table name, key) of the clone of (source metadata file, snapshot): a new source commit, a new clone."""
    key = hashlib.sha256(f"{'.'.join(src.name())}|{src.metadata_location}|{snap_id}".encode()).hexdigest()[:12]
    return f"clone_{key}", key


def prepare_clone(catalog: Catalog, settings: CatalogSettings, ref: SourceRef, sc: Scenario,
                  progress: Progress, read_settings: CatalogSettings | None = None,
                  src: Table | None = None) -> GeneratedTable:
    """The clone of the source snapshot as the run's dataset (made, with its ground truth, unless it exists).
    `src`: the source as it was pinned (loaded once, so that a commit by others in between cannot change what is
    cloned); default: loaded now."""
    src = src if src is not None else load_source(ref)
    snap = snapshot(src, ref.snapshot_id, empty_ok=True)  # None: an empty table, cloned and judged as it is
    snap_id = None if snap is None else snap.snapshot_id
    name, key = clone_name(src, snap_id)
    sc.on_table(src.metadata.format_version)  # format v3: engines without the feature are recorded unsupported
    existing = reuse(catalog, settings, name)
    if existing is not None:
        return existing
    ident = f"{settings.namespace}.{name}"
    location = f"{settings.warehouse_uri.rstrip('/')}/{settings.namespace}/{name}"
    check_disjoint(location, pinned_files(src, set() if snap_id is None else {snap_id}))
    drop_incomplete(catalog, ident)  # a clone left half-made: only its own location is deleted
    catalog.create_namespace_if_not_exists(settings.namespace)
    t0 = time.perf_counter()
    write_clone(catalog, ident, src, snap, location, settings.file_io_properties())
    tbl = catalog.load_table(ident)
    with progress.task("reading the source snapshot's ground truth (two readers)", unit="step"):
        truth = ground_truth(tbl, snap_id, read_settings)
    table_files, hashes = seal(tbl.location(), settings, name)
    entries = live_files(tbl).all
    ds = GeneratedTable(
        table=ident, kind=sc.kind, recipe_hash=key, scale=0.0, seed=0,
        recipe={"source": ref.model_dump(mode="json") | {"snapshot_id": snap_id,
                                                         "metadata_location": src.metadata_location}},
        snapshot_id=snap_id, metadata_location=tbl.metadata_location, location=tbl.location(),
        files=len(entries), bytes=sum(e.data_file.file_size_in_bytes for e in entries), rows=truth.rows,
        live_files=sorted(LiveFiles.paths(entries)), table_files=table_files, ground_truth=truth,
        table_hashes=hashes,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), generation_s=time.perf_counter() - t0,
        generator_version="clone")
    save_manifest(settings.state_path, ds)
    return ds


def source_shape(tbl: Table, snapshot_id: int | None) -> SourceRecord:
    """The source's shape facts at the snapshot and the conformance cases they touch (a SourceRecord with those
    fields only); a shape that cannot be read is recorded as such, never failing the run."""
    try:
        facts = shape(tbl, snapshot_id)
        touches, untested = touched(facts, load_cases())
    except Exception as e:  # noqa: BLE001 - the shape is a note beside the results, not part of the measurement
        return SourceRecord(shape_error=" ".join(f"{type(e).__name__}: {e}".split())[:300])
    return SourceRecord(shape=facts, touches=touches, untested=untested)


def source_record(ref: SourceRef, ds: GeneratedTable, before: SourceFingerprint,
                  shaped: SourceRecord | None = None) -> SourceRecord:
    src = ds.recipe["source"]
    shaped = shaped or SourceRecord()
    return SourceRecord(catalog_file=ref.catalog_file, table=ref.table, snapshot_id=src["snapshot_id"],
                        metadata_location=src["metadata_location"], clone=ds.table,
                        fingerprint_before=before.digest, files=len(before.files), shape=shaped.shape,
                        touches=shaped.touches, untested=shaped.untested, shape_error=shaped.shape_error,
                        pin_s=before.seconds,
                        refs=[RefPin(name=r.name, type=r.type, snapshot_id=r.snapshot_id)
                              for r in before.refs if r.name in before.carried])


# ---- bench inspect -------------------------------------------------------------------------------------------

def _histogram(sizes: list[int]) -> dict[str, int]:
    out = {label: 0 for _, label in HISTOGRAM}
    for s in sizes:
        out[next(label for bound, label in HISTOGRAM if bound is None or s < bound)] += 1
    return out


def _spread(values: list[int]) -> dict[str, int]:
    return ({"min": min(values), "median": int(statistics.median(values)), "max": max(values)} if values
            else {"min": 0, "median": 0, "max": 0})


def describe(tbl: Table, snapshot_id: int | None, sc: Scenario | None = None) -> dict[str, Any]:
    """What the table is at the snapshot (and, with a scenario, what it would rewrite), as plain data."""
    snap = snapshot(tbl, snapshot_id)
    current = tbl.current_snapshot()
    files = live_files(tbl, snap.snapshot_id)
    st = table_stats(tbl, snap.snapshot_id, content=False, files=files)
    manifests = snap.manifests(tbl.io)
    data_sizes = [e.data_file.file_size_in_bytes for e in files.data]
    parts: dict[tuple, list] = defaultdict(list)
    for e in files.all:
        parts[scope(e.data_file)].append(e.data_file)
    spec = tbl.specs()[tbl.spec().spec_id]
    cls = classify(files, tbl.specs()) if files.deletes else None
    manifest_bytes = sum(m.manifest_length for m in manifests)
    out: dict[str, Any] = {
        "table": ".".join(tbl.name()), "location": tbl.location(), "metadata_location": tbl.metadata_location,
        "format_version": tbl.metadata.format_version,
        "schema": [f"{f.field_id}: {f.name} {f.field_type}{'' if f.required else ' (optional)'}"
                   for f in tbl.schema().fields],
        "partition_spec": "unpartitioned" if spec.is_unpartitioned() else ", ".join(
            f"{f.name}: {f.transform}({tbl.schema().find_column_name(f.source_id)})" for f in spec.fields),
        "sort_order": "unsorted" if tbl.sort_order().is_unsorted else str(tbl.sort_order()),
        "properties": dict(tbl.properties),
        "snapshot": {"id": snap.snapshot_id, "timestamp_ms": snap.timestamp_ms,
                     "operation": str(snap.summary.operation.value) if snap.summary else "",
                     "current": current is not None and snap.snapshot_id == current.snapshot_id},
        "snapshots": len(tbl.metadata.snapshots),
        "manifests": {"count": len(manifests), "bytes": manifest_bytes,
                      "by_content": dict(Counter(m.content.name.lower() for m in manifests))},
        "data_files": {"count": len(data_sizes), "bytes": sum(data_sizes),
                       "rows": sum(e.data_file.record_count for e in files.data),
                       "logical_bytes": st.uncompressed_bytes, "codecs": st.codecs, "size": _spread(data_sizes),
                       "histogram": _histogram(data_sizes)},
        "delete_files": {
            "position": {"count": len(files.position),
                         "bytes": sum(e.data_file.file_size_in_bytes for e in files.position),
                         "dangling": len(cls.dangling_position) if cls else 0},
            "equality": {"count": len(files.equality),
                         "bytes": sum(e.data_file.file_size_in_bytes for e in files.equality),
                         "dangling": len(cls.dangling_equality) if cls else 0}},
        "partitions": {"count": len(parts),
                       "data_files": _spread([sum(1 for f in v if f.content == 0) for v in parts.values()])},
        "bytes_on_disk": sum(data_sizes) + st.delete_bytes + manifest_bytes,
    }
    if sc is not None:
        out["scenario"] = would_rewrite(sc, files, parts)
    return out


def would_rewrite(sc: Scenario, files: LiveFiles, parts: dict[tuple, list]) -> dict[str, Any]:
    """What SCENARIO's rewrite takes in: data files below its small-file threshold, per partition, and the
    delete files (its recipe is not used: the table replaces it)."""
    target = sc.target_file_size_bytes
    threshold = sc.small_file_threshold(target)
    small = {k: [f for f in v if f.content == 0 and f.file_size_in_bytes < threshold] for k, v in parts.items()}
    small = {k: v for k, v in small.items() if v}
    return {"name": sc.name, "kind": sc.kind, "target_file_size": target, "small_file_threshold": threshold,
            "small_data_files": sum(len(v) for v in small.values()),
            "small_data_bytes": sum(f.file_size_in_bytes for v in small.values() for f in v),
            "partitions_with_small_files": len(small),
            "partitions_with_two_or_more_small_files": sum(1 for v in small.values() if len(v) > 1),
            "delete_files": len(files.deletes),
            "delete_bytes": sum(e.data_file.file_size_in_bytes for e in files.deletes)}


def render(d: dict[str, Any]) -> str:
    """`bench inspect`'s text."""
    df, dl, snap = d["data_files"], d["delete_files"], d["snapshot"]
    lines = [f"table {d['table']} (format v{d['format_version']})", f"  location  {d['location']}",
             f"  metadata  {d['metadata_location']}", "schema:", *(f"  {c}" for c in d["schema"]),
             f"partition spec: {d['partition_spec']}", f"sort order: {d['sort_order']}",
             *([f"as {d['scales']['scenario']}: bytes of scale {d['scales']['scale']:.3g}, file counts of scale "
                f"{d['scales']['file_scale']:.3g} (--scale, --file-scale)"] if "scales" in d else []),
             f"snapshot {snap['id']} ({snap['operation']}{', current' if snap['current'] else ''}) of "
             f"{d['snapshots']} snapshot(s)",
             f"manifests: {d['manifests']['count']} ({fmt_bytes(d['manifests']['bytes'])}; "
             + ", ".join(f"{k} {v}" for k, v in d["manifests"]["by_content"].items()) + ")",
             f"data files: {df['count']}, {fmt_bytes(df['bytes'])} on disk, {fmt_bytes(df['logical_bytes'])} "
             f"logical, {df['rows']} rows written, codecs {', '.join(df['codecs']) or '-'}; size min "
             f"{fmt_bytes(df['size']['min'])}, median {fmt_bytes(df['size']['median'])}, max "
             f"{fmt_bytes(df['size']['max'])}",
             *(f"  {label:>12}  {n}" for label, n in df["histogram"].items()),
             *(f"{kind} delete files: {v['count']} ({fmt_bytes(v['bytes'])}), {v['dangling']} dangling"
               for kind, v in dl.items()),
             f"partitions: {d['partitions']['count']}; data files per partition min "
             f"{d['partitions']['data_files']['min']}, median {d['partitions']['data_files']['median']}, max "
             f"{d['partitions']['data_files']['max']}",
             f"bytes on disk (data, deletes, manifests): {fmt_bytes(d['bytes_on_disk'])}"]
    s = d.get("scenario")
    if s:
        lines += [f"under {s['name']} (target {fmt_bytes(s['target_file_size'])}, small below "
                  f"{fmt_bytes(s['small_file_threshold'])}): {s['small_data_files']} small data files "
                  f"({fmt_bytes(s['small_data_bytes'])}) in {s['partitions_with_small_files']} partition(s), "
                  f"{s['partitions_with_two_or_more_small_files']} with two or more; {s['delete_files']} delete "
                  f"file(s) ({fmt_bytes(s['delete_bytes'])})"]
    lines += _render_touches(d)
    lines += _render_work(d)
    lines += render_expiry(d)
    x = d.get("expected")
    if x and x["model"] is None:
        lines.append(f"expected time and memory: {x['note']}")
    elif x:
        lines.append(f"expected on this table ({x['gb']:.3g} GB logical), a MODEL from {x['model']}:")
        for e, v in x["engines"].items():
            iv = v["interval"]
            mem = [f"peak RSS ~{fmt_bytes(v['peak_rss_bytes'])}" if v["peak_rss_bytes"] is not None else "",
                   f"smallest budget ~{fmt_bytes(v['min_budget_bytes'])}" if v["min_budget_bytes"] else ""]
            lines.append(f"  {e:<12} ~{v['seconds']:.1f} s" + (f" ({iv[0]:.1f}-{iv[1]:.1f} s)" if iv else "")
                         + "".join(f", {m}" for m in mem if m)
                         + (f"; extrapolated beyond the measured {v['measured_gb'][0]:.3g}-{v['measured_gb'][1]:.3g}"
                            " GB" if v["extrapolated"] else ""))
        lines.append(f"  ({x['note']})")
    return "\n".join(lines)


def fitting_scenarios(partitioned: bool, delete_files: int) -> list[str]:
    """The compaction scenarios whose table is shaped like this one: a table with delete files is a
    delete-compaction table (kind deletes), else a bin-packing one; partitioned or not like it; plain compactions
    only (no live writer, streaming, partition filter or sort)."""
    from bench.scenario import list_scenarios

    kind = "deletes" if delete_files else "binpack"
    plain = [s for s in list_scenarios() if s.kind == kind and s.live_writer is None and s.streaming is None
             and s.partition_filter is None and s.rewrite.strategy == "binpack"]
    same = [s.name for s in plain if (s.table.partitioning is not None) == partitioned]
    return sorted(same or [s.name for s in plain])


def asked_of_engines(sc: Scenario, tbl: Table, delete_files: int) -> dict[str, Any]:
    """What each engine is asked under `sc` on this table: the scenario's work resolved against it (the intent
    CompactionJob.work carries) and each engine's options derived from it, or why the engine cannot run."""
    from bench.core.catalog import CatalogSettings
    from bench.engines import REGISTRY, engine_class
    from bench.runner.engine_run import scenario_job

    sc.on_table(tbl.metadata.format_version)
    work = sc.work_intent(delete_files > 0)
    engines: dict[str, Any] = {}
    for name in REGISTRY:
        cls = engine_class(name)
        why = [w for f in sorted(sc.needs()) if (w := cls.why_not(f))]
        if why:
            engines[name] = {"unsupported": "; ".join(why)}
            continue
        job = scenario_job(sc, ".".join(tbl.name()), CatalogSettings(warehouse=tbl.location()), sc.options_for(name),
                           sc.target_file_size_bytes, sc.small_file_threshold(), work)
        engines[name] = cls().asked(job)
    return {"scenario": sc.name, "work": work.model_dump(), "describe": work.describe(), "engines": engines}


def _render_touches(d: dict[str, Any]) -> list[str]:
    """`bench inspect`'s lines on the conformance cases the table's shape touches, one a case."""
    if d.get("shape_error"):
        return [f"conformance cases its shape touches: unknown ({d['shape_error']})"]
    if "touches" not in d:
        return []
    lines = [f"conformance cases its shape touches: {len(d['touches'])} (each engine's verdict on them: "
             "`bench conformance`; the report of a run on this table lists them)"]
    width = max([0, *(len(t["case"]) for t in d["touches"])])
    lines += [f"  {t['case']:<{width}}  {', '.join(t['covers'])} (because {'; '.join(t['because'])})"
              for t in d["touches"]]
    if d.get("untested"):
        lines.append(f"shape facts no conformance case stands for: {', '.join(d['untested'])}")
    return lines


def _render_work(d: dict[str, Any]) -> list[str]:
    """`bench inspect`'s lines on which scenario fits and what each engine is asked."""
    lines: list[str] = []
    f = d.get("fits")
    if f:
        what = (f"a delete-compaction table ({f['delete_files']} delete files: applying them is part of the work)"
                if f["kind"] == "deletes" else "a bin-packing table (no delete file)")
        lines.append(f"fits: {what}; scenario(s): {', '.join(f['scenarios']) or 'none'}")
    a = d.get("asked")
    if a:
        lines.append(f"asked under {a['scenario']} ({a['work']['stated_by']}): {a['describe']}")
        for name, x in a["engines"].items():
            if "unsupported" in x:
                lines.append(f"  {name:<12} unsupported: {x['unsupported']}")
                continue
            opts = x.get("rewrite_data_files") or x.get("config")
            told = ", ".join(f"{k}={v}" for k, v in opts.items()) if opts else x.get("note", "")
            over = "; ".join(f"{k}={v['explicit']} (derived {v['derived']})"
                             for k, v in (x.get("overridden") or {}).items())
            lines.append(f"  {name:<12} {told}" + (f"; steps: {' -> '.join(x['steps'])}" if x.get("steps") else "")
                         + (f"; the scenario's explicit options win: {over}" if over else ""))
    return lines


def inspect_source(ref: SourceRef, scenario: str | None) -> dict[str, Any]:
    """`bench inspect`: the table, which scenarios fit it, and what each engine is asked under SCENARIO (or under
    the first that fits)."""
    from bench.scenario import load_scenario

    sc = load_scenario(scenario) if scenario else None
    tbl = load_source(ref)
    d = describe(tbl, ref.snapshot_id, sc)
    shaped = source_shape(tbl, ref.snapshot_id)
    d["shape"], d["untested"] = shaped.shape, shaped.untested
    d["touches"] = [t.model_dump() for t in shaped.touches]
    if shaped.shape_error:
        d["shape_error"] = shaped.shape_error
    deletes = d["delete_files"]["position"]["count"] + d["delete_files"]["equality"]["count"]
    fits = fitting_scenarios(d["partition_spec"] != "unpartitioned", deletes)
    d["fits"] = {"kind": "deletes" if deletes else "binpack", "delete_files": deletes, "scenarios": fits}
    under = sc or (load_scenario(fits[0]) if fits else None)
    if under is not None:
        d["asked"] = asked_of_engines(under, tbl, deletes)
    if sc is not None and sc.table.kind in ("smallfiles", "deletes"):  # the two scales of SCENARIO this table has
        from datagen.dataset import scales_of

        df = d["data_files"]
        s, f = scales_of(sc.table, df["count"], df["rows"], df["logical_bytes"])
        d["scales"] = {"scenario": sc.name, "scale": s, "file_scale": f}
    return d


__all__ = ["describe", "ground_truth", "inspect_source", "prepare_clone", "render",
           "source_record", "source_shape"]
