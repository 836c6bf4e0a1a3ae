"""The verifier: a declarative list of checks per scenario kind, each with a name, whether it held, a
message saying what was compared (and on failure what differs), and whether it is required.  A run is
`verified` only when every required check held; every failed check is listed in `differences`.  When an
output's content differs from its input's, `row_difference` says which rows: those that came back (deleted rows
resurrected) and those that were lost, each as a multiset difference over every column read by the harness's
merge-on-read reader, a few of each as evidence.

Rules (stated in each result's `verification.rules` and in docs/method.md):
- the input is byte-identical to the dataset and its content equals the generator's ground truth;
- the output's content equals the generator's ground truth, read by readers with different code paths
  (RULES: the texts are built from the readers' own declarations, bench.verify.readers.READERS): DuckDB
  over the Parquet files and pyiceberg's scan, both by Parquet field id; for tables with deletes our
  merge-on-read and DuckDB's iceberg extension through the REST catalog, and at least two readers must
  have answered; on a bin-packing run whose delete files stay live those two read it as well;
- a table none of those readers can read (Avro data files; the DuckDB readers read Parquet only, pyiceberg's scan
  Parquet and ORC) is read by the readers that can (pyiceberg-avro), else by the reference reader (Iceberg's Java
  library): one content check is always required, and at least one required reader must have answered
  (`reader_answered`);
- a new snapshot was committed (unless the work asks nothing of the input: no data file, or no partition holding
  more small files than may stay, e.g. a single file); no delete file is live after the run;
- an engine that commits nothing (`commits: none`, a floor) is verified on its listed output files,
  staged as a scratch table (bench.verify.uncommitted) with every check above, except that instead of
  a new snapshot the real table must be unchanged (nothing committed to it);
- every file the run wrote has the codec the scenario asks for;
- the compaction is complete as the scenario's work states it (bench.core.work, `VerifyInput.work`, the same
  intent the engine's options were derived from): files small: per partition at most min_files - 1 small input
  files (default: one, a remainder that cannot fill a target file) still live; files all: none; and there are at most
  ceil(logical bytes / target) + max(1, 10%) data files per partition, logical bytes being the Parquet
  uncompressed size of the live data files (engines split their output by input size, so a rewrite
  that compresses writes files smaller than the target: counting compressed bytes would fail them all);
- sorted output (strategy sort): every data file the run wrote is sorted by the table's sort order
  (bench.verify.sortorder), and the overlap of files' key ranges is measured before and after (advisory);
  z-order (strategy zorder): only measured, per z-order column (advisory): nothing about a z-order is
  checked beyond the rules every compaction is held to.
- the files the run wrote have the Parquet physical and logical types Iceberg's type mapping asks
  (bench.verify.parquet_types), and on a v3 table carry their moved rows' lineage (bench.verify.lineage);
- a conformance case's output holds the rows the case states by the spec (bench.verify.expected);
- with a partition filter (bench.verify.untouched): the partitions outside it are untouched, and the
  completeness, file-count and no-live-delete-file rules count the selected partitions only;
- with a partition filter on a table with deletes, whose equality deletes outside the filter stay live
  (pyiceberg cannot apply them; DuckDB's iceberg extension may be above its work limit), the selected
  partitions are also read on their own, by pyiceberg's scan with the filter as its row filter
  (`content_pyiceberg_scan_selected`, required) and by duckdb-merge-on-read over their data files, against
  the generator's per-partition truth summed over them; `independent_readers_agree` then asks for two
  readers over the selected partitions, agreeing, and every reader of the whole table (at least one)
  agreeing.  Runs without a filter are checked as before.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import duckdb
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table
from pyiceberg.table.sorting import SortOrder

from bench.core.catalog import CatalogSettings
from bench.core.dataset import GroundTruth
from bench.core.expected import Expected
from bench.core.fmt import fmt_bytes
from bench.core.partition_filter import table_selector
from bench.core.records.verification import (
    Check,
    CommitEvent,
    FileFacts,
    ReaderAnswer,
    ReaderFinding,
    RowDifference,
    TableStats,
    Verification,
    difference,
)
from bench.core.table.deletes import scope
from bench.core.table.entries import LiveFiles, live_files
from bench.core.table.files import footers
from bench.core.work import WorkIntent, default_intent
from bench.verify.expected import RULE as EXPECTED_RULE
from bench.verify.expected import expected_check, witnesses
from bench.verify.integrity import RULE as INTEGRITY_RULE
from bench.verify.integrity import IntegrityInput, commit_event, integrity_checks
from bench.verify.lineage import RULE as LINEAGE_RULE
from bench.verify.lineage import lineage_check
from bench.verify.parquet_types import RULE as PARQUET_TYPES_RULE
from bench.verify.parquet_types import parquet_types_check
from bench.verify.partitions import file_partition_problems
from bench.verify.readers import FALLBACK, READERS, SELECTIVE, merge_on_read, read, read_selected
from bench.verify.referee import overrule
from bench.verify.reference import NAME as REFERENCE
from bench.verify.sortorder import file_sort_problem, files_per_probe, key_ranges, order_text, probes
from bench.verify.stats import table_stats
from bench.verify.untouched import RULE as FILTER_RULE
from bench.verify.untouched import Selected, selected_truth, untouched_check

FILE_COUNT_SLACK_SHARE = 0.10  # data files may exceed ceil(bytes / target) by max(1, 10 %) per partition
COMPLETE_RULE = ("complete, as the scenario's work states it (bench.core.work; the same intent each engine's options "
                 "are derived from): files small: per partition at most min_files - 1 small input files (below the "
                 "small-file threshold) still live (default 2: one, a remainder that cannot fill a target file); files "
                 "all: no input data file live; files with-deletes (a delete compaction's default) and, unless the "
                 "work keeps them, on a table with delete files: no delete file live")
READERS_FOR = {
    "binpack": ["duckdb-read-parquet", "pyiceberg-scan"],
    "deletes": ["duckdb-merge-on-read", "pyiceberg-scan", "duckdb-iceberg"],
}
# a bin-packing run on a table whose delete files stay live (`deletes: keep`, or deletes the work does not
# apply): neither reader of READERS_FOR["binpack"] can read it, so these read it too
READERS_WITH_DELETES = ["duckdb-merge-on-read", "duckdb-iceberg"]
RESOLVES_TEXT = {"field id": "by Parquet field id (by name only in a file without field ids)",
                 "catalog": "through the REST catalog's metadata (its own Iceberg reader)"}


def readers_text(names: list[str]) -> str:
    """The readers and how each resolves columns, from their declarations (bench.verify.readers.READERS)."""
    return ", ".join(f"{n} ({RESOLVES_TEXT.get(READERS[n].resolves, READERS[n].resolves)}; deletes applied: "
                     f"{READERS[n].deletes})" for n in names)


READ_RULE = ("a reader checked it: at least one required content reader answered (a run no reader could read is "
             "not verified)")
FILE_COUNT_RULE = (f"file count: per partition at most ceil(logical bytes / target) + max(1, "
                   f"{FILE_COUNT_SLACK_SHARE:.0%}) data files (logical bytes = Parquet uncompressed bytes of the live "
                   "data files; a delete compaction: of the data files the run wrote, against their logical bytes)")
RULES = {
    "binpack": [
        "content: rows and checksum equal the generator's ground truth, read by "
        f"{readers_text(READERS_FOR['binpack'])}; where delete files stay live also by "
        f"{readers_text(READERS_WITH_DELETES)}",
        READ_RULE,
        COMPLETE_RULE,
        FILE_COUNT_RULE,
        "codec: every file the run wrote has the scenario's output codec",
        "no live delete file; a new snapshot was committed; the input was the dataset, byte for byte",
        INTEGRITY_RULE,
    ],
    "deletes": [
        "content: rows and checksum equal the generator's ground truth, read by "
        f"{readers_text(READERS_FOR['deletes'])}; at least two readers answered and all agree",
        READ_RULE,
        "no live delete file (applying or dangling): every engine reaches the same end state",
        COMPLETE_RULE,
        FILE_COUNT_RULE,
        "codec: every file the run wrote has the scenario's output codec",
        "a new snapshot was committed; the input was the dataset, byte for byte",
        INTEGRITY_RULE,
    ],
}
PARTITION_RULE = ("partitions (a partitioned table): every data file the run wrote holds rows of one partition, "
                  "the one its manifest entry records (recomputed from its rows with the spec's transforms)")
SORT_RULE = ("sorted output (strategy sort): every data file the run wrote holds its rows in the table's sort order "
             "(sort columns read by field id; each key's direction and null order); advisory: files a point lookup "
             "on the first sort key opens (mean over 64 probe keys, from manifest bounds), before and after")
ZORDER_RULE = ("z-order (strategy zorder): not verified beyond the rules above; advisory: per z-order column, files "
               "a point lookup opens (mean over 64 probe keys, from manifest bounds), before and after")
SELECTED_RULE = ("a partition filter on a table with deletes (the equality deletes outside it stay live, out of "
                 "pyiceberg's reach and possibly above DuckDB's iceberg limit): the partitions it selects are read on "
                 "their own by pyiceberg-scan with the filter as its row filter (field id; content_pyiceberg_scan_"
                 "selected, required) and by duckdb-merge-on-read over their data files, against the generator's "
                 "per-partition truth summed over them; independent readers agree: at least two over the selected "
                 "partitions, and every reader of the whole table (at least one); the partitions outside are the "
                 "input's file for file (untouched_partitions) and the input equals the truth "
                 "(input_matches_generator)")
UNCOMMITTED_RULE = ("commits: none: the engine's listed output files are verified as a scratch table with the "
                    "input's schema and spec (every check above), and the real table must be unchanged")


@dataclass
class VerifyInput:
    """Everything the verifier compares; the table is read here, never the engine's word."""

    kind: str
    table: Table  # loaded after the run (its current snapshot is the output)
    before: TableStats  # the input, measured after this run's reset
    before_paths: set[str]  # live files of the input
    ground_truth: GroundTruth
    target_file_size_bytes: int
    small_file_threshold_bytes: int
    output_codec: str
    input_fingerprint: str = ""
    input_identical: bool = False
    input_compared: str = ""  # what input_identical compared (InputState.compared)
    settings: CatalogSettings | None = None
    answers: dict[str, ReaderAnswer] = field(default_factory=dict)
    committed: bool = True  # False: `table` is the staged output of an engine that commits nothing
    source_metadata_location: str | None = None  # uncommitted: the real table's metadata after the run
    integrity: IntegrityInput | None = None  # the input's metadata: identity, history, commit kinds
    strategy: str = "binpack"  # binpack | sort | zorder: sort adds sorted_output, both an overlap measure
    zorder_columns: list[str] = field(default_factory=list)
    sort_order: SortOrder | None = None  # the real table's (a staged output table has none of its own)
    before_data_files: list[DataFile] | None = None  # the input's live data files (for the overlap measure)
    partition_filter: str | None = None  # compact only the partitions it selects (bench.verify.untouched)
    input_files: LiveFiles | None = None  # the input's live files (with a partition filter)
    # the work asked of the engine (bench.core.work): the same object its CompactionJob carried (job.work); None:
    # the scenario's default work resolved against the input (intent())
    work: WorkIntent | None = None
    # a conformance case's expected rows (bench.core.expected): the output is held to them (expected_rows), and each
    # reader whose count differs from them while the output holds them is a finding about that reader
    expected: Expected | None = None

    def intent(self) -> WorkIntent:
        """The work the run is held to: `work`, or the default work on this input (its delete files applied)."""
        if self.work is not None:
            return self.work
        return default_intent(self.kind, self.before.delete_files > 0 or self.kind == "deletes")


