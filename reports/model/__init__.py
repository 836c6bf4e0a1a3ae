"""Result files -> the report's view model.

Reads only what a run left behind: the result JSON files, the samples Parquet files and `run.json`
beside them.  Never today's scenario files (a result carries the scenario it ran, `scenario_record`),
never recomputing what the runner stored (cost, verification, phases): only `--instance-type`
re-prices, and says so.  Every statistic is over verified runs (bench.core.stats); runs that failed,
ran out of memory, timed out or were rejected by the verifier are listed with their reasons.

Its rooms, one a section of what the report shows: `loading` (result files, samples, run.json), `view` (the
types the templates read), `sets` (runs -> result sets, built section by section), `colors`, `engines` (the
engines table and its memory notes), `costs`, `method`, `published` (beside the published figures) and
`reads` (what readers gained).  This module is their one import face.
"""

from __future__ import annotations

from reports.model.colors import FALLBACK_COLORS, assign_colors, fill_colors
from reports.model.engines import missing_text
from reports.model.loading import Loaded, LoadedRun, RunDirState, load_runs, run_reasons
from reports.model.sets import build
from reports.model.view import STATUS_MEANING, EngineRow, Report, ResultSet, by_scenario_scale, group_by

__all__ = ["FALLBACK_COLORS", "STATUS_MEANING", "EngineRow", "Loaded", "LoadedRun", "Report", "ResultSet",
           "RunDirState", "assign_colors", "build", "by_scenario_scale", "fill_colors", "group_by", "load_runs",
           "missing_text", "run_reasons"]
