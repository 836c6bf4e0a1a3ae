"""`bench conformance`: each engine's correctness on edge-case tables, as a matrix (engine x case).

A campaign of ordinary runs: the cases' tables (datagen.conformance: each written by the writer its case names:
pyiceberg, or Spark SQL with Iceberg's Java library (equality deletes by pyarrow and Iceberg's Java API), or
Iceberg's Java API alone; on the last two the Spark engine is judged on tables its own library wrote, and its cells
are marked self-written) are each run through `bench run`'s own path
(`run_scenario` with the table as a --source-table: a zero-copy clone, restored before every engine, the table out of
reach while the engine sets up, verified).  Each case states the rows its operations leave by the Iceberg spec
(`expected`, reasoned by its author): the table as written is held to it first (`case_table_holds_expected`, a
harness check), then every engine's output (`expected_rows`), and each reader's answer is a witness against it.

Every cell's verdict comes from whose checks failed (each check declares it: `Check.whose`, `Check.about`):

    correct         the run is verified, or only readers disagreed with the case's expected rows (reader findings)
    wrong-rows      the engine's output does not hold the expected rows, or every reader reads content other
                    than the source's (evidence: the rows that came back or were lost, a few of each)
    wrong-metadata  the rows are right, something else about the output is not: snapshot summary, stats, schema,
                    properties, refs, files (codec, count, live deletes), Parquet types (evidence: the fields)
    failed          the engine crashed, ran out of memory, timed out or panicked (its own error)
    unsupported     the engine's own declared refusal, or its own error saying it does not support the shape
                    (Engine.refusal_pattern)
    harness-cannot  the harness could not: write or clone the table, serve it (Capabilities.harness_cannot: e.g. a
                    catalog that cannot commit what the engine writes; or its REST catalog answered a 5xx during a
                    run that then failed), read it, or a harness-side check failed (the
                    table as written against its expected rows, input_identical, input_matches_generator,
                    setup_out_of_reach): each one is a harness defect, never the engine's verdict

A reader that disagreed with the reference reader or with the case's expected rows is a reader finding
(`ConformanceCell.findings`, also in the evidence): a fact about that reader, never the engine's verdict.

The record goes to DIR/<run-id>/conformance.json (`ConformanceRecord`, with the versions the verdicts come from);
`bench report DIR/<run-id>` renders the matrix, each cell that is not correct with its evidence.  `--fail-on`
turns chosen verdicts into exit status 1 (a gate for an engine upgrade).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from pyiceberg.table import Table

from bench.campaigns import reproducers
from bench.core.catalog import normalize_warehouse
from bench.core.catalog.s3 import is_s3
from bench.core.errors import UserError
from bench.core.fileio import write_atomic
from bench.core.iceberg_java.runtime import ICEBERG_VERSION
from bench.core.machine import HARNESS_PACKAGES, package_versions
from bench.core.progress import Progress
from bench.core.records.conformance import (
    HARNESS_RUNTIME,
    WRONG,
    ConformanceCase,
    ConformanceCell,
    ConformanceRecord,
    Reproducer,
    VersionPair,
)
from bench.core.records.verification import Check
from bench.core.results import RunResult, now_iso
from bench.core.source import SourceRef, load_source
from bench.engines import REGISTRY, engine_class, parse_engines, split_label
from bench.engines.base import HARNESS_CANNOT, MaintenanceOp
from bench.runner.context import RunOptions, check_results_dir, new_run_id
from bench.runner.maintenance import MaintenanceRun
from bench.runner.run import run_scenario
from bench.runner.session import SharedProcesses
from bench.verify import maintenance as maint
from bench.verify.expected import expected_check
from datagen.conformance import (
    CASES_FILE,
    Case,
    Operation,
    Written,
    age_orphans,
    case_warehouse,
    catalog_file,
    load_cases,
    orphan_path,
    write_cases,
)

DEFAULT_ENGINES = "spark,risingwave"
READER_PACKAGES = ("pyiceberg", "pyarrow", "duckdb", "duckdb-extension-iceberg")  # the harness's readers
TABLES_DIR = "conformance-tables"  # under the warehouse: the cases' tables, reused while the cases are the same


@dataclass
class ConformanceOptions:
    engines: str = DEFAULT_ENGINES
    cases: list[str] | None = None
    results_dir: str = "results"
    warehouse: str | None = None
    run_id: str | None = None
    timeout_s: int = 600
    cases_file: str | None = None  # another cases file (default: scenarios/conformance/cases.yaml)
    reproducers: bool = True  # one per maintenance cell that is not correct (bench.campaigns.reproducers)


FAIL_ON = {"wrong": WRONG, "wrong-rows": ("wrong-rows",), "wrong-metadata": ("wrong-metadata",),
           "failed": ("failed",), "unsupported": ("unsupported",), "harness-cannot": ("harness-cannot",),
           "deleted-live": ("deleted-live",), "resurrected": ("resurrected",), "kept-garbage": ("kept-garbage",),
           "refused": ("refused",)}
# a maintenance case's checks (bench.verify.maintenance) and the verdict each one's failure is, the first failed in
# this order deciding: data lost, then rows back, then rows otherwise wrong, then garbage left (a finding)
MAINTENANCE_VERDICTS = ((maint.KEPT, "deleted-live"), (maint.RESURRECTED, "resurrected"),
                        (maint.KEPT_SNAPSHOTS, "wrong-rows"), (maint.REF_ROWS, "wrong-rows"),
                        (maint.REMOVED, "kept-garbage"))
EXPECTED_CHECK = "expected_rows"  # the output against the case's expected rows (bench.verify.checks.verify)
TABLE_CHECK = "case_table_holds_expected"  # the table as written against them, before any engine runs


def parse_fail_on(text: str | None) -> tuple[str, ...]:
    """--fail-on VERDICT[,VERDICT...]: the verdicts (wrong = both wrong kinds) that make the run exit 1."""
    if not text:
        return ()
    asked = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in asked if v not in FAIL_ON]
    if bad or not asked:
        raise UserError(f"--fail-on: unknown verdict(s) {', '.join(bad) or repr(text)}; choose from "
                        f"{', '.join(FAIL_ON)} (comma-separated)")
    return tuple(dict.fromkeys(v for a in asked for v in FAIL_ON[a]))


def _listed(checks: list[Check]) -> str:
    return "; ".join(f"{c.name}: {c.message}" for c in checks)


def _engine_error(r: RunResult, refuses: str) -> tuple[str, str]:
    """A run that did not end ok: unsupported when the engine's own error says so, else failed; the harness's
    failure (its error starts with HARNESS_CANNOT) is harness-cannot."""
    err = r.error or ""
    if err.startswith(HARNESS_CANNOT):
        return "harness-cannot", err
    if r.status == "unsupported":
        return "unsupported", err.removeprefix("unsupported: ")
    served = r.catalog_server.server_errors if r.catalog_server else []
    if served:  # the harness's own catalog server failed it: not the engine's failure
        return "harness-cannot", (f"the harness's REST catalog answered {len(served)} server error(s) during the run "
                                  f"({', '.join(served[:3])}); the engine then ended {r.status}: {err}")[:2000]
    said = " | ".join([err, *r.error_causes])
    if refuses and re.search(refuses, said):
        return "unsupported", f"its own error says it does not support this: {r.status}: {err}"
    # the causes under the error (a JVM's: py4j's own line names only the call that failed)
    causes = [c for c in r.error_causes if c and c != err]
    return "failed", (f"{r.status}: {err or 'no error recorded'}"
                      + "".join(f"; caused by {c}" for c in causes[-2:]))[:2000]


def verdict(r: RunResult, refuses: str = "") -> tuple[str, str]:
    """A cell's verdict and its evidence, from one engine run's result: from whose required checks failed (the
    harness's first, then the engine's rows, then the rest of its output); `refuses`: the engine's pattern for its
    own errors that say it does not support a shape (Engine.refusal_pattern)."""
    if r.live_writer is not None and r.status != "unsupported" and not (r.error or "").startswith(HARNESS_CANNOT):
        return concurrent_verdict(r)
    if r.status != "ok" or (r.error or "").startswith(HARNESS_CANNOT):
        return _engine_error(r, refuses)
    checks = r.verification.checks
    failed = [c for c in checks if c.required and not c.ok]
    harness = [c for c in failed if c.whose == "harness"]
    if harness:
        return "harness-cannot", "a harness-side check failed: " + _listed(harness)[:3000]
    said = maintenance_verdict(checks)
    if said is not None:
        return said
    readers = [c for c in failed if c.whose == "reader"]
    rows = [c for c in failed if c.whose == "engine" and c.about == "rows"]
    held = next((c for c in checks if c.name == EXPECTED_CHECK), None)
    others = [c for c in checks if c.required and c.about == "rows" and c.whose == "engine" and c is not held]
    if rows and any(c.ok for c in others):  # the readers of the output disagree
        if held is None:
            return "harness-cannot", "readers disagree and no expected rows decide: " + _listed(others)[:2000]
        if held.ok:  # the case's expected rows side with the readers that passed: the others are reader findings
            readers, rows = readers + rows, []
    found = "".join(f"reader finding: {f.text()}; " for f in r.verification.findings)
    found += "".join(f"reader check {c.name}: {c.message}; " for c in readers)
    if rows:
        rows.sort(key=lambda c: c is not held)  # the case's expected rows first: what they say is the verdict
        diff = r.verification.rows
        which = "" if diff is None else (
            f"rows that came back: {diff.came_back} (e.g. {diff.came_back_rows}); rows lost: {diff.lost}"
            + (f" (e.g. {diff.lost_rows})" if diff.lost_rows else "") + "; ")
        return "wrong-rows", (which + _listed(rows) + "; " + found)[:3000].removesuffix("; ")
    meta = [c for c in failed if c.whose == "engine" and c.about == "metadata"]
    if meta:
        return "wrong-metadata", (_listed(meta) + "; " + found)[:3000].removesuffix("; ")
    return "correct", found.removesuffix("; ")


def concurrent_verdict(r: RunResult) -> tuple[str, str]:
    """A case with a concurrent commit (its run a live writer's, bench.verify.live): the live verdict said in the
    matrix's words.  safe: correct; refused (the engine committed nothing and failed, the table holds the case's end
    state: what the spec allows a conflicting commit, no data lost): refused; unsafe: resurrected when rows the
    concurrent commit deleted are back, else wrong-rows; inconclusive: failed when the engine timed out or ran out of
    memory, else harness-cannot (the commits did not interleave as the case states, or nothing could read the end
    state).  A failed harness check comes first; a failed integrity check of an otherwise safe run is
    wrong-metadata."""
    lw = r.live_writer
    assert lw is not None
    said = f"{lw.description}; held: {lw.hold or 'never'}; commit order: {' -> '.join(lw.order) or 'none'}; {lw.reason}"
    failed = [c for c in r.verification.checks if c.required and not c.ok]
    harness = [c for c in failed if c.whose == "harness"]
    if harness:
        return "harness-cannot", ("a harness-side check failed: " + _listed(harness) + "; " + said)[:3000]
    if lw.verdict == "unsafe":
        back = lw.evidence.get("deleted_keys_back")
        return ("resurrected" if back else "wrong-rows"), (said + (f" (keys back: {back})" if back else ""))[:3000]
    if lw.verdict == "inconclusive":
        ended = r.status in ("timeout", "oom", "heap-oom")
        return ("failed" if ended else "harness-cannot"), (said + (f"; {r.error}" if ended and r.error else ""))[:3000]
    if lw.verdict == "refused":
        causes = [c for c in lw.evidence.get("engine_causes", [])[:1] if c.splitlines()[0][:300] not in said]
        return "refused", (said + "".join(f"; {c}" for c in causes))[:3000]
    meta = [c for c in failed if c.name not in ("interleaved", "content_as_expected", "engine_compaction_committed")]
    if meta:
        return "wrong-metadata", (_listed(meta) + "; " + said)[:3000]
    return "correct", said[:3000]


def maintenance_verdict(checks: list[Check]) -> tuple[str, str] | None:
    """A maintenance case's verdict from its checks (MAINTENANCE_VERDICTS); None for a compaction's run."""
    by = {c.name: c for c in checks}
    if maint.KEPT not in by:
        return None
    failed = [by[name] for name, _ in MAINTENANCE_VERDICTS if name in by and not by[name].ok]
    first = next((v for name, v in MAINTENANCE_VERDICTS if name in by and not by[name].ok), "correct")
    return first, _listed(failed)[:3000]


def maintenance_op(op: Operation, tbl: Table) -> MaintenanceOp:
    """The case's operation as every engine is asked it, its cutoff resolved on the table as written (UserError when
    its snapshot is not there): an expiry's, the named snapshot's own timestamp; without a retain_last, the engine's
    own rule (Iceberg Java's: the table's history.expire.min-snapshots-to-keep)."""
    if op.op == "expire-snapshots":
        ids = maint.select(tbl, op.older_than_snapshot or "")
        if not ids:
            raise UserError(f"older_than_snapshot {op.older_than_snapshot} names no snapshot of the table")
        snap = tbl.metadata.snapshot_by_id(ids[0])
        assert snap is not None
        return MaintenanceOp(op="expire_snapshots", retain_last=op.retain_last, older_than_ms=snap.timestamp_ms)
    if op.op == "rewrite-manifests":
        return MaintenanceOp(op="rewrite_manifests")
    if op.op == "rewrite-position-deletes":
        return MaintenanceOp(op="rewrite_position_deletes")
    return MaintenanceOp(op="remove_orphan_files", older_than_s=op.older_than_s or 0.0)


def maintenance_run(case: Case, catalog: Path) -> tuple[MaintenanceRun | None, Check]:
    """A maintenance case resolved on its table as written (its orphans aged again first: the table is reused), and
    the harness's check that the table holds what the case's expectation names (None: it cannot be run)."""
    assert case.maintenance is not None
    try:
        tbl = load_source(case_ref(case, catalog))
        age_orphans(case, tbl.location())
        named = {s.orphan.name: [orphan_path(tbl.location(), s.orphan.name)] for s in case.steps if s.orphan}
        res = maint.resolve(tbl, case.expected, case.maintenance, named)
        op = maintenance_op(case.operation, tbl)
    except UserError as e:
        return None, Check(name=maint.TABLE_CHECK, ok=False, whose="harness", about="rows", message=str(e))
    check = maint.table_check(tbl, res)
    return (MaintenanceRun(op=op, expected=res) if check.ok else None), check


def run_case(opts: ConformanceOptions, case: Case, catalog: Path, engines: list[str], run_dir: Path,
             progress: Progress, shared: SharedProcesses | None = None,
             written: Written | None = None,
             maintenance: MaintenanceRun | None = None) -> tuple[list[ConformanceCell], list[RunResult]]:
    """One case through `bench run`'s path, one cell per engine (in the engines' shared processes when given); a
    case on a branch with the table pinned at the branch's head, each engine asked to compact that branch; a
    maintenance case on the case's own table in place, each engine asked its operation."""
    try:
        ref = case_ref(case, catalog)
        results = run_scenario(RunOptions(scenario=case.scenario, engines=",".join(engines), source=ref,
                                          warehouse=opts.warehouse, results_dir=str(run_dir / "runs"),
                                          run_id=case.name, timeout_s=opts.timeout_s, readers=False,
                                          shared=shared, expected=case.expected, branch=case.branch,
                                          maintenance=maintenance, during=case.during or None,
                                          written=case.written), progress)
    except Exception as e:  # noqa: BLE001 - the harness refused the table or failed on it: it cannot judge it
        why = f"refused: {e}" if isinstance(e, UserError) else f"the harness failed: {type(e).__name__}: {e}"
        return [ConformanceCell(case=case.name, covers=case.covers, engine=e_, verdict="harness-cannot",
                                evidence=why[:2000]) for e_ in engines], []
    cells = []
    for r in results:
        cls = engine_class(r.engine_name)
        v, evidence = verdict(r, cls.refusal_pattern)
        mine = bool(written and set(written.packages) & {*cls.packages, *cls.library_packages})
        cells.append(ConformanceCell(case=case.name, covers=case.covers, engine=r.engine, verdict=v,  # type: ignore[arg-type]
                                     evidence=evidence, run=f"runs/{case.name}/{Path(r.engine).name}",
                                     findings=r.verification.findings, self_written=mine))
    return cells, results