def _gt_message(answer: ReaderAnswer, gt: GroundTruth) -> tuple[bool, str]:
    if answer.rows is None:
        return False, f"{answer.reader} could not read the table: {answer.why_not}"
    if answer.content == (gt.rows, gt.checksum):
        return True, f"{answer.reader} ({answer.resolves}): {gt.rows} rows, checksum equal to the ground truth"
    return False, (f"{answer.reader} ({answer.resolves}) reads {answer.rows} rows ({answer.rows - gt.rows:+d}) / "
                   f"checksum {answer.checksum}, ground truth {gt.rows} / {gt.checksum}")


@dataclass
class Within:
    """The partitions a partition filter selects on a table with deletes, read on their own: the generator's
    truth summed over them and the answers of the readers that can read them alone (readers.read_selected)."""

    where: str
    partitions: int  # partitions of the generator's truth the filter selects
    of: int  # partitions of the generator's truth
    truth: GroundTruth  # rows and checksum summed over the selected partitions
    answers: dict[str, ReaderAnswer] = field(default_factory=dict)


def _answered(answers: dict[str, ReaderAnswer]) -> dict[str, tuple[int | None, str | None]]:
    """The answers that count: answered, and not advisory (a by-name read where names are ambiguous, or a reader
    the reference reader overruled)."""
    return {n: a.content for n, a in answers.items() if a.answered and not a.advisory}


