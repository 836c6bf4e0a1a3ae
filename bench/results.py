"""The result record: one typed record per engine run, serialized as JSON, written atomically.

Layout: results/<run-id>/<scenario>--<engine>--rep<N>.json (+ the samples file named in `samples_file`).
The report and every other consumer read only these files.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

Status = Literal["ok", "failed", "oom", "timeout"]
SCHEMA_VERSION = 1


class TableStats(BaseModel):
    """What a table looks like at one snapshot, measured by the harness (not by an engine)."""

    snapshot_id: int | None = None
    rows: int = 0
    checksum: str = ""  # order-independent content checksum over all columns
    data_files: int = 0
    delete_files: int = 0
    position_delete_files: int = 0
    equality_delete_files: int = 0
    data_bytes: int = 0
    delete_bytes: int = 0
    codecs: list[str] = Field(default_factory=list)  # Parquet codecs found in live data files
    row_groups: int = 0
    avg_row_group_bytes: float = 0.0
    file_size_min: int = 0
    file_size_median: int = 0
    file_size_max: int = 0
    # live delete files no live data file can be affected by (Iceberg v2 sequence-number rules);
    # position_delete_files - dangling_position_delete_files still apply (likewise for equality)
    dangling_position_delete_files: int = 0
    dangling_equality_delete_files: int = 0
    content_reader: str = ""  # which reader produced rows/checksum


class Verification(BaseModel):
    verified: bool = False
    checks: dict[str, bool] = Field(default_factory=dict)
    differences: list[str] = Field(default_factory=list)
    reader: str = ""  # how the content was read back
    independent_reader: dict[str, Any] = Field(default_factory=dict)
    advisory_checks: list[str] = Field(default_factory=list)  # recorded in checks, not required for verified


class TelemetrySummary(BaseModel):
    peak_rss_bytes: int | None = None  # peak of the summed RSS of the engine's process tree
    peak_hwm_bytes: int | None = None  # largest kernel VmHWM of any process in the tree
    mean_cores: float | None = None
    p95_cores: float | None = None
    read_bytes: int | None = None
    write_bytes: int | None = None
    samples: int = 0
    interval_s: float | None = None


class RunResult(BaseModel):
    schema_version: int = SCHEMA_VERSION
    run_id: str
    scenario: str
    engine: str
    rep: int = 0
    warmup: bool = False
    scale: float
    seed: int
    dataset: str = ""  # table identifier the run compacted
    dataset_recipe_hash: str = ""
    status: Status
    verified: bool = False
    error: str | None = None
    log_tail: list[str] = Field(default_factory=list)  # evidence for failed / oom / timeout

    started_at: str = ""
    duration_s: float | None = None  # engine wall time of the compaction call
    setup_s: float | None = None  # engine session start-up (JVM, catalog connect)
    process_wall_s: float | None = None  # the whole engine subprocess, start to exit

    files_in: int = 0
    files_out: int | None = None
    bytes_in: int = 0
    bytes_out: int | None = None
    rows: int = 0
    before: TableStats = Field(default_factory=TableStats)
    after: TableStats | None = None
    verification: Verification = Field(default_factory=Verification)

    engine_result: dict[str, Any] = Field(default_factory=dict)
    engine_settings: dict[str, Any] = Field(default_factory=dict)
    engine_actions: list[str] = Field(default_factory=list)
    target_file_size_bytes: int = 0
    memory_budget_bytes: int | None = None
    memory_enforcement: str = ""
    telemetry: TelemetrySummary = Field(default_factory=TelemetrySummary)
    samples_file: str | None = None
    cost: dict[str, Any] = Field(default_factory=dict)
    environment: dict[str, Any] = Field(default_factory=dict)
    versions: dict[str, str] = Field(default_factory=dict)


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that readers see the old file or the whole new one, never a partial one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def result_path(results_dir: Path, r: RunResult) -> Path:
    tag = "warmup" if r.warmup else f"rep{r.rep}"
    return Path(results_dir) / r.run_id / f"{r.scenario}--{r.engine}--{tag}.json"


def save(results_dir: Path, r: RunResult) -> Path:
    path = result_path(results_dir, r)
    if path.exists():
        raise FileExistsError(f"refusing to overwrite an earlier result: {path}")
    write_atomic(path, r.model_dump_json(indent=2))
    return path


def iter_result_files(path: Path):
    """Result JSON files under `path` (a run directory, a results directory, or one file)."""
    path = Path(path)
    if path.is_file():
        yield path
        return
    for p in sorted(path.rglob("*.json")):
        if not p.name.startswith("."):
            yield p


def read_results(path: Path) -> list[RunResult]:
    out = []
    for p in iter_result_files(path):
        data = json.loads(p.read_text())
        if isinstance(data, dict) and "run_id" in data and "engine" in data:
            out.append(RunResult.model_validate(data))
    return out


def load(path) -> "Any":
    """Results as a flat pandas DataFrame, one row per engine run (nested fields flattened)."""
    import pandas as pd

    rows = [r.model_dump() for r in read_results(Path(path))]
    return pd.json_normalize(rows, sep=".") if rows else pd.DataFrame()