def case_ref(case: Case, catalog: Path) -> SourceRef:
    """The case's table as a source: at its current snapshot, or at the head of the branch it compacts (UserError
    when the table has no such branch)."""
    ref = SourceRef(catalog_file=str(catalog), table=case.table)
    if case.branch is None:
        return ref
    head = load_source(ref).metadata.refs.get(case.branch)
    if head is None:
        raise UserError(f"the case's table has no branch {case.branch!r}")
    return ref.model_copy(update={"snapshot_id": head.snapshot_id})


def table_check(case: Case, catalog: Path) -> Check:
    """The case's table as written (the head of its branch, for a case on one) against what the case states it holds
    (`Case.as_written`: before a concurrent commit, for a case with one; a harness check: a table that does not hold
    it is the harness's defect, and no engine is judged on it)."""
    try:
        ref = case_ref(case, catalog)
        tbl = load_source(ref)
    except UserError as e:
        return Check(name=TABLE_CHECK, ok=False, whose="harness", about="rows", message=f"cannot load it: {e}")
    on = "the case's table as written" + (f" (branch {case.branch})" if case.branch else "")
    return expected_check(tbl, ref.snapshot_id, case.as_written, TABLE_CHECK, "harness", on)


def conformance(opts: ConformanceOptions, progress: Progress) -> ConformanceRecord:
    engines = parse_engines(opts.engines)
    cases = load_cases(path=Path(opts.cases_file) if opts.cases_file else CASES_FILE, names=opts.cases)
    where = normalize_warehouse(opts.warehouse)
    if is_s3(where):
        raise UserError(f"warehouse {where}: the conformance cases' tables are written to a local warehouse "
                        "(--warehouse DIR)")
    warehouse = Path(where)
    results = check_results_dir(opts.results_dir)
    run_id = new_run_id(results, "conformance", opts.run_id)
    run_dir = results / run_id
    run_dir.mkdir(parents=True)
    rec = ConformanceRecord(run_id=run_id, started_at=now_iso(), engines=engines,
                            cases=[ConformanceCase(name=c.name, covers=c.covers, expected=c.expected, branch=c.branch)
                                   for c in cases],
                            runtimes={HARNESS_RUNTIME: harness_runtime()}, version_pairs=version_pairs(engines))
    t0 = time.perf_counter()
    with progress.task(f"writing {len(cases)} conformance tables with their writers (Spark SQL, pyiceberg; each "
                       "reused while its case is the same)", unit="step"):
        written = write_cases(cases, warehouse / TABLES_DIR)
    rec.tables_s = round(time.perf_counter() - t0, 1)
    catalog = catalog_file(warehouse / TABLES_DIR)
    with SharedProcesses(log_dir=run_dir / "runs") as shared:
        for i, case in enumerate(cases, 1):
            results = run_one_case(opts, rec, i, case, written.get(case.name), catalog, run_dir, progress, shared)
            record_versions(rec, results)
    if opts.reproducers:
        reproduce(rec, cases, run_dir, progress)
    rec.versions.setdefault("writer", writer_versions())
    rec.ended_at, rec.seconds = now_iso(), round(time.perf_counter() - t0, 1)
    write_atomic(run_dir / "conformance.json", rec.model_dump_json(indent=1))
    return rec


