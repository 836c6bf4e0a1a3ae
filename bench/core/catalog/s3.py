"""S3 connection settings: the standard AWS environment -> what each client needs.  The one place.

Read from the environment of the process that uses them (never stored in CatalogSettings, a job file or
a result, so no secret is written anywhere; the engine subprocess and the REST server inherit the
environment of the harness):

    AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL   an S3-compatible endpoint (MinIO, SeaweedFS, moto);
                                                 when set, path-style addressing is used
    AWS_REGION, else AWS_DEFAULT_REGION          region (us-east-1 when an endpoint is set without one)
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,    static credentials; without them each client uses the
    AWS_SESSION_TOKEN                            AWS default chain (instance role, ~/.aws, ...)

What each client gets:
    pyiceberg FileIO + iceberg-rust (`fileio_properties`): s3.endpoint, s3.region, client.region,
        s3.access-key-id, s3.secret-access-key, s3.session-token, s3.path-style-access and
        s3.force-virtual-addressing=false with an endpoint.  The loopback REST server hands the same
        to its clients in LoadTableResult.config (iceberg-compaction reads and writes with them).
    Iceberg's Java S3FileIO (`java_catalog_properties`, for every JVM that opens the catalog): io-impl,
        s3.endpoint, s3.path-style-access, client.region, and no keys: the AWS SDK reads them from the
        environment itself.
    pyarrow (`filesystem`): an S3FileSystem for datagen's `reset` and the verifier's footer reads.
    DuckDB (`duckdb_secret_sql`): an S3 secret for read_parquet and the iceberg attach; without static
        keys the default chain is resolved with botocore (DuckDB's own credential chain needs its aws
        extension, which the harness does not ship).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from bench.core.errors import UserError
from bench.core.sql import literal as _q

SCHEME = "s3"
DEFAULT_REGION_WITH_ENDPOINT = "us-east-1"
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"


def is_s3(uri: str | None) -> bool:
    return bool(uri) and str(uri).startswith(f"{SCHEME}://")


def split_s3_uri(uri: str) -> tuple[str, str]:
    """'s3://bucket/a/b/' -> ('bucket', 'a/b'); UserError when it is not a usable S3 URI."""
    parts = urlsplit(uri)
    bucket = parts.netloc
    if parts.scheme != SCHEME or not bucket:
        raise UserError(f"{uri!r} is not an S3 URI (s3://bucket/prefix)")
    if parts.query or parts.fragment:
        raise UserError(f"S3 warehouse {uri!r} may not have a query or fragment")
    if not (3 <= len(bucket) <= 63) or not all(c.islower() or c.isdigit() or c in ".-" for c in bucket):
        raise UserError(f"S3 bucket name {bucket!r} is not valid (3-63 lower-case letters, digits, '.', '-')")
    return bucket, parts.path.strip("/")


@dataclass(frozen=True)
class S3Connection:
    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> S3Connection:
        env = os.environ if env is None else env
        endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").strip() or None
        if endpoint and urlsplit(endpoint).scheme not in ("http", "https"):
            raise UserError(f"AWS_ENDPOINT_URL(_S3) {endpoint!r} must start with http:// or https://")
        region = (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "").strip() or None
        if endpoint and not region:
            region = DEFAULT_REGION_WITH_ENDPOINT
        key = env.get("AWS_ACCESS_KEY_ID") or None
        secret = env.get("AWS_SECRET_ACCESS_KEY") or None
        if bool(key) != bool(secret):
            raise UserError("set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither (then the "
                            "AWS default credential chain is used, e.g. the instance role)")
        return cls(endpoint, region, key, secret, env.get("AWS_SESSION_TOKEN") or None)

    @property
    def static_keys(self) -> bool:
        return bool(self.access_key_id and self.secret_access_key)

    def describe(self) -> str:
        """For logs and results: no secret."""
        creds = ("static keys from the environment" + (" with a session token" if self.session_token else "")
                 if self.static_keys else "the AWS default credential chain")
        return (f"endpoint {self.endpoint or 'AWS (default)'}, region {self.region or 'resolved per bucket'}, "
                f"credentials: {creds}")

    # -- pyiceberg and iceberg-rust (also what the REST server hands out) ---------------------------
    def fileio_properties(self) -> dict[str, str]:
        props: dict[str, str] = {}
        if self.endpoint:
            props["s3.endpoint"] = self.endpoint
            props["s3.path-style-access"] = "true"  # iceberg-rust, Java
            props["s3.force-virtual-addressing"] = "false"  # pyiceberg (pyarrow)
        if self.region:
            props["s3.region"] = self.region
            props["client.region"] = self.region
        if self.access_key_id and self.secret_access_key:
            props["s3.access-key-id"] = self.access_key_id
            props["s3.secret-access-key"] = self.secret_access_key
            if self.session_token:
                props["s3.session-token"] = self.session_token
        return props

    # -- Iceberg's Java library (S3FileIO, from iceberg-aws-bundle) -----------------------------------
    def java_catalog_properties(self) -> dict[str, str]:
        """Catalog properties for Iceberg's S3FileIO.  No keys: the AWS SDK v2 default chain reads
        AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN (or the instance role) itself."""
        props = {"io-impl": S3_FILE_IO}
        if self.endpoint:
            props["s3.endpoint"] = self.endpoint
            props["s3.path-style-access"] = "true"
        if self.region:
            props["client.region"] = self.region
        return props

    # -- pyarrow -------------------------------------------------------------------------------------
    def pyarrow_s3(self):
        return _pyarrow_s3(self)

    # -- DuckDB --------------------------------------------------------------------------------------
    def duckdb_secret_sql(self, name: str = "bench_s3", scope: str | None = None) -> str:
        """CREATE SECRET for DuckDB's httpfs.  Contains the credentials: never log it."""
        if self.access_key_id and self.secret_access_key:
            key, secret, token = self.access_key_id, self.secret_access_key, self.session_token
        else:
            key, secret, token = _default_chain_credentials()
        opts = ["TYPE s3", f"KEY_ID {_q(key)}", f"SECRET {_q(secret)}"]
        if token:
            opts.append(f"SESSION_TOKEN {_q(token)}")
        if self.region:
            opts.append(f"REGION {_q(self.region)}")
        if self.endpoint:
            u = urlsplit(self.endpoint)
            opts += [f"ENDPOINT {_q(u.netloc)}", "URL_STYLE 'path'",
                     f"USE_SSL {'true' if u.scheme == 'https' else 'false'}"]
        if scope:
            opts.append(f"SCOPE {_q(scope)}")
        return f"CREATE OR REPLACE SECRET {name} ({', '.join(opts)})"


