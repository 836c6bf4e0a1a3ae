"""The plan of a deletes table: how many files of each kind, which checkpoints carry deletes, which
rows die and where.  Deterministic from (recipe, scale, seed); no I/O."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from bench.core.errors import UserError
from datagen import partitions
from datagen.partitions import PartitionLayout
from datagen.recipes import DeletesRecipe
from datagen.writer import FilePlan, partition_dir

MIN_ROWS_PER_FILE = 100
_SEEDS = {"rows": 0xDE1E7E, "assign": 0xA551, "unmatched": 0xE9E9}


@dataclass(frozen=True)
class DeletesPlan:
    n: int  # data files (= writer checkpoints)
    rows_per_file: int
    has_pos: tuple[bool, ...]
    has_eq: tuple[bool, ...]
    k_pos: int  # rows a position-delete file deletes from its data file
    k_eq: int  # rows of every data file deleted by later equality deletes
    window: int
    unmatched_ratio: float
    eq_bytes_per_file: float | None  # target size of each equality-delete file (deletes-massive)
    per_commit: int
    eq_checkpoints: tuple[int, ...] = field(default=())
    layout: PartitionLayout | None = None  # a partitioned table: data file i's partition (datagen.partitions)

    @property
    def position_files(self) -> int:
        return sum(self.has_pos)

    @property
    def equality_files(self) -> int:
        return sum(self.has_eq)

    def file_plan(self, i: int) -> FilePlan:
        """Data file i (checkpoint i); in a partitioned table placed in its partition.  The checkpoint's
        delete files are in the same partition."""
        fp = FilePlan(i, self.rows_per_file, i * self.rows_per_file)
        if self.layout is None:
            return fp
        return partitions.place([fp], self.layout, only=int(self.layout.file_partition[i]))[0]

    def eq_targets(self, j: int) -> list[int]:
        """The equality-delete checkpoints a row of data file j may die in: the next `window` at or
        after j (in a partitioned table, of j's partition: equality deletes are partition-scoped, as a
        CDC writer routes a key's delete to the key's partition)."""
        if self.layout is None:
            k = bisect.bisect_left(self.eq_checkpoints, j)
            return list(self.eq_checkpoints[k:k + self.window])
        ks = np.asarray(self.eq_checkpoints, dtype=np.int64)
        part = self.layout.file_partition
        return [int(t) for t in ks[(ks >= j) & (part[ks] == part[j])][:self.window]]


def _spread(count: int, n: int) -> tuple[bool, ...]:
    return tuple((i + 1) * count // n > i * count // n for i in range(n))


def plan(recipe: DeletesRecipe, scale: float, file_scale: float | None = None) -> DeletesPlan:
    """The plan of `recipe` at `scale` (the scale rule of the package docstring); with `file_scale` (other
    than `scale`) the file counts of that scale holding the rows of `scale` (the rule of the two scales)."""
    d1 = recipe.data_files
    decoupled = file_scale is not None and file_scale != scale
    n = max(recipe.min_files, round(d1 * (file_scale if decoupled else scale)))  # type: ignore[operator]
    p, e = round(n * recipe.position_delete_files / d1), round(n * recipe.equality_delete_files / d1)
    rows = round(recipe.rows_per_data_file * d1 * scale / n)
    if not decoupled:
        rows = max(MIN_ROWS_PER_FILE, rows)
    elif rows < 1:
        each = recipe.rows_per_data_file * d1 * scale / n
        raise UserError(f"--file-scale {file_scale:g}: {n} data files would hold {each:.2g} rows each at scale "
                        f"{scale:g} (less than one row per file); use a smaller --file-scale or a larger --scale")
    frac, share = recipe.deleted_fraction, recipe.position_delete_share
    k_pos = max(1, round(frac * share * rows)) if p else 0
    k_eq = round(frac * (1 - share) * rows) if e else 0
    if k_pos + k_eq >= rows:
        raise UserError(f"deleted_fraction {frac} leaves no row of a {rows}-row data file")
    eq_bytes = recipe.equality_delete_bytes
    has_eq = _spread(e, n)
    return DeletesPlan(n=n, rows_per_file=rows, has_pos=_spread(p, n), has_eq=has_eq, k_pos=k_pos,
                       k_eq=k_eq, window=recipe.equality_window, unmatched_ratio=recipe.unmatched_key_ratio,
                       eq_bytes_per_file=(eq_bytes * scale / e) if (eq_bytes and e) else None,
                       per_commit=recipe.files_per_commit,
                       eq_checkpoints=tuple(i for i in range(n) if has_eq[i]),
                       layout=partitions.layout(recipe.partitioning, n) if recipe.partitioning else None)


def position_path(location: str, i: int, partition_path: str | None = None) -> str:
    return f"{partition_dir(location, partition_path)}/gen-{i:06d}-pos-deletes.parquet"


def equality_path(location: str, i: int, partition_path: str | None = None) -> str:
    return f"{partition_dir(location, partition_path)}/gen-{i:06d}-eq-deletes.parquet"



def deleted_rows(seed: int, j: int, rows: int, k_pos: int, k_eq: int, targets: list[int]):
    """(positions deleted by file j's position deletes (sorted), rows deleted by equality deletes,
    the equality checkpoint of each of the latter).  Disjoint; deterministic in (seed, j)."""
    if not targets:
        k_eq = 0
    rng = np.random.default_rng([seed, j, _SEEDS["rows"]])
    picked = rng.choice(rows, k_pos + k_eq, replace=False) if k_pos + k_eq else np.empty(0, np.int64)
    pos = np.sort(picked[:k_pos])
    eq = picked[k_pos:]
    assign = np.random.default_rng([seed, j, _SEEDS["assign"]]).integers(0, len(targets), len(eq)) \
        if len(eq) else np.empty(0, np.int64)
    return pos, eq, (np.asarray(targets)[assign] if len(eq) else np.empty(0, np.int64))