def referee(vi: VerifyInput, tbl: Table) -> list[ReaderFinding]:
    """When the readers that count disagree on the output, the reference reader (Iceberg's Java library) reads it
    too (`vi.answers[REFERENCE]`, a required content check); each reader that read otherwise than it becomes
    advisory and a reader finding.  Without a disagreement it is not asked (a JVM start costs seconds), unless no
    reader could read the output at all: then it is the content check (required, failing if it cannot read either)."""
    answered = _answered(vi.answers)
    if not answered:  # none of the scenario's readers can read this table (e.g. Avro data files): the readers that
        for name in FALLBACK:  # can are asked, and when none of them can either, the reference reader
            vi.answers[name] = read(name, tbl, None, vi.settings)
        if not _answered(vi.answers):
            vi.answers[REFERENCE] = read(REFERENCE, tbl, None, vi.settings)
        return []
    if len(set(answered.values())) <= 1:
        return []
    ref = vi.answers[REFERENCE] = read(REFERENCE, tbl, None, vi.settings)
    if not ref.answered:
        return []
    return overrule(ref, list(vi.answers.values()), "the output")


def content_checks(vi: VerifyInput, within: Within | None = None) -> list[Check]:
    """One check per reader (required when it could read; a reader that is unavailable here says why,
    advisory), and for deletes: at least two readers agree.  `within` (a partition filter on a table with
    deletes): pyiceberg's scan of the selected partitions against their truth (required), and the agreement
    counts the readers of the selected partitions (see SELECTED_RULE)."""
    out = []
    for name in READERS_FOR[vi.kind] + [n for n in vi.answers if n not in READERS_FOR[vi.kind]]:
        a = vi.answers[name]
        ok, msg = _gt_message(a, vi.ground_truth)
        alone = name == REFERENCE and not _answered({n: x for n, x in vi.answers.items() if n != REFERENCE})
        required = (a.unavailable is None or alone) and a.advisory is None
        out.append(Check(name=f"content_{name.replace('-', '_')}", ok=ok,
                         message=msg + (f" (advisory: {a.advisory})" if a.advisory else "")
                         + (" (no other reader can read this table: the reference reader is its content check)"
                            if alone else ""),
                         required=required, about="rows",
                         whose="harness" if alone and a.unavailable else "engine" if required else "reader"))
    if within is not None:
        ok, msg = _gt_message(within.answers["pyiceberg-scan"], within.truth)
        if not within.of:  # a dataset whose manifest predates the per-partition truth
            ok, msg = False, "the dataset records no per-partition ground truth to compare with: generate it again"
        out.append(Check(name="content_pyiceberg_scan_selected", ok=ok, about="rows",
                         message=f"over the {within.partitions} of {within.of} partition(s) the filter "
                                 f"{within.where!r} selects (ground truth: the generator's, summed over them): {msg}"))
    counted = [c.name for c in out if c.required]
    out.append(Check(name="reader_answered", ok=bool(counted), whose="harness", about="rows",
                     message=f"required content reader(s): {', '.join(counted)}" if counted else
                     "no content reader could read the output: " + "; ".join(
                         f"{a.reader}: {a.why_not}" for a in vi.answers.values() if not a.answered)
                     + " (not verified: nothing read its rows)"))
    if vi.kind == "deletes":
        answered = _answered(vi.answers)
        if within is None:
            agree = len(answered) >= 2 and len(set(answered.values())) == 1
            msg = (f"{len(answered)} readers answered ({', '.join(answered)})"
                   + ("" if agree else f"; answers: {answered}"))
        else:
            selected = _answered(within.answers)
            agree = (len(answered) >= 1 and len(set(answered.values())) == 1
                     and len(selected) >= 2 and len(set(selected.values())) == 1)
            msg = (f"{len(selected)} readers answered over the {within.partitions} selected partition(s) "
                   f"({', '.join(selected)}) and {len(answered)} over the whole table ({', '.join(answered)})"
                   + ("" if agree else f"; answers: selected partitions {selected}, whole table {answered}"))
        out.append(Check(name="independent_readers_agree", ok=agree, message=msg, whose="reader", about="rows"))
    return out