def run_one_case(opts: ConformanceOptions, rec: ConformanceRecord, i: int, case: Case, w: Written | None,
                 catalog: Path, run_dir: Path, progress: Progress, shared: SharedProcesses) -> list[RunResult]:
    """One case's cells into `rec`, written after each case (a killed campaign keeps what it judged)."""
    progress.info(f"[conformance {i}/{len(rec.cases)}] {case.name} ({', '.join(case.covers)})")
    entry = rec.case(case.name)
    assert entry is not None
    results: list[RunResult] = []
    if w is None or w.error:
        why = w.error if w is not None else "not written"
        rec.cells += [ConformanceCell(case=case.name, covers=case.covers, engine=e, verdict="harness-cannot",
                                      evidence=f"the case's table could not be written: {why}") for e in rec.engines]
    else:
        entry.written_by = w.written_by
        entry.table_check = table_check(case, catalog)
        run = None
        if entry.table_check.ok and case.operation.maintains:
            run, entry.table_check = maintenance_run(case, catalog)
            entry.operation = run.op.describe() if run else ""
        if not entry.table_check.ok:  # the harness's defect: no engine is judged on a table that is not the case
            rec.cells += [ConformanceCell(case=case.name, covers=case.covers, engine=e, verdict="harness-cannot",
                                          evidence=f"{entry.table_check.name}: {entry.table_check.message}")
                          for e in rec.engines]
        else:
            cells, results = run_case(opts, case, catalog, rec.engines, run_dir, progress, shared, w, run)
            rec.cells += cells
    write_atomic(run_dir / "conformance.json", rec.model_dump_json(indent=1))
    return results


