"""The referee between readers: when the readers that count disagree, or fail, someone else decides, and each reader
that read otherwise is a finding about that reader (`ReaderFinding`), never a verdict on the table.  The one who
decides is the reference reader (Iceberg's Java library, `bench.verify.reference`) on a source snapshot
(bench.runner.source) and on a run's output (bench.verify.checks), or a conformance case's expected rows
(bench.verify.expected).  The rules:

    agree(answers)                       the readers that answered read the same rows and checksum
    findings_against(reference, ...)     each reader that read otherwise than the reference, or failed where it read
    overrule(reference, answers, on)     as findings_against, and each such counted answer becomes advisory
    finding(answer, ...)                 one finding: the reader's answer beside the one that decided
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.core.records.verification import ReaderAnswer, ReaderFinding


def agree(answers: Iterable[ReaderAnswer]) -> bool:
    """True when every reader that answered read the same (rows, checksum) (vacuously, when none answered)."""
    return len({a.content for a in answers if a.answered}) <= 1


def finding(a: ReaderAnswer, on: str, reference_rows: int, reference_checksum: str,
            against: str | None = None) -> ReaderFinding:
    """`a` beside what the referee read (`against`: who that is; default the reference reader)."""
    extra = {"against": against} if against is not None else {}
    return ReaderFinding(reader=a.reader, resolves=a.resolves, on=on, rows=a.rows, checksum=a.checksum,
                         error=a.error if not a.answered else None, reference_rows=reference_rows,
                         reference_checksum=reference_checksum, **extra)


def findings_against(reference: ReaderAnswer, answers: Iterable[ReaderAnswer], on: str) -> list[ReaderFinding]:
    """The readers among `answers` that read otherwise than the reference reader, or failed where it read."""
    ref_rows, ref_checksum = reference.got()
    return [finding(a, on, ref_rows, ref_checksum) for a in answers
            if (a.answered and a.content != reference.content) or a.error]


def overrule(reference: ReaderAnswer, answers: Iterable[ReaderAnswer], on: str) -> list[ReaderFinding]:
    """The counted readers (answered, not advisory) that read otherwise than the reference reader: each becomes
    advisory (overruled) and a finding."""
    ref_rows, ref_checksum = reference.got()
    wrong = [a for a in answers if a.answered and not a.advisory and a.content != reference.content]
    for a in wrong:
        a.advisory = f"overruled by the reference reader ({ref_rows} rows, checksum {ref_checksum})"
    return findings_against(reference, wrong, on)
