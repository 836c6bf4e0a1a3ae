"""The reader queries of a dataset and their ground truth, from the generator (never from the table).

The key column v2 is unique and runs 0 .. rows_written-1 over the data files in file order: the
small-file tables by `smallfiles.plan_files` offsets, the deletes tables as v2 = i x rows_per_file + r
in data file i (`deletes.plan`).  So which file holds a key, and the file's rows, follow from the plan
alone; which rows are live from `deletes.deleted_rows` (the same call the writers make).

    full-scan      SELECT count(*), sum(quantity)                 every file's live quantity sum (numpy
                                                                   over the value pool's window)
    key-range      ... WHERE v2 BETWEEN lo AND hi                  about 1 % of rows_written, centred
    point-lookup   SELECT * WHERE v2 = K                           the first live key at or after the
                                                                   centre; its row's content checksum
    recent-partition ... WHERE event_date >= DATE 'D'              a time-partitioned table only: the newest
                     (hour: event_ts >= TIMESTAMP 'H')             period; the live rows of the files the
                                                                   layout puts in it (each file's event_ts
                                                                   lies inside its partition's period)
Only the files a key range overlaps are generated (the point lookup's one file).  A table with a sort
order writes its keys scattered (v2 = KeyOrder.keys(row id), datagen.smallfiles): the row ids of the keys
asked for are found by the inverse (KeyOrder.ids), and each file's rows among them summed.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
from dataclasses import dataclass

import numpy as np

from bench.core.checksum import arrow_checksum
from bench.core.dataset import GeneratedTable
from bench.core.records.reads import ReadQuery
from datagen.deletes import deleted_rows, plan
from datagen.partitions import END_US, period_us
from datagen.recipes import DeletesRecipe, Partitioning, SmallFilesRecipe
from datagen.schema import DAY_US, KeyOrder, _np_window, _plan, make_rows, pools_for
from datagen.smallfiles import plan as smallfiles_plan
from datagen.writer import FilePlan

RANGE_FRACTION = 0.01
EPOCH = dt.datetime(1970, 1, 1)
TRUTH_SOURCE = ("generator: datagen.queries over the planned files' generated rows (datagen.schema.make_rows, "
                "deletes.deleted_rows), never read from the table")


@dataclass(frozen=True)
class _Layout:
    seed: int
    files: list[FilePlan]  # in key order
    deletes: DeletesRecipe | None = None
    scale: float = 0.0
    partitioning: Partitioning | None = None
    file_scale: float | None = None  # the dataset's file counts' scale (--file-scale), None: `scale`

    @property
    def rows_written(self) -> int:
        return sum(f.rows for f in self.files)

    @functools.cached_property
    def deletes_plan(self):
        assert self.deletes is not None
        return plan(self.deletes, self.scale, self.file_scale)

    def deleted(self, f: FilePlan) -> np.ndarray:
        """Row numbers of file f that no reader sees (position- or equality-deleted)."""
        if self.deletes is None:
            return np.empty(0, np.int64)
        pl = self.deletes_plan
        pos, eq, _ = deleted_rows(self.seed, f.index, f.rows, pl.k_pos if pl.has_pos[f.index] else 0, pl.k_eq,
                                  pl.eq_targets(f.index))
        return np.concatenate([pos, eq]).astype(np.int64)

    def live(self, f: FilePlan) -> np.ndarray:
        keep = np.ones(f.rows, dtype=bool)
        keep[self.deleted(f)] = False
        return keep

    def quantity(self, f: FilePlan) -> np.ndarray:
        """The file's quantity column, as make_rows builds it (a window of the pool)."""
        pools = pools_for(self.seed)
        _, _, _, starts = _plan(pools, self.seed, f.index, f.rows, f.key_offset)
        return _np_window(_quantity_pool(self.seed), starts["quantity"], f.rows)

    @property
    def keys(self) -> KeyOrder | None:
        return self.files[0].keys if self.files else None

    def row_id(self, key: int) -> int:
        """The row id (position in write order) of the row with v2 = key."""
        return key if self.keys is None else int(self.keys.ids(np.asarray([key]))[0])

    def file_of(self, key: int) -> int:
        """The file holding the row of v2 = key."""
        return bisect.bisect_right([f.key_offset for f in self.files], self.row_id(key)) - 1


@functools.lru_cache(maxsize=4)
def _quantity_pool(seed: int) -> np.ndarray:
    return pools_for(seed).columns["quantity"].to_numpy().astype(np.int64)


def layout(ds: GeneratedTable) -> _Layout:
    kind = ds.recipe.get("kind")
    if kind == "smallfiles":
        r = SmallFilesRecipe.model_validate(ds.recipe)
        return _Layout(ds.seed, smallfiles_plan(r, ds.scale, ds.seed, ds.file_scale),  # placed in partitions, if any
                       partitioning=r.partitioning)
    if kind == "deletes":
        d = DeletesRecipe.model_validate(ds.recipe)
        pl = plan(d, ds.scale, ds.file_scale)
        return _Layout(ds.seed, [pl.file_plan(i) for i in range(pl.n)], d, ds.scale, d.partitioning, ds.file_scale)
    raise ValueError(f"no reader queries for a {kind!r} table")