def reproduce(rec: ConformanceRecord, cases: list[Case], run_dir: Path, progress: Progress) -> None:
    """A reproducer for every maintenance cell that is not correct (harness-cannot is no engine's failure), into
    `rec`: each cell's copy of its case's table written by the case's writer, resolved as the matrix resolved the
    suite's, then its directory and script (bench.campaigns.reproducers), the script run once."""
    by = {c.name: c for c in cases}
    due = [(by[c.case], c) for c in rec.cells if by[c.case].operation.maintains
           and c.verdict not in ("correct", "harness-cannot")]
    if not due:
        return
    root = run_dir / reproducers.DIR
    tables = root / reproducers.WAREHOUSE
    with progress.task(f"writing {len(due)} reproducer(s) for the maintenance cells that are not correct, each "
                       "script run once", unit="step"):
        copies = [reproducers.copy_of(case, cell) for case, cell in due]
        written = write_cases(copies, tables)
        catalog = catalog_file(tables)
        for (_, cell), copy in zip(due, copies, strict=True):
            progress.info(f"[reproducer] {cell.case} -- {cell.engine}")
            rec.reproducers.append(reproducer(cell, copy, written[copy.name], catalog, root, tables))
            write_atomic(run_dir / "conformance.json", rec.model_dump_json(indent=1))


