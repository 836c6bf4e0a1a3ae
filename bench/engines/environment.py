"""An engine's own environment: an interpreter and pinned requirements apart from the harness's `.venv`.

An engine whose packages cannot live in the harness's environment (another Python version, a pin that
conflicts with the harness's) declares an `EngineEnvironment` (the class attribute `environment`).
`bench setup --engines NAME` (`make engines`) builds it once, from the package registry, into
`<cache>/engines/<name>/<key>/` (the key hashes the interpreter version and the pins, so a changed
declaration builds a new one); the runner then spawns the engine's worker (`bench.engines.worker`) under
that interpreter, with only the harness's own source directory added to its path: the worker imports
nothing but the harness's light modules and pydantic, which the engine's requirements pin.  An engine
without a declaration runs under the harness's interpreter, as always.

A built environment carries `env.json` (written last, so a half-built one has none): the interpreter,
its version and the version of every distribution installed, which `bench list` and `bench doctor`
show and every result of the engine records.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import UserError

ENV_FILE = "env.json"
RECIPE_VERSION = "1"  # bump when the build recipe below changes: it is part of the key
# the directory holding the harness's packages (bench/, datagen/, reports/): the worker's only path entry
# from the harness
SOURCE_ROOT = Path(__file__).resolve().parents[2]
PIP_TIMEOUT_S = 900


# what a Spark engine's worker needs beside its pyspark in an environment of Python 3.11 (py4j, the worker's pydantic
# and psutil, pyiceberg with pyarrow for the deletes inspector), every distribution pinned
SPARK_WORKER_PINS = (
    "py4j==0.10.9.7", "annotated-types==0.8.0", "cachetools==8.0.2", "certifi==2026.10.19.post1",
    "charset-normalizer==3.5.3", "click==8.5.1", "fsspec==2026.9.0", "idna==3.20", "markdown-it-py==4.3.0",
    "mdurl==0.1.2", "mmh3==5.3.1", "psutil==7.2.2", "pyarrow==26.0.1", "pydantic==2.14.4", "pydantic_core==2.50.5",
    "Pygments==2.21.0", "pyiceberg==0.12.0", "pyparsing==3.3.3", "pyroaring==1.2.0", "python-dateutil==4.0.0",
    "requests==2.34.2", "rich==15.0.0", "SQLAlchemy==2.1.9", "strictyaml==1.7.3", "tenacity==9.2.1",
    "typing-inspection==0.4.5", "typing_extensions==4.16.0", "tzdata==2026.6", "urllib3==2.8.0", "zstandard==0.25.0")


@dataclass(frozen=True)
class EngineEnvironment:
    """What an engine needs apart from the harness: a Python version (found on PATH as pythonX.Y or under
    pyenv) and pinned requirements (every distribution, transitive ones too: `pip install` resolves nothing
    new, so the environment is the same on every machine)."""

    python: str  # "3.12"
    requirements: tuple[str, ...]  # "name==version", every one pinned
    why: str  # why the engine cannot run in the harness's environment
    # distributions the registry has only as source (pyspark): installed from it; every other one from wheels only
    from_source: tuple[str, ...] = ()

    def key(self) -> str:
        text = json.dumps([RECIPE_VERSION, self.python, sorted(self.requirements)]
                          + ([sorted(self.from_source)] if self.from_source else []))
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def cache_root() -> Path:
    """Where engine environments are built: <the harness's cache root>/engines."""
    from bench.core.iceberg_java.runtime import cache_root as harness_cache

    return harness_cache() / "engines"


def env_dir(name: str, env: EngineEnvironment) -> Path:
    return cache_root() / name / env.key()


def install_command(name: str) -> str:
    return f"bench setup --engines {name} (or make engines ENGINE_ENVS={name})"


def find_python(version: str) -> Path | None:
    """An interpreter of `version` ("3.12"): pythonX.Y on PATH (not pyenv's shim: it answers only for the
    versions pyenv is told to use), else pyenv's newest X.Y.* ($PYENV_ROOT or ~/.pyenv)."""
    found = shutil.which(f"python{version}")
    if found and "/shims/" not in found:
        return Path(found)
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = sorted((p for p in root.glob(f"{version}.*") if (p / "bin" / "python").exists()),
                        key=lambda p: [int(x) if x.isdigit() else 0 for x in p.name.split(".")])
    return candidates[-1] / "bin" / "python" if candidates else None


