"""`bench conformance`: each engine's correctness on edge-case tables, as a matrix (engine x case).

A campaign of ordinary runs: the cases' tables (datagen.conformance, written by Spark SQL and Iceberg's Java
API, never by the engines measured) are each run through `bench run`'s own path (`run_scenario` with the
table as a --source-table: a zero-copy clone, restored before every engine, the table out of reach while
the engine sets up, verified), and every cell's verdict comes from the verifier's checks:

    correct         the run is verified
    wrong           the engine ran and a required check failed that every reader agrees on (evidence: the
                    failed checks: rows and checksums against the source's, metadata, types, files)
    unsupported     the engine declares it cannot (its reason), or it failed on the table (its own error)
    harness-cannot  the harness could not judge: the case could not be written or cloned, its readers
                    disagree and the reference reader (Iceberg's Java library) could not read it either, or
                    the harness failed (must stay empty: each one is a harness defect)

A reader that read otherwise than the reference reader is a reader finding (`ConformanceCell.findings`,
also in the evidence): a fact about that reader, never the engine's verdict.

The record goes to DIR/<run-id>/conformance.json (`ConformanceRecord`); `bench report DIR/<run-id>` renders
the matrix, each wrong cell with its evidence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import UserError
from bench.core.fileio import write_atomic
from bench.core.progress import Progress
from bench.core.results import ConformanceCell, ConformanceRecord, RunResult, now_iso
from bench.core.source import SourceRef
from bench.engines import parse_engines
from bench.runner import RunOptions, run_scenario
from bench.runner.session import SharedProcesses
from datagen.conformance import Case, Written, catalog_file, load_cases, write_cases

DEFAULT_ENGINES = "spark,risingwave"
TABLES_DIR = "conformance-tables"  # under the warehouse: the cases' tables, reused while the cases are the same


@dataclass
class ConformanceOptions:
    engines: str = DEFAULT_ENGINES
    cases: list[str] | None = None
    results_dir: str = "results"
    warehouse: str | None = None
    run_id: str | None = None
    timeout_s: int = 600


def verdict(r: RunResult) -> tuple[str, str]:
    """A cell's verdict and its evidence, from one engine run's result."""
    if r.status == "unsupported":
        return "unsupported", (r.error or "").removeprefix("unsupported: ")
    if r.status != "ok":
        if (r.error or "").startswith("harness:"):
            return "harness-cannot", r.error or ""
        return "unsupported", f"{r.status}: {r.error or 'no error recorded'}"
    found = "".join(f"reader finding: {f.text()}; " for f in r.verification.findings)
    if r.verified:
        return "correct", found.removesuffix("; ")
    failed = [c for c in r.verification.checks if c.required and not c.ok]
    # the readers that count (advisory ones aside: by name where names are ambiguous, or overruled by the reference)
    content = [c for c in r.verification.checks if c.name.startswith("content_") and c.required]
    if content and any(c.ok for c in content) and any(not c.ok for c in content):  # the reference could not decide
        return "harness-cannot", "readers disagree: " + "; ".join(f"{c.name}: {c.message}" for c in content)[:2000]
    rows = r.verification.rows
    which = "" if rows is None else (
        f"rows that came back: {rows.came_back} (e.g. {rows.came_back_rows}); rows lost: {rows.lost}"
        + (f" (e.g. {rows.lost_rows})" if rows.lost_rows else "") + "; ")
    return "wrong", (found + which + "; ".join(f"{c.name}: {c.message}" for c in failed))[:3000] or "not verified"


def run_case(opts: ConformanceOptions, case: Case, catalog: Path, engines: list[str], run_dir: Path,
             progress: Progress, shared: SharedProcesses | None = None) -> list[ConformanceCell]:
    """One case through `bench run`'s path, one cell per engine (in the engines' shared processes when given)."""
    ref = SourceRef(catalog_file=str(catalog), table=case.table)
    try:
        results = run_scenario(RunOptions(scenario=case.scenario, engines=",".join(engines), source=ref,
                                          warehouse=opts.warehouse, results_dir=str(run_dir / "runs"),
                                          run_id=case.name, timeout_s=opts.timeout_s, readers=False,
                                          shared=shared), progress)
    except Exception as e:  # noqa: BLE001 - the harness refused the table or failed on it: it cannot judge it
        why = f"refused: {e}" if isinstance(e, UserError) else f"the harness failed: {type(e).__name__}: {e}"
        return [ConformanceCell(case=case.name, covers=case.covers, engine=e_, verdict="harness-cannot",
                                evidence=why[:2000]) for e_ in engines]
    cells = []
    for r in results:
        v, evidence = verdict(r)
        cells.append(ConformanceCell(case=case.name, covers=case.covers, engine=r.engine, verdict=v,  # type: ignore[arg-type]
                                     evidence=evidence, run=f"runs/{case.name}/{Path(r.engine).name}",
                                     findings=r.verification.findings))
    return cells


def conformance(opts: ConformanceOptions, progress: Progress) -> ConformanceRecord:
    engines = parse_engines(opts.engines)
    cases = load_cases(names=opts.cases)
    warehouse = Path(opts.warehouse or "warehouse")
    run_id = opts.run_id or time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-conformance"
    run_dir = Path(opts.results_dir) / run_id
    if run_dir.exists():
        raise UserError(f"{run_dir} exists: choose another --run-id")
    run_dir.mkdir(parents=True)
    rec = ConformanceRecord(run_id=run_id, started_at=now_iso(), engines=engines, cases=[c.name for c in cases])
    t0 = time.perf_counter()
    with progress.task(f"writing {len(cases)} conformance tables with Spark SQL (each reused while its case is "
                       "the same)", unit="step"):
        written = write_cases(cases, warehouse / TABLES_DIR)
    rec.tables_s = round(time.perf_counter() - t0, 1)
    catalog = catalog_file(warehouse / TABLES_DIR)
    with SharedProcesses() as shared:
        for i, case in enumerate(cases, 1):
            run_one_case(opts, rec, i, case, written.get(case.name), catalog, run_dir, progress, shared)
    rec.ended_at, rec.seconds = now_iso(), round(time.perf_counter() - t0, 1)
    write_atomic(run_dir / "conformance.json", rec.model_dump_json(indent=1))
    return rec


def run_one_case(opts: ConformanceOptions, rec: ConformanceRecord, i: int, case: Case, w: Written | None,
                 catalog: Path, run_dir: Path, progress: Progress, shared: SharedProcesses) -> None:
    """One case's cells into `rec`, written after each case (a killed campaign keeps what it judged)."""
    progress.info(f"[conformance {i}/{len(rec.cases)}] {case.name} ({', '.join(case.covers)})")
    if w is None or w.error:
        why = w.error if w is not None else "not written"
        rec.cells += [ConformanceCell(case=case.name, covers=case.covers, engine=e, verdict="harness-cannot",
                                      evidence=f"the case's table could not be written: {why}") for e in rec.engines]
    else:
        rec.cells += run_case(opts, case, catalog, rec.engines, run_dir, progress, shared)
    write_atomic(run_dir / "conformance.json", rec.model_dump_json(indent=1))


def matrix_line(rec: ConformanceRecord) -> list[str]:
    """The matrix as the terminal shows it: a line per case, then per engine its counts, then where it went."""
    width = max([4, *(len(c) for c in rec.cases)])
    out = [f"{'case':<{width}}  " + "  ".join(f"{e:<14}" for e in rec.engines)]
    for case in rec.cases:
        cells = {c.engine: c.verdict for c in rec.cells if c.case == case}
        out.append(f"{case:<{width}}  " + "  ".join(f"{cells.get(e, '-'):<14}" for e in rec.engines))
    for e in rec.engines:
        got = [c.verdict for c in rec.cells if c.engine == e]
        out.append(f"{e}: " + ", ".join(f"{got.count(v)} {v}" for v in dict.fromkeys(got)))
    out.append(f"conformance: {Path(rec.run_id)}/conformance.json ({rec.seconds or 0:.0f} s"
               + (f", {rec.tables_s:.0f} s of it writing the cases' tables" if rec.tables_s else "") + ")")
    return out