def reproducer(cell: ConformanceCell, copy: Case, w: Written, catalog: Path, root: Path, tables: Path) -> Reproducer:
    """One cell's reproducer on its copy of the case's table (`w`: as its writer wrote it)."""
    rel = reproducers.rel_dir(cell)
    if w.error:
        return Reproducer(case=cell.case, engine=cell.engine, dir=rel, why=f"its table could not be written: {w.error}")
    check = table_check(copy, catalog)
    run = None
    if check.ok:
        run, check = maintenance_run(copy, catalog)
    if run is None:
        return Reproducer(case=cell.case, engine=cell.engine, dir=rel, why=f"{check.name}: {check.message}")
    return reproducers.write(cell, copy, load_source(case_ref(copy, catalog)), run.op, run.expected, root,
                             case_warehouse(tables))


def version_pairs(engines: list[str]) -> list[VersionPair]:
    """The run's engines that are one engine on two versions (the earlier one declares which it is an earlier version
    of: Engine.earlier_version_of), each pair once."""
    pairs = []
    for e in engines:
        of = engine_class(split_label(e)[0]).earlier_version_of
        newer = [x for x in engines if split_label(x)[0] == of and split_label(x)[1] == split_label(e)[1]]
        pairs += [VersionPair(engine=n, earlier=e) for n in newer]
    return pairs