def input_checks(vi: VerifyInput) -> list[Check]:
    gt, b = vi.ground_truth, vi.before
    ok = b.rows == gt.rows and b.checksum == gt.checksum
    return [
        Check(name="input_identical" if "hashes" in vi.input_compared else "input_same_files", ok=vi.input_identical,
              whose="harness",
              message=f"input fingerprint {vi.input_fingerprint} (paths, sizes, metadata file): "
              + (vi.input_compared or "paths and sizes") if vi.input_identical else
              f"input differs from the dataset: fingerprint {vi.input_fingerprint}; {vi.input_compared}"),
        Check(name="input_matches_generator", ok=ok, whose="harness",
              message=(f"input ({b.content_reader}): {b.rows} rows, checksum equal to the ground truth" if ok else
                       f"input reads {b.rows} rows / checksum {b.checksum} ({b.content_reader}), the ground truth "
                       f"({gt.computed_by}) is {gt.rows} / {gt.checksum}")),
    ]


def nothing_owed(vi: VerifyInput) -> str:
    """Why the work asks nothing of this input ("" when it asks something): no data or delete file (e.g. a user's
    table without a snapshot), or files small on an input without delete files where no partition holds more small
    files than may stay (e.g. a single-file table: one file is no work, and an engine may rightly commit nothing)."""
    if vi.before.data_files == 0 and vi.before.delete_files == 0:
        return "the input holds no data file: nothing to compact"
    work = vi.intent()
    allowed = work.small_files_left_allowed()
    if vi.before.delete_files or work.files != "small" or allowed is None:
        return ""
    if vi.input_files is not None:  # a partitioned table: its small input files per partition
        per = Counter(scope(e.data_file) for e in vi.input_files.data
                      if e.data_file.file_size_in_bytes < vi.small_file_threshold_bytes)
        most = max(per.values(), default=0)
    else:  # at most every data file of the input in one partition
        most = vi.before.data_files
    if most > allowed:
        return ""
    return (f"no partition of the input holds more than {allowed} small data file(s), which {work.describe()} "
            "leaves: nothing to compact")


