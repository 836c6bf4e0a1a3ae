"""The conformance matrix (`bench conformance`'s conformance.json): engine x case, each cell's verdict, each
wrong, unsupported or harness-cannot cell with its evidence; and, for a run on a user's table, the cases its
shape touches (touch_notes): each engine's verdict on each case its record's `source.touches` lists, from one
conformance record found by LOOKUP (the newest conformance.json in the run's own results directory, else the
newest reference run under docs/reference/), which the note names.  From result files only."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from bench.core.errors import UserError
from bench.core.records.conformance import HARNESS_RUNTIME, ConformanceCell, ConformanceRecord, VerdictChange

FILE = "conformance.json"
MEANING = {
    "correct": "the output holds the case's expected rows and passes every check the verifier makes",
    "wrong-rows": "the engine's output lost rows or brought deleted rows back against the case's expected rows (the "
                  "evidence gives examples)",
    "wrong-metadata": "the rows are right, the rest of the output is not: snapshot summary, stats, schema, types "
                      "(Parquet types against Iceberg's mapping), refs or files (the evidence names the fields)",
    "failed": "the engine crashed, ran out of memory, timed out or panicked (its own error)",
    "unsupported": "the engine's own declared refusal, or its own error saying it does not support the shape",
    "harness-cannot": "the harness could not write, clone, serve or read the table, or a harness-side check failed: a "
                      "harness defect, never the engine's verdict (this column must stay empty)",
}
# a maintenance case's verdicts (expire-snapshots, remove-orphan-files): said only where a record has such cells, so a
# record of compaction cases alone renders as it always did
MAINTENANCE_MEANING = {
    "deleted-live": "the operation deleted a file a kept snapshot or a ref still reaches: data loss",
    "resurrected": "after the operation a ref reads a row the case says is deleted",
    "kept-garbage": "the operation is safe but left a file or snapshot it was due to remove (a finding, not a safety "
                    "failure)",
}
# a case with a concurrent commit's verdict beside correct, resurrected and wrong-rows: said where a record has one
CONCURRENT_MEANING = {
    "refused": "the engine's commit failed on the concurrent commit and it committed nothing: the table holds the "
               "case's end state without its rewrite (what the spec allows a conflicting commit: no data lost)",
}
ORDER = ("deleted-live", "resurrected", "wrong-rows", "wrong-metadata", "failed", "kept-garbage", "refused",
         "unsupported", "harness-cannot")
BAD = ("deleted-live", "resurrected", "wrong-rows", "wrong-metadata", "failed", "harness-cannot")  # shown red
READER_FINDINGS = ("Reader findings: a reader the verifier asks that read a table otherwise than the case's expected "
                   "rows or the reference reader (Iceberg's Java library): a fact about that reader, not about the "
                   "engine")
SELF_WRITTEN = ("self-written: the engine's own library wrote the case's table (each case's writer is in its "
                "`written_by`); the case's expected rows, reasoned from the Iceberg spec, decide the cell, not that "
                "library")


@dataclass
class MatrixView:
    rec: ConformanceRecord
    path: Path
    case_runs: int = 0  # the engine runs under the conformance run (shown as the matrix's cells, not as run sets)

    @property
    def engines(self) -> list[str]:
        return self.rec.engines

    def cell(self, case: str, engine: str) -> ConformanceCell | None:
        return next((c for c in self.rec.cells if c.case == case and c.engine == engine), None)

    def _rows(self, maintenance: bool) -> list[tuple[str, list[str], list[ConformanceCell | None]]]:
        out = []
        for case in self.rec.case_names:
            info = self.rec.case(case)
            if bool(info and info.operation) != maintenance:
                continue
            cells = [self.cell(case, e) for e in self.engines]
            covers = next((c.covers for c in cells if c is not None), [])
            out.append((case, covers, cells))
        return out

    @property
    def rows(self) -> list[tuple[str, list[str], list[ConformanceCell | None]]]:
        """The compaction cases' rows (the rewrite matrix)."""
        return self._rows(maintenance=False)

    @property
    def maintenance_rows(self) -> list[tuple[str, list[str], list[ConformanceCell | None]]]:
        """The maintenance cases' rows (expire-snapshots, remove-orphan-files: the maintenance matrix)."""
        return self._rows(maintenance=True)

    @property
    def meaning(self) -> dict[str, str]:
        """The verdicts this matrix can show and what each means: the maintenance ones where it has maintenance
        cases, `refused` where a cell has it (the Markdown and the HTML report say the same)."""
        return {**MEANING, **(MAINTENANCE_MEANING if any(c.operation for c in self.rec.cases) else {}),
                **(CONCURRENT_MEANING if any(c.verdict in CONCURRENT_MEANING for c in self.rec.cells) else {})}

    def counts(self, engine: str) -> dict[str, int]:
        got: list[str] = [c.verdict for c in self.rec.cells if c.engine == engine]
        return {v: got.count(v) for v in {**MEANING, **MAINTENANCE_MEANING, **CONCURRENT_MEANING}}

    def counts_text(self, engine: str) -> str:
        """E.g. "2 correct, 1 unsupported": the verdicts it has, in the verdicts' order."""
        return ", ".join(f"{n} {k}" for k, n in self.counts(engine).items() if n)

    @property
    def self_written(self) -> bool:
        return any(c.self_written for c in self.rec.cells)

    @property
    def title(self) -> str:
        return f"Conformance: {len(self.rec.cases)} cases x {len(self.engines)} engines"

    @property
    def source_text(self) -> str:
        """What the matrix is rendered from, for the report's header: its record, its cases, engines and cells."""
        runs = f", {self.case_runs} engine runs" if self.case_runs else ""
        return (f"the conformance record of run {self.rec.run_id} ({len(self.rec.cases)} cases × {len(self.engines)} "
                f"engines: {len(self.rec.cells)} cells{runs})")

    @property
    def reader_findings(self) -> list[tuple[str, str]]:
        """(case, finding) once per distinct finding of a case (the same source snapshot for every engine)."""
        seen = {(c.case, f.text()): None for c in self.rec.cells for f in c.findings}
        return list(seen)

    @property
    def findings(self) -> list[ConformanceCell]:
        return sorted((c for c in self.rec.cells if c.verdict != "correct"),
                      key=lambda c: (ORDER.index(c.verdict), c.case, c.engine))


