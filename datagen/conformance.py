"""The conformance suite's tables: small edge-case tables (every partition transform, every type, NaN and
nulls, equality deletes with NULL keys, across sequence numbers and scoped to a partition, position deletes
with a branch and a tag, schema and partition evolution, formats v1 to v3, a sort order, an empty and a
single-file table, names that need quoting), each written by Spark SQL with Iceberg's Java writer, and by
pyarrow and Iceberg's Java API for what SQL cannot write (equality deletes).  For RisingWave's engine that is
another writer; for the Spark engine it is its own library (its cells are marked self-written, `Written.packages`):
each case states the rows its operations leave by the Iceberg spec (`expected`, bench.core.expected.Expected), and
those, not any library, decide a cell.

The cases are declarative (`scenarios/conformance/cases.yaml`, validated by `Case`): a table's columns,
partitioning and properties, then its steps, each a Spark SQL statement (`{t}` the table, `{n}` the step's
repetition) or an equality delete (key columns and rows, optionally scoped to one partition).  One Spark
session in its own process (`python -m datagen.conformance CASES ROOT`: its JVM never lives in the harness)
writes every case into one SQLite catalog under ROOT, deterministically; `written.json` records, per case,
the table and who wrote it (library and version), or why it could not be written.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bench.core.catalog import CatalogSettings, load_catalog
from bench.core.errors import UserError
from bench.core.expected import Expected
from bench.core.fileio import write_atomic
from bench.core.results import TouchedCase
from bench.core.table.shape import FACTS

CASES_FILE = Path(__file__).resolve().parent.parent / "scenarios" / "conformance" / "cases.yaml"
NAMESPACE = "conformance"
WRITE_TIMEOUT_S = 1800


class EqualityDelete(BaseModel):
    """Rows of an equality-delete file on `columns` (None is SQL NULL: it deletes rows whose value is null),
    committed as one RowDelta; `partition`: the file's partition tuple (Iceberg's internal values, e.g. an
    identity int), scoping it to that partition; None on an unpartitioned table (a global delete)."""

    model_config = ConfigDict(extra="forbid")

    columns: list[str]
    rows: list[list[Any]]
    partition: list[Any] | None = None


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sql: str | None = None  # a Spark SQL statement: {t} the table, {n} the repetition (0, 1, ...)
    repeat: int = Field(1, ge=1)
    equality_delete: EqualityDelete | None = None


class Case(BaseModel):
    """One edge-case table and the scenario that fits it."""

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
    steps: list[Step] = Field(default_factory=list)
    # what its steps leave by the Iceberg spec's rules (rows, and the key column's values): the table as written is
    # held to it before any engine runs, then every engine's output
    expected: Expected

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
        raw = yaml.safe_load(Path(path).read_text())
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
    """Of what writes the table (not of which shapes it stands for)."""
    return hashlib.sha256(case.model_dump_json(exclude={"touches", "expected"}).encode()).hexdigest()[:12]


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


def catalog_file(root: Path) -> Path:
    """The --source-catalog file of the tables under `root`."""
    settings = CatalogSettings.for_warehouse(Path(root) / "lake")
    path = Path(root) / "source.yaml"
    if not path.exists():
        write_atomic(path, f"catalog:\n  {settings.name}:\n    type: sql\n    uri: {settings.sqlalchemy_uri}\n"
                           f"    warehouse: file://{settings.warehouse}\n")
    return path


def write_cases(cases: list[Case], root: Path) -> dict[str, Written]:
    """Each case's table under `root`, written by Spark in its own process unless `root` already holds it as
    the case defines it (a changed case is dropped and written again); returns what was written per case."""
    root = Path(root)
    done = root / "written.json"
    try:
        have = {w["case"]: Written.model_validate(w) for w in json.loads(done.read_text())}
    except (OSError, ValueError, KeyError, TypeError):
        have = {}
    todo = [c for c in cases if have.get(c.name) is None or have[c.name].digest != case_digest(c)
            or not (have[c.name].written_by or have[c.name].error)]  # one written before writers were recorded
    if todo:
        root.mkdir(parents=True, exist_ok=True)
        spec, log = root / "todo.json", root / "writer.log"
        write_atomic(spec, json.dumps([c.model_dump() for c in todo]))
        (root / "written.part.json").unlink(missing_ok=True)
        with open(log, "w") as out:
            p = subprocess.run([sys.executable, "-m", "datagen.conformance", str(spec), str(root)], stdout=out,
                               stderr=subprocess.STDOUT, timeout=WRITE_TIMEOUT_S,
                               env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
        if p.returncode != 0 or not (root / "written.part.json").exists():
            tail = log.read_text(errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(f"the conformance tables could not be written (exit {p.returncode}): {' | '.join(tail)}")
        for w in json.loads((root / "written.part.json").read_text()):
            have[w["case"]] = Written.model_validate(w)
        write_atomic(done, json.dumps([w.model_dump() for w in have.values()], indent=1))
    catalog_file(root)
    return {c.name: have[c.name] for c in cases}


# ---- the writer's process ----------------------------------------------------------------------------------


def _equality_delete(spark: Any, settings: CatalogSettings, case: Case, d: EqualityDelete) -> None:
    """One equality-delete file (pyarrow, the key columns with their field ids) committed by Iceberg's Java
    API (RowDelta) on the table Spark wrote."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench.core.iceberg_java.commit import RowDeltaCommitter

    jvm = spark.sparkContext._jvm
    table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession,
                                                                      f"{settings.name}.{case.table}")
    schema = load_catalog(settings).load_table(case.table).schema()
    fields = [schema.find_field(c) for c in d.columns]
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    from pyiceberg.schema import Schema

    arrow_schema = schema_to_pyarrow(Schema(*fields))
    data = pa.Table.from_pylist([dict(zip(d.columns, r)) for r in d.rows], schema=arrow_schema)
    location = table.location().removeprefix("file:")
    path = f"{location}/data/eq-delete-{uuid.uuid4().hex[:12]}.parquet"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, path)
    arr = spark.sparkContext._gateway.new_array(jvm.int, len(fields))
    for i, f in enumerate(fields):
        arr[i] = f.field_id
    c = RowDeltaCommitter(jvm, table, arr)
    f = c.equality_file(f"file:{path}", os.path.getsize(path), tuple(d.partition) if d.partition else None)
    c.row_delta([], [f], {"conformance-case": case.name})


