"""One progress interface for datagen, baseline reads, engine runs and verification.

On a terminal: one live status line, redrawn in place (`\\r`), above which finished lines scroll.
Otherwise (a `make run` log, an AWS run, a test capturing output): plain lines, each prefixed with the
time, and live updates thinned to one line every few seconds, so a log shows progress without
flooding.

    p = Progress()                                  # stdout; live when stdout is a terminal
    p.info("dataset ready")                         # a line
    with p.task("datagen t", total=87, unit="file") as t:
        t.advance()                                 # live: "datagen t 12/87 file (14%) 3.1 s"
    p.status("spark rep0: 12 s, RSS 1.2 GiB of 23 GiB, 1.8 cores")  # heartbeat (live or thinned)
    p.block(table_text)                             # multi-line text as is (a summary table)
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from bench.core.settings import env_settings

LOG_INTERVAL_S = 5.0  # non-terminal: at most one status line per this many seconds


class TextStream(Protocol):
    """What Progress writes to: sys.stdout, a file, or anything with these methods."""

    def write(self, text: str, /) -> int:
        raise NotImplementedError

    def flush(self) -> None:
        raise NotImplementedError


class Progress:
    def __init__(self, stream: TextStream | None = None, live: bool | None = None,
                 log_interval_s: float = LOG_INTERVAL_S, clock: Callable[[], float] = time.monotonic):
        self.stream: TextStream = stream if stream is not None else sys.stdout
        isatty = getattr(self.stream, "isatty", None)
        self.live = bool(isatty and isatty()) if live is None else live
        self.log_interval_s = log_interval_s
        self.clock = clock
        self._line = ""  # the live line currently drawn
        self._last_status = -1e18
        self._lock = threading.Lock()

    # -- lines ------------------------------------------------------------------------------------
    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def _clear(self) -> None:
        if self.live and self._line:
            self._write("\r" + " " * min(len(self._line), 200) + "\r")
            self._line = ""

    def info(self, message: str) -> None:
        """One line that stays."""
        with self._lock:
            self._clear()
            prefix = "" if self.live else time.strftime("%H:%M:%S ")
            self._write(f"{prefix}{message}\n")

    def block(self, text: str) -> None:
        """Multi-line text as is (no time prefix): a table, a summary."""
        with self._lock:
            self._clear()
            self._write(text.rstrip("\n") + "\n")

    def status(self, message: str, force: bool = False) -> None:
        """The live line: redrawn on a terminal; elsewhere a timestamped line at most every
        `log_interval_s` (always when `force`)."""
        with self._lock:
            if self.live:
                text = message[:200]
                pad = max(0, len(self._line) - len(text))
                self._write("\r" + text + " " * pad)
                self._line = text
                return
            now = self.clock()
            if force or now - self._last_status >= self.log_interval_s:
                self._last_status = now
                self._write(f"{time.strftime('%H:%M:%S ')}{message}\n")

    def done(self) -> None:
        """End the live line (leave what it said)."""
        with self._lock:
            if self.live and self._line:
                self._write("\n")
                self._line = ""

    def task(self, name: str, total: int | None = None, unit: str = "") -> Task:
        return Task(self, name, total, unit)




class Task:
    """A counted piece of work: its progress goes to the live line; its end is one line."""

    def __init__(self, progress: Progress, name: str, total: int | None, unit: str):
        self.p = progress
        self.name = name
        self.total = total
        self.unit = unit
        self.n = 0
        self.t0 = progress.clock()
        self.note = ""

    def __enter__(self) -> Task:
        if self.p.live or self.total:  # an uncounted task in a log: its end line says it all
            self.p.status(self._text(), force=True)
        phase_log = env_settings().phase_log
        if phase_log:  # where a watcher (the fault-injection tests) learns that a phase has begun
            with open(phase_log, "a") as f:
                f.write(f"{self.name}\n")
        return self

    def _text(self) -> str:
        elapsed = self.p.clock() - self.t0
        if not self.total and not self.n:
            return f"{self.name}: {elapsed:.1f} s" + (f", {self.note}" if self.note else "")
        count = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        pct = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        unit = f" {self.unit}" if self.unit else ""
        note = f", {self.note}" if self.note else ""
        return f"{self.name}: {count}{unit}{pct}, {elapsed:.1f} s{note}"

    def advance(self, n: int = 1, note: str | None = None) -> None:
        self.n += n
        if note is not None:
            self.note = note
        self.p.status(self._text())

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self.p.done()
        if exc_type is None:
            self.p.info(self._text().replace(f"{self.name}: ", f"{self.name}: done, ", 1))
        else:
            self.p.info(f"{self.name}: stopped after {self.n} {self.unit} ({exc_type.__name__})")


class Quiet(Progress):
    """Progress that prints nothing (library use, tests)."""

    def __init__(self) -> None:
        super().__init__(stream=_Null(), live=False)


class _Null:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False
