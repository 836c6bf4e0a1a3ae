"""The Parquet types of an engine's output files against Iceberg's type mapping (bench.verify.parquet_types), and
a v3 output's row lineage (bench.verify.lineage): both feed a conformance cell's wrong-metadata."""

import decimal
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.schema import Schema
from pyiceberg.types import DecimalType, LongType, NestedField, StringType, TimestamptzType, UUIDType

from bench.verify.lineage import lineage_check
from bench.verify.parquet_types import parquet_types_check

SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "u", UUIDType()),
                NestedField(3, "ts", TimestamptzType()), NestedField(4, "d", DecimalType(10, 2)),
                NestedField(5, "s", StringType()))


def _field(name, type_, fid):
    return pa.field(name, type_, metadata={b"PARQUET:field_id": str(fid).encode()})


def _write(path, u_type, ts_type, d_as_integer, extra=()):
    fields = [_field("id", pa.int64(), 1), _field("u", u_type, 2), _field("ts", ts_type, 3),
              _field("d", pa.decimal128(10, 2), 4), _field("s", pa.string(), 5), *extra]
    u = uuid.UUID(int=7).bytes
    cols = [[1], [u], [0], [decimal.Decimal("1.50")], ["x"]] + [[5]] * len(extra)
    pq.write_table(pa.table([pa.array(c, f.type) for c, f in zip(cols, fields)], schema=pa.schema(fields)), path,
                   store_decimal_as_integer=d_as_integer)
    return str(path)


def test_types_follow_the_spec_mapping_or_the_check_names_each_column(tmp_path):
    good = _write(tmp_path / "good.parquet", pa.uuid(), pa.timestamp("us", tz="UTC"), True)
    ok = parquet_types_check([good], SCHEMA)
    assert ok.ok and ok.whose == "engine" and ok.about == "metadata", ok.message
    # a UUID as bare fixed_len_byte_array(16), a timestamptz not adjusted to UTC in ms, a decimal(10,2) as fixed
    bad = _write(tmp_path / "bad.parquet", pa.binary(16), pa.timestamp("ms"), False)
    check = parquet_types_check([bad], SCHEMA)
    assert not check.ok and "3 column(s)" in check.message, check.message
    assert "field 2 'u' (uuid) is FIXED_LEN_BYTE_ARRAY without a logical type (length=16)" in check.message
    assert "field 3 'ts' (timestamptz) is INT64 Timestamp (isAdjustedToUTC=False, timeUnit=milliseconds)" \
        in check.message
    assert "field 4 'd' (decimal(10, 2)) is FIXED_LEN_BYTE_ARRAY Decimal" in check.message
    assert "the spec's Parquet mapping: INT64 Decimal (precision=10, scale=2)" in check.message


def test_a_v3_output_without_its_rows_lineage_is_caught(tmp_path):
    plain = _write(tmp_path / "plain.parquet", pa.uuid(), pa.timestamp("us", tz="UTC"), True)
    kept = _write(tmp_path / "kept.parquet", pa.uuid(), pa.timestamp("us", tz="UTC"), True,
                  extra=(_field("_row_id", pa.int64(), 2147483540),
                         _field("_last_updated_sequence_number", pa.int64(), 2147483539)))
    assert lineage_check([kept]).ok
    lost = lineage_check([kept, plain])
    assert not lost.ok and "1 of 2 new data file(s)" in lost.message
    assert "plain.parquet: no _row_id, no _last_updated_sequence_number" in lost.message, lost.message
