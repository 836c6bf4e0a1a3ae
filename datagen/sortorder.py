"""Tables with a sort order: the Iceberg sort order a recipe declares, and the order its keys
arrive in.

The table is created with the recipe's `sort_order` as its Iceberg sort order (pyiceberg's SortOrder:
identity transforms, the direction and null order of each key), so a compaction that sorts ("strategy:
sort") sorts by it, and the integrity check `same_sort_order` sees it unchanged.  The data are written
as a stream writes them, in arrival order, not sorted: the key v2 of the i-th row written is
(a x i + b) mod n (`datagen.schema.KeyOrder`, n the table's rows, a near n x 0.618 and coprime to n,
b from the seed), so each small file's keys are spread over the whole key range and every file's
[min, max] of v2 overlaps every other's; the other columns are the unsorted table's.  A point lookup
on v2 must open every file until a compaction sorts them.  Deterministic from the seed and scale.
"""

from __future__ import annotations

import math

import numpy as np
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import IdentityTransform

from datagen.recipes import SortKey
from datagen.schema import KeyOrder

GOLDEN = (math.sqrt(5) - 1) / 2


def sort_order(keys: list[SortKey], schema: Schema) -> SortOrder:
    """The recipe's keys as an Iceberg sort order of `schema` (order id 1)."""
    return SortOrder(*(SortField(source_id=schema.find_field(k.column).field_id, transform=IdentityTransform(),
                                 direction=SortDirection.ASC if k.direction == "asc" else SortDirection.DESC,
                                 null_order=NullOrder.NULLS_FIRST if k.nulls_first else NullOrder.NULLS_LAST)
                       for k in keys), order_id=1)


def key_order(rows: int, seed: int) -> KeyOrder:
    """The arrival order of `rows` keys: a stride near the golden section of n (coprime to n) and an
    offset from the seed."""
    n = max(1, rows)
    a = max(1, round(n * GOLDEN))
    while math.gcd(a, n) != 1:
        a += 1
    b = int(np.random.default_rng([seed, 0x50F7]).integers(0, n))
    return KeyOrder(n=n, a=a % n or 1, b=b)
