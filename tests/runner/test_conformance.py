"""`bench conformance`: each engine's correctness on edge-case tables (written by pyiceberg, Spark
SQL or Iceberg's Java API, each case naming its writer) that state the rows they must end with, through the ordinary
run path, as a matrix whose verdicts say whose fault, with evidence, versions and a gate."""

import json
import os
import subprocess
from dataclasses import replace

import pytest
import yaml

from bench.campaigns.conformance import TABLES_DIR, matrix_line, parse_fail_on, runtime_label, verdict, version_pairs
from bench.core.catalog import CatalogSettings, load_catalog
from bench.core.errors import UserError
from bench.core.expected import difference
from bench.core.iceberg_java.runtime import HARNESS_LINE, spark_line
from bench.core.records.conformance import (
    HARNESS_RUNTIME,
    ConformanceCase,
    ConformanceCell,
    ConformanceRecord,
    VersionPair,
)
from bench.core.records.telemetry import CatalogServerUsage
from bench.core.records.verification import Check, ReaderFinding, RowDifference, Verification
from bench.core.results import RunResult
from bench.core.table.entries import live_files
from bench.core.table.shape import shape
from bench.verify.expected import read_keys
from datagen.conformance import CASES_FILE, Case, load_cases, write_cases
from reports.conformance import MatrixView, matrix_markdown
from tests.helpers import run_bench

PYICEBERG_WRITTEN = {"rename-column", "quoted-names", "empty-table"}  # of the matrix's cases (cases.yaml writer)
SPARK = HARNESS_LINE  # the harness's Spark line: the `spark` engine's, the reference reader's and the Spark writer's
EARLIER = spark_line("3.5")  # spark-3.5's
MATRIX_CASES = ["equality-delete-null-key", "equality-delete-partition-scoped", "rename-column", "quoted-names",
                "empty-table", "format-v3-deletion-vectors", "branch-compaction"]
# maintenance cases judged in the matrix test's run, sharing its JVMs: an orphan removal, a manifest rewrite, an expiry
# after a cherry-pick (write-audit-publish) and a position-delete rewrite of a dangling delete (the expiry table below
# is written for the verdict test, which judges its real files without an engine)
CHERRY_PICKED = "expire-after-cherry-pick"
DANGLING = "rewrite-position-deletes-drops-dangling"
MAINTENANCE_CASES = ["orphans-keep-statistics-file", "rewrite-manifests-keeps-tag", CHERRY_PICKED, DANGLING]
EXPIRY_TABLE = "expire-retain-last-keeps-tag"
CONCURRENT = "concurrent-position-delete"  # a concurrent commit (during:): judged in the reproducer test's run
APPENDED = "concurrent-append"  # its append (a new data file during the rewrite): judged in the same run


# the cases of real tables' shapes: written and checked here with every case pyiceberg writes (cheap: no
# JVM); the other Spark-written cases are held to their expected rows by every `bench conformance` (table_check)
ISSUE_39_CASES = ["add-files-migration", "add-files-renamed", "data-orc", "data-avro", "equality-delete-renamed-key",
                  "position-deletes-older-spec", "equality-delete-older-spec", "format-v1-upgraded",
                  "nested-struct-evolution", "wide-table", "v3-row-lineage", "target-size-property",
                  "codec-property-zstd", "codec-property-gzip", "uuid-fixed", "time-type", "identity-long",
                  "identity-float", "identity-double", "identity-binary", "identity-time", "identity-fixed",
                  "partition-void", "timestamp-ns-v3", "compact-after-rollback", "compact-after-cherry-pick"]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """The matrix test's cases, real shapes' and every case pyiceberg writes, written once (one process per writer: one
    Spark JVM, one pyiceberg process) into the warehouse the matrix test runs on."""
    wh = tmp_path_factory.mktemp("conformance") / "warehouse"
    named = MATRIX_CASES + MAINTENANCE_CASES + [EXPIRY_TABLE, CONCURRENT, APPENDED] + ISSUE_39_CASES
    cases = [c for c in load_cases() if c.name in named or c.writer == "pyiceberg"]
    written = write_cases(cases, wh / TABLES_DIR)
    return wh, cases, written


def test_each_cases_table_holds_its_expected_rows_and_shape(warehouse):
    """The harness checks its own tables: each real-shape case and each case pyiceberg writes holds exactly what it
    states by the spec (row count and the key's values, a multiset), read by the harness's expected-rows reader
    (duckdb-merge-on-read; pyiceberg's scan for ORC, pyiceberg-avro for Avro) and, where it can (no equality delete,
    no Avro file), by pyiceberg's scan too; its writer is on record; and the table's shape has the facts it stands
    for (bench.core.table.shape detects each on a user's table too)."""
    wh, cases, written = warehouse
    catalog = load_catalog(CatalogSettings.for_warehouse(wh / TABLES_DIR / "lake"))
    checked = [c for c in cases if c.name in ISSUE_39_CASES or c.writer == "pyiceberg"]
    assert len(load_cases()) >= 45 and {c.name for c in checked} >= set(ISSUE_39_CASES)
    assert {c.writer for c in checked} == {"spark", "pyiceberg", "java-api"}
    both = 0
    for case in checked:
        w = written[case.name]
        assert w.error is None, (case.name, w.error)
        assert w.written_by.startswith({"spark": SPARK.describe(), "pyiceberg": "pyiceberg 0.12",
                                        "java-api": f"Iceberg {SPARK.iceberg}"}[case.writer]), w.written_by
        tbl = catalog.load_table(case.table)
        missing = [f for f in case.touches if f not in shape(tbl)]
        assert not missing, (case.name, missing)
        rows, keys, reader = read_keys(tbl, None, case.expected.key)
        assert not difference(case.expected, rows, keys), (case.name, reader, difference(case.expected, rows, keys))
        if live_files(tbl).equality or "data-avro" in case.touches:
            continue  # pyiceberg 0.12 applies no equality delete and reads no Avro data file
        scanned = tbl.scan().to_arrow()
        got = scanned.column(case.expected.key).to_pylist() if case.expected.key else None
        assert not difference(case.expected, scanned.num_rows, got), (case.name, "pyiceberg-scan")
        both += reader != "pyiceberg-scan"
    assert both >= len(checked) - 4  # all but data-orc, data-avro and the two equality-delete cases: two readers


