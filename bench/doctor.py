"""`bench doctor`: check every prerequisite at once and list every missing piece with its fix."""

from __future__ import annotations

import os
import shutil

import click

from bench.core.iceberg_java import runtime as iceberg_runtime
from bench.core.requirements import Requirement, module_requirement
from bench.engines import engine_names, get_engine, parse_engines


def harness_requirements() -> list[Requirement]:
    reqs = [module_requirement(m, "run `make setup` (installs the project into .venv)")
            for m in ("pyiceberg", "pyarrow", "duckdb", "psutil", "sqlalchemy")]
    for ext in ("duckdb_extension_iceberg", "duckdb_extension_avro", "duckdb_extension_httpfs"):
        reqs.append(module_requirement(ext, "run `make setup` (DuckDB extensions for the verifier)"))
    # Iceberg's Java library: the deletes datagen commits through it
    reqs += [Requirement(f"iceberg java: {r.name}", r.ok, r.detail, r.fix) for r in iceberg_runtime.requirements()]
    free = shutil.disk_usage(os.getcwd()).free
    reqs.append(Requirement("free disk in the working directory", free > 2 * 1024**3,
                            f"{free / 1024**3:.1f} GiB free", "free some space or use --warehouse elsewhere"))
    return reqs


def s3_bucket_requirement(settings) -> Requirement:
    """Can this machine list the warehouse prefix (endpoint, credentials, permissions)?"""
    from bench.core.catalog.s3 import S3Connection, split_s3_uri

    bucket, prefix = split_s3_uri(settings.warehouse)
    conn = S3Connection.from_env()
    try:
        import boto3
        from botocore.config import Config

        client = boto3.client("s3", endpoint_url=conn.endpoint, region_name=conn.region,
                              config=Config(connect_timeout=3, read_timeout=5, retries={"max_attempts": 1}))
        resp = client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/" if prefix else "", MaxKeys=1)
        detail = f"s3://{bucket}/{prefix} listed ({resp.get('KeyCount', 0)} object(s) seen); {conn.describe()}"
        return Requirement("S3 warehouse reachable", True, detail)
    except Exception as e:  # noqa: BLE001 - any failure is the answer
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        return Requirement("S3 warehouse reachable", False, f"{type(e).__name__}: {msg[:300]}; {conn.describe()}",
                           "check AWS_ENDPOINT_URL_S3/AWS_REGION/credentials and that the bucket exists")


def warehouse_section(names: list[str]) -> tuple[str, list[Requirement]] | None:
    """For an S3 warehouse in $BENCH_WAREHOUSE: S3 settings, reachability, and what each engine and the
    deletes generator need to use it (Spark: online only).  None for a local warehouse."""
    from bench.core.catalog import CatalogSettings
    from bench.core.errors import UserError

    try:
        settings = CatalogSettings.for_warehouse(None)
        if not settings.is_remote:
            return None
        settings.storage_description()  # invalid S3 settings in the environment -> UserError
    except UserError as e:
        return "warehouse ($BENCH_WAREHOUSE)", [Requirement("warehouse settings", False, str(e),
                                                             "fix BENCH_WAREHOUSE / the AWS_* variables")]
    from datagen.deletes import storage_requirement

    reqs = [s3_bucket_requirement(settings),
            Requirement("local state directory (catalog.db, dataset manifests)", True, str(settings.state_path))]
    deletes = storage_requirement(settings)
    if deletes is not None:
        reqs.append(deletes)
    for n in names:
        try:
            reqs += [Requirement(f"engine {n}: {r.name}", r.ok, r.detail, r.fix)
                     for r in get_engine(n).storage_requirements(settings)]
        except ImportError:
            pass  # reported in the engine's own section
    return f"warehouse {settings.warehouse} ($BENCH_WAREHOUSE)", reqs


def run_doctor(engines: str | None) -> int:
    names = parse_engines(engines) if engines else engine_names()
    sections: list[tuple[str, list[Requirement]]] = [("harness", harness_requirements())]
    for n in names:
        try:
            sections.append((f"engine {n}", get_engine(n).requirements()))
        except ImportError as e:  # the engine module itself cannot import
            sections.append((f"engine {n}", [Requirement(f"engine module {n}", False, str(e),
                                                         "run `make setup`")]))
    wh = warehouse_section(names)
    if wh is not None:
        sections.append(wh)
    failed = 0
    for title, reqs in sections:
        click.echo(f"{title}:")
        for r in reqs:
            mark = "ok  " if r.ok else "FAIL"
            click.echo(f"  [{mark}] {r.name}" + (f": {r.detail}" if r.detail else ""))
            if not r.ok:
                failed += 1
                click.echo(f"         fix: {r.fix}")
    click.echo("all prerequisites present" if not failed else f"{failed} problem(s) found")
    return 0 if not failed else 1
