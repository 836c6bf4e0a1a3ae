"""A run on a user's table (--source-table): its report lists the conformance cases the table's shape touches, each
engine's verdict on them from the newest conformance record (the run's results directory first, else the
reference runs), not-correct verdicts first.  Hand-built results and records: fast, no engine."""

from __future__ import annotations

import re

from bench.core.fileio import write_atomic
from bench.core.records.conformance import ConformanceCase, ConformanceCell, ConformanceRecord
from bench.core.records.scenario import SourceRecord, TouchedCase
from reports.conformance import conformance_record, touch_notes
from reports.model.loading import load_runs
from tests.reports.hand_built import make_result, render, write_results

NULL_KEY = TouchedCase(case="equality-delete-null-key", covers=["equality deletes", "equality deletes with NULL keys"],
                       because=["equality-delete-nullable-key: k"])
TYPES = TouchedCase(case="primitive-types", covers=["long", "string"], because=["type-long: k"])


def _source(**kw) -> SourceRecord:
    return SourceRecord(table="lake.events", snapshot_id=7, clone="bench.clone_x", unchanged=True, **kw)


def _record(path, run_id: str, started: str, wrong: str) -> None:
    """`wrong` is wrong on the null-key case; every other cell is correct."""
    cells = [ConformanceCell(case=c, engine=e, verdict="wrong-rows" if (c, e) == (NULL_KEY.case, wrong) else "correct",
                             evidence="rows that came back: 2 (e.g. [{'k': None}])" if e == wrong else "")
             for c in (NULL_KEY.case, TYPES.case) for e in ("spark", "risingwave")]
    rec = ConformanceRecord(run_id=run_id, started_at=started, engines=["spark", "risingwave"],
                            cases=[ConformanceCase(name=NULL_KEY.case), ConformanceCase(name=TYPES.case)],
                            cells=cells)
    write_atomic(path / run_id / "conformance.json", rec.model_dump_json())


def _items(html: str) -> list[tuple[str, str, str]]:
    return re.findall(r'<li data-touch-case="([^"]+)" data-engine="([^"]+)" data-verdict="([^"]+)"', html)


def test_the_report_lists_the_touched_cases_with_each_engines_verdict(tmp_path):
    results = tmp_path / "results"
    src = _source(shape={"type-long": "k", "equality-delete-nullable-key": "k"}, touches=[TYPES, NULL_KEY],
                  untested=["type-uuid"])
    run = write_results(results, [make_result(e, 0, source=src) for e in ("spark", "risingwave", "arrow-floor")])
    _record(results, "conf-old", "2026-01-01T00:00:00Z", wrong="spark")
    _record(results, "conf-new", "2026-11-27T07:40:04Z", wrong="risingwave")  # the newest one is quoted
    html = render([run])
    assert 'data-touch-table="lake.events"' in html and 'data-conformance-run="conf-new"' in html
    assert 'data-conformance-where="results"' in html and 'data-untested="type-uuid"' in html
    assert 'data-absent-engines="arrow-floor"' in html  # an engine the conformance run did not judge
    items = _items(html)
    assert items[0] == (NULL_KEY.case, "risingwave", "wrong-rows")  # not-correct first, then the rest
    assert sorted(items[1:]) == sorted([(NULL_KEY.case, "spark", "correct"), (TYPES.case, "spark", "correct"),
                                        (TYPES.case, "risingwave", "correct")])
    assert "(case equality-delete-null-key): risingwave wrong-rows in the conformance suite of 2026-11-27" in html


def test_without_a_record_beside_the_run_the_reference_run_answers(tmp_path):
    results, repo = tmp_path / "results", tmp_path / "repo"
    run = write_results(results, [make_result("spark", 0, source=_source(touches=[NULL_KEY]))])
    assert conformance_record([run], repo) == (None, "")
    _record(repo / "docs" / "reference", "20261127-conformance", "2026-11-27T07:40:04Z", wrong="spark")
    view, where = conformance_record([run], repo)
    assert where == "reference" and view is not None and view.rec.run_id == "20261127-conformance"
    (note,) = touch_notes(load_runs([run]).runs, repo)
    assert note.where == "reference"
    assert [(v.engine, v.verdict) for v in note.rows[0].verdicts] == [("spark", "wrong-rows")]


def test_results_without_a_shape_have_no_note(tmp_path):
    old = make_result("spark", 0, source=_source()).model_dump(mode="json")
    for k in ("shape", "touches", "untested", "shape_error"):
        old["source"].pop(k)  # a result written before shapes were recorded still loads
    run = write_results(tmp_path, [make_result("spark", 0, source=SourceRecord.model_validate(old["source"]))])
    assert touch_notes(load_runs([run]).runs) == []
