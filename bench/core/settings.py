"""The harness's settings from its environment: every BENCH_* variable a user (or the harness, for its own child
processes) may set, its meaning and its default, in one place.  Nothing else in the package reads a BENCH_*
setting; a module asks `env_settings()` for the value at the point of use, so that a child process started with
another environment, and a test that sets one, see what they set.

Not settings, and not here: the command line's options that take a default from the environment (`--cache`,
`--readers`: click's `envvar=` in bench.cli), the runner's handshake with its engine workers (bench.engines.worker),
and a cloud instance's BENCH_* variables, which Terraform writes and terraform/bootstrap.sh reads."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from bench.core.errors import UserError

GiB = 1024**3


def _var(name: str, doc: str) -> dict:
    return {"env": name, "doc": doc}


@dataclass(frozen=True)
class Settings:
    warehouse: str | None = field(default=None, metadata=_var(
        "BENCH_WAREHOUSE", "the warehouse when --warehouse is not given (else ./warehouse)"))
    results_dir: str | None = field(default=None, metadata=_var(
        "BENCH_RESULTS", "the results directory when --results-dir is not given (else ./results)"))
    state_dir: str | None = field(default=None, metadata=_var(
        "BENCH_STATE_DIR", "where a remote warehouse's local state goes (else ./.bench/warehouses)"))
    cache_dir: str | None = field(default=None, metadata=_var(
        "BENCH_CACHE_DIR", "the harness's cache: jars, engines' environments (else the user's cache directory)"))
    maven_repo: str | None = field(default=None, metadata=_var(
        "BENCH_MAVEN_REPO", "a Maven Central mirror `bench setup` fetches the jars from"))
    instance_type: str | None = field(default=None, metadata=_var(
        "BENCH_INSTANCE_TYPE", "the instance type a result records it ran on (set on the cloud's instances)"))
    profile_dir: str | None = field(default=None, metadata=_var(
        "BENCH_PROFILE_DIR", "where engine profiles are read from (else scenarios/profiles)"))
    duckdb_threads: str = field(default="", metadata=_var(
        "BENCH_DUCKDB_THREADS", "DuckDB's threads per connection (else a thread per core it sees)"))
    selfcheck_dir: str | None = field(default=None, metadata=_var(
        "BENCH_SELFCHECK_DIR", "where `bench selfcheck` puts its temporary warehouses (else the system's temp dir)"))
    setup_read_allowance: int = field(default=GiB, metadata=_var(
        "BENCH_SETUP_READ_ALLOWANCE", "bytes an engine may read while it starts before its reads count as input"))
    extra_engines: str = field(default="", metadata=_var(
        "BENCH_EXTRA_ENGINES", "more engines, name=module:Class,... (bench.engines)"))
    spark_driver_host: str | None = field(default=None, metadata=_var(
        "BENCH_SPARK_DRIVER_HOST", "the address a Spark cluster's workers reach the driver at"))
    aws_state_dir: str | None = field(default=None, metadata=_var(
        "BENCH_AWS_STATE_DIR", "where `bench aws` keeps Terraform's state (else .cache/aws in the project)"))
    terraform: str = field(default="terraform", metadata=_var(
        "BENCH_TERRAFORM", "the Terraform executable `bench aws` runs"))
    tf_plugin_dir: str | None = field(default=None, metadata=_var(
        "BENCH_TF_PLUGIN_DIR", "the local Terraform provider `bench aws rehearse` applies with"))
    phase_log: str | None = field(default=None, metadata=_var(
        "BENCH_PHASE_LOG", "a file each progress task's name is appended to when it starts (a supervisor's clock)"))


def env_name(name: str) -> str:
    """The environment variable of the setting `name` (for a process that sets it for a child)."""
    return next(f.metadata["env"] for f in fields(Settings) if f.name == name)


def env_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings as the environment states them now; an empty variable counts as unset."""
    env = os.environ if environ is None else environ
    values: dict = {}
    for f in fields(Settings):
        raw = env.get(f.metadata["env"], "").strip()
        if raw and f.type == "int":
            if not raw.isdigit():
                raise UserError(f"${f.metadata['env']}={raw!r}: give a whole number (or unset it)")
            values[f.name] = int(raw)
        elif raw:
            values[f.name] = raw
    return Settings(**values)
