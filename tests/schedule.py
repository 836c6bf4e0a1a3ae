"""The order in which pytest-xdist hands test files to its workers: the longest first.

`--dist loadfile` keeps a file on one worker (its module fixtures - servers, JVMs, tables - are built
once), but xdist hands the files out largest-count-first and gives a worker its next file while it still
runs the second-to-last test of the current one.  A file of three tests that takes two minutes then
starts near the end, or queues behind a long last test, while another worker runs dry.  Here a
worker gets the longest remaining file (by the seconds in tests/durations.json; a file not in there
counts DEFAULT_TEST_S per test) and only when it has nothing else left to start: longest-processing-
time-first, which keeps the workers' ends close together.

Refresh the table after adding slow tests: `pytest -m "not serial" --record-durations tests/durations.json`
(the seconds of setup, call and teardown, summed per file; only the files that ran are replaced).
"""

from __future__ import annotations

import json
from pathlib import Path

from xdist.scheduler import LoadFileScheduling

DURATIONS = Path(__file__).resolve().parent / "durations.json"
DEFAULT_TEST_S = 2.0


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    try:
        return {k: float(v) for k, v in json.loads(path.read_text()).items()}
    except FileNotFoundError:
        return {}


class LongestFileFirst(LoadFileScheduling):
    def __init__(self, config, log=None) -> None:
        super().__init__(config, log)
        self.durations = load_durations()

    def _cost(self, scope: str) -> float:
        known = self.durations.get(scope)
        return known if known is not None else DEFAULT_TEST_S * len(self.workqueue[scope])

    def _assign_work_unit(self, node) -> None:
        longest = max(self.workqueue, key=self._cost)  # the first of equals: collection order
        self.workqueue.move_to_end(longest, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node) -> None:
        # A worker holds its last test until it knows the next one (or is told to stop): with one test
        # pending it is idle, with two it runs one.  So a new file goes to a worker that is idle, never
        # queued behind a test that may run for minutes while another worker could have started it.
        if node.shutting_down:
            return
        if self.workqueue and self._pending_of(self.assigned_work[node]) > 1:
            return
        super()._reschedule(node)


class DurationRecorder:
    """--record-durations PATH: every file's setup + call + teardown seconds, merged into PATH."""

    def __init__(self, path: Path) -> None:
        self.path, self.seconds = path, {}

    def pytest_runtest_logreport(self, report) -> None:
        scope = report.nodeid.split("::", 1)[0]
        self.seconds[scope] = self.seconds.get(scope, 0.0) + report.duration

    def pytest_sessionfinish(self) -> None:
        merged = {**load_durations(self.path), **{k: round(v, 1) for k, v in self.seconds.items()}}
        self.path.write_text(json.dumps(dict(sorted(merged.items(), key=lambda kv: -kv[1])), indent=1) + "\n")
