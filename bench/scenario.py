"""Scenarios are declarative data: scenarios/<name>.yaml, validated by this schema on load.

A scenario names its table recipe (datagen.recipes, a union by kind), the target file size, the
small-file threshold and output codec every engine is held to, each engine's options (validated by
that engine's own Options model, before any data is generated) and the published figures.  Adding a
scenario is adding a file.  Each result records the scenario exactly as it was run (`record()`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bench.core.errors import UserError
from bench.core.results import Published, ScenarioRecord
from bench.engines import REGISTRY, engine_class
from datagen.recipes import TableRecipe

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
KIND_OF_RECIPE = {"binpack": "smallfiles", "deletes": "deletes"}


class Output(BaseModel):
    """What every file an engine writes must be."""

    model_config = ConfigDict(extra="forbid")

    codec: Literal["snappy", "zstd", "gzip", "lz4", "uncompressed", "brotli"] = "snappy"
    level: int | None = None


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    kind: Literal["binpack", "deletes"]
    table: TableRecipe
    target_file_size_bytes: int = Field(512 * 1024 * 1024, ge=1)
    # a data file below small_file_ratio x target is small: bin-packing must rewrite it (both engines
    # are told this threshold; Spark's own default min-file-size-bytes is 75 % of the target too)
    small_file_ratio: float = Field(0.75, gt=0.0, le=1.0)
    output: Output = Field(default_factory=Output)
    local_scale: float = Field(0.005, gt=0.0)  # the default scale of `bench run` on one machine
    engines: dict[str, dict[str, Any]] = Field(default_factory=dict)  # engine -> its options
    published: Published | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        if KIND_OF_RECIPE[self.kind] != self.table.kind:
            raise ValueError(f"a {self.kind} scenario needs a {KIND_OF_RECIPE[self.kind]} table, "
                             f"not {self.table.kind}")
        for engine, options in self.engines.items():
            if engine not in REGISTRY:
                raise ValueError(f"engines.{engine}: unknown engine (known: {', '.join(REGISTRY)})")
            try:
                engine_class(engine).Options.model_validate(options or {})
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(str(x) for x in err["loc"])
                raise ValueError(f"engines.{engine}{'.' + where if where else ''}: {err['msg']}") from None
        return self

    def small_file_threshold(self, target: int | None = None) -> int:
        return int(self.small_file_ratio * (target or self.target_file_size_bytes))

    def options_for(self, engine: str) -> dict[str, Any]:
        """The engine's options, validated and dumped (defaults filled in)."""
        return engine_class(engine).Options.model_validate(self.engines.get(engine) or {}).model_dump(mode="json")

    def record(self) -> ScenarioRecord:
        content = self.model_dump(mode="json")
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]
        return ScenarioRecord(name=self.name, sha256=digest, content=content)


def scenario_files(directory: Path = SCENARIO_DIR) -> dict[str, Path]:
    return {p.stem: p for p in sorted(Path(directory).glob("*.yaml"))}


def load_scenario(name_or_path: str, directory: Path = SCENARIO_DIR) -> Scenario:
    p = Path(name_or_path)
    if not (p.suffix in (".yaml", ".yml") and p.exists()):
        files = scenario_files(directory)
        if name_or_path not in files:
            raise UserError(f"unknown scenario {name_or_path!r}; known: {', '.join(files) or 'none'}"
                            f" (see `bench list`)")
        p = files[name_or_path]
    try:
        data = yaml.safe_load(p.read_text())
        return Scenario.model_validate(data)
    except yaml.YAMLError as e:
        raise UserError(f"invalid scenario file {p}: {' '.join(str(e).splitlines()[:2])}") from None
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise UserError(f"invalid scenario file {p}: {where + ': ' if where else ''}{err['msg']}") from None


def list_scenarios(directory: Path = SCENARIO_DIR) -> list[Scenario]:
    return [load_scenario(str(p), directory) for p in scenario_files(directory).values()]
