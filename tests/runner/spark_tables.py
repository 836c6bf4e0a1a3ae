"""Tables written by Spark (the harness's line, Iceberg's Java writer) into a catalog and directory of their own, as
a user's tables are: the input of `bench run --source-catalog`.  One Spark session writes them all (a JVM start is most
of the cost): each a day partition of id, name and day with three INSERTs, so every partition holds three
small files (fewer than Spark's min-input-files default of five)."""

from __future__ import annotations

from pathlib import Path

from bench.core.catalog import CatalogSettings, load_catalog

DAYS = ("2026-03-01", "2026-03-02", "2026-03-03")
INSERTS = 3  # each INSERT writes one file per day partition
ROWS = 20  # per INSERT and day


def _values(batch: int) -> str:
    rows = []
    for d, day in enumerate(DAYS):
        for i in range(ROWS):
            key = (batch * len(DAYS) + d) * ROWS + i
            rows.append(f"({key}, {'NULL' if key % 9 == 0 else repr(f'name-{key}')}, DATE '{day}')")
    return ", ".join(rows)


def make_spark_tables(root: Path, tables: dict[str, dict[str, str]]) -> Path:
    """The tables `shop.NAME` of `tables` (NAME -> {"format-version": ..., "delete": WHERE or ""}) in a SQLite
    catalog under `root`; a table with a delete gets one DELETE ... WHERE, merge-on-read (position deletes in
    v2, a deletion vector in v3).  Returns the catalog YAML file for --source-catalog."""
    from tests.spark_session import spark_session

    (root / "lake").mkdir(parents=True, exist_ok=True)
    settings = CatalogSettings.for_warehouse(root / "lake")
    load_catalog(settings)  # its SQLite tables, as the harness's catalog has them
    with spark_session(settings) as spark:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {settings.name}.shop")
        for name, spec in tables.items():
            t = f"{settings.name}.shop.{name}"
            spark.sql(f"CREATE TABLE {t} (id BIGINT, name STRING, day DATE) USING iceberg PARTITIONED BY (day) "
                      f"TBLPROPERTIES ('format-version'='{spec['format-version']}', "
                      "'write.delete.mode'='merge-on-read')")
            for batch in range(INSERTS):
                spark.sql(f"INSERT INTO {t} VALUES {_values(batch)}")
            if spec.get("delete"):
                spark.sql(f"DELETE FROM {t} WHERE {spec['delete']}")
    cfg = root / "source.yaml"
    cfg.write_text(f"catalog:\n  {settings.name}:\n    type: sql\n    uri: {settings.sqlalchemy_uri}\n"
                   f"    warehouse: file://{settings.warehouse}\n")
    return cfg
