"""The REST catalog operations over one pyiceberg SqlCatalog, without HTTP.

Each operation of `CatalogService` takes parsed inputs (namespace/identifier tuples, pyiceberg's
request models or the few defined here) and returns `(status, model)`: a pydantic model to send as
JSON, or None for an empty answer (204).  Errors a client can act on come back the same way, as
`(code, ErrorResponse)` in the spec's error model `{"error": {"message", "type", "code"}}` with the
Java exception type names clients match on (`rest_error` is the mapping; the HTTP layer uses it for
request parsing too).  Any other exception propagates: a server error.

Concurrency: a commit is SqlCatalog.commit_table: it reloads the table, validates every requirement
against the current metadata, writes a new metadata file and swaps the pointer with
`UPDATE ... WHERE metadata_location = <the one validated against>`.  A failed requirement or a lost
race (also against a JVM client committing through JDBC to the same file) is 409
CommitFailedException, never a silent overwrite.  Several tables cannot be committed atomically on
SQLite through SqlCatalog, so a multi-table transaction is 501.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, Field, ValidationError
from pyiceberg import exceptions as ex
from pyiceberg.catalog.rest import (
    ConfigResponse,
    CreateTableRequest,
    ListNamespaceResponse,
    ListTableResponseEntry,
    ListTablesResponse,
    NamespaceResponse,
    RegisterTableRequest,
    TableResponse,
    UpdateNamespacePropertiesResponse,
)
from pyiceberg.catalog.rest.response import ErrorResponse, ErrorResponseMessage
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.table import CommitTableRequest, TableIdentifier
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.table.update import AssertCreate
from pyiceberg.typedef import IcebergBaseModel

from bench.core.catalog import CatalogSettings, load_sql_catalog

NAMESPACE_SEPARATOR = "\x1f"  # the spec's multi-level namespace separator in paths (%1F)

Namespace = tuple[str, ...]
Identifier = tuple[str, ...]  # namespace levels + table name
Result = tuple[int, BaseModel | None]


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------

class RestError(Exception):
    """An error answered with the REST error model."""

    def __init__(self, code: int, type_: str, message: str):
        super().__init__(message)
        self.code, self.type, self.message = code, type_, message


def error_model(code: int, type_: str, message: str) -> ErrorResponse:
    return ErrorResponse(error=ErrorResponseMessage(message=message, type=type_, code=code))


_ERRORS: list[tuple[type[BaseException], int, str]] = [
    (ex.NoSuchTableError, 404, "NoSuchTableException"),
    (ex.NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
    (ex.NoSuchViewError, 404, "NoSuchViewException"),
    (ex.NoSuchIdentifierError, 404, "NoSuchTableException"),
    (ex.TableAlreadyExistsError, 409, "AlreadyExistsException"),
    (ex.NamespaceAlreadyExistsError, 409, "AlreadyExistsException"),
    (ex.NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"),
    (ex.CommitFailedException, 409, "CommitFailedException"),
    (ValidationError, 400, "BadRequestException"),
    (json.JSONDecodeError, 400, "BadRequestException"),
    (ValueError, 400, "BadRequestException"),  # pyiceberg raises ValueError for invalid updates
    (NotImplementedError, 501, "UnsupportedOperationException"),
]


def rest_error(exc: BaseException) -> tuple[int, ErrorResponse] | None:
    """The REST answer for a pyiceberg/pydantic/request error, or None for anything else (a server
    error: the caller answers 500 ServiceFailureException)."""
    if isinstance(exc, RestError):
        return exc.code, error_model(exc.code, exc.type, exc.message)
    for cls, code, type_ in _ERRORS:
        if isinstance(exc, cls):
            msg = str(exc).strip() or cls.__name__
            msg = msg[:2000] if code == 400 else msg.splitlines()[0]
            return code, error_model(code, type_, msg)
    return None


_Op = TypeVar("_Op", bound=Callable[..., Result])


def _operation(fn: _Op) -> _Op:
    """A REST operation: known errors become their (code, ErrorResponse) answer."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Result:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            answer = rest_error(exc)
            if answer is None:
                raise
            return answer

    return wrapper  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# inputs and outputs pyiceberg has no model for
# --------------------------------------------------------------------------------------------

def parse_namespace(segment: str) -> Namespace:
    """A namespace as it appears in a path or `?parent=` (levels joined by %1F), percent-decoded."""
    text = unquote(segment)
    parts = tuple(text.split(NAMESPACE_SEPARATOR))
    if not all(parts):
        raise RestError(400, "BadRequestException", f"invalid namespace {text!r}")
    return parts


class ConfigResult(IcebergBaseModel):
    """GET /v1/config.  (pyiceberg's ConfigResponse parses it, but would serialize the endpoints as
    objects rather than the spec's "METHOD /path" strings.)"""

    defaults: dict[str, str] = Field(default_factory=dict)
    overrides: dict[str, str] = Field(default_factory=dict)
    endpoints: list[str] = Field(default_factory=list)


