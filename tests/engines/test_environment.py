"""An engine's own environment (bench/engines/environment.py), without building one: where the interpreter is
found, what a missing or half-built environment says.  (A built one runs repark: tests/engines/test_repark.py.)"""

from __future__ import annotations

import json
import os
import sys

import pytest

from bench.core.errors import UserError
from bench.engines import environment as envs

ENV = envs.EngineEnvironment(python="3.99", requirements=("thing==1.0",), why="test")


def _exe(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_interpreter_is_found_on_path_or_under_pyenv_never_its_shim(tmp_path, monkeypatch):
    _exe(tmp_path / "pyenv" / "shims" / "python3.99")
    monkeypatch.setenv("PATH", str(tmp_path / "pyenv" / "shims"))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    assert envs.find_python("3.99") is None  # only the shim: it answers for pyenv's chosen versions only
    for v in ("3.99.2", "3.99.10"):
        _exe(tmp_path / "pyenv" / "versions" / v / "bin" / "python")
    assert envs.find_python("3.99") == tmp_path / "pyenv" / "versions" / "3.99.10" / "bin" / "python"
    direct = _exe(tmp_path / "bin" / "python3.99")
    monkeypatch.setenv("PATH", f"{direct.parent}{os.pathsep}{tmp_path / 'pyenv' / 'shims'}")
    assert envs.find_python("3.99") == direct


def test_only_a_finished_environment_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path))
    assert envs.worker_launch("x", None) == (sys.executable, {})  # no declaration: the harness's interpreter
    with pytest.raises(UserError, match=r"run `bench setup --engines x"):
        envs.worker_launch("x", ENV)
    d = envs.env_dir("x", ENV)
    (d / "bin").mkdir(parents=True)
    assert envs.built("x", ENV) is None  # half-built: no env.json
    python = _exe(d / "bin" / "python")
    (d / envs.ENV_FILE).write_text(json.dumps({"python": str(python), "versions": {"python": "3.99.1",
                                                                                    "thing": "1.0"}}))
    exe, extra = envs.worker_launch("x", ENV)
    assert exe == str(python) and extra["PYTHONPATH"].split(os.pathsep)[0] == str(envs.SOURCE_ROOT)
    assert "own environment: Python 3.99.1, thing 1.0" in envs.describe("x", ENV)
    changed = envs.EngineEnvironment(python="3.99", requirements=("thing==1.1",), why="test")
    assert envs.env_dir("x", changed) != d and envs.built("x", changed) is None  # another pin: another build


def test_setup_builds_the_environments_side_by_side_and_reports_a_failure_after_all_ended(monkeypatch):
    """`bench setup --engines a,b,c` runs the builds at once (each is one pip process); every line arrives, and
    one failed build is raised once the others have finished, never leaving one half-done."""
    import threading
    import time

    from bench import engines

    running, peak, ended = set(), [0], []
    guard = threading.Lock()

    def fake_build(name, env, force=False):
        with guard:
            running.add(name)
            peak[0] = max(peak[0], len(running))
        yield f"engine {name}: building"
        time.sleep(0.5)
        with guard:
            running.discard(name)
            ended.append(name)
        if name == "repark":
            raise UserError("engine repark: pip failed")
        yield f"engine {name}: ready"

    monkeypatch.setattr(envs, "build", fake_build)
    lines = list(engines.build_environments("spark,spark-3.5,gluten"))
    assert lines[0] == "engine spark: runs in the harness's environment (nothing to build)"
    built = ("spark-3.5", "gluten")
    assert sorted(lines[1:]) == sorted(f"engine {n}: {w}" for n in built for w in ("building", "ready"))
    assert peak[0] == 2

    ended.clear()
    with pytest.raises(UserError, match="repark: pip failed"):
        list(engines.build_environments("repark,gluten"))
    assert sorted(ended) == ["gluten", "repark"]