def harness_runtime() -> str:
    """The runtime of the harness's own JVMs (the reference reader, the cases' Spark writer)."""
    return f"Spark {package_versions(('pyspark',))['pyspark']} + Iceberg {ICEBERG_VERSION} (the harness's JVMs)"


def runtime_label(versions: dict[str, str | None], packages: tuple[str, ...]) -> str:
    """An engine's runtime in a few words, from what its result recorded: Spark's and Iceberg's versions where it
    reported them (e.g. "Spark 4.1.4 + Iceberg 1.12.0"), else its own distributions' (`packages`), else the first
    version it reported."""
    if versions.get("spark") and versions.get("iceberg"):
        return f"Spark {versions['spark']} + Iceberg {versions['iceberg']}"
    own = [f"{p} {versions[p]}" for p in packages if versions.get(p)]
    return ", ".join(own) or next((f"{k} {v}" for k, v in versions.items() if v), "")


def record_versions(rec: ConformanceRecord, results: list[RunResult]) -> None:
    """The versions the verdicts come from, from the results (each result records them): per engine its own
    distributions and what it reported (e.g. Spark's, Java's and Iceberg's versions) and its runtime in a few
    words, and the readers'."""
    engine_packages = {p for e in REGISTRY for p in engine_class(e).packages}
    reference = package_versions(("pyspark",))["pyspark"]  # the reference reader's Spark, whichever engines ran
    for r in results:
        cls = engine_class(r.engine_name)
        own = rec.versions.setdefault(r.engine, {})
        own.update({k: v for k, v in r.versions.items() if k in cls.packages or (k not in HARNESS_PACKAGES
                                                                                  and k not in engine_packages)})
        label = runtime_label(own, cls.packages) or rec.runtimes.get(r.engine)
        if not label and cls.declared_runtime():  # no run of it reported versions yet (each refused)
            label = f"{cls.declared_runtime()} (as declared: no run reported its versions)"
        if label:
            rec.runtimes[r.engine] = label
        rec.versions.setdefault("readers", {}).update(
            {k: r.versions[k] for k in READER_PACKAGES if k in r.versions}
            | {"iceberg (Java, the reference reader through Spark SQL)": ICEBERG_VERSION,
               "pyspark (the reference reader)": reference})


