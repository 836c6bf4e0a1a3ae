"""How often the engine opened the input's files while it compacted, counted from outside by the kernel's inotify
(IN_OPEN on every directory of the table): no tracing of the engine, the same for every engine, a count of real
open() calls of real files.  The mechanism (each rewrite task opens every delete file that may apply to its
data files) is a claim about exactly these opens.

    watch = OpenWatch.of(location, live)   # None: not countable (remote warehouse, no delete file)
    watch.start()                          # when the engine is told to compact (after the cache policy)
    ...                                    # the engine compacts
    watch.stop(); record = watch.record(tasks)

What it can miss, and says so: the kernel drops events when its queue overflows (IN_Q_OVERFLOW, the record is
then a lower bound), and merges an event identical to the last one still unread (two opens of the same file with
no other event between them).  Watching closes too keeps an open/close/open sequence apart, and a file's opens
are the larger of its open and close events, so only two readers opening one file at the same moment can lose
one: two threads opening the same two files in turn, 1,000 times each, lost 85 of 2,000 opens (4 %) once, on a
loaded machine where the watcher shared their process.
Opens by any process count (the harness opens no input file while it watches).

A large input is sampled: above SAMPLE_ABOVE delete files the watch covers an even sample of SAMPLE_FILES files of
each kind (every k-th path in sorted order), each watched by itself, and the totals are the sample's counts scaled
by (files of that kind / files watched), which the record says.  Counting every open would cost the engine's cores
about 2 us of Python per event: at the published counts (20,000 data x 20,000 equality-delete files) about 400 M
events, most of the run.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from inotify_simple import INotify, flags

from bench.core.records.telemetry import DeleteOpens
from bench.core.table.entries import LiveFiles
from bench.core.uri import local_path

READ_TIMEOUT_MS = 100
# events counted at the most: the counting thread shares the cores with the engine (~2 us of Python per event), so
# a flood of opens (data files x delete files at the published counts) is counted up to here, then the watch ends
# and the record says when: its counts are then at least these
MAX_EVENTS = 4_000_000
MASK = flags.OPEN | flags.CLOSE_NOWRITE | flags.CLOSE_WRITE | flags.ONLYDIR
FILE_MASK = flags.OPEN | flags.CLOSE_NOWRITE | flags.CLOSE_WRITE
SAMPLE_ABOVE = 2_000  # delete files: above this many, each kind of file is sampled
SAMPLE_FILES = 200  # files watched of each kind (position deletes, equality deletes, data) when sampled


def even_sample(paths: set[str], n: int) -> set[str]:
    """Every k-th of the sorted paths, n of them at the most (all when there are fewer)."""
    ordered = sorted(paths)
    if len(ordered) <= n:
        return set(ordered)
    step = len(ordered) / n
    return {ordered[int(i * step)] for i in range(n)}


@dataclass
class OpenWatch:
    root: Path
    position: set[str]  # the input's files, as local paths
    equality: set[str]
    data: set[str]
    opens: Counter[str] = field(default_factory=Counter)  # path -> IN_OPEN events while watched
    closes: Counter[str] = field(default_factory=Counter)  # path -> IN_CLOSE_* events while watched
    overflow: bool = False
    cpu_s: float = 0.0
    started: bool = False  # the engine was told to compact (its setup ended)
    events: int = 0  # events read
    capped_after_s: float | None = None  # MAX_EVENTS were read this long after the engine's go: counting ended
    max_events: int = MAX_EVENTS
    # the files watched one by one when the input is sampled (None: every directory of the table is watched)
    sample: set[str] | None = None
    _inotify: INotify | None = None
    _dirs: dict[int, str] = field(default_factory=dict)  # watch descriptor -> directory
    _thread: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def of(cls, location: str, live: LiveFiles) -> OpenWatch | None:
        """A watch over the table at `location` for the files of `live`; None when it cannot count (a warehouse
        not on this machine's file system) or there is nothing to count (no delete file)."""
        root = Path(local_path(location))
        local = not ("://" in location and not location.startswith("file:"))
        if not local or not root.is_dir() or not (live.position or live.equality):
            return None
        def paths(entries: list) -> set[str]:
            return {os.path.normpath(local_path(e.data_file.file_path)) for e in entries}
        watch = cls(root, paths(live.position), paths(live.equality), paths(live.data))
        if len(watch.position) + len(watch.equality) > SAMPLE_ABOVE:
            watch.sample = set().union(*(even_sample(kind, SAMPLE_FILES)
                                         for kind in (watch.position, watch.equality, watch.data)))
        return watch

    def start(self) -> None:
        self.started = True
        self._inotify = INotify()
        if self.sample is not None:  # each sampled file by itself: its events carry no name, the path is its own
            for path in sorted(self.sample):
                self._dirs[self._inotify.add_watch(path, FILE_MASK)] = path
        else:
            for d, _, _ in os.walk(self.root):
                self._dirs[self._inotify.add_watch(d, MASK)] = d
        self._thread = threading.Thread(target=self._loop, name="bench-open-watch", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        t0, w0 = time.thread_time(), time.monotonic()
        assert self._inotify is not None
        while True:
            stopping = self._stop.is_set()
            events = self._inotify.read(timeout=0 if stopping else READ_TIMEOUT_MS)
            self.events += len(events)
            for e in events:
                if e.mask & flags.Q_OVERFLOW:
                    self.overflow = True
                elif (e.name or self.sample is not None) and e.mask & FILE_MASK:
                    path = os.path.join(self._dirs.get(e.wd, ""), e.name) if e.name else self._dirs.get(e.wd, "")
                    if e.mask & flags.OPEN:
                        self.opens[path] += 1
                    else:
                        self.closes[path] += 1
            if stopping and not events:
                break
            if self.events >= self.max_events:
                self.capped_after_s = round(time.monotonic() - w0, 3)
                break
        self.cpu_s = time.thread_time() - t0

    def stop(self) -> None:
        """Stop counting (what the kernel queued until now still counts); safe to call twice or unstarted."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None

    def count(self, path: str) -> int:
        """Opens of `path`: its open events, or its close events where more of those arrived (every open ends in
        one close; the kernel merged some of the opens, not the same closes)."""
        return max(self.opens.get(path, 0), self.closes.get(path, 0))

    def watched(self, kind: set[str]) -> list[str]:
        """The files of `kind` whose opens were counted: all of them, or the sample's."""
        return sorted(kind if self.sample is None else kind & self.sample)

    def scaled(self, kind: set[str]) -> int:
        """Opens of the files of `kind`: counted, or the sample's count scaled to every file of the kind."""
        watched = self.watched(kind)
        counted = sum(self.count(p) for p in watched)
        return counted if self.sample is None or not watched else round(counted * len(kind) / len(watched))

    def record(self, tasks: int | None = None) -> DeleteOpens:
        """What was counted, as the result's record; `tasks`: the engine's read tasks, when it reported them."""
        deletes = self.position | self.equality
        watched = self.watched(self.position) + self.watched(self.equality)
        per_file = [self.count(p) for p in watched]
        opened = sum(1 for n in per_file if n)
        position, equality = self.scaled(self.position), self.scaled(self.equality)
        total = position + equality
        sampled = (f"sampled: {len(watched):,} of {len(deletes):,} delete files and "
                   f"{len(self.watched(self.data)):,} of {len(self.data):,} data files watched, every k-th by path; "
                   "totals and files opened scaled to every file, the spread per file is the sample's"
                   if self.sample is not None else "")
        return DeleteOpens(
            delete_files=len(deletes), opened=round(opened * len(deletes) / len(watched)) if watched else 0,
            opens=total, position_opens=position, equality_opens=equality,
            per_file_min=min(per_file), per_file_median=float(statistics.median(per_file)), per_file_max=max(per_file),
            data_files=len(self.data), data_opens=self.scaled(self.data), tasks=tasks,
            watched_files=len(watched) + len(self.watched(self.data)) if self.sample is not None else None,
            opens_per_task=round(total / tasks, 2) if tasks else None,
            lower_bound=self.overflow or self.capped_after_s is not None, watcher_cpu_s=round(self.cpu_s, 3),
            note="; ".join(n for n in (
                sampled,
                "the kernel's event queue overflowed: some opens were not counted" if self.overflow else "",
                f"counting ended after {self.events:,} events, {self.capped_after_s} s after the engine's go: the "
                "counts are at least these" if self.capped_after_s is not None else "") if n))


def not_counted(why: str) -> DeleteOpens:
    return DeleteOpens(note=why)
