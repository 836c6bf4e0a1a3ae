"""The reader queries as SQL, and the check of their answers against the generator's truth."""

from __future__ import annotations

from bench.core.records.reads import QueryRead, ReadQuery, ReadsRecord

QUANTITY, KEY = "quantity", "v2"


def query_sql(q: ReadQuery, table: str) -> str:
    """The query's SQL over `table` (an already quoted table reference); the same text for every reader."""
    if q.name == "full-scan":
        return f"SELECT count(*), sum({QUANTITY}) FROM {table}"
    if q.name == "key-range":
        return (f"SELECT count(*), sum({QUANTITY}) FROM {table} "
                f"WHERE {KEY} BETWEEN {int(q.lo or 0)} AND {int(q.hi or 0)}")
    if q.name == "point-lookup":
        return f"SELECT * FROM {table} WHERE {KEY} = {int(q.lo or 0)}"
    if q.name == "recent-partition":
        if not (q.column and q.literal and q.column.isidentifier()):
            raise ValueError(f"recent-partition needs a column and a literal, got {q.column!r} / {q.literal!r}")
        return f"SELECT count(*), sum({QUANTITY}) FROM {table} WHERE {q.column} >= {q.literal}"
    raise ValueError(f"unknown reader query {q.name!r}")


def aggregate_answer(row) -> list[str]:
    """[count, sum] of an aggregate query's one row (an empty sum is 0, as the truth counts it)."""
    count, total = row
    return [str(int(count)), str(int(total or 0))]


def check_query(q: QueryRead) -> QueryRead:
    """ok when every measured answer equals the truth (and so before equals after)."""
    problems = []
    if q.before is None:
        problems.append("no answer before")
    elif q.before != q.truth:
        problems.append(f"before {q.before} != truth {q.truth}")
    if q.after is not None and q.after != q.truth:
        problems.append(f"after {q.after} != truth {q.truth}")
    if q.before is not None and q.after is not None and q.before != q.after:
        problems.append(f"before {q.before} != after {q.after}")
    q.ok = not problems
    q.message = "; ".join(problems) if problems else ("before = after = truth" if q.after is not None
                                                      else "before = truth")
    return q


def check(rec: ReadsRecord, truth: dict[str, list[str]]) -> ReadsRecord:
    """Set every query's truth and verdict, and the record's: ok only when every query is."""
    for q in rec.queries:
        q.truth = list(truth.get(q.name, []))
        check_query(q)
    failed = [f"{q.name}: {q.message}" for q in rec.queries if not q.ok]
    if not rec.reader:
        rec.ok, rec.message = False, rec.reader_reason
    else:
        rec.ok = bool(rec.queries) and not failed
        rec.message = "; ".join(failed)
    return rec
