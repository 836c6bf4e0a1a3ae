"""The runner's side of counting the delete files' opens (bench.telemetry.opens): which runs are counted, and the
record each gets.  A run whose input has no delete file gets none; one on a warehouse the harness cannot watch
(S3) gets a record that says it was not counted, and why."""

from __future__ import annotations

from bench.core.opens import DeleteOpens
from bench.core.results import RunResult
from bench.core.table import live_files
from bench.runner.context import RunContext
from bench.runner.process import EngineRun
from bench.telemetry.opens import OpenWatch, not_counted

REMOTE = "the warehouse is not on this machine's file system: the harness counts opens of local files only"


def open_watch(ctx: RunContext, r: RunResult) -> OpenWatch | None:
    """A watch over the input's files for this run (started by the caller when the engine is told to go)."""
    ds = ctx.dataset
    if ds is None or ctx.catalog is None or not r.before.delete_files or ctx.settings.is_remote:
        return None
    return OpenWatch.of(ds.location, live_files(ctx.catalog.load_table(ds.table)))


def opens_record(ctx: RunContext, r: RunResult, watch: OpenWatch | None, er: EngineRun) -> DeleteOpens | None:
    if watch is None:
        return not_counted(REMOTE) if r.before.delete_files and ctx.settings.is_remote else None
    if not watch.started:
        return not_counted("the engine never reached its compaction (its setup did not end)")
    tasks = er.record.outcome.read_tasks if er.record is not None and er.record.outcome is not None else None
    return watch.record(tasks)
