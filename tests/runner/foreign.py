"""A "foreign" Iceberg table: made with plain pyiceberg in a catalog and directory of its own, with a
schema the harness did not choose (strings, timestamps, decimals) and a day partition; `add_deletes`
gives it position and equality deletes (written with pyarrow, committed by Iceberg's Java library in a
plain JVM: pyiceberg cannot commit delete files)."""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import os
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


def make_foreign_table(root: Path, commits: int = 4, rows: int = 300, warehouse: str | None = None,
                       io: dict[str, str] | None = None) -> Path:
    """The table `shop.orders` in a SqlCatalog under `root` (its files under `warehouse`, default
    `root`/lake; `io`: FileIO properties, `${VAR}` taken from the environment as the harness does),
    `commits` appends of `rows` rows over three days (so a few small files per day partition); returns the
    catalog YAML file for --source-catalog."""
    root.mkdir(parents=True, exist_ok=True)
    props = {"type": "sql", "uri": f"sqlite:///{root}/catalog.db", "warehouse": warehouse or f"file://{root}/lake",
             **(io or {})}
    catalog = SqlCatalog("shop", **{k: os.path.expandvars(v) for k, v in props.items() if k != "type"})
    catalog.create_namespace_if_not_exists("shop")
    tbl = catalog.create_table("shop.orders", SCHEMA, partition_spec=SPEC,
                               properties={"format-version": "2"})
    for c in range(commits):
        tbl.append(_rows(list(range(c * rows, (c + 1) * rows))))
    cfg = root / "source.yaml"
    # as a .pyiceberg.yaml entry: a SqlCatalog keys its tables by the catalog's name
    cfg.write_text("catalog:\n  shop:\n" + "".join(f"    {k}: {v}\n" for k, v in props.items()))
    return cfg


def _rows(ids: list[int]) -> pa.Table:
    base = dt.datetime(2026, 3, 1)
    return pa.table({
        "order_id": pa.array(ids, pa.int64()),
        "customer": [f"customer-{hashlib.md5(str(i).encode()).hexdigest()[:8]}" if i % 7 else None for i in ids],
        "placed_at": [base + dt.timedelta(hours=(i * 7) % 72, seconds=i % 10**6) for i in ids],
        "placed_on": [(base + dt.timedelta(hours=(i * 7) % 72, seconds=i % 10**6)).date() for i in ids],
        "amount": [decimal.Decimal(i % 100000) / 100 for i in ids],
        "note": ["x" * (i % 40) for i in ids],
    }, schema=SCHEMA.as_arrow())


