"""The embedded catalog: one SQLite database that every engine sees.

JVM clients (Iceberg's Java library, e.g. a Spark session or the harness's committer) reach it through
Iceberg's JdbcCatalog, pyiceberg through SqlCatalog (same table layout), and clients that speak only
REST (e.g. iceberg-rust, DuckDB) through a loopback REST server (`bench.core.catalog.rest`) in front of
the same database.  This module is the one place that knows catalog names, URIs and paths (S3
connection settings: `bench.core.catalog.s3`).

Where things are:
- the warehouse (table metadata and data files): a local directory, or `s3://bucket/prefix`;
- the local state (`catalog.db`, the dataset manifests `datasets/*.json` and baseline caches): in the
  warehouse directory when it is local; for an S3 warehouse in a local state directory derived from the
  URI, `<state root>/<bucket>-<hash of the URI>/`, where the state root is $BENCH_STATE_DIR or
  `./.bench/warehouses`.  Each S3 warehouse has its own catalog; losing the state directory loses the
  catalog (the files on S3 stay, unreferenced).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from pydantic import BaseModel, ConfigDict, Field

from bench.core.catalog import s3
from bench.core.errors import UserError
from bench.core.settings import env_settings

CATALOG_NAME = "bench"
NAMESPACE = "bench"
DEFAULT_STATE_ROOT = Path(".bench") / "warehouses"


def state_root() -> Path:
    env = env_settings().state_dir
    return (Path(env).expanduser() if env else Path.cwd() / DEFAULT_STATE_ROOT).resolve()


def state_dir_for(warehouse_uri: str) -> Path:
    """The local state directory of a remote warehouse: <state root>/<bucket>-<10 hex of the URI>."""
    bucket, _ = s3.split_s3_uri(warehouse_uri)
    digest = hashlib.sha256(warehouse_uri.encode()).hexdigest()[:10]
    return state_root() / f"{bucket}-{digest}"


def normalize_warehouse(warehouse: str | os.PathLike | None) -> str:
    """--warehouse (or $BENCH_WAREHOUSE, or ./warehouse) -> an absolute local path or `s3://bucket/prefix`."""
    text = str(warehouse or env_settings().warehouse or Path.cwd() / "warehouse").strip()
    if s3.is_s3(text):
        bucket, prefix = s3.split_s3_uri(text)
        return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
    if text.startswith("file:"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise UserError(f"--warehouse {text!r}: a file URI must name a local path (file:///dir)")
        text = url2pathname(parts.path)
    elif "://" in text:
        raise UserError(f"--warehouse {text!r}: use a local directory, a file:// URI or s3://bucket/prefix "
                        f"(scheme {urlsplit(text).scheme!r} is not supported)")
    return str(Path(text).expanduser().resolve())


class CatalogSettings(BaseModel):
    """Where the catalog and the warehouse are.  Part of every CompactionJob (no secrets: S3
    credentials come from the environment of the process that uses them, see bench.core.catalog.s3)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    warehouse: str  # absolute local path of the warehouse directory, or s3://bucket/prefix
    name: str = CATALOG_NAME
    namespace: str = NAMESPACE
    rest_uri: str | None = None  # set while a REST server (embedded or external) serves this catalog
    external_rest: bool = False  # True when the user pointed us at an external REST catalog
    properties: dict[str, str] = Field(default_factory=dict)
    state_dir: str | None = None  # local dir of catalog.db + dataset manifests (default: see above)

    @classmethod
    def for_warehouse(cls, warehouse: str | os.PathLike | None = None, **kwargs) -> CatalogSettings:
        """Settings for --warehouse (a directory, file:// URI or s3://bucket/prefix; None = default)."""
        wh = normalize_warehouse(warehouse)
        if s3.is_s3(wh) and "state_dir" not in kwargs:
            kwargs["state_dir"] = str(state_dir_for(wh))
        return cls(warehouse=wh, **kwargs)

    @property
    def is_remote(self) -> bool:
        """True when the warehouse is on S3."""
        return s3.is_s3(self.warehouse)

    @property
    def warehouse_path(self) -> Path:
        """The local warehouse directory (only for a local warehouse)."""
        if self.is_remote:
            raise ValueError(f"the warehouse {self.warehouse} is not a local directory "
                             "(use state_path for local state, warehouse_uri for the location)")
        return Path(self.warehouse)

    @property
    def state_path(self) -> Path:
        """Local directory holding catalog.db and datasets/ (the warehouse itself when it is local)."""
        if self.state_dir:
            return Path(self.state_dir)
        if self.is_remote:
            return state_dir_for(self.warehouse)
        return self.warehouse_path

    @property
    def datasets_path(self) -> Path:
        return self.state_path / "datasets"

    @property
    def sqlite_path(self) -> Path:
        return self.state_path / "catalog.db"

    @property
    def sqlalchemy_uri(self) -> str:
        return f"sqlite:///{self.sqlite_path}"

    @property
    def jdbc_uri(self) -> str:
        return f"jdbc:sqlite:{self.sqlite_path}"

    @property
    def warehouse_uri(self) -> str:
        if self.is_remote:
            return self.warehouse
        return self.warehouse_path.resolve().as_uri()

    @property
    def rest_warehouse(self) -> str:
        """What a REST client passes as `warehouse` to the loopback server (it accepts its path)."""
        return self.warehouse if self.is_remote else str(self.warehouse_path.resolve())

    def file_io_properties(self) -> dict[str, str]:
        """pyiceberg/iceberg-rust FileIO properties for this warehouse, from the environment (they may
        hold credentials: never record or show them)."""
        return s3.fileio_properties() if self.is_remote else {}

    def storage_description(self) -> dict:
        """Where the warehouse is, for results (no secrets)."""
        if not self.is_remote:
            return {"storage": "local", "warehouse": self.warehouse}
        return {"storage": "s3", "warehouse": self.warehouse, "state_dir": str(self.state_path),
                "s3": s3.S3Connection.from_env().describe()}

    def prepare_state(self) -> Path:
        """Create the local state directory (recording which warehouse it belongs to)."""
        path = self.state_path
        path.mkdir(parents=True, exist_ok=True)
        if self.is_remote:
            marker = path / "warehouse.json"
            if not marker.exists():
                marker.write_text(json.dumps({"warehouse": self.warehouse}) + "\n")
        return path

    def with_rest(self, uri: str, external: bool | None = None) -> CatalogSettings:
        update: dict = {"rest_uri": uri}
        if external is not None:
            update["external_rest"] = external
        return self.model_copy(update=update)

    def qualified(self, table: str) -> str:
        """'ns.t' for a table name or identifier in this catalog's namespace."""
        return table if "." in table else f"{self.namespace}.{table}"

    @property
    def lock_path(self) -> Path:
        """The warehouse lock (bench.core.lock): in the local state directory."""
        return self.state_path / ".bench.lock"

    def java_rest_properties(self) -> dict[str, str]:
        """Catalog properties for Iceberg Java's REST client (without the type key): an external catalog's URI and
        properties, or the loopback server of the embedded catalog with this warehouse's FileIO settings."""
        if not self.rest_uri:
            raise UserError(f"catalog {self.name!r} has no REST server (rest_uri unset)")
        if self.external_rest:
            return {"uri": str(self.rest_uri), **{k: str(v) for k, v in self.properties.items()}}
        props = {"uri": str(self.rest_uri), "warehouse": self.rest_warehouse}
        if self.is_remote:
            props.update(s3.S3Connection.from_env().java_catalog_properties())
        return props

    def java_catalog_properties(self) -> dict[str, str]:
        """Catalog properties for Iceberg's Java library (a JVM's JdbcCatalog on the SQLite file, or
        its REST client for an external catalog), without the catalog-impl/type key."""
        if self.external_rest:
            return self.java_rest_properties()
        # the catalog tables exist (pyiceberg's SqlCatalog creates them first); Iceberg's own check for
        # them (JdbcCatalog.initializeCatalogTables, 1.10) leaves a DatabaseMetaData result set open, which
        # holds a read lock on the SQLite file for the JVM's life and blocks every other writer's commit
        props = {"uri": self.jdbc_uri, "warehouse": self.warehouse_uri, "jdbc.init-catalog-tables": "false"}
        if self.is_remote:
            # S3 warehouse: Iceberg's S3FileIO (endpoint, path style, region; no keys: the AWS SDK reads
            # them from the environment or the instance role); needs iceberg-aws-bundle on the classpath
            props.update(s3.S3Connection.from_env().java_catalog_properties())
        return props


def load_sql_catalog(settings: CatalogSettings):
    """pyiceberg SqlCatalog over the embedded SQLite database (created if missing); it writes format v3 metadata
    too (bench.core.catalog.v3)."""
    from sqlalchemy.exc import OperationalError

    from bench.core.catalog.v3 import V3SqlCatalog

    settings.prepare_state()
    try:
        return V3SqlCatalog(settings.name, uri=settings.sqlalchemy_uri, warehouse=settings.warehouse_uri,
                          **settings.file_io_properties())
    except OperationalError as e:  # e.g. another process holds the SQLite file's lock: one line, not a traceback
        raise UserError(f"cannot open the catalog {settings.sqlalchemy_uri}: {e.orig or e}") from e


def load_catalog(settings: CatalogSettings):
    """The catalog the harness itself uses: REST when external, else the SQLite catalog."""
    if settings.external_rest and settings.rest_uri:
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog(settings.name, uri=settings.rest_uri,
                           **{**settings.file_io_properties(), **settings.properties})
    return load_sql_catalog(settings)
