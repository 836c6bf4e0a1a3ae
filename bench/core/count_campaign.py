"""The record of a count sweep: one scenario at one byte scale over several file scales
(`bench sweep SCENARIO --scale S --file-scales F1,F2,...`), fitted against the input's file count.

    results/<sweep-id>/counts.json     CountSweepSummary (+ files-<F>/ run directories: ordinary results)

Each point is one engine at one file scale (verified runs only); each fit is a line against the input's
files (data + delete files, as the harness measured them before the run): the engine's time, its peak
memory and each phase it reported.  Where a memory line rises, `files_at_budget` is the file count at which
it would reach the runs' memory budget: a linear extrapolation, labelled as one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from bench.core.campaign import CampaignState
from bench.core.fileio import write_atomic
from bench.core.fit import Fit
from bench.core.opens import DeleteOpens
from bench.core.results import ScenarioRecord
from bench.core.spread import Spread

COUNTS_FILE = "counts.json"
FILES_X = "input files (data + delete, live before the run)"
PAIRS_X = "data files x equality-delete files (live before the run)"


class CountPoint(BaseModel):
    """One engine at one file scale."""

    engine: str
    file_scale: float
    files: int  # input files: data + delete
    data_files: int = 0
    position_delete_files: int = 0
    equality_delete_files: int = 0
    bytes: int = 0  # input on disk (data + delete files)
    runs: int = 0
    verified: int = 0
    statuses: list[str] = Field(default_factory=list)  # every measured run's status (ok, oom, heap-oom, timeout...)
    duration_s: Spread = Field(default_factory=Spread)
    peak_rss_bytes: Spread = Field(default_factory=Spread)
    read_chars: Spread = Field(default_factory=Spread)  # bytes read through read syscalls, cached or not (rchar)
    phases_s: dict[str, float] = Field(default_factory=dict)  # phase -> median seconds over verified runs
    delete_opens: DeleteOpens | None = None  # the delete files' opens of the verified run with the median count
    run_dir: str = ""


class BudgetMeet(BaseModel):
    """Where an engine's memory line reaches the budget (a linear extrapolation of the fit)."""

    engine: str
    budget_bytes: int
    files: float | None = None  # None: the line does not rise (or there is no line)
    note: str = ""


class CountSweepSummary(CampaignState):
    kind: Literal["counts"] = "counts"
    sweep_id: str
    scenario: str
    scenario_record: ScenarioRecord = Field(default_factory=ScenarioRecord)
    scale: float  # bytes and rows of every point
    file_scales: list[float]
    reps: int
    engines: list[str]
    budget_bytes: int | None = None
    run_dirs: dict[str, str] = Field(default_factory=dict)  # file scale -> run directory
    points: list[CountPoint] = Field(default_factory=list)
    time_fits: dict[str, Fit] = Field(default_factory=dict)  # engine -> seconds against files
    memory_fits: dict[str, Fit] = Field(default_factory=dict)  # engine -> peak RSS bytes against files
    read_fits: dict[str, Fit] = Field(default_factory=dict)  # engine -> bytes read (rchar) against files
    # the same against data files x equality-delete files: a reader that opens every applicable equality-delete file
    # for each data file (Iceberg's DeleteFilter per task, no executor cache in rewrites) reads in proportion to them
    pair_time_fits: dict[str, Fit] = Field(default_factory=dict)
    pair_read_fits: dict[str, Fit] = Field(default_factory=dict)
    phase_fits: dict[str, dict[str, Fit]] = Field(default_factory=dict)  # engine -> phase -> seconds against files
    budget_meets: list[BudgetMeet] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def write_counts(directory: Path, s: CountSweepSummary) -> Path:
    return write_atomic(Path(directory) / COUNTS_FILE, s.model_dump_json(indent=1))


def read_counts(path: Path) -> CountSweepSummary | None:
    try:
        return CountSweepSummary.model_validate_json(Path(path).read_text())
    except (OSError, ValueError):
        return None
