"""Scenarios are declarative data: scenarios/<name>.yaml validated by this schema on load."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.errors import UserError

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"


class TableRecipe(BaseModel):
    """What datagen builds.  `kind` selects the generator; the rest are its parameters at scale 1.0."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["smallfiles", "deletes"]
    codec: Literal["uncompressed", "snappy", "zstd", "gzip"] = "uncompressed"
    codec_level: int | None = None
    # smallfiles: files and bytes at scale 1.0 (the published table)
    files: int = 17_358
    total_bytes: int = 193_000_000_000
    files_per_commit: int = 32
    min_files: int = 16  # floor on the file count at tiny scales
    # deletes (datagen/deletes.py documents each): files at scale 1.0; files_per_commit = writer
    # checkpoints per commit pair, min_files = floor on the data-file count
    data_files: int = Field(0, ge=0)
    position_delete_files: int = Field(0, ge=0)
    equality_delete_files: int = Field(0, ge=0)
    rows_per_data_file: int = Field(50_000, ge=1)
    deleted_fraction: float = Field(0.2, ge=0.0, lt=1.0)  # of a data file's rows, by position + equality
    position_delete_share: float = Field(0.5, ge=0.0, le=1.0)  # share of deleted_fraction by position
    equality_window: int = Field(4, ge=1)  # a row dies in one of the next N equality deletes
    unmatched_key_ratio: float = Field(0.1, ge=0.0)  # extra keys matching nothing, per matched key
    equality_delete_bytes: int | None = None  # target total bytes of equality deletes at scale 1.0
    params: dict[str, Any] = Field(default_factory=dict)


class Published(BaseModel):
    """The published figure for this scenario, shown beside the measured one in the report."""

    model_config = ConfigDict(extra="forbid")

    source: str = ""
    scale: float = 1.0
    machine: str = "AWS m5.4xlarge (16 vCPU, 64 GB, EBS)"
    duration_s: dict[str, float | None] = Field(default_factory=dict)  # engine -> seconds (None = OOM)
    status: dict[str, str] = Field(default_factory=dict)
    notes: str = ""


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    kind: Literal["binpack", "deletes"]
    table: TableRecipe
    target_file_size_bytes: int = 512 * 1024 * 1024
    local_scale: float = 0.005  # the default scale of `bench run` on one machine
    engines: dict[str, dict[str, Any]] = Field(default_factory=dict)  # engine -> options
    published: Published | None = None


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
    except (yaml.YAMLError, ValidationError) as e:
        first = str(e).splitlines()
        raise UserError(f"invalid scenario file {p}: {' '.join(first[:3])}") from None


def list_scenarios(directory: Path = SCENARIO_DIR) -> list[Scenario]:
    return [load_scenario(str(p), directory) for p in scenario_files(directory).values()]
