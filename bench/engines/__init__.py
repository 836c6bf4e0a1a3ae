"""Engine registry: names -> engine classes.  The only place that knows which engines exist."""

from __future__ import annotations

import importlib
import os

from bench.engines.base import Engine
from bench.errors import UserError

# name -> "module:Class"; modules are imported lazily so a missing optional dependency of one
# engine does not break the others (and `bench doctor` can report it).
REGISTRY: dict[str, str] = {
    "spark": "bench.engines.spark:SparkEngine",
    "risingwave": "bench.engines.risingwave:RisingWaveEngine",
}

# Engines outside this package plug in without code changes: BENCH_EXTRA_ENGINES="name=module:Class,..."
for _spec in filter(None, (x.strip() for x in os.environ.get("BENCH_EXTRA_ENGINES", "").split(","))):
    _name, _, _target = _spec.partition("=")
    if _target:
        REGISTRY[_name.strip()] = _target.strip()


def engine_names() -> list[str]:
    return list(REGISTRY)


def get_engine(name: str) -> Engine:
    try:
        target = REGISTRY[name]
    except KeyError:
        raise UserError(f"unknown engine {name!r}; known engines: {', '.join(REGISTRY)}") from None
    module_name, cls_name = target.split(":")
    module = importlib.import_module(module_name)
    return getattr(module, cls_name)()


def parse_engines(spec: str) -> list[str]:
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise UserError("--engines is empty; give a comma-separated list, e.g. spark,risingwave")
    for n in names:
        if n not in REGISTRY:
            raise UserError(f"unknown engine {n!r}; known engines: {', '.join(REGISTRY)}")
    return names