def test_no_commit_is_owed_where_the_work_asks_nothing():
    """bench.verify.checks.nothing_owed: a single small file (files small leaves one per partition) or no file owes
    no commit and no new file; two small files, or a delete file, do (an engine that leaves them is judged)."""
    from bench.core.dataset import GroundTruth
    from bench.core.records.verification import TableStats
    from bench.verify.checks import VerifyInput, nothing_owed, state_checks

    def vi(data_files: int, delete_files: int = 0) -> VerifyInput:
        return VerifyInput(kind="binpack", table=None, before=TableStats(snapshot_id=1, data_files=data_files,  # type: ignore[arg-type]
                                                                         delete_files=delete_files),
                           before_paths=set(), ground_truth=GroundTruth(rows=1, checksum="1"),
                           target_file_size_bytes=1 << 29, small_file_threshold_bytes=1 << 28, output_codec="snappy")

    assert nothing_owed(vi(0)) and nothing_owed(vi(1))
    assert not nothing_owed(vi(2)) and not nothing_owed(vi(1, delete_files=1))
    same = TableStats(snapshot_id=1, data_files=1)
    assert all(c.ok for c in state_checks(vi(1), same, []) if c.name in ("new_snapshot", "output_codec"))
    assert not any(c.ok for c in state_checks(vi(2), same, []) if c.name in ("new_snapshot", "output_codec"))


def test_a_pyiceberg_case_is_checked_when_loaded():
    with pytest.raises(ValueError, match="pyiceberg writes no equality delete"):
        Case(name="x", covers=["x"], touches=["equality-deletes"], columns="k BIGINT", writer="pyiceberg",
             steps=[{"equality_delete": {"columns": ["k"], "rows": [[1]]}}], expected={"rows": 0})


def test_a_concurrent_commit_case_states_both_expectations():
    """A case with a concurrent commit (`during`) states the table as written (`written`, held to it first) beside
    the end state; it is a rewrite of main on an unpartitioned table; each step is one commit kind."""
    base = dict(name="x", covers=["x"], touches=["equality-deletes"], columns="k BIGINT",
                during=[{"equality_delete": {"columns": ["k"], "rows": [[1]]}}], expected={"rows": 0})
    with pytest.raises(ValueError, match="states the rows of the table as written"):
        Case(**base)
    case = Case(**base, written={"rows": 1})
    assert case.as_written.rows == 1 and case.expected.rows == 0
    assert Case(**{**base, "during": []}).as_written.rows == 0
    for bad, says in (({"partitioned_by": "k"}, "unpartitioned"), ({"branch": "b"}, "rewrite-data-files of main"),
                      ({"during": [{"append": {"columns": ["k"], "rows": [[1]]},
                                    "position_delete": {"column": "k", "values": [1]}}]}, "one of append")):
        with pytest.raises(ValueError, match=says):
            Case(**{**base, "written": {"rows": 1}, **bad})
    # what is done beside the engine does not write the table: the digest stands
    from datagen.conformance import case_digest
    assert case_digest(case) == case_digest(Case(**{**base, "during": [], "expected": {"rows": 1}}))


def test_a_concurrent_commit_cells_verdict_is_the_live_writers_in_the_matrixs_words():
    """safe: correct; refused (failed on the conflict, the table right): refused; unsafe with the deleted rows back:
    resurrected, else wrong-rows; inconclusive: harness-cannot, or failed for an engine that timed out."""
    from bench.core.records.live import LiveWriterRecord

    def run(lw_verdict, status="ok", **evidence):
        r = _result(status=status, error=None if status == "ok" else "CommitFailedException: conflict")
        r.live_writer = LiveWriterRecord(case="during", description="the writer position-deletes 1 row(s)",
                                         hold="stopped", order=["writer", "engine"], verdict=lw_verdict,
                                         reason="why", evidence=evidence)
        return r
    assert verdict(run("safe"))[0] == "correct"
    v, evidence = verdict(run("refused", status="failed", engine_causes=["ValidationException: found new deletes"]))
    assert v == "refused" and "found new deletes" in evidence and "commit order: writer -> engine" in evidence
    v, evidence = verdict(run("unsafe", deleted_keys_back=[2]))
    assert v == "resurrected" and "keys back: [2]" in evidence
    assert verdict(run("unsafe"))[0] == "wrong-rows"
    assert verdict(run("inconclusive"))[0] == "harness-cannot"
    assert verdict(run("inconclusive", status="timeout"))[0] == "failed"
    assert parse_fail_on("refused") == ("refused",)


def test_a_rewrite_case_names_what_it_commits_to():
    """A rewrite-position-deletes case (no argument) commits to main and says so (`advances`); the files it must take
    out of main (`replaced_files`) need a ref it commits to; an orphan cannot take a table file's name; the engines
    that declare the operation, and the one that cannot (its reason)."""
    from bench.campaigns.conformance import maintenance_op
    from bench.core.expected import MaintenanceExpected
    from bench.engines import engine_class
    from datagen.conformance import Operation

    base = {"name": "x", "covers": ["x"], "touches": ["position-deletes"], "columns": "id BIGINT",
            "expected": {"rows": 0}, "operation": {"op": "rewrite-position-deletes"}}
    ok = Case.model_validate({**base, "maintenance": {"kept": ["all"], "advances": ["main"],
                                                      "replaced_files": ["dangling-position-deletes"]}})
    assert maintenance_op(ok.operation, None).describe() == "rewrite_position_deletes"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="commits to main: name it in `maintenance.advances`"):
        Case.model_validate({**base, "maintenance": {"kept": ["all"]}})
    with pytest.raises(ValueError, match="replaced_files are taken out of the refs"):
        MaintenanceExpected(replaced_files=["position-deletes"])
    with pytest.raises(ValueError, match="takes no retain_last"):
        Operation(op="rewrite-position-deletes", retain_last=1)
    with pytest.raises(ValueError, match="orphan name.s. position-deletes name the table's own files"):
        Case.model_validate({**base, "steps": [{"orphan": {"name": "position-deletes"}}],
                             "maintenance": {"kept": ["all"], "advances": ["main"]}})
    # the engines that declare the operation, and the one whose binding has none (its reason, never absent)
    assert all(engine_class(e).why_not("rewrite-position-deletes") is None
               for e in ("spark", "spark-3.5", "gluten", "repark"))
    assert "has no position-delete rewrite" in (engine_class("risingwave").why_not("rewrite-position-deletes") or "")