def locate(paths) -> list[MatrixView]:
    views = []
    for p in map(Path, paths):
        for f in ([p] if p.name == FILE else sorted(p.rglob(FILE)) if p.is_dir() else []):
            try:
                views.append(MatrixView(ConformanceRecord.model_validate_json(f.read_text()), f))
            except (OSError, ValidationError, ValueError) as e:
                raise UserError(f"{f} is not a readable conformance record: {str(e).splitlines()[0]}") from None
    return views


def case_run_sets(sets, views: list[MatrixView]) -> tuple[list, list]:
    """The result sets that are a conformance run's own engine runs (under its directory), and the others; each
    view's `case_runs` counts its own.  A case's runs are judged, not timed: the matrix shows them, not an
    Overview row of 'no verified run' at scale 0."""
    dirs = [(v, v.path.parent.resolve()) for v in views]
    mine, others = [], []
    for rs in sets:
        owner = next((v for v, d in dirs if any(lr.path.resolve().is_relative_to(d) for lr in rs.runs)), None)
        if owner is None:
            others.append(rs)
        else:
            owner.case_runs += len(rs.runs)
            mine.append(rs)
    return mine, others


def writer_short(text: str) -> str:
    """A case's writer in its first clause (the library that wrote the table), the rest left to a tooltip: a
    matrix row stays one or two lines."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == ";" and depth == 0:
            return text[:i] + " …"
    return text


def runtimes_line(rec: ConformanceRecord) -> str:
    """Each engine's runtime, then the harness's own JVMs' (the reference reader, the cases' JVM writer)."""
    said = [f"{e}: {rec.runtimes[e]}" for e in rec.engines if e in rec.runtimes]
    if HARNESS_RUNTIME in rec.runtimes:
        said.append(f"the reference reader and the cases' JVM writer: {rec.runtimes[HARNESS_RUNTIME]}")
    return "; ".join(said)


def change_text(c: VerdictChange | None) -> str:
    return f"{c.earlier} → {c.verdict}" if c else ""


def versions_line(rec: ConformanceRecord) -> str:
    """The versions the verdicts come from, in one line."""
    return "; ".join(f"{who}: " + ", ".join(f"{k} {x}" for k, x in v.items()) for who, v in rec.versions.items())


def matrix_markdown(v: MatrixView, level: int = 3) -> str:
    rec = v.rec
    out = [f"{'#' * level} {v.title}", "",
           f"Run `{rec.run_id}`, started {rec.started_at or '?'}"
           + (f", {rec.seconds:.0f} s" if rec.seconds else "")
           + (f" ({rec.tables_s:.0f} s of it writing the cases' tables)" if rec.tables_s else "") + ". "
           + "; ".join(f"{e}: {v.counts_text(e)}" for e in rec.engines)
           + ".", ""]
    if rec.runtimes:
        out += [f"Runtimes: {runtimes_line(rec)}.", ""]
    if rec.versions:
        out += [f"Versions: {versions_line(rec)}.", ""]
    pairs = rec.version_pairs
    heads = [*rec.engines, *(f"{p.earlier} → {p.engine}" for p in pairs)]
    if v.rows:
        out += _table(v, v.rows, heads)
    if v.maintenance_rows:  # the maintenance matrix beside the rewrite one
        out += [*([""] if v.rows else []),
                "Maintenance (each case's operation on the suite's own copy of its table):", ""]
        out += _table(v, v.maintenance_rows, heads)
    for p in pairs:
        changes = rec.changes(p)
        out += ["", f"Changed, {rec.pair_label(p, '→')}: "
                + (", ".join(f"{c.case} ({change_text(c)})" for c in changes) or "no verdict changed") + "."]
    if v.self_written:
        out += ["", SELF_WRITTEN + "."]
    if v.findings:
        out += ["", "Every cell that is not `correct`, with its evidence:", ""]
        out += [f"- **{c.case}**, {c.engine}: {c.verdict}: {_one_line(c.evidence)}" + (
                    f" Reproducer: `{r.said()}`." if (r := rec.reproducer(c.case, c.engine)) else "")
                for c in v.findings]
    if v.reader_findings:
        out += ["", READER_FINDINGS + ":", ""]
        out += [f"- **{case}**: {_one_line(text)}" for case, text in v.reader_findings]
    out += ["", "Verdicts: " + "; ".join(f"`{k}`: {m}" for k, m in v.meaning.items()) + "."]
    return "\n".join(out) + "\n"


def _table(v: MatrixView, rows: list[tuple[str, list[str], list[ConformanceCell | None]]],
           heads: list[str]) -> list[str]:
    """A matrix's Markdown table: a line per case, a column per engine, then per version pair."""
    out = ["| case | covers | " + " | ".join(heads) + " |", "|---|---|" + "---|" * len(heads)]
    for case, covers, cells in rows:
        marks = ["—" if c is None else (f"**{c.verdict}**" if c.verdict in BAD else c.verdict)
                 + (" (self-written)" if c.self_written else "") for c in cells]
        marks += [change_text(v.rec.change(p, case)) for p in v.rec.version_pairs]
        out.append(f"| {case} | {', '.join(covers)} | " + " | ".join(marks) + " |")
    return out


