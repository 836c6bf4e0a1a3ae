"""The harness's settings (bench.core.settings): every BENCH_* setting read there and nowhere else, an empty
variable unset, a malformed number refused in one line."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from bench.core.errors import UserError
from bench.core.settings import Settings, env_name, env_settings

ROOT = Path(__file__).resolve().parents[2]
# the runner's handshake with its engine workers: a protocol between two of the harness's processes, not a setting
PROTOCOL = {"BENCH_WORKER_CONTROL", "BENCH_WORKER_SESSION"}


def test_every_setting_is_read_in_one_place():
    """No module of the package reads a BENCH_* variable from the environment itself."""
    read = re.compile(r"""(environ\.get|environ\[|getenv)\(?\s*["'](BENCH_[A-Z0-9_]+)""")
    found = [f"{p.relative_to(ROOT)}: {m.group(2)}"
             for pkg in ("bench", "datagen", "reports") for p in sorted((ROOT / pkg).rglob("*.py"))
             if p.name != "settings.py" for m in read.finditer(p.read_text()) if m.group(2) not in PROTOCOL]
    assert not found, found
    names = [f.metadata["env"] for f in fields(Settings)]
    assert len(names) == len(set(names)) and all(n.startswith("BENCH_") for n in names)


def test_values_defaults_and_bad_input():
    assert env_settings({}) == Settings()
    s = env_settings({"BENCH_WAREHOUSE": " s3://b/w ", "BENCH_RESULTS": "", "BENCH_SETUP_READ_ALLOWANCE": "1024"})
    assert (s.warehouse, s.results_dir, s.setup_read_allowance, s.terraform) == ("s3://b/w", None, 1024, "terraform")
    assert env_name("duckdb_threads") == "BENCH_DUCKDB_THREADS"
    with pytest.raises(UserError, match=r"^\$BENCH_SETUP_READ_ALLOWANCE='1G': give a whole number"):
        env_settings({"BENCH_SETUP_READ_ALLOWANCE": "1G"})