def writer_versions() -> dict[str, str | None]:
    """The cases' writers (datagen.conformance WRITERS: Spark SQL and Iceberg's Java library, pyarrow's files,
    pyiceberg; each case's own in its `written_by`)."""
    return package_versions(("pyspark", "pyarrow", "pyiceberg")) | {"iceberg (Java)": ICEBERG_VERSION}


def failing(rec: ConformanceRecord, verdicts: tuple[str, ...]) -> list[ConformanceCell]:
    """The cells whose verdict is among `verdicts` (--fail-on)."""
    return [c for c in rec.cells if c.verdict in verdicts]


def matrix_line(rec: ConformanceRecord) -> list[str]:
    """The matrix as the terminal shows it: a line per case, then per engine its counts, the versions, then where
    it went.  A self-written cell (the engine's own library wrote the table) is marked with a *."""
    names = rec.case_names
    width = max([4, *(len(c) for c in names)])
    pairs = [(p, f"{p.earlier} -> {p.engine}") for p in rec.version_pairs]
    out = [f"{'case':<{width}}  " + "  ".join(f"{e:<15}" for e in rec.engines)
           + "".join(f"  {head}" for _, head in pairs)]
    for case in names:
        cells = {c.engine: c.verdict + ("*" if c.self_written else "") for c in rec.cells if c.case == case}
        changed = [rec.change(p, case) for p, _ in pairs]
        out.append((f"{case:<{width}}  " + "  ".join(f"{cells.get(e, '-'):<15}" for e in rec.engines)
                    + "".join(f"  {c.earlier} -> {c.verdict}" if c else f"  {'':<{len(h)}}"
                              for c, (_, h) in zip(changed, pairs))).rstrip())
    for e in rec.engines:
        got = [c.verdict for c in rec.cells if c.engine == e]
        out.append(f"{e}" + (f" ({rec.runtimes[e]})" if e in rec.runtimes else "") + ": "
                   + ", ".join(f"{got.count(v)} {v}" for v in dict.fromkeys(got)))
    for p, _ in pairs:
        changes = rec.changes(p)
        out.append(f"changed, {rec.pair_label(p)}: " + (", ".join(f"{c.case} {c.earlier} -> {c.verdict}"
                                                                  for c in changes) or "no verdict changed"))
    if HARNESS_RUNTIME in rec.runtimes:
        out.append(f"the reference reader and the cases' JVM writer: {rec.runtimes[HARNESS_RUNTIME]}")
    if any(c.self_written for c in rec.cells):
        out.append("* self-written: the engine's own library wrote the case's table (the case's expected rows, "
                   "not that library, decide the cell)")
    if rec.reproducers:
        shown = sum(r.shown is True for r in rec.reproducers)
        out.append(f"reproducers: {len(rec.reproducers)} under {Path(rec.run_id)}/{reproducers.DIR}/, {shown} of them "
                   "show the failure when run on their own" + "".join(
                       f"; {r.case} -- {r.engine}: " + (r.why or "does not show it")
                       for r in rec.reproducers if r.shown is not True))
    for who, v in rec.versions.items():
        out.append(f"versions, {who}: " + ", ".join(f"{k} {x}" for k, x in v.items()))
    out.append(f"conformance: {Path(rec.run_id)}/conformance.json ({rec.seconds or 0:.0f} s"
               + (f", {rec.tables_s:.0f} s of it writing the cases' tables" if rec.tables_s else "") + ")")
    return out
