"""The embedded catalog: one SQLite database that every engine sees.

Spark reaches it through Iceberg's JdbcCatalog, pyiceberg through SqlCatalog (same table layout),
and engines that speak only REST (iceberg-compaction, DuckDB) through a loopback REST server
(`bench.catalog.rest`) in front of the same database.  This module is the one place that knows
catalog names, URIs and paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

CATALOG_NAME = "bench"
NAMESPACE = "bench"


@dataclass(frozen=True)
class CatalogSettings:
    """Where the catalog and the warehouse are.  Serializable into a CompactionJob."""

    warehouse: str  # absolute local path of the warehouse directory
    name: str = CATALOG_NAME
    namespace: str = NAMESPACE
    rest_uri: str | None = None  # set while a REST server (embedded or external) serves this catalog
    external_rest: bool = False  # True when the user pointed us at an external REST catalog
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def warehouse_path(self) -> Path:
        return Path(self.warehouse)

    @property
    def sqlite_path(self) -> Path:
        return self.warehouse_path / "catalog.db"

    @property
    def sqlalchemy_uri(self) -> str:
        return f"sqlite:///{self.sqlite_path}"

    @property
    def jdbc_uri(self) -> str:
        return f"jdbc:sqlite:{self.sqlite_path}"

    @property
    def warehouse_uri(self) -> str:
        return self.warehouse_path.resolve().as_uri()

    def with_rest(self, uri: str) -> "CatalogSettings":
        return CatalogSettings(self.warehouse, self.name, self.namespace, uri, self.external_rest,
                               dict(self.properties))

    def to_dict(self) -> dict:
        return {"warehouse": self.warehouse, "name": self.name, "namespace": self.namespace,
                "rest_uri": self.rest_uri, "external_rest": self.external_rest,
                "properties": dict(self.properties)}

    @classmethod
    def from_dict(cls, d: dict) -> "CatalogSettings":
        return cls(**d)


def load_sql_catalog(settings: CatalogSettings):
    """pyiceberg SqlCatalog over the embedded SQLite database (created if missing)."""
    from pyiceberg.catalog.sql import SqlCatalog

    settings.warehouse_path.mkdir(parents=True, exist_ok=True)
    return SqlCatalog(settings.name, uri=settings.sqlalchemy_uri, warehouse=settings.warehouse_uri)


def load_catalog(settings: CatalogSettings):
    """The catalog the harness itself uses: REST when external, else the SQLite catalog."""
    if settings.external_rest and settings.rest_uri:
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog(settings.name, uri=settings.rest_uri, **settings.properties)
    return load_sql_catalog(settings)
