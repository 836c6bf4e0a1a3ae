"""`bench doctor`: check every prerequisite at once and list every missing piece with its fix; with
`--warehouse W`, find (and with `--repair`, repair) what a killed run left behind instead."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

from bench.core.children import pid_alive
from bench.core.errors import UserError
from bench.core.iceberg_java import runtime as iceberg_runtime
from bench.core.lock import describe
from bench.core.requirements import Requirement, module_requirement
from bench.engines import engine_names, get_engine, parse_engines


def harness_requirements() -> list[Requirement]:
    reqs = [module_requirement(m, "run `make setup` (installs the project into .venv)")
            for m in ("pyiceberg", "pyarrow", "duckdb", "psutil", "sqlalchemy")]
    for ext in ("duckdb_extension_iceberg", "duckdb_extension_avro", "duckdb_extension_httpfs"):
        reqs.append(module_requirement(ext, "run `make setup` (DuckDB extensions for the verifier)"))
    # Iceberg's Java library: the deletes datagen commits through it
    reqs += iceberg_runtime.requirements()
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
    sections: list[tuple[str, list[Requirement], bool]] = [("harness", harness_requirements(), False)]
    for n in names:
        try:
            engine = get_engine(n)
            # an engine with an environment of its own is optional until named (`bench setup --engines` builds it)
            optional = engines is None and engine.environment is not None
            sections.append((f"engine {n}" + (" (optional: its own environment)" if optional else ""),
                             engine.requirements(), optional))
        except ImportError as e:  # the engine module itself cannot import
            sections.append((f"engine {n}", [Requirement(f"engine module {n}", False, str(e),
                                                         "run `make setup`")], False))
    wh = warehouse_section(names)
    if wh is not None:
        sections.append((*wh, False))
    failed: set[tuple[str, str]] = set()  # a jar the harness and an engine both need is one problem
    for title, reqs, optional in sections:
        click.echo(f"{title}:")
        for r in reqs:
            mark = "ok  " if r.ok else "--  " if optional else "FAIL"
            click.echo(f"  [{mark}] {r.name}" + (f": {r.detail}" if r.detail else ""))
            if not r.ok:
                if not optional:
                    failed.add((r.name, r.detail))
                click.echo(f"         fix: {r.fix}")
    click.echo("all prerequisites present" if not failed else f"{len(failed)} problem(s) found")
    return 0 if not failed else 1


# -- `bench doctor --warehouse W [--repair]`: the leftovers of a killed run -------------------------------

@dataclass
class Leftover:
    """One thing a killed run left behind: what it is, and how to repair it (returns what it did)."""

    what: str
    repair: Callable[[], str]


def _holder_lock(settings) -> tuple[int, dict]:
    """Take the warehouse lock without a description (a check must not change it); UserError when a run
    holds it (its state is work in progress, not a leftover).  Returns (fd, the description found)."""
    path = settings.lock_path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        holder = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        holder = {}
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise UserError(f"the warehouse is in use by {describe(holder)}: a run in progress, not a leftover; "
                        "run the doctor when it has ended") from None
    return fd, holder


def _lock_leftover(fd: int, holder: dict) -> list[Leftover]:
    if not holder.get("pid") or pid_alive(int(holder["pid"])):
        return []

    def repair() -> str:
        os.ftruncate(fd, 0)
        return "cleared the lock's description (the kernel had released the lock itself)"
    return [Leftover(f"the warehouse lock names {describe(holder)}, which is no longer running", repair)]


def _dataset_leftovers(settings, catalog) -> list[Leftover]:
    """Each dataset's table parked out of the warehouse by a killed run: repaired by moving it back and
    restoring the dataset byte for byte (unpark, restore, point the catalog at its metadata)."""
    from bench.core.dataset import load_manifest, parked_dir, spare_dir
    from bench.core.table.state import restore

    found = []
    for manifest in sorted(settings.datasets_path.glob("*.json")):
        name = manifest.stem
        ds = load_manifest(settings.state_path, name)
        if ds is None:
            continue
        parked = parked_dir(settings.state_path, name)
        if not parked.exists():
            continue  # a table holding the last run's output is normal: every run restores it first
        what = f"table {ds.table} is parked at {parked} (a run was killed while an engine set up)"

        def repair(ds=ds, name=name, parked=parked) -> str:
            try:
                deleted, _, _ = restore(catalog, ds.table, ds.metadata_location, ds.location, ds.table_files,
                                        spare_dir(settings.state_path, name), parked)
            except RuntimeError as e:
                return f"could not restore {ds.table}: {e}"
            return f"restored {ds.table} to its dataset byte for byte ({deleted} file(s) not in it deleted)"
        found.append(Leftover(what, repair))
    return found


def _partial_leftovers(settings, catalog) -> list[Leftover]:
    """Datasets that datagen did not finish (it writes the manifest last): in the catalog, or a directory
    in the local warehouse, under a generated table's name without a manifest."""
    from bench.core.dataset import manifest_path
    from datagen.dataset import GENERATORS, drop_incomplete

    pattern = re.compile(rf"({'|'.join(GENERATORS)})_[a-z0-9]+_[0-9a-f]{{12}}")
    names: dict[str, Path | None] = {}
    try:
        for ident in catalog.list_tables(settings.namespace):
            names[ident[-1]] = None
    except Exception:  # noqa: BLE001 - no namespace yet: nothing generated
        pass
    if not settings.is_remote:
        for d in settings.warehouse_path.glob("*/*"):
            if d.is_dir() and pattern.fullmatch(d.name):
                names[d.name] = d
    found = []
    for name, directory in sorted(names.items()):
        if not pattern.fullmatch(name) or manifest_path(settings.state_path, name).exists():
            continue

        def repair(name=name, directory=directory) -> str:
            drop_incomplete(catalog, f"{settings.namespace}.{name}")
            if directory is not None and directory.exists():
                shutil.rmtree(directory)
            return f"dropped the partial dataset {name} and deleted its files"
        found.append(Leftover(f"dataset {name} is partial (no manifest: its generation was killed)", repair))
    return found


