"""A partition filter: compact only the partitions an Iceberg expression selects.

The filter is an expression string in pyiceberg's own syntax (`pyiceberg.expressions.parser`, e.g.
`event_date >= '2025-12-25'`), which is also Spark SQL (what Spark's `rewrite_data_files(where => ...)`
takes).  A scenario gives it as `where: EXPR`, or as `recent_periods: N` (the newest N periods of the
table's time partition), which `recent_filter` resolves against the generated table into the same kind
of expression on the time column.

Which partitions it selects is decided per partition with pyiceberg's projections of the expression onto
the partition spec: the inclusive projection says whether a partition may hold a matching row, the
strict one whether every row it holds matches.  A filter must select whole partitions (the two agree on
every partition of the table: `selector`), so "selected" and "outside the filter" are exact, for the
engines and for the verifier alike.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from typing import Any

from pyiceberg.expressions import BooleanExpression
from pyiceberg.expressions.parser import parse
from pyiceberg.expressions.visitors import bind, expression_evaluator, inclusive_projection, strict_projection
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import DayTransform, HourTransform, IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import DateType, TimestampType, TimestamptzType

from bench.core.errors import UserError
from bench.core.table.deletes import scope
from bench.core.table.entries import LiveFiles

EPOCH = dt.datetime(1970, 1, 1)


def parse_filter(text: str, schema: Schema | None = None) -> BooleanExpression:
    """The expression `text` (pyiceberg's parser), bound to `schema` when given; ValueError in one line."""
    try:
        expr = parse(text)
    except Exception:  # noqa: BLE001 - pyparsing's ParseException and friends (pages long): one line
        raise ValueError(f"cannot parse {text!r} as an Iceberg expression (pyiceberg's parser; e.g. "
                         "\"event_date >= '2025-12-25'\", and/or/not, in (...), is null)") from None
    if schema is not None:
        try:
            bind(schema, expr, case_sensitive=True)
        except Exception as e:  # noqa: BLE001 - an unknown column, a literal of the wrong type
            raise ValueError(f"{text!r} does not apply to the table's columns: {str(e).splitlines()[0]}") from None
    return expr


PartitionKey = tuple  # (spec id, partition values): bench.core.table.deletes.scope of a DataFile


def selector(text: str, schema: Schema, specs: dict[int, PartitionSpec],
             partitions: Iterable[PartitionKey]) -> Callable[[PartitionKey], bool]:
    """Whether the filter selects a partition: every row of it matches (strict projection).  UserError when
    the filter selects part of a partition (rows of it match, others not: inclusive and strict projections
    disagree), since then "outside the filter" is not a set of partitions."""
    expr = parse_filter(text, schema)
    evals: dict[int, tuple[Callable[[Record], bool], Callable[[Record], bool]]] = {}
    for sid, spec in specs.items():
        pschema = Schema(*spec.partition_type(schema).fields)
        evals[sid] = (expression_evaluator(pschema, inclusive_projection(schema, spec)(expr), True),
                      expression_evaluator(pschema, strict_projection(schema, spec)(expr), True))
    for sid, values in partitions:
        may, must = (f(Record(*values)) for f in evals[sid])
        if may != must:
            where = specs[sid].partition_to_path(Record(*values), schema) or "the unpartitioned table"
            raise UserError(f"partition filter {text!r} selects part of partition {where}: a partition filter must "
                            "select whole partitions (use the columns the table is partitioned by)")
    return lambda key: bool(evals[key[0]][1](Record(*key[1])))


def table_selector(tbl: Table, text: str | None, *files: LiveFiles) -> Callable[[PartitionKey], bool] | None:
    """`selector` over the partitions of the live `files` of `tbl` (None without a filter, or for an
    unpartitioned table)."""
    if not text or all(s.is_unpartitioned() for s in tbl.specs().values()):
        return None
    return selector(text, tbl.schema(), tbl.specs(), {scope(e.data_file) for f in files for e in f.all})


def _time_field(spec: PartitionSpec, schema: Schema) -> tuple[int, str, str]:
    """(index in the spec, source column, unit 'day' | 'hour') of the spec's time partition field."""
    for i, f in enumerate(spec.fields):
        source = schema.find_field(f.source_id)
        t, ftype = f.transform, source.field_type
        if isinstance(t, IdentityTransform) and isinstance(ftype, DateType):
            return i, source.name, "day"
        if isinstance(ftype, TimestampType | TimestamptzType) and isinstance(t, DayTransform | HourTransform):
            return i, source.name, "day" if isinstance(t, DayTransform) else "hour"
    raise UserError("recent_periods needs a time partition (identity on a date column, day or hour of a timestamp); "
                    f"the table's spec is {spec}")


def recent_filter(periods: int, spec: PartitionSpec, schema: Schema, partitions: Iterable[tuple[Any, ...]]) -> str:
    """`recent_periods: N` as an expression on the time column: the newest N periods of the time partition
    over the table's `partitions` (their values, in the spec's field order)."""
    i, column, unit = _time_field(spec, schema)
    newest = max((int(p[i]) for p in partitions if p[i] is not None), default=None)
    if newest is None:
        raise UserError("recent_periods: the table has no partition with a time value")
    first = newest - (periods - 1)  # days (identity of a date, day transform) or hours since the epoch
    since = EPOCH + (dt.timedelta(days=first) if unit == "day" else dt.timedelta(hours=first))
    is_date = isinstance(schema.find_field(column).field_type, DateType)
    return f"{column} >= '{since.date().isoformat() if is_date else since.isoformat()}'"