def choose_queries(ds: GeneratedTable, lay: _Layout | None = None) -> list[ReadQuery]:
    """The queries of a dataset (a fourth, recent-partition, on a time-partitioned table), deterministic from
    its recipe, scale and seed."""
    lay = lay or layout(ds)
    n = lay.rows_written
    width = max(1, round(n * RANGE_FRACTION))
    lo = max(0, n // 2 - width // 2)
    out = [ReadQuery(name="full-scan"), ReadQuery(name="key-range", lo=lo, hi=min(n - 1, lo + width - 1)),
           ReadQuery(name="point-lookup", lo=(k := _live_key(lay, n // 2)), hi=k)]
    recent = recent_partition(lay.partitioning)
    return out + ([recent] if recent else [])


def recent_partition(p: Partitioning | None) -> ReadQuery | None:
    """The newest period of a time-partitioned table as a query (None without a time partition)."""
    length = period_us(p) if p else 0
    if not length:
        return None
    start = END_US - length  # the newest period: [END - L, END)
    since = EPOCH + dt.timedelta(microseconds=start)
    if length == DAY_US:
        return ReadQuery(name="recent-partition", column="event_date", lo=start // DAY_US,
                         literal=f"DATE '{since.date().isoformat()}'")
    return ReadQuery(name="recent-partition", column="event_ts", lo=start,
                     literal=f"TIMESTAMP '{since.isoformat(sep=' ')}'")


def _recent_sums(lay: _Layout, q: ReadQuery) -> tuple[int, int]:
    """(live rows, their quantity sum) of the files in the newest period: a file's rows lie in its partition's
    period (datagen.partitions), so a file is in it or not as a whole."""
    assert lay.partitioning is not None and q.lo is not None
    start = q.lo * DAY_US if q.column == "event_date" else q.lo
    count = total = 0
    for f in lay.files:
        assert f.shape is not None
        if f.shape.ts_start_us >= start:
            keep = lay.live(f)
            count += int(keep.sum())
            total += int(lay.quantity(f)[keep].sum())
        else:
            assert f.shape.ts_start_us + f.shape.ts_span_us <= start, "a file straddles the newest period"
    return count, total


def _live_key(lay: _Layout, start: int) -> int:
    """The first key at or after `start` (wrapping) of a row no delete removes."""
    if lay.keys is not None:  # scattered keys: key by key (only small-file tables have them: no deletes)
        for key in (k % lay.rows_written for k in range(start, start + lay.rows_written)):
            f = lay.files[lay.file_of(key)]
            if lay.live(f)[lay.row_id(key) - f.key_offset]:
                return key
        raise ValueError("the table has no live row")
    i = lay.file_of(start)
    for step in range(len(lay.files)):
        f = lay.files[(i + step) % len(lay.files)]
        live = np.flatnonzero(lay.live(f))
        live = live[live >= start - f.key_offset] if step == 0 else live
        if len(live):
            return f.key_offset + int(live[0])
    raise ValueError("the table has no live row")


def _range_sums(lay: _Layout, lo: int, hi: int) -> tuple[int, int]:
    """(live rows, their quantity sum) with lo <= v2 <= hi."""
    count = total = 0
    if lay.keys is not None and hi >= lo:
        ids = np.sort(lay.keys.ids(np.arange(lo, hi + 1, dtype=np.int64)))
        for f in lay.files:
            a, b = np.searchsorted(ids, [f.key_offset, f.key_offset + f.rows])
            if a == b:
                continue
            rows = ids[a:b] - f.key_offset
            keep = lay.live(f)[rows]
            count += int(keep.sum())
            total += int(lay.quantity(f)[rows][keep].sum())
        return count, total
    for f in lay.files:
        a, b = max(lo, f.key_offset) - f.key_offset, min(hi, f.key_offset + f.rows - 1) - f.key_offset
        if a > b:
            continue
        keep = lay.live(f)[a:b + 1]
        q = lay.quantity(f)[a:b + 1]
        count += int(keep.sum())
        total += int(q[keep].sum())
    return count, total


def query_truth(ds: GeneratedTable, queries: list[ReadQuery], lay: _Layout | None = None) -> dict[str, list[str]]:
    """Each query's answer as the generator knows it: [count, sum(quantity)] for the aggregates,
    [rows, content checksum] of the matching rows for the point lookup."""
    lay = lay or layout(ds)
    out: dict[str, list[str]] = {}
    for q in queries:
        if q.name == "point-lookup":
            assert q.lo is not None
            f = lay.files[lay.file_of(q.lo)]
            r = lay.row_id(q.lo) - f.key_offset
            if not lay.live(f)[r]:
                out[q.name] = ["0", "0"]
                continue
            row = make_rows(pools_for(lay.seed), lay.seed, f.index, f.rows, f.key_offset, f.shape,
                            f.keys).slice(r, 1)
            n, s = arrow_checksum(row)
            out[q.name] = [str(n), str(s)]
        elif q.name == "recent-partition":
            out[q.name] = [str(v) for v in _recent_sums(lay, q)]
        else:
            lo = 0 if q.lo is None else q.lo
            hi = lay.rows_written - 1 if q.hi is None else q.hi
            out[q.name] = [str(v) for v in _range_sums(lay, lo, hi)]
    return out


def reads_plan(ds: GeneratedTable) -> tuple[list[ReadQuery], dict[str, list[str]]]:
    """The queries of a dataset and their truth (computed once per `bench run`)."""
    lay = layout(ds)
    queries = choose_queries(ds, lay)
    return queries, query_truth(ds, queries, lay)
