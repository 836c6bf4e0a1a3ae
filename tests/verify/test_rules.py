"""The verifier's rules as named: a run no content reader could read is not verified (`reader_answered`); a
bin-packing run whose delete files stay live is read by the readers that apply deletes; the rule texts stored
in results are built from the readers' own declarations (field id, not "column name").  No table, no engine."""

from bench.core.dataset import GroundTruth
from bench.core.records.verification import ReaderAnswer, TableStats
from bench.core.table.entries import LiveFiles
from bench.verify.checks import RULES, VerifyInput, content_checks, readers_for


def _vi(kind: str, answers: dict[str, ReaderAnswer]) -> VerifyInput:
    return VerifyInput(kind=kind, table=None, before=TableStats(), before_paths=set(),  # type: ignore[arg-type]
                       ground_truth=GroundTruth(rows=3, checksum="7"), target_file_size_bytes=1,
                       small_file_threshold_bytes=1, output_codec="snappy", answers=answers)


def test_a_run_no_reader_could_read_is_not_verified():
    unread = {n: ReaderAnswer(reader=n, resolves="field id", unavailable="a delete file applies")
              for n in ("duckdb-read-parquet", "pyiceberg-scan")}
    checks = {c.name: c for c in content_checks(_vi("binpack", unread))}
    assert not checks["reader_answered"].ok and checks["reader_answered"].required
    assert "no content reader could read the output" in checks["reader_answered"].message
    read = {**unread, "duckdb-merge-on-read": ReaderAnswer(reader="duckdb-merge-on-read", resolves="field id",
                                                           rows=3, checksum="7")}
    checks = {c.name: c for c in content_checks(_vi("binpack", read))}
    assert checks["reader_answered"].ok and checks["content_duckdb_merge_on_read"].required
    assert not checks["content_pyiceberg_scan"].required  # unavailable: said, advisory


def test_bin_packing_with_live_deletes_adds_the_readers_that_apply_them():
    assert readers_for("binpack", LiveFiles()) == ["duckdb-read-parquet", "pyiceberg-scan"]
    deletes = LiveFiles(equality=[object()])  # type: ignore[list-item]
    assert readers_for("binpack", deletes) == ["duckdb-read-parquet", "pyiceberg-scan", "duckdb-merge-on-read",
                                               "duckdb-iceberg"]
    assert readers_for("deletes", deletes) == ["duckdb-merge-on-read", "pyiceberg-scan", "duckdb-iceberg"]


def test_rule_texts_say_how_readers_resolve_columns():
    text = " ".join(r for rules in RULES.values() for r in rules)
    assert "column name" not in text and "by column name" not in text
    assert "duckdb-read-parquet (by Parquet field id" in text and "duckdb-iceberg (through the REST catalog" in text
    assert any(r.startswith("file count:") for r in RULES["deletes"])  # delete runs' file count too
