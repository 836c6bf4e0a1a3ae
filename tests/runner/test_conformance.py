"""Issue 31: `bench conformance`, each engine's correctness on edge-case tables written by another engine
(Spark SQL and Iceberg's Java API), through the ordinary run path, as a matrix with evidence."""

import json

from bench.conformance import verdict
from bench.core.results import Check, ReaderFinding, RowDifference, RunResult, Verification
from tests.helpers import run_bench


def _result(status="ok", verified=False, checks=(), error=None, rows=None, findings=()) -> RunResult:
    return RunResult(run_id="r", scenario="bin-packing", engine="e", scale=0.0, seed=0, status=status,
                     verified=verified, error=error,
                     verification=Verification(verified=verified, checks=list(checks), rows=rows,
                                               findings=list(findings)))


def test_a_cells_verdict_comes_from_the_verifiers_checks():
    bad = Check(name="content_pyiceberg_scan", ok=False, message="6 rows, ground truth 4")
    good = Check(name="content_duckdb_merge_on_read", ok=True, message="4 rows")
    rows = RowDifference(came_back=2, came_back_rows=[{"k": None, "v": "x"}])
    assert verdict(_result(verified=True)) == ("correct", "")
    v, evidence = verdict(_result(checks=[bad, Check(name="content_duckdb_iceberg", ok=False, message="6")],
                                  rows=rows))
    assert v == "wrong" and "came back: 2" in evidence and "'k': None" in evidence and "6 rows" in evidence
    assert verdict(_result(checks=[bad, good]))[0] == "harness-cannot"  # readers disagree, no reference: cannot tell
    # the reference reader decided: the reader it overruled is advisory, a finding, and the verdict stands
    overruled = Check(name="content_duckdb_iceberg", ok=False, required=False, message="4 rows (advisory: overruled)")
    finding = ReaderFinding(reader="duckdb-iceberg", resolves="catalog", on="the source snapshot", rows=4,
                            checksum="1", reference_rows=6, reference_checksum="2")
    v, evidence = verdict(_result(verified=True, checks=[good, overruled], findings=[finding]))
    assert v == "correct" and "reader finding: duckdb-iceberg (catalog) reads 4 rows" in evidence, evidence
    assert verdict(_result(checks=[bad, overruled, Check(name="content_iceberg_java", ok=False, message="6")]))[0] \
        == "wrong"  # the reference agrees with the reader that failed: the output is wrong
    assert verdict(_result(checks=[Check(name="summary_totals", ok=False, message="states 0 delete files")]))[0] \
        == "wrong"
    assert verdict(_result(status="unsupported", error="unsupported: cannot commit v3")) == \
        ("unsupported", "cannot commit v3")
    assert verdict(_result(status="failed", error="harness: RuntimeError: x"))[0] == "harness-cannot"
    assert verdict(_result(status="failed", error="PanicException: unsupported type")) == \
        ("unsupported", "failed: PanicException: unsupported type")


def test_the_matrix_judges_every_case_with_evidence_and_reader_findings(tmp_path):
    """One `bench conformance` over the cases issue 31 is about, sharing the JVMs and tables: tables written by
    Spark (and an equality delete committed through Iceberg's Java API).  A NULL-key equality delete: Spark applies
    it, RisingWave's engine does not, and the matrix says so with the rows that came back.  A partition-scoped
    equality delete that DuckDB's iceberg extension applies to every partition: the reference reader (Iceberg's Java
    library) decides, DuckDB's reading is a reader finding, and the engines get verdicts.  A renamed column, names
    that need quoting (read by field id) and an empty table (judged, not refused): never harness-cannot.  The report
    and the Markdown render the matrix."""
    results = tmp_path / "results"
    cases = ["equality-delete-null-key", "equality-delete-partition-scoped", "rename-column", "quoted-names",
             "empty-table"]
    p = run_bench("conformance", "--cases", ",".join(cases), "--engines", "spark,risingwave",
                  "--warehouse", tmp_path / "warehouse", "--results-dir", results, "--run-id", "c", timeout=1500)
    assert p.returncode == 0, p.stderr[-3000:]
    rec = json.loads((results / "c" / "conformance.json").read_text())
    assert sorted(rec["cases"]) == sorted(cases)  # in the suite's order
    cells = {(c["case"], c["engine"]): c for c in rec["cells"]}
    assert len(cells) == 2 * len(cases)
    assert not [c for c in rec["cells"] if c["verdict"] == "harness-cannot"], rec["cells"]
    assert cells[("equality-delete-null-key", "spark")]["verdict"] == "correct", cells
    rw = cells[("equality-delete-null-key", "risingwave")]
    assert rw["verdict"] == "wrong" and "rows that came back: 2" in rw["evidence"], rw
    assert "'k': None" in rw["evidence"] and "null key" in rw["evidence"]
    assert "equality deletes with NULL keys" in rw["covers"]
    for engine in ("spark", "risingwave"):
        scoped = cells[("equality-delete-partition-scoped", engine)]
        assert [f["reader"] for f in scoped["findings"]] == ["duckdb-iceberg"], scoped
        f = scoped["findings"][0]
        assert f["on"] == "the source snapshot" and (f["rows"], f["reference_rows"]) == (4, 6), f
        assert "reader finding: duckdb-iceberg" in scoped["evidence"], scoped
    assert cells[("equality-delete-partition-scoped", "spark")]["verdict"] == "correct", cells
    for case in ("rename-column", "quoted-names"):
        assert cells[(case, "spark")]["verdict"] == "correct", cells[(case, "spark")]
    # the engines ran in shared processes: one Spark JVM for every case, no run timed into a statistic
    runs = [json.loads(f.read_text()) for f in (results / "c" / "runs").glob("*/*--rep0.json")]
    assert len(runs) == 2 * len(cases) and all(r["shared_process"] for r in runs)
    spark_runs = [r for r in runs if r["engine"] == "spark"]
    log = (results / "c" / "runs" / "shared-spark.log").read_text()
    assert sorted(r["shared_process"] for r in spark_runs) == list(range(1, len(spark_runs) + 1))
    assert log.count("Using an existing Spark session") == len(spark_runs) - 1, log[-3000:]
    p = run_bench("report", results / "c")
    assert p.returncode == 0, p.stderr[-2000:]
    html = (results / "c" / "report.html").read_text()
    assert 'data-section="conformance"' in html and 'data-section="reader-findings"' in html
    assert 'data-engine="risingwave" data-verdict="wrong"' in html
    assert 'data-engine="spark" data-verdict="correct"' in html
    p = run_bench("report", results / "c", "--markdown", "-")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "| equality-delete-null-key | equality deletes, equality deletes with NULL keys | correct | **wrong** |" \
        in p.stdout
    assert "- **equality-delete-partition-scoped**: duckdb-iceberg" in p.stdout