def add_refs(root: Path) -> dict[str, int]:
    """A tag `audited` at the second snapshot and a branch `backfill` at the third of `shop.orders` under `root`;
    returns name -> snapshot id."""
    catalog = SqlCatalog("shop", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/lake")
    tbl = catalog.load_table("shop.orders")
    snaps = sorted(tbl.metadata.snapshots, key=lambda s: s.sequence_number or 0)
    refs = {"audited": snaps[1].snapshot_id, "backfill": snaps[2].snapshot_id}
    tbl.manage_snapshots().create_tag(refs["audited"], "audited").create_branch(refs["backfill"], "backfill").commit()
    return refs


class Writer:
    """Someone else's writer on `shop.orders` under `root`: a thread appending 3 rows every `every_s` seconds while
    the `with` block runs (its own catalog connection, as another process's would be)."""

    def __init__(self, root: Path, every_s: float = 0.7) -> None:
        import threading

        self.catalog = SqlCatalog("shop", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/lake")
        self.every_s, self.commits, self.errors, self.cpu_s = every_s, 0, [], 0.0  # type: ignore[var-annotated]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="foreign-writer", daemon=True)

    def _run(self) -> None:
        import time

        next_id = 10**8
        try:
            self._write(next_id)
        finally:
            self.cpu_s = time.thread_time()  # what the writer cost the test process (the suite's budget)

    def _write(self, next_id: int) -> None:
        while not self.stop.wait(self.every_s):
            try:
                self.catalog.load_table("shop.orders").append(_rows(list(range(next_id, next_id + 3))))
                self.commits += 1
            except Exception as e:  # noqa: BLE001 - the test asserts there were none
                self.errors.append(f"{type(e).__name__}: {e}")
            next_id += 3

    def __enter__(self) -> Writer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


def add_deletes(root: Path) -> dict[str, int]:
    """Position deletes (every 10th row of the first two data files of the first two days, one delete file
    per day) and equality deletes (order ids divisible by 9 on the last day, plus ids no row has) on
    `shop.orders` under `root`, in one RowDelta commit through Iceberg's Java API; returns the counts."""
    import pyarrow.parquet as pq

    from bench.core.catalog import CatalogSettings
    from bench.core.iceberg_java.commit import RowDeltaCommitter
    from bench.core.iceberg_java.gateway import JavaIceberg
    from bench.core.uri import local_path
    from datagen.deletes import POSITION_DELETE_ARROW

    catalog = SqlCatalog("shop", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/lake")
    tbl = catalog.load_table("shop.orders")
    by_day: dict[int, list] = {}
    for task in tbl.scan().plan_files():
        by_day.setdefault(task.file.partition[0], []).append(task.file)
    days = sorted(by_day)
    out = root / "deletes"
    out.mkdir(exist_ok=True)
    written: list[tuple[str, str, int, int]] = []  # (kind, uri, size, day)
    counts = {"position": 0, "equality": 0}
    for day in days[:2]:
        files = sorted(by_day[day], key=lambda f: f.file_path)[:2]
        paths = [f.file_path for f in files for pos in range(0, f.record_count, 10)]
        positions = [pos for f in files for pos in range(0, f.record_count, 10)]
        path = out / f"pos-{day}.parquet"
        pq.write_table(pa.table([pa.array(paths, pa.string()), pa.array(positions, pa.int64())],
                                schema=POSITION_DELETE_ARROW), path)
        written.append(("position", path.as_uri(), path.stat().st_size, day))
        counts["position"] += len(positions)
    last = days[-1]
    ids = [i for f in by_day[last] for i in pq.read_table(local_path(f.file_path), columns=["order_id"])
           .column(0).to_pylist() if i % 9 == 0] + [10**9, 10**9 + 1]  # the last two match no row
    eq_schema = pa.schema([pa.field("order_id", pa.int64(), nullable=False, metadata={"PARQUET:field_id": "1"})])
    path = out / f"eq-{last}.parquet"
    pq.write_table(pa.table([pa.array(ids, pa.int64())], schema=eq_schema), path)
    written.append(("equality", path.as_uri(), path.stat().st_size, last))
    counts["equality"] = len(ids) - 2
    settings = CatalogSettings(warehouse=str(root / "lake"), name="shop", state_dir=str(root))
    with JavaIceberg(settings, heap="256m") as java:
        c = RowDeltaCommitter(java.jvm, java.load_table("shop.orders"), java.int_array([1]))
        files = [(c.position_file if kind == "position" else c.equality_file)(uri, size, (day,))
                 for kind, uri, size, day in written]
        c.row_delta([], files, {"writer": "tests.runner.foreign"})
    return counts


def duckdb_deletes(root: Path, warehouse: str, where: str) -> None:
    """`DELETE FROM shop.orders WHERE <where>` by DuckDB's iceberg extension (position deletes: it writes
    no equality deletes) through a REST server over the catalog under `root`: a JVM-free writer of
    deletes, also on S3."""
    from bench.core.catalog import CatalogSettings
    from bench.core.catalog.duck import _quote, duckdb_connect, extension_path
    from bench.core.catalog.rest import serve

    settings = CatalogSettings(warehouse=warehouse, name="shop", state_dir=str(root))
    with serve(settings) as srv:
        con = duckdb_connect(remote=settings.is_remote)
        try:
            for name in ("avro", "iceberg"):
                con.execute(f"LOAD {_quote(str(extension_path(name)))}")
            con.execute(f"ATTACH {_quote(srv.settings.rest_warehouse)} AS w (TYPE iceberg, ENDPOINT "
                        f"{_quote(srv.settings.rest_uri)}, AUTHORIZATION_TYPE 'none', "
                        "ACCESS_DELEGATION_MODE 'none', READ_ONLY false)")
            con.execute(f"DELETE FROM w.shop.orders WHERE {where}")
        finally:
            con.close()


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under `root` (the source's catalog database and warehouse)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}
