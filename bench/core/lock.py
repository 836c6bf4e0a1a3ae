"""One run at a time per warehouse: an exclusive lock in the warehouse's local state directory.

`bench run` and `bench datagen` hold it for their whole duration.  It is a kernel file lock (flock):
the kernel releases it when its holder exits, however it exits (kill -9 included), so a lock left by
a killed process is simply free again; the holder's description (pid, command, start) is kept in
the lock file, so a waiter can say who holds it, and a new holder can say it took over from a process
that is gone.  Only the holder holds it: the descriptor is closed on exec, and in a child forked without exec
(the catalog server, the generator's pool) right after the fork, so that the lock is free the moment the holder
dies, not when the last of its forked children has died too.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.core.children import pid_alive, record_to, recorded_alive
from bench.core.errors import UserError

PROCESS_LEDGER = "processes.jsonl"  # beside the lock: bench.core.children.record_to

_HELD: set[WarehouseLock] = set()  # the locks this process holds


def _close_held_in_child() -> None:
    for lock in _HELD:
        fd, lock.fd = lock.fd, None  # the child holds nothing: a release there does nothing
        if fd is not None:
            os.close(fd)  # the child's copy only: the lock stays with the holder
    _HELD.clear()


os.register_at_fork(after_in_child=_close_held_in_child)


def describe(holder: dict) -> str:
    if not holder:
        return "another process (no description)"
    return (f"pid {holder.get('pid')} ({holder.get('command', '?')}, since {holder.get('since', '?')})")


class WarehouseLock:
    """`with WarehouseLock(path, wait=True, say=print):` — exclusive; `wait=False` raises UserError."""

    def __init__(self, path: Path, wait: bool = True, say: Callable[[str], None] | None = None,
                 what: str = "warehouse"):
        self.path = Path(path)
        self.wait = wait
        self.say = say or (lambda line: print(line, file=sys.stderr))
        self.what = what
        self.fd: int | None = None
        self.took_over: dict | None = None  # the description a dead holder left behind

    def _read_holder(self) -> dict:
        try:
            text = self.path.read_text()
            return json.loads(text) if text.strip() else {}
        except (OSError, ValueError):
            return {}

    def acquire(self) -> WarehouseLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                holder = self._read_holder()
                if not self.wait:
                    raise UserError(f"the {self.what} is in use by {describe(holder)}; wait for it, or run "
                                    f"without --no-wait to queue (lock {self.path})") from None
                self.say(f"waiting: the {self.what} is in use by {describe(holder)} (lock {self.path})")
                fcntl.flock(fd, fcntl.LOCK_EX)
            previous = self._read_holder()
            if previous.get("pid") and previous.get("pid") != os.getpid() and not pid_alive(int(previous["pid"])):
                self.took_over = previous
                self.say(f"took over the {self.what} lock left by {describe(previous)}, which is no longer running")
            info = {"pid": os.getpid(), "command": " ".join(os.path.basename(a) if i == 0 else a
                                                             for i, a in enumerate(sys.argv))[:300],
                    "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
            self.fd = fd
            _HELD.add(self)
            if self.what == "warehouse":  # what this run starts is recorded for `bench doctor --repair`
                ledger = self.path.parent / PROCESS_LEDGER
                if not self.took_over:
                    ledger.unlink(missing_ok=True)  # the last holder ended normally: its children ended with it
                record_to(ledger)
        except BaseException:
            os.close(fd)
            raise
        return self

    def release(self) -> None:
        fd, self.fd = self.fd, None
        if fd is None:
            return
        _HELD.discard(self)
        if self.what == "warehouse":
            record_to(None)
            ledger = self.path.parent / PROCESS_LEDGER
            if not recorded_alive(ledger):  # every process it started has ended: nothing for the doctor
                ledger.unlink(missing_ok=True)
        try:
            os.ftruncate(fd, 0)  # nobody holds it: no description
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> WarehouseLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