def test_a_staged_write_leaves_no_session_setting_behind():
    """A case's SET/RESET steps name the session settings its writer puts back after it (a staged write-audit-publish
    write's spark.wap.id): the writer's one session writes every case, and a step that failed between a SET and its
    RESET must not stage the next case's writes.  No JVM: the writer's helper on a stand-in of Spark's conf."""
    from datagen.conformance_spark import session_settings

    staged = Case(name="x", covers=["x"], touches=["detached-snapshot"], columns="id BIGINT", expected={"rows": 0},
                  steps=[{"sql": "SET spark.wap.id = w1"}, {"sql": "INSERT INTO {t} VALUES (1)"},
                         {"sql": "reset spark.wap.id"}, {"sql": "ALTER TABLE {t} SET TBLPROPERTIES ('a'='b')"}])
    assert staged.session_keys == ["spark.wap.id"]

    class Conf(dict):  # Spark's RuntimeConfig: get with a default, set, unset
        def set(self, k: str, v: str) -> None:
            self[k] = v

        def unset(self, k: str) -> None:
            self.pop(k, None)

    conf = Conf({"spark.sql.session.timeZone": "UTC"})
    with pytest.raises(RuntimeError), session_settings(conf, ["spark.wap.id", "spark.sql.session.timeZone"]):
        conf.set("spark.wap.id", "w1")
        conf.set("spark.sql.session.timeZone", "PST")
        raise RuntimeError("a step failed before its RESET")
    assert conf == {"spark.sql.session.timeZone": "UTC"}




def _result(status="ok", verified=False, checks=(), error=None, rows=None, findings=()) -> RunResult:
    return RunResult(run_id="r", scenario="bin-packing", engine="e", engine_name="e", scale=0.0, seed=0, status=status,
                     verified=verified, error=error,
                     verification=Verification(verified=verified, checks=list(checks), rows=rows,
                                               findings=list(findings)))


def test_a_cells_verdict_says_whose_fault_from_the_checks_own_declarations():
    bad = Check(name="content_pyiceberg_scan", ok=False, message="6 rows, ground truth 4", about="rows")
    good = Check(name="content_duckdb_merge_on_read", ok=True, message="4 rows", about="rows")
    held = Check(name="expected_rows", ok=True, about="rows", message="the output: 4 rows")
    missed = Check(name="expected_rows", ok=False, about="rows", message="6 rows, expected 4; k values read but "
                   "not expected: NULL x2")
    rows = RowDifference(came_back=2, came_back_rows=[{"k": None, "v": "x"}])
    assert verdict(_result(verified=True)) == ("correct", "")
    v, evidence = verdict(_result(checks=[bad, Check(name="content_duckdb_iceberg", ok=False, about="rows"), missed],
                                  rows=rows))
    assert v == "wrong-rows" and "came back: 2" in evidence and "'k': None" in evidence and "NULL x2" in evidence
    # readers disagree: without expected rows nobody can tell; with them, the readers they contradict are findings
    assert verdict(_result(checks=[bad, good]))[0] == "harness-cannot"
    v, evidence = verdict(_result(checks=[bad, good, held]))
    assert v == "correct" and "reader check content_pyiceberg_scan: 6 rows" in evidence, evidence
    finding = ReaderFinding(reader="duckdb-iceberg", resolves="catalog", on="the source snapshot", rows=4,
                            checksum="1", reference_rows=6, reference_checksum="2")
    v, evidence = verdict(_result(verified=True, checks=[good], findings=[finding]))
    assert v == "correct" and "reader finding: duckdb-iceberg (catalog) reads 4 rows" in evidence, evidence
    # the rows are right, the summary is not: wrong-metadata, naming the fields
    summary = Check(name="summary_totals", ok=False, message="total-delete-files 0 (manifests: 1)")
    assert verdict(_result(checks=[good, held, summary])) == \
        ("wrong-metadata", "summary_totals: total-delete-files 0 (manifests: 1)")
    types = Check(name="parquet_types", ok=False, message="field 2 'u' (uuid) is FIXED_LEN_BYTE_ARRAY without a "
                  "logical type")
    assert verdict(_result(checks=[good, held, types]))[0] == "wrong-metadata"
    # a harness-side check that failed is never the engine's verdict, whatever else failed with it
    for name in ("input_identical", "input_matches_generator", "setup_out_of_reach"):
        harness = Check(name=name, ok=False, whose="harness", message="differs")
        v, evidence = verdict(_result(checks=[good, held, harness, summary]))
        assert v == "harness-cannot" and name in evidence and "summary_totals" not in evidence, (v, evidence)
    # the engine's declared refusal, the harness's limit, the engine's own failure and its own "not supported"
    assert verdict(_result(status="unsupported", error="unsupported: cannot sort")) == ("unsupported", "cannot sort")
    assert verdict(_result(status="unsupported", error="harness: the catalog cannot commit v3"))[0] == \
        "harness-cannot"
    assert verdict(_result(status="failed", error="harness: RuntimeError: x"))[0] == "harness-cannot"
    assert verdict(_result(status="failed", error="PanicException: index out of bounds"), "FeatureUnsupported") == \
        ("failed", "failed: PanicException: index out of bounds")
    assert verdict(_result(status="timeout", error="no answer in 600 s"))[0] == "failed"
    jvm = _result(status="failed", error="Py4JJavaError: An error occurred while calling o66.sql.")
    jvm.error_causes = [jvm.error or "", "AvroRuntimeException: Malformed data. Length is negative: -1"]
    assert verdict(jvm) == ("failed", "failed: Py4JJavaError: An error occurred while calling o66.sql.; caused by "
                                      "AvroRuntimeException: Malformed data. Length is negative: -1")
    assert verdict(_result(status="failed", error="FeatureUnsupported => v3 manifests"), "FeatureUnsupported")[0] \
        == "unsupported"
    # the engine failed after the harness's own REST catalog answered 501: the harness's failure, not the engine's
    served = _result(status="failed", error="CommitFailed: unexpected status 501")
    served.catalog_server = CatalogServerUsage(server_errors=["POST /v1/namespaces/n/tables/t 501"])
    v, evidence = verdict(served)
    assert v == "harness-cannot" and "POST /v1/namespaces/n/tables/t 501" in evidence, evidence