def _one_line(text: str, limit: int = 600) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit] + " …"


# ---- a run on a user's table: the conformance cases its shape touches, each engine's verdict on them ----------

REPO = Path(__file__).resolve().parent.parent
REFERENCE_GLOB = "docs/reference/*-conformance/" + FILE
RANK = {"deleted-live": -2, "resurrected": -1, "wrong-rows": 0, "wrong-metadata": 1, "failed": 2, "kept-garbage": 2.5,
        "unsupported": 3, "harness-cannot": 4, "absent": 5, "refused": 5.5, "correct": 6}
LOOKUP = (f"the newest {FILE} (by its start) in the results directory the run is in (a run directory beside it, or "
          f"a directory the run is under), else the newest reference run ({REFERENCE_GLOB})")


def _read(paths) -> list[MatrixView]:
    views = []
    for f in dict.fromkeys(paths):
        try:
            views.append(MatrixView(ConformanceRecord.model_validate_json(f.read_text()), f))
        except (OSError, ValidationError, ValueError):
            continue  # a broken record beside the run: the next one, or the reference run, answers
    return views


def conformance_record(run_dirs, repo: Path = REPO) -> tuple[MatrixView | None, str]:
    """The conformance record a run's note quotes (LOOKUP), and where it was found: "results" (the run's own
    results directory) or "reference"."""
    near = []
    for d in map(Path, run_dirs):
        near += sorted(d.parent.glob(f"*/{FILE}")) + [a / FILE for a in (d, *d.parents) if (a / FILE).is_file()]
    for where, found in (("results", _read(near)), ("reference", _read(sorted(repo.glob(REFERENCE_GLOB))))):
        if found:
            return max(found, key=lambda v: (v.rec.started_at, v.rec.run_id, str(v.path))), where
    return None, ""


