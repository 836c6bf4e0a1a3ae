"""The conformance matrix (`bench conformance`'s conformance.json): engine x case, each cell's verdict, each
wrong, unsupported or harness-cannot cell with its evidence; and, for a run on a user's table, the cases its
shape touches.  From conformance.json files only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from bench.core.errors import UserError
from bench.core.results import ConformanceCell, ConformanceRecord

FILE = "conformance.json"
MEANING = {
    "correct": "the run is verified: the same rows and content as the source, the same table, compacted",
    "wrong": "the engine ran and a required check failed that every reader agrees on (the evidence says which)",
    "unsupported": "the engine declares it cannot, or failed on the table (its own reason)",
    "harness-cannot": "the harness could not judge this case (a harness defect: this column must stay empty)",
}
ORDER = ("wrong", "unsupported", "harness-cannot")
READER_FINDINGS = ("Reader findings: a reader the verifier asks that read a table otherwise than the reference reader "
                   "(Iceberg's Java library), which decided the ground truth: a fact about that reader, not about "
                   "the engine")


@dataclass
class MatrixView:
    rec: ConformanceRecord
    path: Path

    @property
    def engines(self) -> list[str]:
        return self.rec.engines

    def cell(self, case: str, engine: str) -> ConformanceCell | None:
        return next((c for c in self.rec.cells if c.case == case and c.engine == engine), None)

    @property
    def rows(self) -> list[tuple[str, list[str], list[ConformanceCell | None]]]:
        out = []
        for case in self.rec.cases:
            cells = [self.cell(case, e) for e in self.engines]
            covers = next((c.covers for c in cells if c is not None), [])
            out.append((case, covers, cells))
        return out

    def counts(self, engine: str) -> dict[str, int]:
        got: list[str] = [c.verdict for c in self.rec.cells if c.engine == engine]
        return {v: got.count(v) for v in MEANING}

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


def matrix_markdown(v: MatrixView, level: int = 3) -> str:
    rec = v.rec
    out = [f"{'#' * level} Conformance: {len(rec.cases)} cases x {len(rec.engines)} engines", "",
           f"Run `{rec.run_id}`, started {rec.started_at or '?'}"
           + (f", {rec.seconds:.0f} s" if rec.seconds else "") + ". "
           + "; ".join(f"{e}: " + ", ".join(f"{n} {k}" for k, n in v.counts(e).items() if n) for e in rec.engines)
           + ".", "", "| case | covers | " + " | ".join(rec.engines) + " |", "|---|---|" + "---|" * len(rec.engines)]
    for case, covers, cells in v.rows:
        marks = ["—" if c is None else f"**{c.verdict}**" if c.verdict == "wrong" else c.verdict for c in cells]
        out.append(f"| {case} | {', '.join(covers)} | " + " | ".join(marks) + " |")
    if v.findings:
        out += ["", "Every cell that is not `correct`, with its evidence:", ""]
        out += [f"- **{c.case}**, {c.engine}: {c.verdict}: {_one_line(c.evidence)}" for c in v.findings]
    if v.reader_findings:
        out += ["", READER_FINDINGS + ":", ""]
        out += [f"- **{case}**: {_one_line(text)}" for case, text in v.reader_findings]
    out += ["", "Verdicts: " + "; ".join(f"`{k}`: {m}" for k, m in MEANING.items()) + "."]
    return "\n".join(out) + "\n"


def _one_line(text: str, limit: int = 600) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit] + " …"