def test_a_maintenance_cells_verdict_comes_from_which_expectation_failed(warehouse):
    """On a maintenance case's real table as written (an expiry keeping a tag, a position delete live): the expectation
    resolved on it names the files that must stay and go; untouched, nothing is lost and the garbage is still there
    (kept-garbage); a reachable file gone is deleted-live; a ref reading a row the case says is deleted is resurrected.
    No engine runs: the verifier's checks on the files and rows alone."""
    from bench.campaigns.conformance import maintenance_op, maintenance_verdict
    from bench.core.source import SourceRef, load_source
    from bench.verify import maintenance as maint

    wh, cases, _ = warehouse
    case = next(c for c in cases if c.name == EXPIRY_TABLE)
    tbl = load_source(SourceRef(catalog_file=str(wh / TABLES_DIR / "source.yaml"), table=case.table))
    res = maint.resolve(tbl, case.expected, case.maintenance, {})
    assert maint.table_check(tbl, res).ok and len(res.expired) == 2 and len(res.must_remove) == 2  # two manifest lists
    assert maintenance_verdict(maint.outcome(tbl, res))[0] == "kept-garbage"
    # the operation every engine is asked: the cutoff is main's head's own time; without a retain_last none is passed
    # (the engine's own rule, e.g. the table's history.expire.min-snapshots-to-keep)
    stated = maintenance_op(case.operation, tbl)
    own = maintenance_op(case.operation.model_copy(update={"retain_last": None}), tbl)
    assert stated.retain_argument() == ", retain_last => 1" and own.retain_argument() == ""
    assert own.older_than_ms == tbl.metadata.current_snapshot().timestamp_ms and "the table's own" in own.describe()
    delete = next(p for p in res.must_exist if p.endswith("-deletes.parquet"))  # Spark's position delete file
    moved = delete + ".away"
    os.rename(delete, moved)
    try:
        v, evidence = maintenance_verdict(maint.outcome(tbl, res))
    finally:
        os.rename(moved, delete)
    assert v == "deleted-live" and "were deleted" in evidence, evidence
    head, main = res.refs["main"]
    # as if an operation had committed on top of main~1
    moved_main = replace(res, refs={**res.refs, "main": (maint.select(tbl, "main~1")[0], main)})
    ref_rows = lambda r: next(c for c in maint.outcome(tbl, r) if c.name == maint.REF_ROWS)  # noqa: E731
    # a ref the operation does not commit to stays put
    assert not ref_rows(moved_main).ok and "moved" in ref_rows(moved_main).message
    # one it commits to (rewrite-manifests: main) may move to a descendant, read there
    assert ref_rows(replace(moved_main, advancing={"main"})).ok
    # as if a snapshot the case keeps (e.g. by retain_last) had been expired: its time travel lost
    v, evidence = maintenance_verdict(maint.outcome(tbl, replace(res, kept=res.kept | {-1})))
    assert v == "wrong-rows" and "1 snapshot(s) the case keeps were expired: [-1]" in evidence, evidence
    # as if 20 were deleted
    deleted = replace(res, refs={**res.refs, "main": (head, main.model_copy(update={"rows": 4,
                                                                                  "keys": [0, 2, 10, 11]}))})
    v, evidence = maintenance_verdict(maint.outcome(tbl, deleted))
    assert v == "resurrected" and "ref main reads 1 row(s) it must not: ['20']" in evidence, evidence
    with pytest.raises(ValueError, match="give older_than_snapshot"):
        Case.model_validate({**case.model_dump(), "operation": {"op": "expire-snapshots", "retain_last": 2}})
    with pytest.raises(ValueError, match="states `maintenance`"):
        Case.model_validate({**case.model_dump(), "maintenance": None})