class CreateNamespaceRequest(IcebergBaseModel):
    namespace: list[str]
    properties: dict[str, str] = Field(default_factory=dict)


class UpdateNamespacePropertiesRequest(IcebergBaseModel):
    removals: list[str] | None = None
    updates: dict[str, str] | None = None


class RenameTableRequest(IcebergBaseModel):
    source: TableIdentifier
    destination: TableIdentifier


class CommitTransactionRequest(IcebergBaseModel):
    """The table changes stay unparsed here: a transaction of several tables is refused (501)
    whatever they hold; the one change of a single-table transaction is parsed by the operation."""

    table_changes: list[dict[str, Any]] = Field(alias="table-changes", default_factory=list)


def create_table_request(raw: dict[str, Any]) -> CreateTableRequest:
    """pyiceberg's CreateTableRequest from the JSON body (fields optional in the spec but
    required-and-nullable in pyiceberg get their null)."""
    raw = dict(raw)
    for key in ("location", "partition-spec", "write-order"):
        raw.setdefault(key, None)
    return CreateTableRequest.model_validate(raw)


def register_table_request(raw: dict[str, Any]) -> RegisterTableRequest:
    return RegisterTableRequest.model_validate({"overwrite": False, **raw})


def commit_table_request(raw: dict[str, Any], identifier: Identifier) -> CommitTableRequest:
    """A table commit; the body's identifier is optional on the table's own endpoint, where the
    path is authoritative."""
    return CommitTableRequest.model_validate(
        {**raw, "identifier": {"namespace": list(identifier[:-1]), "name": identifier[-1]}})


class _Named:
    """What SqlCatalog.commit_table needs of its `table` argument: the identifier (it reloads the
    current table itself, inside its compare-and-swap)."""

    def __init__(self, identifier: Identifier):
        self._identifier = identifier

    def name(self) -> Identifier:
        return self._identifier


def _dotted(parts: Sequence[str]) -> str:
    return ".".join(parts)


# --------------------------------------------------------------------------------------------
# the service
# --------------------------------------------------------------------------------------------

