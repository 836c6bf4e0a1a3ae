"""The conformance suite's tables: small edge-case tables (every partition transform, every type, NaN and
nulls, equality deletes with NULL keys, across sequence numbers, scoped to a partition, on a renamed key or an older
spec, position deletes with a branch and a tag, schema, struct and partition evolution, formats v1 to v3 and an
in-place upgrade, row lineage, a sort order, ORC and Avro data files, a table migrated with add_files, a wide table,
write properties, an empty and a single-file table, names that need quoting), each written by a writer on record:

    spark      Spark SQL with Iceberg's Java writer, and Iceberg's Java API for what SQL cannot write (equality
               deletes: pyarrow files committed as a RowDelta): the library of the Spark engine being measured, so
               its cells on such a table are marked self-written (`Written.packages`)
    pyiceberg  pyiceberg's own writer (datagen.conformance_pyiceberg): creates, appends, schema, spec and property
               changes, add_files of plain Parquet; no JVM, no library of either engine
    java-api   Iceberg's Java API without Spark SQL (datagen.conformance_java, in the Spark writer's JVM:
               datagen.conformance_spark): what Spark SQL cannot declare (nanosecond timestamps)

The cases are declarative (`scenarios/conformance/cases.yaml`, validated by `Case`): a table's columns,
partitioning and properties, then its steps, each a Spark SQL statement (`{t}` the table, `{n}` the step's
repetition), an equality delete (key columns and rows, optionally scoped to one partition) or rows added with
add_files; and what the steps leave by the Iceberg spec (`expected`, bench.core.expected.Expected), which, not any
library, decides a cell.  Each writer runs in a process of its own
(`python -m datagen.conformance_spark CASES ROOT` for Spark and the Java API, whose JVM never lives in the harness;
`python -m datagen.conformance_pyiceberg CASES ROOT`), writing its cases into one SQLite catalog under ROOT,
deterministically; `written.json` records, per case, the table and who wrote it (`written_by`, with versions) or
why it could not be written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bench.core.catalog import CatalogSettings
from bench.core.errors import UserError
from bench.core.expected import TABLE_FILES, Expected, MaintenanceExpected
from bench.core.fileio import write_atomic
from bench.core.records.scenario import TouchedCase
from bench.core.table.shape import FACTS

CASES_FILE = Path(__file__).resolve().parent.parent / "scenarios" / "conformance" / "cases.yaml"
NAMESPACE = "conformance"
WRITE_TIMEOUT_S = 1800
# an expiry case's commits are this far apart: its cutoff is a snapshot's own timestamp, and an engine that takes a
# cutoff as an age in whole seconds (RisingWave's binding: max_snapshot_age_secs) is asked it fairly only when no
# snapshot on either side lies within a second of it
EXPIRY_STEP_GAP_S = 1.1


class EqualityDelete(BaseModel):
    """Rows of an equality-delete file on `columns` (None is SQL NULL: it deletes rows whose value is null),
    committed as one RowDelta; `partition`: the file's partition tuple (Iceberg's internal values, e.g. an
    identity int), scoping it to that partition; None on an unpartitioned table (a global delete)."""

    model_config = ConfigDict(extra="forbid")

    columns: list[str]
    rows: list[list[Any]]
    partition: list[Any] | None = None


def equality_rows(schema: Any, d: EqualityDelete) -> tuple[Any, Any]:
    """An equality delete's rows as Arrow (the key columns with their field ids) and its Iceberg schema (those
    columns of the table's `schema`, a pyiceberg Schema)."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.schema import Schema

    keys = Schema(*[schema.find_field(c) for c in d.columns])
    return keys, pa.Table.from_pylist([dict(zip(d.columns, r)) for r in d.rows], schema=schema_to_pyarrow(keys))


