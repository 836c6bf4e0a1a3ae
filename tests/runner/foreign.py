"""A "foreign" Iceberg table: made with plain pyiceberg in a catalog and directory of its own, with a
schema the harness did not choose (strings, timestamps, decimals) and a day partition."""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DateType, DecimalType, LongType, NestedField, StringType, TimestampType

SCHEMA = Schema(
    NestedField(1, "order_id", LongType(), required=True),
    NestedField(2, "customer", StringType(), required=False),
    NestedField(3, "placed_at", TimestampType(), required=False),
    NestedField(4, "amount", DecimalType(12, 2), required=False),
    NestedField(5, "note", StringType(), required=False),
    NestedField(6, "placed_on", DateType(), required=False),
)
# a day partition as identity on a date column (pyiceberg writes a day() transform only with pyiceberg-core)
SPEC = PartitionSpec(PartitionField(source_id=6, field_id=1000, transform=IdentityTransform(), name="placed_on"))


def make_foreign_table(root: Path, commits: int = 4, rows: int = 300) -> Path:
    """The table `shop.orders` in a SqlCatalog under `root`, `commits` appends of `rows` rows over three
    days (so a few small files per day partition); returns the catalog YAML file for --source-catalog."""
    root.mkdir(parents=True, exist_ok=True)
    props = {"type": "sql", "uri": f"sqlite:///{root}/shop.db", "warehouse": f"file://{root}/lake"}
    catalog = SqlCatalog("shop", **{k: v for k, v in props.items() if k != "type"})
    catalog.create_namespace_if_not_exists("shop")
    tbl = catalog.create_table("shop.orders", SCHEMA, partition_spec=SPEC,
                               properties={"format-version": "2"})
    arrow = SCHEMA.as_arrow()
    base = dt.datetime(2026, 3, 1)
    for c in range(commits):
        ids = list(range(c * rows, (c + 1) * rows))
        tbl.append(pa.table({
            "order_id": pa.array(ids, pa.int64()),
            "customer": [f"customer-{hashlib.md5(str(i).encode()).hexdigest()[:8]}" if i % 7 else None for i in ids],
            "placed_at": [base + dt.timedelta(hours=(i * 7) % 72, seconds=i) for i in ids],
            "placed_on": [(base + dt.timedelta(hours=(i * 7) % 72, seconds=i)).date() for i in ids],
            "amount": [decimal.Decimal(i % 100000) / 100 for i in ids],
            "note": ["x" * (i % 40) for i in ids],
        }, schema=arrow))
    cfg = root / "source.yaml"
    # as a .pyiceberg.yaml entry: a SqlCatalog keys its tables by the catalog's name
    cfg.write_text("catalog:\n  shop:\n" + "".join(f"    {k}: {v}\n" for k, v in props.items()))
    return cfg


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under `root` (the source's catalog database and warehouse)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}