class CatalogService:
    """The REST operations over `settings`' SQLite catalog.  `endpoints` is what GET /v1/config
    advertises (the HTTP layer's route table).  Safe to call from several threads: every operation
    runs on SqlCatalog's own connections and transactions."""

    def __init__(self, settings: CatalogSettings, endpoints: Sequence[str] = ()):
        self.settings = settings
        self.catalog = load_sql_catalog(settings)
        self.endpoints = list(endpoints)
        ConfigResponse.model_validate({"endpoints": self.endpoints})  # clients must be able to parse them
        # FileIO properties handed to clients with every table (LoadTableResult.config): for an S3
        # warehouse the endpoint, region and credentials of this process's environment, so
        # iceberg-rust and DuckDB reach the files (the REST spec's way to vend storage settings;
        # the server binds loopback only)
        self.table_config = settings.file_io_properties()
        # import what the first load/commit needs now (~0.5 s), not inside the first timed request
        import pyiceberg.io.pyarrow  # noqa: F401

    def close(self) -> None:
        self.catalog.engine.dispose()

    # -- config ---------------------------------------------------------------------------------
    @_operation
    def get_config(self, warehouse: str | None = None) -> Result:
        if warehouse is not None and not self._is_our_warehouse(warehouse):
            raise RestError(400, "BadRequestException",
                            f"unknown warehouse {warehouse!r}; this server serves "
                            f"{self.settings.warehouse_uri} (catalog {self.settings.name!r})")
        return 200, ConfigResult(overrides={"warehouse": self.settings.warehouse_uri}, endpoints=self.endpoints)

    def _is_our_warehouse(self, asked: str) -> bool:
        """The catalog name, the warehouse URI or (local warehouse) its path, as a path or file URI."""
        if asked.rstrip("/") in (self.settings.name, self.settings.warehouse_uri.rstrip("/")):
            return True
        if self.settings.is_remote:
            return False
        ours = self.settings.warehouse_path.resolve()
        path = urlsplit(asked).path if asked.startswith("file:") else asked
        try:
            return Path(unquote(path)).resolve() == ours
        except (OSError, ValueError):
            return False

    # -- namespaces -----------------------------------------------------------------------------
    @_operation
    def list_namespaces(self, parent: Namespace = ()) -> Result:
        if parent:
            self._require_namespace(parent)
        return 200, ListNamespaceResponse(namespaces=self.catalog.list_namespaces(parent))

    @_operation
    def create_namespace(self, req: CreateNamespaceRequest) -> Result:
        namespace = tuple(req.namespace)
        if not namespace or not all(namespace):
            raise RestError(400, "BadRequestException", "namespace must be a non-empty list of names")
        self.catalog.create_namespace(namespace, req.properties)
        return 200, NamespaceResponse(namespace=namespace,
                                      properties=self.catalog.load_namespace_properties(namespace))

    @_operation
    def load_namespace(self, namespace: Namespace) -> Result:
        return 200, NamespaceResponse(namespace=namespace,
                                      properties=self.catalog.load_namespace_properties(namespace))

    @_operation
    def namespace_exists(self, namespace: Namespace) -> Result:
        self._require_namespace(namespace)
        return 204, None

    @_operation
    def drop_namespace(self, namespace: Namespace) -> Result:
        self.catalog.drop_namespace(namespace)
        return 204, None

    @_operation
    def update_namespace_properties(self, namespace: Namespace, req: UpdateNamespacePropertiesRequest) -> Result:
        summary = self.catalog.update_namespace_properties(
            namespace, removals=set(req.removals or []), updates=req.updates or {})
        return 200, UpdateNamespacePropertiesResponse(removed=summary.removed, updated=summary.updated,
                                                      missing=summary.missing)

    # -- tables ---------------------------------------------------------------------------------
    @_operation
    def list_tables(self, namespace: Namespace) -> Result:
        self._require_namespace(namespace)
        return 200, ListTablesResponse(identifiers=[
            ListTableResponseEntry(namespace=tuple(i[:-1]), name=i[-1]) for i in self.catalog.list_tables(namespace)])

    @_operation
    def create_table(self, namespace: Namespace, req: CreateTableRequest) -> Result:
        """Create a table, or with `stage-create` only its metadata (committed later with
        assert-create, e.g. by a create-table transaction)."""
        self._require_namespace(namespace)
        identifier = (*namespace, req.name)
        kwargs: dict[str, Any] = dict(
            location=req.location, properties=req.properties,
            partition_spec=req.partition_spec or UNPARTITIONED_PARTITION_SPEC,
            sort_order=req.write_order or UNSORTED_SORT_ORDER)
        if req.stage_create:
            if self.catalog.table_exists(identifier):
                raise RestError(409, "AlreadyExistsException", f"Table already exists: {_dotted(identifier)}")
            staged = self.catalog._create_staged_table(identifier, req.table_schema, **kwargs)
            return 200, self._table_response(staged, staged=True)
        return 200, self._table_response(self.catalog.create_table(identifier, req.table_schema, **kwargs))

    @_operation
    def register_table(self, namespace: Namespace, req: RegisterTableRequest) -> Result:
        if req.overwrite:
            raise RestError(501, "UnsupportedOperationException", "register with overwrite is not supported")
        return 200, self._table_response(self.catalog.register_table((*namespace, req.name), req.metadata_location))

    @_operation
    def load_table(self, identifier: Identifier) -> Result:
        return 200, self._table_response(self.catalog.load_table(identifier))

    @_operation
    def table_exists(self, identifier: Identifier) -> Result:
        self._require_table(identifier)
        return 204, None

    @_operation
    def drop_table(self, identifier: Identifier, purge: bool = False) -> Result:
        (self.catalog.purge_table if purge else self.catalog.drop_table)(identifier)
        return 204, None

    @_operation
    def rename_table(self, req: RenameTableRequest) -> Result:
        src = (*req.source.namespace.root, req.source.name)
        dst = (*req.destination.namespace.root, req.destination.name)
        self.catalog.rename_table(src, dst)
        return 204, None

    @_operation
    def commit_table(self, identifier: Identifier, req: CommitTableRequest) -> Result:
        """Commit `req`'s requirements and updates to `identifier` (req.identifier is ignored)."""
        return 200, self._commit(identifier, req)

    @_operation
    def commit_transaction(self, req: CommitTransactionRequest) -> Result:
        if len(req.table_changes) != 1:
            raise RestError(501, "UnsupportedOperationException",
                            f"this catalog commits one table per transaction atomically, not {len(req.table_changes)}")
        change = CommitTableRequest.model_validate(req.table_changes[0])
        self._commit((*change.identifier.namespace.root, change.identifier.name), change)
        return 204, None

    # -- helpers --------------------------------------------------------------------------------
    def _require_namespace(self, namespace: Namespace) -> None:
        if not self.catalog.namespace_exists(namespace):
            raise RestError(404, "NoSuchNamespaceException", f"Namespace does not exist: {_dotted(namespace)}")

    def _require_table(self, identifier: Identifier) -> None:
        if not self.catalog.table_exists(identifier):
            raise RestError(404, "NoSuchTableException", f"Table does not exist: {_dotted(identifier)}")

    def _commit(self, identifier: Identifier, req: CommitTableRequest):
        if not any(isinstance(r, AssertCreate) for r in req.requirements):
            self._require_table(identifier)
        # SqlCatalog.commit_table validates the requirements against the freshly loaded metadata and
        # swaps the metadata pointer only if it is still the validated one -> CommitFailedException.
        return self.catalog.commit_table(_Named(identifier), tuple(req.requirements), tuple(req.updates))

    def _table_response(self, table, metadata_location: str | None = None, staged: bool = False) -> TableResponse:
        loc = None if staged else (metadata_location or table.metadata_location)
        return TableResponse.model_validate({"metadata-location": loc, "metadata": table.metadata,
                                             "config": dict(self.table_config)})
