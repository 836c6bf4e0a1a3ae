"""DuckDB attached to the Iceberg REST catalog: the verifier's independent reader.

    from bench.core.catalog.rest import serve
    from bench.core.catalog.duck import duckdb_connect_iceberg

    with serve(settings) as served:                      # or any settings with rest_uri set
        con = duckdb_connect_iceberg(served)             # catalog attached as "ice"
        con.execute("SELECT count(*) FROM ice.bench.t").fetchone()

Nothing is downloaded at run time: the iceberg, avro and httpfs extensions are loaded from the PyPI
packages `duckdb-extension-iceberg/-avro/-httpfs` in site-packages, whose versions must equal DuckDB's
(all four are pinned to 1.5.5), and DuckDB's extension auto-install/auto-load is switched off.
Reads go through the REST catalog (`ATTACH ... (TYPE iceberg, ENDPOINT ..., AUTHORIZATION_TYPE
'none')`), so DuckDB sees exactly the snapshot the catalog serves, applying position and equality
deletes itself.  Only the loopback catalog without authentication is supported here.

DuckDB runs a thread per core it sees, unless $BENCH_DUCKDB_THREADS says how many (`duckdb_config`): a
harness step confined to N cores is told N, as an engine is (`bench selfcheck scaling`).

For an S3 warehouse (`settings.is_remote`) the connection gets an S3 secret built from the AWS
environment (`bench.core.catalog.s3.S3Connection.duckdb_secret_sql`: endpoint, region, path-style URLs,
credentials), and the catalog is attached with ACCESS_DELEGATION_MODE 'none', so DuckDB reads with that
secret.  `duckdb_connect(remote=True)` gives a plain connection with the same secret, for read_parquet
over s3:// paths (the verifier).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from bench.core.catalog import CatalogSettings
from bench.core.errors import UserError
from bench.core.settings import env_name, env_settings
from bench.core.sql import literal as _quote

EXTENSIONS = ("httpfs", "avro", "iceberg")  # iceberg needs avro (manifests); httpfs for remote IO
ALIAS = "ice"


def duckdb_config(**config: Any) -> dict[str, Any]:
    """A new connection's configuration: `config`, with `threads` from $BENCH_DUCKDB_THREADS where it is set (a
    step confined to N cores is told N); unset, DuckDB's default, a thread per core it sees."""
    raw = env_settings().duckdb_threads
    if raw:
        threads = int(raw) if raw.isdigit() else 0
        if threads < 1:
            raise UserError(f"${env_name('duckdb_threads')}={raw!r}: give a number of threads, at least 1 "
                            "(or unset it)")
        config["threads"] = threads
    return config


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


# the extension files whose signatures DuckDB has checked in this process, by what identifies their bytes: DuckDB checks
# a file's signature at every LOAD (a third of a CPU-second for the three, 80 MB), and the verifier opens a connection
# per read
_checked: set[tuple[str, int, int, int]] = set()


def _identity(path: Path) -> tuple[str, int, int, int]:
    st = path.stat()
    return str(path), st.st_size, st.st_mtime_ns, st.st_ino


def connect_loading(paths: list[Path]):
    """A new in-memory connection with the extension files `paths` loaded; DuckDB checks their signatures, unless it
    has done so in this process for these very files (unchanged since: the same size, modification time and inode)."""
    import duckdb

    ids = [_identity(p) for p in paths]
    unchanged = {"allow_unsigned_extensions": True} if all(i in _checked for i in ids) else {}
    con = duckdb.connect(config=duckdb_config(autoinstall_known_extensions=False, autoload_known_extensions=False,
                                              **unchanged))
    try:
        for path in paths:
            con.execute(f"LOAD {_quote(str(path))}")
    except BaseException:
        con.close()
        raise
    _checked.update(ids)
    return con


def duckdb_connect(remote: bool = False):
    """A new in-memory DuckDB connection; with `remote`, httpfs is loaded (from its PyPI package) and an
    S3 secret from the AWS environment is created, so read_parquet reads s3:// paths."""
    import duckdb

    if not remote:
        return duckdb.connect(config=duckdb_config())
    con = connect_loading([extension_path("httpfs")])
    try:
        _create_s3_secret(con)
    except BaseException:
        con.close()
        raise
    return con


def _create_s3_secret(con) -> None:
    import duckdb

    from bench.core.catalog.s3 import S3Connection

    try:
        con.execute(S3Connection.from_env().duckdb_secret_sql())
    except duckdb.Error as e:  # the message could quote the statement, which holds the credentials
        raise UserError(f"DuckDB could not create its S3 secret ({type(e).__name__})") from None


def duckdb_connect_iceberg(settings: CatalogSettings, alias: str = ALIAS):
    """A new in-memory DuckDB connection with the REST catalog of `settings` attached as `alias`.

    Tables are `<alias>.<namespace>.<table>`, e.g. `ice.bench.t`.  `settings.rest_uri` must be set
    (run under `bench.core.catalog.rest.serve`).  Raises UserError when an extension is missing or the
    catalog cannot be attached.
    """
    import duckdb

    if not alias.isidentifier():
        raise UserError(f"invalid DuckDB catalog alias {alias!r}")
    if not settings.rest_uri:
        raise UserError("DuckDB reads Iceberg through a REST catalog, but no rest_uri is set "
                        "(serve the catalog with bench.core.catalog.rest.serve)")
    paths = [extension_path(name) for name in EXTENSIONS]
    try:
        con = connect_loading(paths)
    except duckdb.Error as e:
        raise UserError(f"DuckDB could not load its extensions ({', '.join(EXTENSIONS)}): "
                        f"{str(e).splitlines()[0]}") from None
    try:
        warehouse = (settings.properties.get("warehouse") if settings.external_rest else None) \
            or settings.rest_warehouse
        delegation = ""
        if settings.is_remote:
            _create_s3_secret(con)
            delegation = ", ACCESS_DELEGATION_MODE 'none'"  # read with our secret, not vended config
        con.execute(f"ATTACH {_quote(warehouse)} AS {alias} (TYPE iceberg, "
                    f"ENDPOINT {_quote(settings.rest_uri)}, AUTHORIZATION_TYPE 'none'{delegation})")
    except BaseException as e:
        con.close()
        if not isinstance(e, duckdb.Error):
            raise
        raise UserError(f"DuckDB could not attach the Iceberg REST catalog at {settings.rest_uri}: "
                        f"{str(e).splitlines()[0]}") from None
    return con
