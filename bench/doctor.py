"""`bench doctor`: check every prerequisite at once and list every missing piece with its fix."""

from __future__ import annotations

import os
import shutil

import click

from bench.engines import engine_names, get_engine, parse_engines
from bench.engines.base import Requirement, module_requirement


def harness_requirements() -> list[Requirement]:
    reqs = [module_requirement(m, "run `make setup` (installs the project into .venv)")
            for m in ("pyiceberg", "pyarrow", "duckdb", "psutil", "sqlalchemy")]
    for ext in ("duckdb_extension_iceberg", "duckdb_extension_avro", "duckdb_extension_httpfs"):
        reqs.append(module_requirement(ext, "run `make setup` (DuckDB extensions for the verifier)"))
    free = shutil.disk_usage(os.getcwd()).free
    reqs.append(Requirement("free disk in the working directory", free > 2 * 1024**3,
                            f"{free / 1024**3:.1f} GiB free", "free some space or use --warehouse elsewhere"))
    return reqs


def run_doctor(engines: str | None) -> int:
    names = parse_engines(engines) if engines else engine_names()
    sections: list[tuple[str, list[Requirement]]] = [("harness", harness_requirements())]
    for n in names:
        try:
            sections.append((f"engine {n}", get_engine(n).requirements()))
        except ImportError as e:  # the engine module itself cannot import
            sections.append((f"engine {n}", [Requirement(f"engine module {n}", False, str(e),
                                                         "run `make setup`")]))
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
