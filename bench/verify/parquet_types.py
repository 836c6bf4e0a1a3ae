"""The Parquet types of the data files a run wrote against the table schema, by the Iceberg spec's Parquet type
mapping (spec, "Parquet": physical type and logical type annotation per Iceberg type), column by field id:

    boolean -> BOOLEAN                      int -> INT32              long -> INT64
    float -> FLOAT                          double -> DOUBLE          date -> INT32 DATE
    decimal(P,S) -> INT32 (P <= 9), INT64 (P <= 18), else FIXED_LEN_BYTE_ARRAY of the fewest bytes that hold P;
                    DECIMAL(P,S)
    time -> INT64 TIME(MICROS, not adjusted to UTC)
    timestamp / timestamptz -> INT64 TIMESTAMP(MICROS, adjusted to UTC: false / true); the _ns types NANOS
    string -> BYTE_ARRAY STRING             binary -> BYTE_ARRAY      fixed(L) -> FIXED_LEN_BYTE_ARRAY(L)
    uuid -> FIXED_LEN_BYTE_ARRAY(16) UUID

e.g. a UUID written as a bare FIXED_LEN_BYTE_ARRAY(16) (no UUID annotation), a timestamp in milliseconds, a
timestamptz not adjusted to UTC.  A file without field ids is not checked here (its columns cannot be matched
by id; the readers' checks speak for it).  One `parquet_types` check, about the output's metadata."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.types import DecimalType, FixedType, IcebergType

from bench.core.records.verification import Check
from bench.core.table.files import open_uri

SIMPLE = {  # Iceberg type (its str) -> (physical type, logical type, adjusted to UTC, time unit)
    "boolean": ("BOOLEAN", "None"), "int": ("INT32", "None"), "long": ("INT64", "None"),
    "float": ("FLOAT", "None"), "double": ("DOUBLE", "None"), "date": ("INT32", "Date"),
    "string": ("BYTE_ARRAY", "String"), "binary": ("BYTE_ARRAY", "None"), "uuid": ("FIXED_LEN_BYTE_ARRAY", "UUID"),
    "time": ("INT64", "Time", False, "microseconds"),
    "timestamp": ("INT64", "Timestamp", False, "microseconds"), "timestamptz": ("INT64", "Timestamp", True,
                                                                                 "microseconds"),
    "timestamp_ns": ("INT64", "Timestamp", False, "nanoseconds"), "timestamptz_ns": ("INT64", "Timestamp", True,
                                                                                      "nanoseconds"),
}
SHOWN = 5
RULE = ("Parquet types: every column of every data file the run wrote has the physical type and logical type "
        "annotation the spec's Parquet type mapping asks for its Iceberg type (columns by field id)")


def _decimal_bytes(precision: int) -> int:
    """The fewest bytes of a two's-complement integer that hold `precision` decimal digits."""
    return math.ceil((math.log2(10 ** precision) + 1) / 8)


def _wanted(t: IcebergType) -> dict | None:
    """What the spec's mapping asks of a column of Iceberg type `t` (None: not a primitive this checks)."""
    if isinstance(t, DecimalType):
        physical = ("INT32" if t.precision <= 9 else "INT64" if t.precision <= 18 else "FIXED_LEN_BYTE_ARRAY")
        return {"physical": physical, "logical": "Decimal", "precision": t.precision, "scale": t.scale,
                **({"length": _decimal_bytes(t.precision)} if physical == "FIXED_LEN_BYTE_ARRAY" else {})}
    if isinstance(t, FixedType):
        return {"physical": "FIXED_LEN_BYTE_ARRAY", "logical": "None", "length": len(t)}
    m = SIMPLE.get(str(t))
    if m is None:
        return None
    out = {"physical": m[0], "logical": m[1]}
    if len(m) > 2:
        out |= {"isAdjustedToUTC": m[2], "timeUnit": m[3]}
    return out | ({"length": 16} if m[1] == "UUID" else {})


def _found(col: pq.ColumnSchema) -> dict:
    logical = json.loads(col.logical_type.to_json())
    out = {"physical": col.physical_type, "logical": logical.get("Type", "None")}
    if out["logical"] == "Int":  # an INT(32|64, signed) annotation on INT32/INT64 says what the physical type says
        out["logical"] = "None" if logical.get("isSigned", True) else "Int(unsigned)"
    for k in ("isAdjustedToUTC", "timeUnit", "precision", "scale"):
        if k in logical:
            out[k] = logical[k]
    if col.physical_type == "FIXED_LEN_BYTE_ARRAY":
        out["length"] = col.length
    return out


def _leaf_ids(schema: pa.Schema) -> list[int | None]:
    """The field id of each Parquet leaf column, in the file's column order (a depth-first walk of the schema)."""
    out: list[int | None] = []

    def walk(f: pa.Field) -> None:
        t = f.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            walk(t.value_field)
        elif pa.types.is_map(t):
            walk(t.key_field)
            walk(t.item_field)
        else:
            meta = f.metadata or {}
            out.append(int(meta[b"PARQUET:field_id"]) if b"PARQUET:field_id" in meta else None)

    for f in schema:
        walk(f)
    return out


def file_type_problems(uri: str, schema: Schema) -> list[str]:
    """Each column of one Parquet file whose types differ from the spec's mapping of its Iceberg type."""
    fs, path = open_uri(uri)
    with fs.open_input_file(path) as fh:
        ps = pq.ParquetFile(fh).schema
    ids = _leaf_ids(ps.to_arrow_schema())
    if len(ids) != len(ps) or None in ids:
        return []  # no field ids to match by
    out = []
    for i, fid in enumerate(ids):
        try:
            field = schema.find_field(fid)  # type: ignore[arg-type]
        except ValueError:
            continue  # a column the current schema dropped
        want = _wanted(field.field_type)
        if want is None:
            continue
        got = _found(ps.column(i))
        if any(got.get(k) != v for k, v in want.items()):
            out.append(f"{uri.rsplit('/', 1)[-1]}: field {fid} {ps.column(i).path!r} ({field.field_type}) is "
                       f"{_text(got)}; the spec's Parquet mapping: {_text(want)}")
    return out


def _text(d: dict) -> str:
    extra = ", ".join(f"{k}={v}" for k, v in d.items() if k not in ("physical", "logical"))
    return f"{d['physical']}" + (f" {d['logical']}" if d["logical"] != "None" else " without a logical type") + (
        f" ({extra})" if extra else "")


def parquet_types_check(paths: list[str], schema: Schema) -> Check:
    """The `parquet_types` check over the data files a run wrote."""
    problems: list[str] = []
    for p in paths:
        problems += file_type_problems(p, schema)
    return Check(name="parquet_types", ok=not problems, whose="engine", about="metadata",
                 message=(f"{len(paths)} new data file(s): every column's Parquet physical and logical type as the "
                          "spec's type mapping asks" if not problems else
                          f"{len(problems)} column(s) of the new data files do not follow the spec's Parquet type "
                          "mapping: " + "; ".join(problems[:SHOWN])))