def state_checks(vi: VerifyInput, after: TableStats, new: list[FileFacts], deletes_outside: int = 0) -> list[Check]:
    """`deletes_outside`: live delete files in partitions a partition filter does not select (they stay)."""
    codecs = Counter(c for f in new for c in f.codecs)
    wrong = [f for f in new if f.codecs != [vi.output_codec]]
    # an input the work asks nothing of (`nothing_owed`): neither a commit nor a file is owed; the engine is held to
    # leaving the same table, nothing lost, no error
    idle = nothing_owed(vi)
    empty = bool(idle)
    codec_msg = (f"{len(new)} new data file(s), all {vi.output_codec}" if new and not wrong else
                 f"no new data file: {idle}" if not new and empty else
                 "no new data file was written" if not new else
                 f"{len(wrong)} of {len(new)} new data file(s) are not {vi.output_codec} (codecs found: "
                 f"{dict(codecs)}), e.g. {wrong[0].path.rsplit('/', 1)[-1]}")
    if vi.committed:
        commit = Check(name="new_snapshot", ok=after.snapshot_id != vi.before.snapshot_id or empty,
                       message=f"snapshot {vi.before.snapshot_id} -> {after.snapshot_id}"
                       + (f" ({idle}, no commit owed)" if empty else ""))
    else:
        same = vi.source_metadata_location == vi.before.metadata_location
        commit = Check(name="nothing_committed", ok=same,
                       message=("commits: none: the table is unchanged; its output files were verified as a "
                                "scratch table" if same else
                                f"an engine that says it commits nothing changed the table: metadata "
                                f"{vi.before.metadata_location} -> {vi.source_metadata_location}"))
    kept = vi.intent().delete_files and not vi.intent().applies_deletes  # work.deletes keep: not work, advisory
    return [
        commit,
        Check(name="no_live_delete_files", ok=after.delete_files == deletes_outside, required=not kept,
              message=("no delete file is live" if after.delete_files == 0 else
                       f"no delete file is live in the partitions the filter selects ({deletes_outside} outside it "
                       "stay, as they must)" if after.delete_files == deletes_outside else
                       f"{after.position_delete_files} position and {after.equality_delete_files} equality delete "
                       f"files live after the run ({after.dangling_position_delete_files} and "
                       f"{after.dangling_equality_delete_files} of them dangling"
                       + (f"; {deletes_outside} of them outside the partition filter)" if deletes_outside
                          else ")"))),
        Check(name="output_codec", ok=(bool(new) or empty) and not wrong, message=codec_msg),
    ]


def _complete(vi: VerifyInput, by_scope: dict[tuple, list]) -> Check:
    """compaction_complete, as the intent states the work (bench.core.work): per partition at most min_files - 1
    small input data files still live (files small), or none of the input's data files (files all)."""
    work = vi.intent()
    allowed = work.small_files_left_allowed()
    if allowed is None:  # files with-deletes: complete when no delete file is live (no_live_delete_files)
        return Check(name="compaction_complete", ok=True, message=f"{work.describe()} ({work.stated_by}): complete "
                     "when no delete file is live (no_live_delete_files)")
    small = work.files == "small"
    threshold = vi.small_file_threshold_bytes
    left = {k: [df for df in dfs if df.file_path in vi.before_paths
                and (not small or df.file_size_in_bytes < threshold)] for k, dfs in by_scope.items()}
    too_many = {k: v for k, v in left.items() if len(v) > allowed}
    n_left = sum(len(v) for v in left.values())
    what = f"small input file(s) (below {fmt_bytes(vi.small_file_threshold_bytes)})" if small else "input data file(s)"
    msg = f"{work.describe()} ({work.stated_by}): {n_left} {what} still live in {len(by_scope)} partition(s)"
    if too_many:
        v = next(iter(too_many.values()))
        msg += (f": {sum(len(v) for v in too_many.values())} in {len(too_many)} partition(s) were left uncompacted "
                f"(e.g. {len(v)} files of {fmt_bytes(sum(df.file_size_in_bytes for df in v))} in one partition, at "
                f"most {allowed} allowed): the compaction is partial")
    return Check(name="compaction_complete", ok=not too_many, message=msg)


def _by_scope(files: LiveFiles, in_scope: Selected | None) -> dict[tuple, list]:
    by_scope: dict[tuple, list] = {}
    for e in files.data:
        if in_scope is None or in_scope(scope(e.data_file)):
            by_scope.setdefault(scope(e.data_file), []).append(e.data_file)
    return by_scope