def test_a_position_delete_rewrite_is_resolved_on_the_table_as_written(warehouse):
    """On the dangling case's real table (a file-scoped position delete whose data file a later DELETE removed whole):
    the selectors name main's one position-delete file, which is dangling, while the expiry table's applies (none
    dangling there); untouched, main still has it live: kept-garbage, the rows and the files safe (it stays on disk for
    the earlier snapshots).  The reproducer script's own manifest reader lists the files live at main's head as the
    harness does.  No engine runs."""
    import gzip

    from bench.campaigns.conformance import maintenance_verdict
    from bench.campaigns.reproducers import LIVE_CHECK
    from bench.core.expected import DANGLING_POSITION_DELETES, POSITION_DELETES
    from bench.core.source import SourceRef, load_source
    from bench.verify import maintenance as maint

    wh, cases, _ = warehouse
    by = {c.name: c for c in cases}
    load = lambda c: load_source(SourceRef(catalog_file=str(wh / TABLES_DIR / "source.yaml"), table=c.table))  # noqa: E731
    tbl, applying = load(by[DANGLING]), load(by[EXPIRY_TABLE])
    named = maint.table_files(tbl, {POSITION_DELETES, DANGLING_POSITION_DELETES})
    assert len(named[POSITION_DELETES]) == 1 and named[DANGLING_POSITION_DELETES] == named[POSITION_DELETES], named
    other = maint.table_files(applying, {DANGLING_POSITION_DELETES})
    assert len(other[POSITION_DELETES]) == 1 and other[DANGLING_POSITION_DELETES] == [], other
    res = maint.resolve(tbl, by[DANGLING].expected, by[DANGLING].maintenance, {})
    assert maint.table_check(tbl, res).ok and res.advancing == {"main"}
    assert res.must_leave == set(named[POSITION_DELETES])
    assert res.must_leave <= res.must_exist and not res.must_remove and not res.expired
    v, evidence = maintenance_verdict(maint.outcome(tbl, res))
    assert v == "kept-garbage" and "1 file(s) still live at main's head that the operation must replace or drop" in \
        evidence, evidence
    dangling_on_applying = by[DANGLING].maintenance.model_copy(update={"refs": {}})
    assert "dangling-position-deletes names no file" in maint.table_check(
        applying, maint.resolve(applying, by[EXPIRY_TABLE].expected, dangling_on_applying, {})).message
    # the reproducer's check, as its script runs it: the table as written is main's head unmoved, which took nothing out
    script: dict = {"json": json, "gzip": gzip, "CASE": {"must_leave": sorted(res.must_leave)}}
    exec(LIVE_CHECK, script)  # noqa: S102 - the reproducer script's own code
    head = tbl.metadata.refs["main"].snapshot_id
    assert "main's head did not move" in script["left_live"](tbl.metadata_location, "main", head)


def test_fail_on_takes_verdicts_and_refuses_others():
    assert set(parse_fail_on("wrong")) == {"wrong-rows", "wrong-metadata"}
    assert set(parse_fail_on("failed,harness-cannot")) == {"failed", "harness-cannot"}
    assert parse_fail_on("deleted-live,resurrected") == ("deleted-live", "resurrected")  # a maintenance gate
    assert parse_fail_on(None) == ()
    with pytest.raises(UserError, match="--fail-on: unknown verdict"):
        parse_fail_on("wrong,bogus")