def _default_chain_credentials() -> tuple[str, str, str | None]:
    """Credentials of the AWS default chain (instance role, ~/.aws, ...) via botocore."""
    try:
        import botocore.session
    except ImportError:
        raise UserError("no AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY set and botocore is not installed to "
                        "resolve the default credential chain for DuckDB: pip install boto3") from None
    creds = botocore.session.get_session().get_credentials()
    if creds is None:
        raise UserError("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where "
                        "the AWS default chain finds some (e.g. an instance role)")
    frozen = creds.get_frozen_credentials()
    return frozen.access_key, frozen.secret_key, frozen.token


_PYARROW_S3: dict[tuple, object] = {}


def _pyarrow_s3(conn: S3Connection):
    """One S3FileSystem per process and settings (a forked child makes its own)."""
    key = (os.getpid(), conn)
    if key not in _PYARROW_S3:
        _PYARROW_S3[key] = _new_pyarrow_s3(conn)
    return _PYARROW_S3[key]


def _new_pyarrow_s3(conn: S3Connection):
    from pyarrow.fs import S3FileSystem

    kwargs: dict = {"region": conn.region}
    if conn.endpoint:
        kwargs.update(endpoint_override=conn.endpoint, force_virtual_addressing=False)
    if conn.static_keys:
        kwargs.update(access_key=conn.access_key_id, secret_key=conn.secret_access_key,
                      session_token=conn.session_token)
    return S3FileSystem(**{k: v for k, v in kwargs.items() if v is not None})


def fileio_properties() -> dict[str, str]:
    """pyiceberg/iceberg-rust FileIO properties from this process's environment."""
    return S3Connection.from_env().fileio_properties()


def filesystem(uri: str):
    """(pyarrow FileSystem, path) for a file:// URI, a plain local path or an s3:// URI (with the S3
    settings of the environment)."""
    import pyarrow.fs as pafs

    if is_s3(uri):
        bucket, key = split_s3_uri(uri)
        return S3Connection.from_env().pyarrow_s3(), f"{bucket}/{key}".rstrip("/")
    if "://" not in uri and not uri.startswith("file:"):
        return pafs.LocalFileSystem(), uri
    if uri.startswith("file:"):
        # the path as Iceberg wrote it: never URI-decoded (a Hive-style directory of an identity partition holds
        # escapes such as %3A literally, and a space is not a URI's), so not through FileSystem.from_uri
        return pafs.LocalFileSystem(), uri[len("file://"):] if uri.startswith("file://") else uri[len("file:"):]
    return pafs.FileSystem.from_uri(uri)