def binpack_checks(vi: VerifyInput, files: LiveFiles, facts: list[FileFacts], after: TableStats,
                   in_scope: Selected | None = None) -> list[Check]:
    """Completeness: input files left per partition, as the intent says (`_complete`), and the file count against
    the bytes (`in_scope`: of the partitions a partition filter selects)."""
    by_scope = _by_scope(files, in_scope)
    return [_complete(vi, by_scope), file_count_check(vi, by_scope, facts, after, in_scope is not None)]


def file_count_check(vi: VerifyInput, by_scope: dict[tuple, list], facts: list[FileFacts], after: TableStats,
                     filtered: bool = False, written_only: bool = False) -> Check:
    """file_count: per partition at most ceil(logical bytes / target) + max(1, 10 %) data files.  `written_only`
    (a delete compaction, which rewrites only the files a delete applies to): the data files the run wrote, against
    their own logical bytes (the files it had no reason to touch are not its output)."""
    logical = {f.path: f.uncompressed_bytes for f in facts}
    if written_only:
        by_scope = {k: w for k, v in by_scope.items() if (w := [df for df in v if df.file_path not in vi.before_paths])}
    allowed, total_logical = 0, 0
    for dfs in by_scope.values():
        size = sum(logical.get(df.file_path, df.file_size_in_bytes) for df in dfs)
        total_logical += size
        needed = max(1, math.ceil(size / vi.target_file_size_bytes))
        allowed += needed + max(1, math.ceil(FILE_COUNT_SLACK_SHARE * needed))
    n_after = sum(len(v) for v in by_scope.values())
    if written_only:
        count_msg = (f"{n_after} data files written in {len(by_scope)} partition(s) (of {after.data_files} live) for "
                     f"{fmt_bytes(total_logical)} logical")
    elif not filtered:
        n_after = after.data_files
        count_msg = (f"{vi.before.data_files} -> {after.data_files} data files for {fmt_bytes(total_logical)} "
                     f"logical ({fmt_bytes(after.data_bytes)} on disk)")
    else:
        count_msg = (f"{n_after} data files in the {len(by_scope)} partition(s) the filter selects (of "
                     f"{after.data_files} in the table) for {fmt_bytes(total_logical)} logical")
    target = fmt_bytes(vi.target_file_size_bytes)
    return Check(name="file_count", ok=n_after <= allowed,
                 message=f"{count_msg} at a target of {target}: at most {allowed} allowed")


def partition_checks(tbl: Table, files: LiveFiles, before_paths: set[str]) -> list[Check]:
    """A partitioned table: the placement of every data file the run wrote (bench.verify.partitions)."""
    specs = tbl.specs()
    if all(spec.is_unpartitioned() for spec in specs.values()):
        return []
    new = [e.data_file for e in files.data if e.data_file.file_path not in before_paths]
    problems = [p for df in new for p in file_partition_problems(df, specs[df.spec_id], tbl.schema())]
    partitions = len({(df.spec_id, tuple(df.partition[i] for i in range(len(df.partition)))) for df in new})
    msg = (f"{len(new)} data file(s) the run wrote, in {partitions} partition(s): each holds rows of one "
           "partition, the one its manifest entry records" if not problems else
           f"{len(problems)} of the {len(new)} data file(s) the run wrote are misplaced: " + "; ".join(problems[:3]))
    return [Check(name="partition_placement", ok=not problems, message=msg)]


def _lookup_files(vi: VerifyInput, tbl: Table, files: LiveFiles, column: str) -> tuple[float | None, float | None]:
    """(before, after): mean files a point lookup on `column` opens (bench.verify.sortorder)."""
    f = tbl.schema().find_field(column)
    after = key_ranges([e.data_file for e in files.data], f.field_id, f.field_type)
    before = key_ranges(vi.before_data_files or [], f.field_id, f.field_type)
    keys = probes(before, after)
    return files_per_probe(before, keys), files_per_probe(after, keys)


def _lookup_message(column: str, before: float | None, after: float | None) -> str:
    fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
    return f"a point lookup on {column} opens {fmt(before)} -> {fmt(after)} data files (mean over probe keys)"