def test_the_matrix_judges_every_case_with_evidence_and_reader_findings(tmp_path, warehouse):
    """One `bench conformance` over foreign-written cases, sharing the JVMs and tables: tables written by
    Spark (and an equality delete committed through Iceberg's Java API).  A NULL-key equality delete: Spark applies
    it, RisingWave's engine does not, and the matrix says so with the rows that came back.  A partition-scoped
    equality delete that DuckDB's iceberg extension applies to every partition: the reference reader (Iceberg's Java
    library) decides, DuckDB's reading is a reader finding, and the engines get verdicts.  A renamed column, names
    that need quoting (read by field id) and an empty table (judged, not refused): never harness-cannot.  A v3 table
    with deletion vectors: RisingWave's engine meets it and loses the rows' lineage (wrong-metadata).  The report
    and the Markdown render the matrix."""
    results = tmp_path / "results"
    # their tables already written (the module's warehouse): reused as the cases define them
    cases = MATRIX_CASES + MAINTENANCE_CASES
    engines = ["spark", "spark-3.5", "risingwave"]
    p = run_bench("conformance", "--cases", ",".join(cases), "--engines", ",".join(engines), "--fail-on", "wrong",
                  "--warehouse", warehouse[0], "--results-dir", results, "--run-id", "c", "--no-reproducers",
                  timeout=1500)
    # the gate: a wrong cell exits 1, after the record is written and the matrix printed
    assert p.returncode == 1, p.stderr[-3000:]
    assert ("--fail-on wrong: 2 cell(s): equality-delete-null-key risingwave wrong-rows, format-v3-deletion-vectors "
            "risingwave wrong-metadata") in p.stderr, p.stderr[-2000:]
    assert "equality-delete-null-key" in p.stdout and "versions, spark: " in p.stdout
    assert f"iceberg {SPARK.iceberg}" in p.stdout and f"iceberg {EARLIER.iceberg}" in p.stdout
    # the version column: spark-3.5 is an earlier version of spark; of these cases only the branch's verdict changed
    assert (f"changed, spark-3.5 -> spark ({EARLIER.describe()} -> {SPARK.describe()}): branch-compaction "
            "unsupported -> correct" in p.stdout), p.stdout[-3000:]
    assert f"the reference reader and the cases' JVM writer: {SPARK.describe()} (the harness's JVMs)" in p.stdout
    rec = json.loads((results / "c" / "conformance.json").read_text())
    assert sorted(c["name"] for c in rec["cases"]) == sorted(cases)  # in the suite's order
    for case in rec["cases"]:  # each with what it states, who wrote it, and the table as written held to it
        by = "pyiceberg 0.12" if case["name"] in PYICEBERG_WRITTEN else SPARK.describe()
        assert case["expected"]["rows"] >= 0 and case["written_by"].startswith(by), case
        assert case["table_check"]["ok"] and case["table_check"]["whose"] == "harness", case
    assert rec["versions"]["spark"]["iceberg"] == SPARK.iceberg and rec["versions"]["risingwave"]["iceberg-compaction"]
    assert rec["versions"]["spark-3.5"]["iceberg"] == EARLIER.iceberg
    assert rec["versions"]["spark-3.5"]["spark"] == EARLIER.pyspark
    assert rec["versions"]["spark"]["spark"] == SPARK.pyspark
    rw = rec["versions"]["risingwave"]["iceberg-compaction"]
    assert rec["runtimes"] == {"spark": SPARK.describe(), "spark-3.5": EARLIER.describe(),
                               "risingwave": f"iceberg-compaction {rw}",
                               HARNESS_RUNTIME: f"{SPARK.describe()} (the harness's JVMs)"}, rec["runtimes"]
    assert rec["version_pairs"] == [{"engine": "spark", "earlier": "spark-3.5"}]
    assert rec["versions"]["readers"]["duckdb"] and rec["versions"]["readers"]["pyiceberg"]
    cells = {(c["case"], c["engine"]): c for c in rec["cells"]}
    assert len(cells) == len(engines) * len(cases)
    assert not [c for c in rec["cells"] if c["verdict"] == "harness-cannot"], rec["cells"]
    assert cells[("equality-delete-null-key", "spark")]["verdict"] == "correct", cells
    # Spark's cells (either line) on the tables its own library wrote are self-written; pyiceberg wrote the others
    assert all(c["self_written"] == (c["engine"] != "risingwave" and c["case"] not in PYICEBERG_WRITTEN)
               for c in rec["cells"]), rec["cells"]
    same = [c for c in cases if c != "branch-compaction"]
    assert all(cells[(case, "spark-3.5")]["verdict"] == cells[(case, "spark")]["verdict"] for case in same), cells
    # a branch compacted: Iceberg 1.12's rewrite_data_files takes it (committed to the branch alone, main published
    # after for verification), Iceberg 1.10.2's cannot (declared, with the reason); RisingWave's engine takes it too
    branch = {e: cells[("branch-compaction", e)] for e in engines}
    assert branch["spark"]["verdict"] == "correct" and branch["risingwave"]["verdict"] == "correct", branch
    assert branch["spark-3.5"]["verdict"] == "unsupported" and "Iceberg 1.10.2" in branch["spark-3.5"]["evidence"]
    assert next(c for c in rec["cases"] if c["name"] == "branch-compaction")["branch"] == "audit"
    rw = cells[("equality-delete-null-key", "risingwave")]
    assert rw["verdict"] == "wrong-rows" and "rows that came back: 2" in rw["evidence"], rw
    assert "'k': None" in rw["evidence"] and "null key" in rw["evidence"]
    assert "k values read but not expected: NULL x2" in rw["evidence"], rw  # against the case's expected rows
    assert "equality deletes with NULL keys" in rw["covers"]
    # RisingWave's engine meets the v3 table (the harness's catalog commits v3): its own behaviour is judged
    v3 = cells[("format-v3-deletion-vectors", "risingwave")]
    assert v3["verdict"] == "wrong-metadata" and v3["evidence"].startswith("row_lineage_kept: "), v3
    assert cells[("format-v3-deletion-vectors", "spark")]["verdict"] == "correct"
    for engine in engines:
        scoped = cells[("equality-delete-partition-scoped", engine)]
        assert [f["reader"] for f in scoped["findings"]] == ["duckdb-iceberg"], scoped
        f = scoped["findings"][0]
        assert f["on"] == "the source snapshot" and (f["rows"], f["reference_rows"]) == (4, 6), f
        assert "reader finding: duckdb-iceberg" in scoped["evidence"], scoped
    assert cells[("equality-delete-partition-scoped", "spark")]["verdict"] == "correct", cells
    for case in ("rename-column", "quoted-names"):
        assert cells[(case, "spark")]["verdict"] == "correct", cells[(case, "spark")]
    # the engines ran in shared processes: one Spark JVM per Spark line for every case, no run timed into a statistic
    runs = [json.loads(f.read_text()) for f in (results / "c" / "runs").glob("*/*--rep0.json")]
    assert len(runs) == len(engines) * len(cases)
    runs = [r for r in runs if r["status"] != "unsupported"]  # recorded, never run
    assert len(runs) == len(engines) * len(cases) - 2 and all(r["shared_process"] for r in runs)
    spark = json.loads((results / "c" / "runs" / "branch-compaction" / "deletes-standard--spark--rep0.json")
                       .read_text())
    assert any("branch => 'audit'" in a for a in spark["engine_actions"]), spark["engine_actions"]
    moved = next(c for c in spark["verification"]["checks"] if c["name"] == "branch_compacted")
    assert moved["ok"] and "left main at" in moved["message"], moved
    for engine in ("spark", "spark-3.5"):
        spark_runs = [r for r in runs if r["engine"] == engine]
        log = (results / "c" / "runs" / f"shared-{engine}.log").read_text()
        assert sorted(r["shared_process"] for r in spark_runs) == list(range(1, len(spark_runs) + 1))
        assert log.count("Using an existing Spark session") == len(spark_runs) - 1, log[-3000:]
    # a maintenance case on the suite's own copy of its table: Iceberg's Spark procedure (either line) removes the
    # orphan and keeps the statistics file; RisingWave's binding loses nothing but leaves the orphan
    assert all(cells[(c, e)]["verdict"] == "correct" for c in MAINTENANCE_CASES for e in ("spark", "spark-3.5")), cells
    orphans = cells[("orphans-keep-statistics-file", "risingwave")]
    assert orphans["verdict"] == "kept-garbage" and "not removed" in orphans["evidence"], orphans
    # a manifest rewrite commits to main (its new head reads main's rows) and leaves the tag where it was
    assert cells[("rewrite-manifests-keeps-tag", "risingwave")]["verdict"] == "correct", cells
    # an expiry after a cherry-pick: the staged snapshot (detached) expires, its data file (live in main's head again)
    # stays with every engine; RisingWave's binding expires the snapshots and deletes none of their files, as on
    # every expiry case
    picked = cells[(CHERRY_PICKED, "risingwave")]
    assert picked["verdict"] == "kept-garbage" and "not removed" in picked["evidence"], picked
    # a dangling file-scoped position delete: Iceberg's rewrite_position_delete_files (either line) drops it, no row
    # changed; RisingWave's binding has no such operation (declared, never run)
    rw = cells[(DANGLING, "risingwave")]
    assert rw["verdict"] == "unsupported" and "has no position-delete rewrite" in rw["evidence"], rw
    dangling = json.loads((results / "c" / "runs" / DANGLING / "bin-packing--spark--rep0.json").read_text())
    said = dangling["engine_result"]["rewrite_position_deletes"]
    assert (said["rewritten_delete_files_count"], said["added_delete_files_count"]) == (1, 0), said
    removed = next(c for c in dangling["verification"]["checks"] if c["name"] == "removed_unreachable")
    assert removed["ok"] and "none of the 1 to be replaced is live" in removed["message"], removed
    entry = next(c for c in rec["cases"] if c["name"] == "orphans-keep-statistics-file")
    assert entry["operation"] == "remove_orphan_files(older_than=86400 s)", entry
    assert entry["table_check"]["name"] == "case_maintenance_expectation_holds" and entry["table_check"]["ok"]
    stats = json.loads((results / "c" / "runs" / "orphans-keep-statistics-file" / "bin-packing--spark--rep0.json")
                       .read_text())
    assert stats["engine_actions"] == ["remove_orphan_files(older_than=86400 s)"], stats["engine_actions"]
    removed = stats["engine_result"]["remove_orphan_files(older_than=86400 s)"]["orphan_file_location"]
    assert [p.rsplit("/", 1)[-1] for p in removed] == ["orphan-old.parquet"], removed  # what Spark said it removed
    assert [c["ok"] for c in stats["verification"]["checks"][:4]] == [True] * 4, stats["verification"]["checks"]
    assert stats["versions"]["iceberg"] == SPARK.iceberg  # an operation that is no compaction names its versions too
    # its Spark jobs with one shuffle partition per core, not the profile's 1000 of the published compaction
    assert "one per core)" in stats["phases"][0]["detail"], stats["phases"]
    # each case's table is left as written for the next run: the orphan Spark removed is back; a second campaign on
    # the same tables (their files aged again) judges the case again
    assert (warehouse[0] / TABLES_DIR / "lake" / "conformance" / "orphans_keep_statistics_file" / "data" /
            "orphan-old.parquet").exists()
    p = run_bench("conformance", "--cases", "orphans-keep-statistics-file", "--engines", "risingwave", "--warehouse",
                  warehouse[0], "--results-dir", results, "--run-id", "again", "--no-reproducers")
    assert p.returncode == 0, p.stderr[-3000:]
    again = json.loads((results / "again" / "conformance.json").read_text())["cells"]
    assert [c["verdict"] for c in again] == ["kept-garbage"], again
    p = run_bench("report", results / "c")
    assert p.returncode == 0, p.stderr[-2000:]
    html = (results / "c" / "report.html").read_text()
    assert 'data-section="conformance"' in html and 'data-section="reader-findings"' in html
    assert 'data-engine="risingwave" data-verdict="wrong-rows"' in html
    assert 'data-engine="spark" data-verdict="correct"' in html
    assert 'data-version-pair="spark-3.5 spark"' in html
    assert f'<span class="sub" data-runtime>{EARLIER.describe()}' in html
    assert 'data-change="spark-3.5 spark" data-from="unsupported" data-to="correct"' in html
    assert html.count('data-change="spark-3.5 spark"') == len(cases) and "1 changed</span>" in html
    p = run_bench("report", results / "c", "--markdown", "-")
    assert p.returncode == 0, p.stderr[-2000:]
    assert ("| equality-delete-null-key | equality deletes, equality deletes with NULL keys | "
            "correct (self-written) | correct (self-written) | **wrong-rows** |  |") in p.stdout, p.stdout
    assert f"Runtimes: spark: {SPARK.describe()}; spark-3.5: {EARLIER.describe()}; " in p.stdout
    assert ("| branch-compaction | compacting a branch other than main, position deletes on a branch | correct "
            "(self-written) | unsupported (self-written) | correct | unsupported → correct |") in p.stdout, p.stdout
    assert (f"Changed, spark-3.5 → spark ({EARLIER.describe()} → {SPARK.describe()}): branch-compaction (unsupported "
            "→ correct).") in p.stdout
    assert "- **equality-delete-partition-scoped**: duckdb-iceberg" in p.stdout
    # a case whose table does not hold what it states: the harness's defect, named, and no engine judged on it
    wrong = tmp_path / "wrong-cases.yaml"
    case = next(c for c in yaml.safe_load(CASES_FILE.read_text())["cases"] if c["name"] == "rename-column")
    case["expected"] = {**case["expected"], "rows": 7, "keys": [*case["expected"]["keys"], 99]}
    wrong.write_text(yaml.safe_dump({"cases": [case]}))
    p = run_bench("conformance", "--cases-file", wrong, "--engines", "spark,risingwave", "--fail-on", "wrong",
                  "--warehouse", warehouse[0], "--results-dir", results, "--run-id", "w")
    assert p.returncode == 0, p.stderr[-3000:]  # harness-cannot is not what the gate asked about
    rec = json.loads((results / "w" / "conformance.json").read_text())
    assert [c["verdict"] for c in rec["cells"]] == ["harness-cannot", "harness-cannot"], rec["cells"]
    assert "6 rows, expected 7; id values expected but not read: 99" in rec["cells"][0]["evidence"], rec["cells"]
    assert not (results / "w" / "runs").exists()  # no engine ran on it


