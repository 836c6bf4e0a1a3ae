"""Engine registry: names -> engine classes.  The only place that knows which engines exist.

An engine is named in a run as NAME (more engines plug in without code changes:
BENCH_EXTRA_ENGINES="name=module:Class,...").  Modules are imported lazily, so a missing optional
dependency of one engine does not break the others (and `bench doctor` can report it).
"""

from __future__ import annotations

import importlib
import os

from bench.core.errors import UserError
from bench.engines.base import Engine

REGISTRY: dict[str, str] = {
    "spark": "bench.engines.spark:SparkEngine",
    "risingwave": "bench.engines.risingwave:RisingWaveEngine",
}
DEFAULT_ENGINES = ("spark", "risingwave")  # what `bench run` compares unless told otherwise

for _spec in filter(None, (x.strip() for x in os.environ.get("BENCH_EXTRA_ENGINES", "").split(","))):
    _name, _, _target = _spec.partition("=")
    if _target:
        REGISTRY[_name.strip()] = _target.strip()


def engine_names() -> list[str]:
    return list(REGISTRY)


def _unknown(name: str) -> UserError:
    return UserError(f"unknown engine {name!r}; known engines: {', '.join(REGISTRY)}")


def engine_class(name: str) -> type[Engine]:
    try:
        target = REGISTRY[name]
    except KeyError:
        raise _unknown(name) from None
    module_name, cls_name = target.split(":")
    return getattr(importlib.import_module(module_name), cls_name)


def get_engine(name: str) -> Engine:
    return engine_class(name)()


def parse_engines(spec: str | None) -> list[str]:
    """'spark,risingwave' -> names, each known, none twice."""
    names = [n.strip() for n in (spec or "").split(",") if n.strip()]
    if not names:
        raise UserError("--engines is empty; give a comma-separated list, e.g. spark,risingwave")
    for n in names:
        if n not in REGISTRY:
            raise _unknown(n)
    if len(set(names)) != len(names):
        raise UserError(f"--engines names an engine twice: {spec}")
    return names


def default_engines() -> str:
    return ",".join(DEFAULT_ENGINES)