def layout_checks(vi: VerifyInput, tbl: Table, files: LiveFiles) -> list[Check]:
    """Strategy sort: sorted_output (required) and the overlap of the first sort key (advisory); zorder:
    the overlap per z-order column (advisory)."""
    out: list[Check] = []
    if vi.strategy == "sort":
        order, schema = vi.sort_order, tbl.schema()
        new = [e.data_file.file_path for e in files.data if e.data_file.file_path not in vi.before_paths]
        if order is None or order.is_unsorted:
            return [Check(name="sorted_output", ok=False, message="strategy sort, but the table has no sort order")]
        problems = [p for path in new if (p := file_sort_problem(path, order, schema))]
        msg = (f"{len(new)} data file(s) the run wrote, each sorted by {order_text(order, schema)}" if not problems
               else f"{len(problems)} of the {len(new)} data file(s) the run wrote are not sorted by "
                    f"{order_text(order, schema)}: " + "; ".join(problems[:3]))
        out.append(Check(name="sorted_output", ok=bool(new) and not problems,
                         message=msg if new else "no new data file was written"))
        column = str(schema.find_column_name(order.fields[0].source_id))
        before, after = _lookup_files(vi, tbl, files, column)
        out.append(Check(name="sort_key_overlap", ok=after is not None and (before is None or after <= before),
                         required=False, message=_lookup_message(column, before, after)))
    elif vi.strategy == "zorder":
        for column in vi.zorder_columns:
            before, after = _lookup_files(vi, tbl, files, column)
            out.append(Check(name=f"zorder_clustering_{column}", required=False,
                             ok=after is not None and (before is None or after <= before),
                             message=_lookup_message(column, before, after)))
    return out


def readers_for(kind: str, files: LiveFiles) -> list[str]:
    """The content readers of a run of `kind` whose output holds `files`: bin-packing with live delete files adds
    the readers that apply deletes (the by-file readers cannot read it)."""
    extra = READERS_WITH_DELETES if kind == "binpack" and files.deletes else []
    return READERS_FOR[kind] + [n for n in extra if n not in READERS_FOR[kind]]


def verify(vi: VerifyInput) -> tuple[TableStats, Verification]:
    """Measure the table after the run and check it.  Returns (after stats, verification)."""
    tbl = vi.table
    files = live_files(tbl)
    facts = footers([(e.data_file.file_path, e.data_file.file_size_in_bytes) for e in files.data])
    new = [f for f in facts if f.path not in vi.before_paths]
    for name in readers_for(vi.kind, files):
        vi.answers[name] = read(name, tbl, None, vi.settings)
    findings = vi.ground_truth.findings + referee(vi, tbl)
    after = table_stats(tbl, content=False, settings=vi.settings, files=files, facts=facts)
    primary = next((a for a in vi.answers.values() if a.answered and not a.advisory), None)
    if primary is not None:
        (after.rows, after.checksum), after.content_reader = primary.got(), primary.reader
    selected = table_selector(tbl, vi.partition_filter, vi.input_files or LiveFiles(), files)
    outside = sum(1 for e in files.deletes if not selected(scope(e.data_file))) if selected else 0
    within = _within(vi, tbl, selected) if vi.kind == "deletes" and selected is not None else None
    checks = input_checks(vi) + content_checks(vi, within) + state_checks(vi, after, new, outside)
    if vi.expected is not None:
        held = expected_check(tbl, None, vi.expected, "expected_rows", "engine", "the output")
        checks.append(held)
        findings += witnesses(vi.answers, vi.expected, "the output") if held.ok else []
    if vi.kind == "binpack":
        checks += binpack_checks(vi, files, facts, after, selected)
    else:
        by_scope = _by_scope(files, selected)
        if vi.intent().small_files_left_allowed() is not None:  # files with-deletes: no_live_delete_files says it
            checks.append(_complete(vi, by_scope))
        checks.append(file_count_check(vi, by_scope, facts, after, selected is not None, written_only=True))
    if new:
        # Parquet files (an ORC or Avro table's output is in its format: the readers' checks speak for it)
        checks.append(parquet_types_check([f.path for f in new if f.format == "parquet"], tbl.schema()))
    if new and tbl.metadata.format_version >= 3:
        checks.append(lineage_check([f.path for f in new]))
    partitioned = partition_checks(tbl, files, vi.before_paths)
    checks += partitioned
    checks += layout_checks(vi, tbl, files)
    if selected is not None:
        checks.append(untouched_check(selected, vi.input_files or LiveFiles(), files))
    committed: list[CommitEvent] = []
    if vi.committed and vi.integrity is not None:
        more, snaps = integrity_checks(vi.integrity, tbl, files)
        checks += more
        committed = [commit_event(x) for x in snaps]
    failed = [c for c in checks if not c.ok and c.required]
    rows = which_rows(vi, tbl, checks)
    v = Verification(rows=rows,
        verified=not failed, checks=checks,
        differences=[difference(c) for c in checks if not c.ok],
        rules=RULES[vi.kind] + ([PARTITION_RULE] if partitioned else []) + ([FILTER_RULE] if selected else [])
        + ([SELECTED_RULE] if within else []) + {"sort": [SORT_RULE], "zorder": [ZORDER_RULE]}.get(vi.strategy, [])
        + ([] if vi.committed else [UNCOMMITTED_RULE]) + ([PARQUET_TYPES_RULE] if new else [])
        + ([EXPECTED_RULE] if vi.expected is not None else [])
        + ([LINEAGE_RULE] if new and tbl.metadata.format_version >= 3 else []),
        reader=", ".join(a.reader for a in vi.answers.values() if a.answered and not a.advisory),
        committed=committed, readers=readers_record(vi, new, within), findings=findings)
    return after, v