class DeclaredRows(BaseModel):
    """Rows of `columns` (the table's, by their current names; a column not named is null), appended as one data file
    by a concurrent commit (`During.append`)."""

    model_config = ConfigDict(extra="forbid")

    columns: list[str]
    rows: list[list[Any]] = Field(min_length=1)


class PositionDelete(BaseModel):
    """A position-delete file deleting every row of the table's live data files whose `column` is one of `values`
    (their file and position located in the files as written, when the commit is prepared)."""

    model_config = ConfigDict(extra="forbid")

    column: str
    values: list[Any] = Field(min_length=1)


class During(BaseModel):
    """One part of the commit another writer makes while the engine rewrites (`Case.during`): exactly one of an
    append, a position delete, an equality delete (the live writer's commit kinds, datagen.live)."""

    model_config = ConfigDict(extra="forbid")

    append: DeclaredRows | None = None
    position_delete: PositionDelete | None = None
    equality_delete: EqualityDelete | None = None

    @model_validator(mode="after")
    def _one(self) -> During:
        if sum(x is not None for x in (self.append, self.position_delete, self.equality_delete)) != 1:
            raise ValueError("a during step is one of append, position_delete, equality_delete")
        return self


class OrphanFile(BaseModel):
    """A file under the table's data directory that no commit references (an orphan: e.g. a writer's file whose
    commit never landed): `name` names it for the case's expectations (its path: orphan_path), `age_s` how old it
    is when the operation runs (its mtime, set again before each case: age_orphans)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    age_s: float = Field(0.0, ge=0.0)


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # a Spark SQL statement: {t} the table, {n} the repetition (0, 1, ...), {fill} the filler columns' values
    sql: str | None = None
    repeat: int = Field(1, ge=1)
    equality_delete: EqualityDelete | None = None
    # rows as a SQL VALUES list, written by pyarrow as a plain Parquet file (no field ids, columns by their current
    # names) and added to the table with add_files (writer pyiceberg): a table migrated from plain Parquet
    add_files: str | None = None
    orphan: OrphanFile | None = None  # a file written under the table's data directory and never committed


# a case's operation (Case.operation): what every engine is asked to do to the case's table
OperationName = Literal["rewrite-data-files", "expire-snapshots", "remove-orphan-files", "rewrite-manifests",
                        "rewrite-position-deletes"]
OPERATIONS: tuple[OperationName, ...] = get_args(OperationName)
# the maintenance operations that commit to main (a rewrite): their cases name main in `maintenance.advances`
COMMITS_TO_MAIN: frozenset[OperationName] = frozenset({"rewrite-manifests", "rewrite-position-deletes"})
# a step's statement that sets or resets a Spark session setting (e.g. spark.wap.id: a staged write-audit-publish
# write), and the setting it names
SESSION_SETTING = re.compile(r"^\s*(?:SET|RESET)\s+([A-Za-z0-9_.]+)", re.IGNORECASE)


class Operation(BaseModel):
    """What every engine does to the case's table: rewrite-data-files (the scenario's compaction, as every case
    before maintenance cases); expire-snapshots (keep main's newest `retain_last`; expire those older than the
    snapshot `older_than_snapshot` of the table as written, e.g. main~0: its head's own timestamp); or
    remove-orphan-files (delete the files no metadata reaches older than `older_than_s` seconds before it runs); or
    rewrite-manifests (main's manifests rewritten: one commit, no data or delete file changed); or
    rewrite-position-deletes (every position-delete file of main rewritten, Iceberg's rewrite_position_delete_files
    with rewrite-all: small ones compacted, those whose data file is gone dropped, no row changed; one commit)."""

    model_config = ConfigDict(extra="forbid")

    op: OperationName = "rewrite-data-files"
    retain_last: int | None = Field(default=None, ge=1)
    older_than_snapshot: str | None = None
    older_than_s: float | None = Field(default=None, ge=0.0)

    @model_validator(mode="after")
    def _arguments(self) -> Operation:
        given = {k for k in ("retain_last", "older_than_snapshot", "older_than_s") if getattr(self, k) is not None}
        takes = {"rewrite-data-files": set(), "expire-snapshots": {"retain_last", "older_than_snapshot"},
                 "remove-orphan-files": {"older_than_s"}, "rewrite-manifests": set(),
                 "rewrite-position-deletes": set()}[self.op]
        # the cutoff is always stated: Iceberg's defaults (5 days for expiry, 3 for orphans) would make a fresh
        # table's case a no-op
        needs = {"expire-snapshots": {"older_than_snapshot"},
                 "remove-orphan-files": {"older_than_s"}}.get(self.op, set())
        if given - takes:
            raise ValueError(f"operation {self.op} takes no {', '.join(sorted(given - takes))}")
        if needs - given:
            raise ValueError(f"operation {self.op}: give {', '.join(sorted(needs - given))}")
        return self

    @property
    def maintains(self) -> bool:
        """A maintenance operation (anything but the compaction every engine is otherwise asked for)."""
        return self.op != "rewrite-data-files"


# who writes a case's table, and the module whose process does (each its own process, never the harness's): Spark SQL
# with Iceberg's Java writer (and Iceberg's Java API for equality deletes); pyiceberg (its own Python writer, pyarrow's
# Parquet); Iceberg's Java API without Spark SQL (create and RowDelta commits of pyarrow files with field ids: types
# Spark SQL has not, e.g. nanosecond timestamps), in the Spark writer's JVM
WRITERS = {"spark": "datagen.conformance_spark", "pyiceberg": "datagen.conformance_pyiceberg",
           "java-api": "datagen.conformance_spark"}


class Case(BaseModel):
    """One edge-case table and the scenario that fits it.

    A compaction case may state `during`: the commit another writer makes after the engine planned its rewrite and
    before the engine commits (one RowDelta of the live writer, datagen.live: an append, a position delete, an
    equality delete; the engine held as a live-writer run holds it, bench.runner.live).  Such a case states two
    expectations, each by the spec: `written`, the rows of the table as written (before the concurrent commit: it is
    held to them before any engine runs), and `expected`, the rows after both the engine's rewrite and the concurrent
    commit (whichever the engine's commit was rebased on or rejected by), which every engine's end state is held to.
    Stated, not derived: which rows an equality delete removes is the spec's reasoning, written down like any case's.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    covers: list[str]  # the shapes it stands for, in words
    # the table shape facts it stands for (bench.core.table.shape.FACTS): a run on a user's table whose shape
    # has any of them lists this case, with each engine's verdict on it, beside its results
    touches: list[str] = Field(min_length=1)
    scenario: str = "bin-packing"
    format_version: int = Field(2, ge=1, le=3)
    columns: str  # Spark SQL column definitions
    partitioned_by: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)
    filler_columns: int = Field(0, ge=0)  # INT columns c1..cN after `columns` (a wide table); {fill}: 1, ..., N
    steps: list[Step] = Field(default_factory=list)
    # what its steps leave by the Iceberg spec's rules (rows, and the key column's values): the table as written is
    # held to it before any engine runs, then every engine's output
    expected: Expected
    writer: Literal["spark", "pyiceberg", "java-api"] = "spark"
    # the branch every engine compacts (its steps create it), or None for main: the engines run on the table pinned
    # at the branch's head, `expected` states the branch's rows, and an engine must commit to the branch alone
    branch: str | None = None
    operation: Operation = Field(default_factory=Operation)
    # a maintenance operation's expected outcome by the spec (required with one, refused without)
    maintenance: MaintenanceExpected | None = None
    # every file of the table as written is this old when the operation runs (its mtime; orphans have their own
    # age): a real table's files are older than an orphan removal's cutoff, so reachability alone must keep them
    files_age_s: float | None = Field(None, ge=0.0)
    # the concurrent writer's commit, landing between the engine's planning and its commit (see the docstring), and
    # the rows of the table as written before it (required with `during`, refused without)
    during: list[During] = Field(default_factory=list)
    written: Expected | None = None

    @property
    def as_written(self) -> Expected:
        """What the table as written holds: `written` for a case with a concurrent commit, else `expected`."""
        return self.written if self.written is not None else self.expected

    @model_validator(mode="after")
    def _concurrent(self) -> Case:
        if bool(self.during) != (self.written is not None):
            raise ValueError(f"{self.name}: a case with a concurrent commit (`during`) states the rows of the table as "
                             "written (`written`), and only one does")
        if not self.during:
            return self
        if self.operation.maintains or self.branch is not None:
            raise ValueError(f"{self.name}: a concurrent commit (`during`) lands during a rewrite-data-files of main")
        # the engine is held at its first output file in the table's data directory (bench.runner.live), whose
        # partition subdirectories an earlier engine's run may have left: a partitioned table's would not show it
        if self.partitioned_by:
            raise ValueError(f"{self.name}: a concurrent commit (`during`) is held for on an unpartitioned table")
        return self

    @model_validator(mode="after")
    def _maintained(self) -> Case:
        if self.operation.maintains != (self.maintenance is not None):
            raise ValueError(f"{self.name}: a maintenance operation states `maintenance` (what it must leave), and "
                             "only one does")
        if self.operation.maintains and self.branch is not None:
            raise ValueError(f"{self.name}: a maintenance case acts on the whole table: its refs are in "
                             "`maintenance.refs`, not `branch`")
        if any(s.orphan for s in self.steps) and self.writer == "java-api":
            raise ValueError(f"{self.name}: orphan steps are written by writers spark and pyiceberg")
        if self.maintenance is not None and self.operation.op in COMMITS_TO_MAIN and "main" not in \
                self.maintenance.advances:
            raise ValueError(f"{self.name}: {self.operation.op} commits to main: name it in `maintenance.advances`")
        taken = sorted({s.orphan.name for s in self.steps if s.orphan} & set(TABLE_FILES))
        if taken:
            raise ValueError(f"{self.name}: orphan name(s) {', '.join(taken)} name the table's own files")
        return self

    @model_validator(mode="after")
    def _writable(self) -> Case:
        if self.writer == "pyiceberg" and any(s.equality_delete for s in self.steps):
            raise ValueError(f"{self.name}: pyiceberg writes no equality delete: use writer spark")
        if self.writer != "pyiceberg" and any(s.add_files for s in self.steps):
            raise ValueError(f"{self.name}: add_files steps are written by writer pyiceberg")
        return self

    @property
    def all_columns(self) -> str:
        """The column definitions, the filler columns included."""
        return ", ".join([self.columns, *(f"c{i} INT" for i in range(1, self.filler_columns + 1))])

    def statement(self, sql: str, table: str, n: int) -> str:
        """A step's statement for repetition `n` on `table` ("catalog.namespace.table"; {cat} its catalog and {ident}
        the rest, for procedures: CALL {cat}.system.compute_table_stats(table => '{ident}'))."""
        fill = ", ".join(str(i) for i in range(1, self.filler_columns + 1))
        cat, _, ident_ = table.partition(".")
        return (sql.replace("{t}", table).replace("{n}", str(n)).replace("{fill}", fill).replace("{cat}", cat)
                .replace("{ident}", ident_))

    @field_validator("touches")
    @classmethod
    def _known_facts(cls, v: list[str]) -> list[str]:
        unknown = [f for f in v if f not in FACTS]
        if unknown:
            raise ValueError(f"touches: unknown shape fact(s) {', '.join(unknown)} (bench.core.table.shape.FACTS)")
        return v

    @property
    def table(self) -> str:
        return f"{NAMESPACE}.{self.name.replace('-', '_')}"

    @property
    def session_keys(self) -> list[str]:
        """The Spark session settings its steps SET or RESET, each once: its writer puts them back as they were after
        the case (its writer's session writes every case), so none reaches the next case, not even from a case whose
        steps stopped between a SET and its RESET."""
        found = (SESSION_SETTING.match(s.sql) for s in self.steps if s.sql)
        return list(dict.fromkeys(m.group(1) for m in found if m))

    def pace(self) -> None:
        """Before each of its steps' commits: an expiry case's EXPIRY_STEP_GAP_S apart."""
        if self.operation.op == "expire-snapshots":
            time.sleep(EXPIRY_STEP_GAP_S)


class Written(BaseModel):
    case: str
    digest: str = ""  # of the case's definition: a changed case is written again
    table: str | None = None
    error: str | None = None
    written_by: str = ""  # the libraries and versions that wrote it, e.g. "Spark 3.5.9 + Iceberg 1.10.2 (Java)"
    # the distributions that wrote it: an engine that ships one of them (Engine.packages) judged on the table is
    # judged on a table its own library wrote (its conformance cell is marked self-written)
    packages: list[str] = Field(default_factory=list)


def load_cases(path: Path = CASES_FILE, names: list[str] | None = None) -> list[Case]:
    try:
        # libyaml's loader where PyYAML has it: the same documents, a tenth of the pure-Python loader's 0.1 s per read
        raw = yaml.load(Path(path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        cases = [Case.model_validate(c) for c in raw["cases"]]
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValidationError) as e:
        raise UserError(f"invalid conformance cases file {path}: {' '.join(str(e).splitlines()[:2])}") from None
    if names:
        unknown = sorted(set(names) - {c.name for c in cases})
        if unknown:
            raise UserError(f"--cases: unknown case(s) {', '.join(unknown)}; known: {', '.join(c.name for c in cases)}")
        cases = [c for c in cases if c.name in names]
    return cases


def case_digest(case: Case) -> str:
    """Of what writes the table (not of which shapes it stands for, what it should hold, which branch is compacted,
    nor what is done to it after or beside the engine)."""
    d = case.model_dump(mode="json", exclude={"touches", "expected", "branch", "operation", "maintenance",
                                              "files_age_s", "during", "written"})
    for step in d["steps"]:  # a step kind a case does not use is not in its digest (older cases' digests stand)
        if step["orphan"] is None:
            del step["orphan"]
    return hashlib.sha256(json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()[:12]


def orphan_path(location: str, name: str) -> str:
    """Where the orphan step `name` writes its file under a table's location (a plain local path)."""
    return f"{location.removeprefix('file://').removeprefix('file:')}/data/orphan-{name}.parquet"


def write_orphan(case: Case, location: str, o: OrphanFile) -> None:
    """A Parquet file under the table's data directory that no commit references (as a writer leaves one whose
    commit never landed), as old as the step states."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = orphan_path(location, o.name)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"orphan": [o.name]}), path)
    age_orphans(case, location)


def age_orphans(case: Case, location: str) -> None:
    """Every file of the table as old as the case states (`files_age_s`), then each orphan as old as it states, from
    now (their mtimes): the table is written once and reused, so an orphan meant to be younger than a cutoff is made
    so again before every run of the case."""
    now = time.time()
    if case.files_age_s is not None:
        root = Path(location.removeprefix("file://").removeprefix("file:"))
        for f in (p for p in root.rglob("*") if p.is_file()):
            os.utime(f, (now - case.files_age_s, now - case.files_age_s))
    for step in case.steps:
        if step.orphan is not None:
            path = orphan_path(location, step.orphan.name)
            if os.path.exists(path):
                os.utime(path, (now - step.orphan.age_s, now - step.orphan.age_s))


def touched(shape: dict[str, str], cases: list[Case]) -> tuple[list[TouchedCase], list[str]]:
    """The cases a table of this shape (bench.core.table.shape.shape) touches: those standing for any of its
    facts, in the cases' order; and its facts no case stands for."""
    out = []
    for c in cases:
        because = [f"{f}: {shape[f]}" if shape[f] else f for f in c.touches if f in shape]
        if because:
            out.append(TouchedCase(case=c.name, covers=c.covers, because=because))
    covered = {f for c in cases for f in c.touches}
    return out, [f for f in shape if f not in covered]


def case_warehouse(root: Path) -> Path:
    """The warehouse directory (holding catalog.db) of the tables under `root`."""
    return Path(root) / "lake"


def catalog_file(root: Path) -> Path:
    """The --source-catalog file of the tables under `root`."""
    settings = CatalogSettings.for_warehouse(case_warehouse(root))
    path = Path(root) / "source.yaml"
    if not path.exists():
        write_atomic(path, f"catalog:\n  {settings.name}:\n    type: sql\n    uri: {settings.sqlalchemy_uri}\n"
                           f"    warehouse: file://{settings.warehouse}\n")
    return path


def write_cases(cases: list[Case], root: Path) -> dict[str, Written]:
    """Each case's table under `root`, written by its writer (`Case.writer`) in a process of its own unless `root`
    already holds it as the case defines it (a changed case is dropped and written again); returns what was
    written per case."""
    root = Path(root)
    done = root / "written.json"
    try:
        have = {w["case"]: Written.model_validate(w) for w in json.loads(done.read_text())}
    except (OSError, ValueError, KeyError, TypeError):
        have = {}
    # written again: a changed case, one written before writers were recorded, and one its writer failed on (the
    # failure may have been the harness's, fixed since: an error is no table to reuse)
    todo = [c for c in cases if have.get(c.name) is None or have[c.name].digest != case_digest(c)
            or not have[c.name].written_by or have[c.name].error]
    if todo:
        root.mkdir(parents=True, exist_ok=True)
        for module in dict.fromkeys(WRITERS.values()):
            mine = [c for c in todo if WRITERS[c.writer] == module]
            if mine:
                have.update({w.case: w for w in _run_writer(module, mine, root)})
        write_atomic(done, json.dumps([w.model_dump() for w in have.values()], indent=1))
    catalog_file(root)
    return {c.name: have[c.name] for c in cases}


def _run_writer(module: str, cases: list[Case], root: Path) -> list[Written]:
    """`python -m <the writers' module> TODO ROOT`: it writes `written.<module>.part.json` last."""
    spec, log, part = root / f"todo.{module}.json", root / f"writer-{module}.log", root / f"written.{module}.part.json"
    write_atomic(spec, json.dumps([c.model_dump() for c in cases]))
    part.unlink(missing_ok=True)
    with open(log, "w") as out:
        p = subprocess.run([sys.executable, "-m", module, str(spec), str(root)], stdout=out,
                           stderr=subprocess.STDOUT, timeout=WRITE_TIMEOUT_S,
                           env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    if p.returncode != 0 or not part.exists():
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"the conformance tables could not be written by {module} (exit {p.returncode}): "
                           f"{' | '.join(tail)}")
    return [Written.model_validate(w) for w in json.loads(part.read_text())]


def write_all(cases: list[Case], write_one: Any, writers: Any, root: str, module: str) -> int:
    """A writer process's loop: each case written by `write_one(case)` (an exception is the case's error, the
    others go on), `writers(case)` who wrote it (Written.written_by and .packages); `written.<module>.part.json`
    last."""
    written = []
    for case in cases:
        try:
            write_one(case)
            written.append(Written(case=case.name, digest=case_digest(case), table=case.table, **writers(case)))
        except Exception as e:  # noqa: BLE001 - a case the writer cannot write is recorded, the others go on
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            written.append(Written(case=case.name, digest=case_digest(case), error=f"{type(e).__name__}: {msg}"[:500]))
        print(f"{case.name}: {written[-1].error or 'written'}", flush=True)
    write_atomic(Path(root) / f"written.{module}.part.json", json.dumps([w.model_dump() for w in written], indent=1))
    return 0
