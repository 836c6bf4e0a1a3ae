"""The record of how often an engine opened the input's delete files while it compacted (the mechanism:
each rewrite task opens every delete file that may apply to its data files, so opens grow with data files x
delete files).  Counted by the harness (bench.telemetry.opens), the same way for every engine; the engine may
add how many read tasks it ran (Spark: the tasks of its rewrite jobs), from which the mean per task follows."""

from __future__ import annotations

from pydantic import BaseModel

OPENS_SOURCE = ("the harness: inotify IN_OPEN events on the table's directories (every open() of a file in them, "
                "by any process), from the moment the engine was told to compact until its process ended")


class DeleteOpens(BaseModel):
    source: str = OPENS_SOURCE
    delete_files: int = 0  # live before the run
    opened: int = 0  # distinct delete files opened at least once
    opens: int | None = None  # every open of a delete file (None: not counted; note says why)
    position_opens: int = 0
    equality_opens: int = 0
    per_file_min: int = 0  # opens per delete file, over every delete file live before the run (0: never opened)
    per_file_median: float = 0.0
    per_file_max: int = 0
    data_files: int = 0
    data_opens: int = 0  # opens of the input's data files
    tasks: int | None = None  # the engine's read tasks as it reported them (None: it reports none)
    opens_per_task: float | None = None  # opens / tasks: a mean (an open is not attributed to a task)
    lower_bound: bool = False  # the kernel merged or dropped events: the true counts are at least these
    watcher_cpu_s: float | None = None  # the harness's CPU time spent counting (beside the engine, same cores)
    # files whose opens were counted when the input was sampled (None: every file): the counts above are then the
    # sample's scaled to every file, the spread per file the sample's own (the note says so)
    watched_files: int | None = None
    note: str = ""

    def describe(self) -> str:
        """In words, as tables show it: opens of how many delete files, the spread per file, the mean per task."""
        if self.opens is None:
            return f"not counted ({self.note})" if self.note else "not counted"
        per_task = (f", {self.opens_per_task:,.1f} per task ({self.tasks:,} tasks)"
                    if self.opens_per_task is not None and self.tasks else "")
        about = "about " if self.watched_files is not None else ""
        return (f"{about}{self.opens:,}{' (at least)' if self.lower_bound else ''} opens of {about}{self.opened:,} of "
                f"{self.delete_files:,} delete files; per delete file min {self.per_file_min:,}, median "
                f"{self.per_file_median:,.0f}, max {self.per_file_max:,}{per_task}"
                + (f" ({self.note})" if self.note else ""))