def readers_record(vi: VerifyInput, new: list[FileFacts], within: Within | None) -> dict[str, Any]:
    """Verification.readers: the ground truth, the input, every reader's answer, the new files; the selected
    partitions' truth and answers (a partition filter on a table with deletes)."""
    def dumped(answers: dict[str, ReaderAnswer]) -> dict[str, Any]:
        return {n: a.model_dump(exclude_none=True) for n, a in answers.items()}

    out: dict[str, Any] = {"ground_truth": {"rows": vi.ground_truth.rows, "checksum": vi.ground_truth.checksum},
                           "input": {"reader": vi.before.content_reader, "rows": vi.before.rows,
                                     "checksum": vi.before.checksum},
                           **dumped(vi.answers), "new_files": [f.model_dump() for f in new[:50]]}
    if within is not None:
        out["selected_partitions"] = {"where": within.where, "partitions": within.partitions, "of": within.of,
                                      "ground_truth": {"rows": within.truth.rows, "checksum": within.truth.checksum},
                                      **dumped(within.answers)}
    return out


def which_rows(vi: VerifyInput, tbl: Table, checks: list[Check]) -> RowDifference | None:
    """When the content checks fail, the rows that came back or were lost against the input snapshot (a table
    that committed: the same table's two snapshots); None when they pass or it cannot be read."""
    if not vi.committed or all(c.ok for c in checks if c.about == "rows" and c.whose == "engine" and c.required):
        return None
    try:
        return row_difference(tbl, vi.before.snapshot_id, None)
    except Exception:  # noqa: BLE001 - evidence is best effort: the checks stand on their own
        return None


def _within(vi: VerifyInput, tbl: Table, selected: Selected) -> Within:
    """The selected partitions read on their own (a partition filter on a table with deletes)."""
    assert vi.partition_filter
    n, rows, checksum = selected_truth(vi.ground_truth, selected, tbl.metadata.default_spec_id)
    return Within(where=vi.partition_filter, partitions=n, of=len(vi.ground_truth.partitions),
                  truth=GroundTruth(rows=rows, checksum=str(checksum), computed_by="generator, per partition"),
                  answers={name: read_selected(name, tbl, vi.partition_filter, selected) for name in SELECTIVE})


EVIDENCE_ROWS = 5


def _rows(tbl: Table, snapshot_id: int | None) -> Any:
    """The snapshot's live rows as an Arrow table (None without a data file)."""
    with merge_on_read(tbl, snapshot_id) as (con, live):
        if con is None:
            return None
        return con.execute(f"SELECT * FROM {live}").to_arrow_table()


def row_difference(tbl: Table, before_id: int | None, after_id: int | None,
                   limit: int = EVIDENCE_ROWS) -> RowDifference:
    """The rows of snapshot `after_id` against `before_id` of the same table (None: the current snapshot)."""
    before, after = _rows(tbl, before_id), _rows(tbl, after_id)
    con = duckdb.connect()
    try:
        for name, rows in (("before_", before), ("after_", after)):
            if rows is None:
                con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM (SELECT 1) WHERE false")
            else:
                con.register(f"{name}_arrow", rows)
                con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM {name}_arrow")
        if before is None or after is None:
            return RowDifference(came_back=int(after.num_rows if after is not None else 0),
                                 lost=int(before.num_rows if before is not None else 0))
        back = "SELECT * FROM after_ EXCEPT ALL SELECT * FROM before_"
        lost = "SELECT * FROM before_ EXCEPT ALL SELECT * FROM after_"
        out = RowDifference(came_back=con.execute(f"SELECT count(*) FROM ({back})").fetchone()[0],  # type: ignore[index]
                            lost=con.execute(f"SELECT count(*) FROM ({lost})").fetchone()[0])  # type: ignore[index]
        for field, sql in (("came_back_rows", back), ("lost_rows", lost)):
            got = con.execute(f"{sql} ORDER BY ALL LIMIT {limit}").to_arrow_table().to_pylist()
            setattr(out, field, [_plain(r) for r in got])
        return out
    finally:
        con.close()


def _plain(row: dict) -> dict[str, Any]:
    """A row as JSON can hold it (bytes as hex, other values as their text where JSON has no type)."""
    return {k: v.hex() if isinstance(v, bytes) else v if isinstance(v, (int, float, str, bool, type(None)))
            else str(v) for k, v in row.items()}