@dataclass
class TouchVerdict:
    engine: str
    verdict: str  # a cell's verdict, or "absent": the engine or the case is not in the record
    evidence: str = ""  # one line


@dataclass
class TouchRow:
    case: str
    covers: list[str]
    because: list[str]
    verdicts: list[TouchVerdict]

    @property
    def worst(self) -> str:
        return min((v.verdict for v in self.verdicts), key=RANK.__getitem__, default="absent")


@dataclass
class TouchNote:
    """The note beside a run on a user's table: per touched case, each engine's verdict in `record`."""

    table: str
    snapshot_id: int | None
    record: MatrixView | None
    where: str  # results | reference | "" (no record found)
    rows: list[TouchRow]
    untested: list[str]
    shape_error: str = ""
    absent_engines: list[str] = field(default_factory=list)  # the runs' engines the record has no cell of

    @property
    def path(self) -> str:
        """The record's file, relative to the repository when it is one of its reference runs."""
        if self.record is None:
            return ""
        p = self.record.path.resolve()
        return str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p)

    @property
    def date(self) -> str:
        return (self.record.rec.started_at or "?")[:10] if self.record else ""

    def what(self, row: TouchRow) -> str:
        """The case in words: its most specific covers ("equality deletes" left out beside "equality deletes with
        NULL keys"), then its name."""
        what = ", ".join(c for c in row.covers if not any(o.startswith(c + " ") for o in row.covers)) or row.case
        return f"{what} (case {row.case})"

    def line(self, row: TouchRow, v: TouchVerdict) -> str:
        """E.g. "equality deletes with NULL keys (case equality-delete-null-key): ENGINE wrong in the conformance
        suite of 2026-11-27: rows that came back: 2 ..."."""
        said = (f"{v.engine} {v.verdict} in the conformance suite of {self.date}" if v.verdict != "absent"
                else f"{v.engine}: no verdict on it in the conformance run used")
        return f"{self.what(row)}: {said}" + (f": {v.evidence}" if v.evidence else "")


def _verdicts(view: MatrixView | None, case: str, engines: list[str]) -> list[TouchVerdict]:
    out = []
    for e in engines:
        cell = view.cell(case, e) if view else None
        out.append(TouchVerdict(e, "absent") if cell is None else
                   TouchVerdict(e, cell.verdict, "" if cell.verdict == "correct" else _one_line(cell.evidence, 300)))
    return sorted(out, key=lambda v: RANK[v.verdict])


def touch_notes(runs, repo: Path = REPO) -> list[TouchNote]:
    """One note per source table among `runs` (LoadedRun: a result and its file) whose record lists the cases its
    shape touches; engines are the runs' own (registry names), in their order."""
    groups: dict[tuple, list] = {}
    for lr in runs:
        if lr.result.source is not None:
            groups.setdefault((lr.result.source.table, lr.result.source.snapshot_id), []).append(lr)
    notes = []
    for (table, snap), mine in groups.items():
        src = next((lr.result.source for lr in mine if lr.result.source.touches or lr.result.source.shape_error),
                   mine[0].result.source)
        if not src.touches and not src.shape_error and not src.shape:
            continue  # written before shapes were recorded
        view, where = conformance_record([lr.path.parent for lr in mine], repo)
        ran = list(dict.fromkeys(lr.result.engine_name for lr in mine))
        engines = [e for e in ran if view is not None and e in view.engines]
        rows = [TouchRow(t.case, t.covers, t.because, _verdicts(view, t.case, engines)) for t in src.touches]
        notes.append(TouchNote(table, snap, view, where, sorted(rows, key=lambda r: RANK[r.worst]), src.untested,
                               src.shape_error, [e for e in ran if e not in engines]))
    return notes