@pytest.mark.slow
def test_own_maintenance_on_the_suites_copy_and_a_reproducer_per_cell_that_is_not_correct(tmp_path, warehouse):
    """repark (its own environment) runs its own CALL system.remove_orphan_files (dry_run false) on the suite's copy of
    the case's table, RisingWave's engine its binding's RemoveOrphanFiles and ExpireSnapshots; each cell is judged from
    what is left: the orphan three days old, which neither lists, is named as garbage kept.  Each such cell gets a
    reproducer: its own copy of the table as written and a script in the engine's interpreter that replays the
    operation through the engine's own API; run here once, and again on its own, it shows the failure.  In the same
    campaign a position delete committed while each engine rewrites the file it names (held between planning and
    commit): repark's compare-and-swap refuses its own commit, RisingWave's engine drops the delete and the row is
    back (resurrected); a compaction cell gets no reproducer.  And rows appended while each engine rewrites: kept."""
    cases = ["orphans-pyiceberg-written", "expire-pyiceberg-written", CONCURRENT, APPENDED]
    p = run_bench("conformance", "--cases", ",".join(cases), "--engines", "repark,risingwave", "--warehouse",
                  warehouse[0], "--results-dir", tmp_path, "--run-id", "o", timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    rec = json.loads((tmp_path / "o" / "conformance.json").read_text())
    cells = {(c["case"], c["engine"]): c for c in rec["cells"]}
    orphan = cells[(cases[0], "repark")]
    assert orphan["verdict"] == "kept-garbage" and "orphan-old.parquet" in orphan["evidence"], orphan
    run = json.loads(next((tmp_path / "o" / "runs" / cases[0]).glob("*--repark--rep0.json")).read_text())
    assert any("remove_orphan_files" in ph["name"] and "dry_run false" in ph["detail"] for ph in run["phases"]), run
    assert run["status"] == "ok" and rec["versions"]["repark"]["repark"], run["error"]
    assert cells[(CONCURRENT, "repark")]["verdict"] == "refused", cells[(CONCURRENT, "repark")]
    back = cells[(CONCURRENT, "risingwave")]
    assert back["verdict"] == "resurrected" and "2" in back["evidence"], back
    # an append during the rewrite (a new data file no rewrite planned): repark refuses its commit again, RisingWave's
    # engine commits on top of it, and the appended rows stay
    assert cells[(APPENDED, "repark")]["verdict"] == "refused", cells[(APPENDED, "repark")]
    kept = cells[(APPENDED, "risingwave")]
    assert kept["verdict"] == "correct" and "the writer appends 2 row(s)" in kept["evidence"], kept
    due = sorted(k for k, c in cells.items() if c["verdict"] != "correct" and c["case"] not in (CONCURRENT, APPENDED))
    assert (cases[0], "risingwave") in due and all(cells[k]["verdict"] != "harness-cannot" for k in due), cells
    assert sorted((r["case"], r["engine"]) for r in rec["reproducers"]) == due, rec["reproducers"]
    assert all(r["shown"] is True for r in rec["reproducers"]), rec["reproducers"]
    assert f"reproducers: {len(due)} under o/reproducers/, {len(due)} of them show the failure" in p.stdout
    md = matrix_markdown(MatrixView(ConformanceRecord.model_validate(rec), tmp_path / "o"))
    assert f"Reproducer: `reproducers/{cases[0]}--repark/run.py: shows the failure`." in md, md
    here = tmp_path / "o" / "reproducers" / f"{cases[0]}--repark"
    assert {f.name for f in here.iterdir()} >= {"run.py", "case.json", "table.tar"}
    python = (here / "run.py").read_text().splitlines()[0].removeprefix("#!")
    assert "repark" in python  # the engine's own interpreter, not the harness's
    for _ in range(2):  # on its own, twice: each run puts the table back as written first
        again = subprocess.run([python, str(here / "run.py")], capture_output=True, text=True, timeout=300,
                               env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        assert again.returncode == 1, again.stdout + again.stderr
        assert "not removed, though nothing reaches it" in again.stdout and "orphan-old.parquet" in again.stdout


def test_the_version_column_pairs_an_engine_with_its_earlier_version():
    """spark-3.5 declares itself an earlier version of spark (a profile pairs with the same profile only): the matrix
    gains a column of the cases whose verdict changed, each engine's runtime from its recorded versions heads its
    column (the real matrix above renders it in the report); no JVM: a record built here."""
    from bench.engines import engine_class

    engines = ["spark", "spark-3.5", "risingwave"]
    assert [p.model_dump() for p in version_pairs(engines)] == [{"engine": "spark", "earlier": "spark-3.5"}]
    assert version_pairs(["spark", "risingwave"]) == [] and version_pairs(["spark-3.5:tuned", "spark"]) == []
    refusal = engine_class("spark-3.5").why_not("branch")
    assert engine_class("spark").why_not("branch") is None and refusal and "Iceberg 1.10.2" in refusal
    versions = {e: {"spark": line.pyspark, "iceberg": line.iceberg, "java": "17.0.15"}
                for e, line in (("spark", SPARK), ("spark-3.5", EARLIER))}
    versions["risingwave"] = {"iceberg-compaction": "202604.9.0rc0"}
    runtimes = {e: runtime_label(v, engine_class(e).packages) for e, v in versions.items()}
    assert runtimes["spark"] == SPARK.describe() and runtimes["risingwave"] == "iceberg-compaction 202604.9.0rc0"
    verdicts = {"compact-branch": {"spark": "correct", "spark-3.5": "unsupported", "risingwave": "correct"},
                "identity-int": {e: "correct" for e in engines}}
    rec = ConformanceRecord(
        run_id="pair", started_at="2026-12-02T00:00:00Z", engines=engines, versions=versions,
        runtimes={**runtimes, HARNESS_RUNTIME: f"{SPARK.describe()} (the harness's JVMs)"},
        version_pairs=[VersionPair(engine="spark", earlier="spark-3.5")],
        cases=[ConformanceCase(name=c, covers=[c]) for c in verdicts],
        cells=[ConformanceCell(case=c, covers=[c], engine=e, verdict=v,  # type: ignore[arg-type]
                               evidence=refusal if v == "unsupported" else "")
               for c, row in verdicts.items() for e, v in row.items()])
    assert [c.model_dump() for c in rec.changes(rec.version_pairs[0])] == [
        {"case": "compact-branch", "earlier": "unsupported", "verdict": "correct"}]
    lines = matrix_line(rec)
    assert lines[0].split() == ["case", *engines, "spark-3.5", "->", "spark"]
    assert lines[1].split()[-3:] == ["unsupported", "->", "correct"] and lines[2].split()[-1] == "correct"
    assert f"spark-3.5 ({EARLIER.describe()}): 1 unsupported, 1 correct" in lines
    assert (f"changed, spark-3.5 -> spark ({EARLIER.describe()} -> {SPARK.describe()}): compact-branch unsupported "
            "-> correct") in lines
