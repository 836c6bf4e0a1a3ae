"""Issue 31: `bench conformance`, each engine's correctness on edge-case tables written by another engine
(Spark SQL and Iceberg's Java API), through the ordinary run path, as a matrix with evidence."""

import json

from bench.conformance import verdict
from bench.core.results import Check, RowDifference, RunResult, Verification
from tests.helpers import run_bench


def _result(status="ok", verified=False, checks=(), error=None, rows=None) -> RunResult:
    return RunResult(run_id="r", scenario="bin-packing", engine="e", scale=0.0, seed=0, status=status,
                     verified=verified, error=error,
                     verification=Verification(verified=verified, checks=list(checks), rows=rows))


def test_a_cells_verdict_comes_from_the_verifiers_checks():
    bad = Check(name="content_pyiceberg_scan", ok=False, message="6 rows, ground truth 4")
    good = Check(name="content_duckdb_merge_on_read", ok=True, message="4 rows")
    rows = RowDifference(came_back=2, came_back_rows=[{"k": None, "v": "x"}])
    assert verdict(_result(verified=True)) == ("correct", "")
    v, evidence = verdict(_result(checks=[bad, Check(name="content_duckdb_iceberg", ok=False, message="6")],
                                  rows=rows))
    assert v == "wrong" and "came back: 2" in evidence and "'k': None" in evidence and "6 rows" in evidence
    assert verdict(_result(checks=[bad, good]))[0] == "harness-cannot"  # readers disagree: the harness cannot tell
    assert verdict(_result(checks=[Check(name="summary_totals", ok=False, message="states 0 delete files")]))[0] \
        == "wrong"
    assert verdict(_result(status="unsupported", error="unsupported: cannot commit v3")) == \
        ("unsupported", "cannot commit v3")
    assert verdict(_result(status="failed", error="harness: RuntimeError: x"))[0] == "harness-cannot"
    assert verdict(_result(status="failed", error="PanicException: unsupported type")) == \
        ("unsupported", "failed: PanicException: unsupported type")


def test_the_null_key_equality_delete_is_a_named_wrong_cell_with_its_rows(tmp_path):
    """A table written by Spark and an equality delete on a NULL key committed through Iceberg's Java API:
    Spark applies it (a null in a delete column matches a null row value), RisingWave's engine does not, and
    the matrix says so with the rows that came back; the report and the Markdown render the matrix."""
    results = tmp_path / "results"
    p = run_bench("conformance", "--cases", "equality-delete-null-key", "--engines", "spark,risingwave",
                  "--warehouse", tmp_path / "warehouse", "--results-dir", results, "--run-id", "c", timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    rec = json.loads((results / "c" / "conformance.json").read_text())
    cells = {c["engine"]: c for c in rec["cells"]}
    assert rec["cases"] == ["equality-delete-null-key"] and set(cells) == {"spark", "risingwave"}
    assert cells["spark"]["verdict"] == "correct", cells["spark"]
    rw = cells["risingwave"]
    assert rw["verdict"] == "wrong" and "rows that came back: 2" in rw["evidence"], rw
    assert "'k': None" in rw["evidence"] and "null key" in rw["evidence"]
    assert "equality deletes with NULL keys" in rw["covers"]
    p = run_bench("report", results / "c")
    assert p.returncode == 0, p.stderr[-2000:]
    html = (results / "c" / "report.html").read_text()
    assert 'data-section="conformance"' in html
    assert 'data-engine="risingwave" data-verdict="wrong"' in html
    assert 'data-engine="spark" data-verdict="correct"' in html
    p = run_bench("report", results / "c", "--markdown", "-")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "| equality-delete-null-key | equality deletes, equality deletes with NULL keys | correct | **wrong** |" \
        in p.stdout
