"""Engine registry: names -> engine classes.  The only place that knows which engines exist.

An engine is named in a run as NAME or NAME:PROFILE (`spark:standalone`, `risingwave:tuned`): the same
engine with the options of a named profile (`scenarios/profiles/NAME/PROFILE.yaml`, see
bench.scenario) over the scenario's.  The label is what results, statistics and reports group by.
More engines plug in without code changes: BENCH_EXTRA_ENGINES="name=module:Class,...".  Modules are
imported lazily, so a missing optional dependency of one engine does not break the others (and
`bench doctor` can report it).
"""

from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.core.errors import UserError
from bench.core.settings import env_settings

if TYPE_CHECKING:  # the registry stays light: the CLI reads it (FLAGS, the defaults) without loading engines
    from bench.engines.base import Engine

REGISTRY: dict[str, str] = {
    "spark": "bench.engines.spark.engine:SparkEngine",
    "risingwave": "bench.engines.risingwave:RisingWaveEngine",
    "arrow-floor": "bench.engines.arrow_floor:ArrowFloorEngine",
    "repark": "bench.engines.repark:ReparkEngine",
    "gluten": "bench.engines.gluten:GlutenEngine",
    "spark-3.5": "bench.engines.spark_35:Spark35Engine",
    "pyiceberg": "bench.engines.pyiceberg_maintenance:PyicebergEngine",
}
DEFAULT_ENGINES = ("spark", "risingwave", "arrow-floor")  # what `bench run` runs unless told otherwise
CAMPAIGN_ENGINES = ("spark", "risingwave")  # what sweeps, frontiers and plans compare unless told otherwise


@dataclass(frozen=True)
class EngineFlag:
    """A command-line shortcut for one engine option: `--<flag> VALUE` sets `<engine>.<option>`."""

    engine: str
    option: str
    choices: tuple[str, ...] | None  # None: any text
    help: str
    metavar: str = "VALUE"


# Declared here (not in the engine modules) so the CLI can offer them without importing engines.
FLAGS: dict[str, EngineFlag] = {
    "spark-mode": EngineFlag("spark", "mode", ("local", "standalone"),
                             "Spark deploy mode: local (one JVM, local[cores]) or standalone (a master and one "
                             "worker on 127.0.0.1, started and stopped by the run); same as --option "
                             "spark.mode=VALUE"),
    "spark-master": EngineFlag("spark", "master", None,
                               "A Spark standalone cluster that already runs (spark://HOST:PORT): Spark's driver runs "
                               "here, its executors on the cluster's workers (one each); a cluster on other "
                               "machines needs an S3 warehouse; same as --option spark.master=URL",
                               metavar="spark://HOST:PORT"),
}

for _spec in filter(None, (x.strip() for x in env_settings().extra_engines.split(","))):
    _name, _, _target = _spec.partition("=")
    if _target:
        REGISTRY[_name.strip()] = _target.strip()

LABEL = re.compile(r"([A-Za-z0-9_.-]+)(?::([A-Za-z0-9_-]+))?")


def engine_names() -> list[str]:
    return list(REGISTRY)


def _unknown(name: str) -> UserError:
    return UserError(f"unknown engine {name!r}; known engines: {', '.join(REGISTRY)}")


def split_label(label: str) -> tuple[str, str | None]:
    """'spark:tuned' -> ('spark', 'tuned'); 'spark' -> ('spark', None)."""
    m = LABEL.fullmatch(label.strip())
    if not m:
        raise UserError(f"engine {label!r}: write NAME or NAME:PROFILE (letters, digits, '-', '_', '.' in the name)")
    return m.group(1), m.group(2)


def base_name(label: str) -> str:
    return split_label(label)[0]


def engine_class(label: str) -> type[Engine]:
    name = base_name(label)
    try:
        target = REGISTRY[name]
    except KeyError:
        raise _unknown(name) from None
    module_name, cls_name = target.split(":")
    return getattr(importlib.import_module(module_name), cls_name)


def worker_launch(label: str) -> tuple[str, dict[str, str]]:
    """(the interpreter, environment variables to add) the engine's worker starts with: the harness's own, or
    the engine's environment (bench.engines.environment; UserError naming the command that builds it when it
    is not built)."""
    from bench.engines import environment

    return environment.worker_launch(base_name(label), engine_class(label).environment)


def build_environments(spec: str):
    """`bench setup --engines`: build the own environment of each engine named that declares one (an iterator of
    progress lines)."""
    import queue
    from concurrent.futures import ThreadPoolExecutor, wait

    from bench.engines import environment

    todo = []
    for name in dict.fromkeys(base_name(label) for label in parse_engines(spec)):
        env = engine_class(name).environment
        if env is None:
            yield f"engine {name}: runs in the harness's environment (nothing to build)"
        else:
            todo.append((name, env))
    if not todo:
        return
    # side by side: a build is one pip process (single-threaded, mostly unpacking and byte-compiling), so on a
    # machine of two cores or more the builds overlap; each line names its engine
    lines: queue.Queue[str] = queue.Queue()

    def build(name, env) -> None:
        for line in environment.build(name, env):
            lines.put(line)

    with ThreadPoolExecutor(max_workers=len(todo)) as pool:
        futures = [pool.submit(build, name, env) for name, env in todo]
        while True:
            done = wait(futures, timeout=0.2).not_done == set()
            while not lines.empty():
                yield lines.get()
            if done:
                break
    for future in futures:
        future.result()  # the first failure, in the order asked, once every build has ended


def get_engine(label: str) -> Engine:
    return engine_class(label)()


def engine_color(label: str) -> str:
    """The engine's colour; a profile gets a shade of it (the same shade for the same profile)."""
    name, profile = split_label(label)
    base = engine_class(name).color
    if not profile:
        return base
    r, g, b = (int(base[i:i + 2], 16) for i in (1, 3, 5))
    shade = int(hashlib.sha256(profile.encode()).hexdigest()[:2], 16) / 255  # 0..1
    f = 0.35 + 0.3 * shade  # mix with white (lighter) by 35-65 %
    r, g, b = (int(c + (255 - c) * f) if shade >= 0.5 else int(c * (1 - f + 0.2)) for c in (r, g, b))
    return f"#{r:02X}{g:02X}{b:02X}"


def parse_engines(spec: str | None) -> list[str]:
    """'spark,spark:standalone,risingwave' -> labels, each of a known engine, none twice."""
    labels = [n.strip() for n in (spec or "").split(",") if n.strip()]
    if not labels:
        raise UserError("--engines is empty; give a comma-separated list, e.g. spark,risingwave")
    for label in labels:
        if base_name(label) not in REGISTRY:
            raise _unknown(base_name(label))
    if len(set(labels)) != len(labels):
        raise UserError(f"--engines names an engine twice: {spec}")
    return labels


def default_engines() -> str:
    return ",".join(DEFAULT_ENGINES)


def campaign_engines() -> str:
    return ",".join(CAMPAIGN_ENGINES)