def _write_case(spark: Any, settings: CatalogSettings, case: Case) -> None:
    t = f"{settings.name}.{case.table}"
    spark.sql(f"DROP TABLE IF EXISTS {t} PURGE")  # a case defined anew
    props = {"format-version": str(case.format_version), "write.delete.mode": "merge-on-read",
             "write.update.mode": "merge-on-read", **case.properties}
    spark.sql(f"CREATE TABLE {t} ({case.columns}) USING iceberg"
              + (f" PARTITIONED BY ({case.partitioned_by})" if case.partitioned_by else "")
              + " TBLPROPERTIES (" + ", ".join(f"'{k}'='{v}'" for k, v in props.items()) + ")")
    for step in case.steps:
        for n in range(step.repeat):
            if step.sql is not None:
                spark.sql(step.sql.replace("{t}", t).replace("{n}", str(n)))
            if step.equality_delete is not None:
                _equality_delete(spark, settings, case, step.equality_delete)


def _writers(spark: Any, case: Case) -> dict[str, Any]:
    """Written.written_by and .packages of a case this process wrote: Spark SQL with Iceberg's Java library, and
    for an equality delete pyarrow's file committed through Iceberg's Java API."""
    import pyarrow as pa

    iceberg = str(spark.sparkContext._jvm.org.apache.iceberg.IcebergBuild.version())
    by = f"Spark {spark.version} + Iceberg {iceberg} (Java)"
    packages = ["pyspark", "snowpark-connect-deps-iceberg"]  # Spark and the Iceberg runtime jar it loads
    if any(step.equality_delete is not None for step in case.steps):
        by += f"; equality-delete files: pyarrow {pa.__version__}, committed by Iceberg {iceberg}'s Java API"
        packages.append("pyarrow")
    return {"written_by": by, "packages": packages}


def main(spec: str, root: str) -> int:
    from pyspark.sql import SparkSession

    from bench.core.iceberg_java.spark_conf import base_conf, log4j_option

    cases = [Case.model_validate(c) for c in json.loads(Path(spec).read_text())]
    settings = CatalogSettings.for_warehouse(Path(root) / "lake")
    load_catalog(settings).create_namespace_if_not_exists(NAMESPACE)
    conf = base_conf(settings, "local[2]", app_name="bench-conformance-writer")
    conf.update({"spark.driver.memory": "1g", "spark.driver.extraJavaOptions": log4j_option(),
                 "spark.sql.session.timeZone": "UTC"})
    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    written = []
    try:
        for case in cases:
            try:
                _write_case(spark, settings, case)
                written.append(Written(case=case.name, digest=case_digest(case), table=case.table,
                                       **_writers(spark, case)))
            except Exception as e:  # noqa: BLE001 - a case Spark cannot write is recorded, the others go on
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                written.append(Written(case=case.name, digest=case_digest(case),
                                       error=f"{type(e).__name__}: {msg}"[:500]))
            print(f"{case.name}: {written[-1].error or 'written'}", flush=True)
    finally:
        spark.stop()
    write_atomic(Path(root) / "written.part.json", json.dumps([w.model_dump() for w in written], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