def built(name: str, env: EngineEnvironment) -> dict | None:
    """The built environment's record (env.json), or None when it is not built."""
    try:
        record = json.loads((env_dir(name, env) / ENV_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return record if Path(record.get("python", "")).exists() else None


def interpreter(name: str, env: EngineEnvironment) -> Path:
    """The engine environment's python; UserError (one line, naming the command that builds it) when missing."""
    record = built(name, env)
    if record is None:
        raise UserError(f"engine {name} runs in its own environment (Python {env.python}), which is not built "
                        f"here: run `{install_command(name)}`")
    return Path(record["python"])


def worker_launch(name: str, env: EngineEnvironment | None) -> tuple[str, dict[str, str]]:
    """(the interpreter, environment variables to add) a worker of engine `name` starts with."""
    if env is None:
        return sys.executable, {}
    path = os.pathsep.join(filter(None, [str(SOURCE_ROOT), os.environ.get("PYTHONPATH", "")]))
    return str(interpreter(name, env)), {"PYTHONPATH": path, "PYTHONNOUSERSITE": "1"}


def _run(cmd: list[str], log: Path) -> None:
    with open(log, "ab") as out:
        out.write(f"$ {' '.join(cmd)}\n".encode())
        out.flush()
        rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=PIP_TIMEOUT_S).returncode
    if rc != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
        raise UserError(f"{cmd[0]} {' '.join(cmd[1:4])} ... failed (exit {rc}): {tail[0][:300]} (log: {log})")


def _norm(distribution: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return distribution.lower().replace("_", "-").replace(".", "-")


def _installed(python: Path) -> dict[str, str]:
    out = subprocess.run([str(python), "-c", "import importlib.metadata as m, json, sys; print(json.dumps("
                          "{'python': sys.version.split()[0], **{d.metadata['Name']: d.version for d in "
                          "m.distributions()}}))"], capture_output=True, text=True, check=True, timeout=60,
                         cwd=python.parent).stdout
    return json.loads(out)


def build(name: str, env: EngineEnvironment, force: bool = False) -> Iterator[str]:
    """Build the environment (once: a built one is kept unless `force`), saying what it does."""
    final = env_dir(name, env)
    if built(name, env) is not None and not force:
        yield f"engine {name}: environment ready ({final}, cached)"
        return
    base = find_python(env.python)
    if base is None:
        raise UserError(f"engine {name} needs Python {env.python} (python{env.python} on PATH or pyenv's "
                        f"{env.python}.x): install it, e.g. `pyenv install {env.python}`")
    t0 = time.perf_counter()
    shutil.rmtree(final, ignore_errors=True)
    final.parent.mkdir(parents=True, exist_ok=True)
    log = final.parent / f"{final.name}.build.log"
    log.unlink(missing_ok=True)
    yield f"engine {name}: building its environment (Python {env.python} from {base}; {len(env.requirements)} pins)"
    try:
        # built in place (a venv's scripts name their own directory); env.json, written last, marks it usable
        _run([str(base), "-m", "venv", str(final)], log)
        python = final / "bin" / "python"
        _run([str(python), "-m", "pip", "install", "-q", "--no-input", "--disable-pip-version-check",
              "--only-binary", ":all:", *(f"--no-binary={d}" for d in env.from_source), *env.requirements], log)
        versions = {_norm(k): v for k, v in _installed(python).items()}
        wrong = [r for r in env.requirements if versions.get(_norm(r.split("==")[0])) != r.split("==")[1]]
        if wrong:
            raise UserError(f"engine {name}: the environment does not hold the pinned {', '.join(wrong)} "
                            f"(found: {versions}); log: {log}")
        record = {"engine": name, "key": env.key(), "python": str(python), "base_python": str(base),
                  "requirements": list(env.requirements), "versions": versions,
                  "built_s": round(time.perf_counter() - t0, 1)}
        (final / ENV_FILE).write_text(json.dumps(record, indent=2))  # last: a half-built one has none
    except BaseException:
        shutil.rmtree(final, ignore_errors=True)
        raise
    yield f"engine {name}: environment ready ({final}, built in {record['built_s']} s)"


def describe(name: str, env: EngineEnvironment | None) -> str:
    """One line for `bench list`: where the engine runs and with what."""
    if env is None:
        return "the harness's environment"
    record = built(name, env)
    if record is None:
        return f"own environment (Python {env.python}): not built; run `{install_command(name)}`"
    versions = record.get("versions", {})
    pins = ", ".join(f"{r.split('==')[0]} {versions.get(_norm(r.split('==')[0]), '?')}" for r in env.requirements[:2])
    return f"own environment: Python {versions.get('python', env.python)}, {pins} ({env_dir(name, env)})"


def requirement(name: str, env: EngineEnvironment):
    """`bench doctor`'s line for the environment (a bench.core.requirements.Requirement)."""
    from bench.core.requirements import Requirement

    record = built(name, env)
    if record is None:
        return Requirement(f"own environment (Python {env.python}, {', '.join(env.requirements[:1])})", False,
                           "not built", f"run `{install_command(name)}`")
    versions = record.get("versions", {})
    return Requirement(f"own environment (Python {versions.get('python', env.python)})", True,
                       ", ".join(f"{r.split('==')[0]} {versions.get(_norm(r.split('==')[0]), '?')}"
                                 for r in env.requirements) + f" ({env_dir(name, env)})")
