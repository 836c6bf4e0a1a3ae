"""DuckDB attached to the Iceberg REST catalog: the verifier's independent reader.

    from bench.catalog.rest import serve
    from bench.catalog.duck import duckdb_connect_iceberg

    with serve(settings) as served:                      # or any settings with rest_uri set
        con = duckdb_connect_iceberg(served)             # catalog attached as "ice"
        con.execute("SELECT count(*) FROM ice.bench.t").fetchone()

Nothing is downloaded at run time: the iceberg, avro and httpfs extensions are loaded from the PyPI
packages `duckdb-extension-iceberg/-avro/-httpfs` in site-packages, whose versions must equal DuckDB's
(all four are pinned to 1.5.5), and DuckDB's extension auto-install/auto-load is switched off.
Reads go through the REST catalog (`ATTACH ... (TYPE iceberg, ENDPOINT ..., AUTHORIZATION_TYPE
'none')`), so DuckDB sees exactly the snapshot the catalog serves, applying position and equality
deletes itself.  Only the loopback catalog without authentication is supported here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from bench.catalog import CatalogSettings
from bench.errors import UserError

EXTENSIONS = ("httpfs", "avro", "iceberg")  # iceberg needs avro (manifests); httpfs for remote IO
ALIAS = "ice"


def extension_path(name: str) -> Path:
    """The .duckdb_extension file shipped by PyPI `duckdb-extension-<name>` for this DuckDB."""
    import duckdb

    package = f"duckdb_extension_{name}"
    spec = importlib.util.find_spec(package)
    fix = f"pip install duckdb-extension-{name}=={duckdb.__version__} (or `make setup`)"
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"DuckDB extension package {package} is not installed: {fix}")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.is_file():
        found = sorted(p.parent.name for p in root.glob(f"extensions/*/{name}.duckdb_extension"))
        raise UserError(f"{package} has no extension for DuckDB {duckdb.__version__} "
                        f"(found {', '.join(found) or 'none'}): {fix}")
    return path


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def duckdb_connect_iceberg(settings: CatalogSettings, alias: str = ALIAS):
    """A new in-memory DuckDB connection with the REST catalog of `settings` attached as `alias`.

    Tables are `<alias>.<namespace>.<table>`, e.g. `ice.bench.t`.  `settings.rest_uri` must be set
    (run under `bench.catalog.rest.serve`).  Raises UserError when an extension is missing or the
    catalog cannot be attached.
    """
    import duckdb

    if not alias.isidentifier():
        raise UserError(f"invalid DuckDB catalog alias {alias!r}")
    if not settings.rest_uri:
        raise UserError("DuckDB reads Iceberg through a REST catalog, but no rest_uri is set "
                        "(serve the catalog with bench.catalog.rest.serve)")
    paths = [extension_path(name) for name in EXTENSIONS]
    con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    try:
        for path in paths:
            con.execute(f"LOAD {_quote(str(path))}")
        warehouse = (settings.properties.get("warehouse") if settings.external_rest else None) \
            or str(settings.warehouse_path.resolve())
        con.execute(f"ATTACH {_quote(warehouse)} AS {alias} (TYPE iceberg, "
                    f"ENDPOINT {_quote(settings.rest_uri)}, AUTHORIZATION_TYPE 'none')")
    except duckdb.Error as e:
        con.close()
        raise UserError(f"DuckDB could not attach the Iceberg REST catalog at {settings.rest_uri}: "
                        f"{str(e).splitlines()[0]}") from None
    return con
