"""The runner's glue to bench.reads: the queries and their truth from datagen (once per `bench run`),
"before" right after the reset, "after" right after verification.  A reads failure is recorded in the
result (`reads.ok: false`); the timings are a separate measurement, but the answers after are a check of
the output: a query answered after the compaction otherwise than the generator's truth, while the same
reader answered it right on the input, fails the run (`reader_queries`, required: the engine's output is
wrong); where the reader was already wrong on the input the check says so and is advisory (the reader's
fault, not the engine's)."""

from __future__ import annotations

import traceback

from bench.core.records.reads import ReadsRecord
from bench.core.records.verification import Check
from bench.core.results import RunResult
from bench.reads.measure import read_after, read_before, skip_after, summary_line
from bench.runner.context import RunContext
from bench.runner.record import assemble, checked
from datagen.queries import TRUTH_SOURCE


def _failed(exc: Exception, rec: ReadsRecord | None = None) -> ReadsRecord:
    rec = rec or ReadsRecord()
    rec.ok = False
    rec.message = f"harness: {type(exc).__name__}: {exc}"[:1000] + " | " + \
        " / ".join(traceback.format_exc().splitlines()[-3:])[:500]
    return rec


def reads_before(ctx: RunContext) -> ReadsRecord | None:
    if not ctx.readers:
        return None
    assert ctx.catalog is not None and ctx.dataset is not None
    try:
        queries, truth = ctx.reads_plan
        with ctx.progress.task("reads before compaction", unit="step"):
            return read_before(ctx.catalog.load_table(ctx.dataset.table), ctx.catalog_settings, queries, truth,
                               ctx.cache_mode, TRUTH_SOURCE, reader=ctx.reader)
    except Exception as exc:  # noqa: BLE001 - recorded, the engine still runs
        return _failed(exc, ReadsRecord(cache=ctx.cache_mode))


def answers_check(rec: ReadsRecord) -> Check | None:
    """The answers after the compaction against the truth, as a check of the run (see the docstring); None when
    none was measured."""
    measured = [q for q in rec.queries if q.after is not None]
    if not rec.after_measured or not measured:
        return None
    wrong = [q for q in measured if q.after != q.truth]
    engine = [q for q in wrong if q.before == q.truth]  # right on the input, wrong on the output
    if not wrong:
        msg = f"{rec.reader}: {len(measured)} queries answered after the compaction as the generator's truth says"
    else:
        msg = "; ".join(f"{q.name}: after {q.after}, truth {q.truth}" + ("" if q in engine else
                        f" (before {q.before}: the reader was wrong on the input too, the reader's fault)")
                        for q in wrong)
        msg = f"{rec.reader}: {msg}"
    return Check(name="reader_queries", ok=not wrong, required=bool(engine) or not wrong, message=msg, about="rows",
                 whose="engine" if engine or not wrong else "reader")


def reads_after(ctx: RunContext, r: RunResult, label: str) -> RunResult:
    """The record with the reads after the compaction beside its reads before, and their answers' check."""
    if r.reads is None:
        return r
    assert ctx.catalog is not None and ctx.dataset is not None
    rec = r.reads.model_copy(deep=True)  # the reads before, completed as a new value
    try:
        if r.status != "ok":
            skip_after(rec, f"not measured: the run ended {r.status}")
        elif r.commits == "none":
            skip_after(rec, "not measured: the engine commits nothing, readers see the input unchanged")
        else:
            queries, truth = ctx.reads_plan
            with ctx.progress.task(f"{label} reads after compaction", unit="step"):
                read_after(rec, ctx.catalog.load_table(ctx.dataset.table), ctx.catalog_settings, queries, truth,
                           usable=r.verified)
    except Exception as exc:  # noqa: BLE001 - recorded, never a failed run
        _failed(exc, rec)
    ctx.progress.info(f"{label} {summary_line(rec)}" + (f" ({rec.message})" if not rec.ok and rec.reader and
                                                          rec.message.startswith("harness") else ""))
    return checked(assemble(r, reads=rec), answers_check(rec))
