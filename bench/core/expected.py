"""What a conformance case's own operations leave, by the Iceberg spec's rules, as its author reasoned it out
(scenarios/conformance/cases.yaml `expected`): the row count and, where the table has a key-like column, the
multiset of that column's values.  The table as written is held to it first (a case whose table does not hold what
it states is a harness defect), then every engine's output; each reader is a witness against it.  Pure data and
comparison here; reading the rows is bench.verify.expected's."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

SHOWN = 5  # differing keys named in a message


class Expected(BaseModel):
    """What the case's own operations leave, by the Iceberg spec's rules (reasoned by the case's author)."""

    model_config = ConfigDict(extra="forbid")
    rows: int = Field(ge=0)  # the row count
    key: str | None = None  # a top-level column whose values identify the rows
    keys: list[Any] | None = None  # the values of `key` over the rows left (a multiset; null = SQL NULL), any order
    why: str = ""  # the spec rules applied, in words

    @model_validator(mode="after")
    def _keys_fit(self) -> Expected:
        if (self.key is None) != (self.keys is None):
            raise ValueError("expected: give key and keys together")
        if self.keys is not None and len(self.keys) != self.rows:
            raise ValueError(f"expected: {len(self.keys)} keys for {self.rows} rows")
        return self


def canonical(v: Any) -> Any:
    """A key value as both sides compare it: None, bool and int as they are, NaN as 'NaN', other values as text
    (a YAML date and a DuckDB date both read '2022-03-01')."""
    if v is None or isinstance(v, (bool, int)):
        return v
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else int(v) if v.is_integer() else v
    return str(v)


def _few(c: Counter) -> str:
    items = sorted(c.items(), key=lambda kv: (str(type(kv[0])), str(kv[0])))
    shown = ", ".join(f"{'NULL' if k is None else repr(k)}" + (f" x{n}" if n > 1 else "") for k, n in items[:SHOWN])
    return shown + (f", ... ({sum(c.values())} in all)" if len(items) > SHOWN else "")


def difference(expected: Expected, rows: int, keys: list[Any] | None) -> str:
    """'' when `rows` (and `keys`, the values of expected.key read from the table) hold what `expected` states;
    else the difference in words: the count, the keys that came back (read, not expected) and those lost."""
    out = [] if rows == expected.rows else [f"{rows} rows, expected {expected.rows}"]
    if expected.keys is not None and keys is not None:
        got, want = Counter(map(canonical, keys)), Counter(map(canonical, expected.keys))
        extra, lost = got - want, want - got
        if extra:
            out.append(f"{expected.key} values read but not expected: {_few(extra)}")
        if lost:
            out.append(f"{expected.key} values expected but not read: {_few(lost)}")
    return "; ".join(out)


def stated(expected: Expected) -> str:
    """What `expected` states, in words."""
    return f"{expected.rows} rows" + (f", {expected.key} values as the case states them" if expected.key else "")


# a snapshot of the table as written: a ref's head (REF), its Nth ancestor along the ref's lineage (REF~N), every
# snapshot (all), or every snapshot in no ref's history (detached: what a rollback or an unpublished staged write
# leaves)
SNAPSHOT_SELECTOR = r"^[A-Za-z0-9_.-]+(~[0-9]+)?$"
# files of the table as written a case names among kept_files / removed_files / replaced_files beside its own orphans
# (by their names): every statistics file the table lists; every position-delete file live at main's head; those of
# them that apply to no live data file there (dangling: bench.core.table.deletes)
STATISTICS = "statistics"
POSITION_DELETES = "position-deletes"
DANGLING_POSITION_DELETES = "dangling-position-deletes"
TABLE_FILES = (STATISTICS, POSITION_DELETES, DANGLING_POSITION_DELETES)


class MaintenanceExpected(BaseModel):
    """What a maintenance operation (expire-snapshots, remove-orphan-files, rewrite-manifests, rewrite-position-deletes)
    must leave by the Iceberg spec, as the case's author reasoned it: the rows each ref still reads (every ref named
    must keep its head and its rows, but a ref in `advances`, which the operation commits to: its new head descends
    from the old), the snapshots that must stay (with every file they reach) and those that must go (the files only
    they reach must be removed), the named files (the case's orphans, TABLE_FILES) that must stay or go (deleted),
    and those the operation must take out of the refs it commits to (`replaced_files`: not live at their new heads;
    a rewrite replaces them or drops them, and they stay on disk while a kept snapshot reaches them).  Snapshots are
    named on the table as written (SNAPSHOT_SELECTOR).  The table as written is held to the refs' rows and to the
    selectors and named files resolving, before any engine runs.  Main's rows are the case's own `expected`."""

    model_config = ConfigDict(extra="forbid")
    refs: dict[str, Expected] = Field(default_factory=dict)  # beside main (whose rows are the case's `expected`)
    kept: list[str] = Field(default_factory=list)
    expired: list[str] = Field(default_factory=list)
    kept_files: list[str] = Field(default_factory=list)
    removed_files: list[str] = Field(default_factory=list)
    replaced_files: list[str] = Field(default_factory=list)
    advances: list[str] = Field(default_factory=list)  # refs the operation commits to (e.g. main, rewrite-manifests)
    why: str = ""

    @model_validator(mode="after")
    def _selectors(self) -> MaintenanceExpected:
        bad = [s for s in self.kept + self.expired if not re.match(SNAPSHOT_SELECTOR, s)]
        if bad:
            raise ValueError(f"maintenance: snapshot selector(s) {', '.join(bad)}: give REF or REF~N")
        both = set(self.kept) & set(self.expired) | set(self.kept_files) & set(self.removed_files)
        if both:
            raise ValueError(f"maintenance: {', '.join(sorted(both))} both kept and removed")
        if self.replaced_files and not self.advances:
            raise ValueError("maintenance: replaced_files are taken out of the refs the operation commits to: name "
                             "them in `advances`")
        return self