def _process_leftovers(settings) -> list[Leftover]:
    """Processes a harness started on this warehouse (its ledger: pid and start time, bench.core.children) still
    running while no run holds it; each ended with its process group when it led one."""
    import signal

    from bench.core.children import recorded_alive
    from bench.core.lock import PROCESS_LEDGER

    found = []
    for e in recorded_alive(settings.lock_path.parent / PROCESS_LEDGER):
        pid, group = int(e["pid"]), bool(e.get("group"))

        def repair(pid=pid, group=group) -> str:
            try:
                os.killpg(pid, signal.SIGKILL) if group else os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                return f"pid {pid} had ended"
            except PermissionError:
                return f"could not end pid {pid}: not permitted"
            return f"ended pid {pid}" + (" and its process group" if group else "")
        found.append(Leftover(f"process {pid} started by a harness (pid {e.get('by')}) still runs: "
                              f"{_cmdline(pid)[:160]}", repair))
    return found


def _cmdline(pid: int) -> str:
    import psutil

    try:
        return " ".join(psutil.Process(pid).cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "?"


def _left_alone(settings, ended: set[int]) -> str:
    """One line: the processes whose command line names the warehouse that the doctor does not end (no harness
    started them: a user's shell or editor), or '' when there are none."""
    import psutil

    needles = {str(settings.state_path), str(settings.state_path.resolve()), str(settings.warehouse)}
    # the path itself or below it, not another warehouse whose name it begins (wh vs wh2)
    named = re.compile("|".join(re.escape(n) + r"(?=$|[/\s'\"])" for n in sorted(needles)))
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    left = [f"{p.info['pid']} ({' '.join(p.info['cmdline'])[:60]})" for p in psutil.process_iter(["pid", "cmdline"])
            if p.info["pid"] not in mine | ended and named.search(" ".join(p.info["cmdline"] or []))]
    return (f"not ended (they name the warehouse, but no harness started them): pid {', '.join(left[:5])}"
            + (f" and {len(left) - 5} more" if len(left) > 5 else "")) if left else ""


def _machine_leftovers() -> list[Leftover]:
    from bench.telemetry.confine import stale_parents
    from bench.telemetry.limits import find_stale_cgroups, remove_stale_cgroups
    from bench.telemetry.netcap import stale_shaper

    found = []
    stale = find_stale_cgroups(stale_parents())
    if stale:
        found.append(Leftover(f"{len(stale)} cgroup(s) of a killed run: {', '.join(str(d) for d in stale[:4])}",
                              lambda: f"removed {len(remove_stale_cgroups(stale_parents()))} cgroup(s)"))
    if stale_shaper():
        found.append(Leftover("a loopback traffic shaper (tc qdisc) of a killed run",
                              lambda: "removed the shaper" if stale_shaper(remove=True) else "the shaper was gone"))
    return found


def run_leftovers(warehouse: str, repair: bool) -> int:
    """Report (and with `repair`, repair) what killed runs left on `warehouse` and this machine; 0 when
    nothing was found, 1 otherwise (also after repairing: it says what it did)."""
    from bench.core.catalog import CatalogSettings, load_catalog

    settings = CatalogSettings.for_warehouse(warehouse)
    if not settings.state_path.exists():
        raise UserError(f"--warehouse {warehouse}: no such warehouse (no state directory {settings.state_path})")
    fd, holder = _holder_lock(settings)
    try:
        catalog = load_catalog(settings)
        found = (_process_leftovers(settings) + _lock_leftover(fd, holder) + _dataset_leftovers(settings, catalog)
                 + _partial_leftovers(settings, catalog) + _machine_leftovers())
        for f in found:
            click.echo(f"found: {f.what}")
            if repair:
                click.echo(f"  repaired: {f.repair()}")
        alone = _left_alone(settings, {int(f.what.split()[1]) for f in found if f.what.startswith("process ")})
        if alone:
            click.echo(alone)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    if not found:
        click.echo(f"no leftovers of a killed run on {settings.warehouse}")
    elif not repair:
        click.echo(f"{len(found)} leftover(s); `bench doctor --warehouse {warehouse} --repair` repairs them")
    return 1 if found else 0
