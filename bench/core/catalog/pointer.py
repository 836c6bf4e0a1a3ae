"""A table's metadata pointer in the harness's SQLite catalog, read and moved by compare-and-swap: one UPDATE that
changes the row only while it still names the metadata file the writer started from, as Iceberg's JdbcCatalog and
pyiceberg's SqlCatalog commit (same table layout: `iceberg_tables`).  Only the standard library's sqlite3, so that an
engine's worker in its own environment (e.g. repark's, Python 3.12 without pyiceberg) can publish through it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

TIMEOUT_S = 30  # SQLite's busy timeout: another writer's commit holds the file's lock for milliseconds


class PointerMoved(RuntimeError):
    """The catalog no longer names the metadata file the swap expected (another commit came first)."""


def _table(identifier: str) -> tuple[str, str]:
    ns, name = identifier.split(".", 1)
    return ns, name


def current_location(db_path: str | Path, catalog: str, identifier: str) -> str:
    """The metadata file the catalog `catalog` in the SQLite file `db_path` names for `identifier` ('ns.t')."""
    ns, name = _table(identifier)
    with sqlite3.connect(db_path, timeout=TIMEOUT_S) as db:
        row = db.execute("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND "
                         "table_namespace = ? AND table_name = ?", (catalog, ns, name)).fetchone()
    if row is None or not row[0]:
        raise RuntimeError(f"table {identifier} is not in the catalog {db_path}")
    return str(row[0])


def swap_location(db_path: str | Path, catalog: str, identifier: str, expected: str, new: str) -> None:
    """Point `identifier` at `new` only if the catalog still names `expected` (one UPDATE: compare-and-swap);
    PointerMoved otherwise."""
    ns, name = _table(identifier)
    db = sqlite3.connect(db_path, timeout=TIMEOUT_S)
    try:
        with db:
            changed = db.execute("UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? "
                                 "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND "
                                 "metadata_location = ?", (new, expected, catalog, ns, name, expected)).rowcount
    finally:
        db.close()
    if changed != 1:
        raise PointerMoved(f"the catalog's pointer of {identifier} no longer names {expected}")
