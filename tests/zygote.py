"""The tests' `bench` commands forked from one process that has already imported the harness.

A `bench` command spends about 2 s of CPU importing its libraries (pyiceberg, pyarrow, pandas, sqlalchemy,
pydantic models) before it does anything, and the suite runs a few hundred of them on a 2-core machine: a
sixth of the suite's CPU.  `tests.helpers.run_bench` asks this process instead: it imported the harness once,
and forks a child per command.  The child is the command as a user's shell would start it - its own process
with the test's argv, environment, working directory and stdin/stdout/stderr, `bench.cli.entry()` as the
console script calls it, the interpreter's exit (non-daemon threads joined, atexit handlers run), its exit
status - only without the imports.  Everything the command starts (engine workers, JVMs, the catalog server,
the generator's pool) is a fresh process as always, so no engine's memory or time shares anything with it.

What it cannot be is a test of the interpreter's start itself: the tests that kill a `bench` process or time
it start a real one (tests/runner/test_faults.py `start`, `run_bench(..., fresh=True)`).

    python -m tests.zygote      # serves JSON requests on stdin, one at a time (tests.helpers.Zygote)
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback

PRELOAD = ("bench.cli", "bench.runner.run", "bench.scenario", "bench.verify.checks", "bench.campaigns.sweep",
           "bench.campaigns.frontier", "bench.campaigns.verdict", "datagen.dataset",
           "reports.cli", "reports.render",  # matplotlib, 0.8 s of each `bench report`
           "pyiceberg.catalog.sql", "sqlalchemy.dialects.sqlite")  # the SQLite catalog every command opens


def _child(req: dict) -> None:
    """In the forked child: become the command, run it, exit as the interpreter would."""
    code = 1
    try:
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, req["out"], os.O_WRONLY | os.O_TRUNC),
                                (2, req["err"], os.O_WRONLY | os.O_TRUNC)):
            new = os.open(path, flags)
            os.dup2(new, fd)
            os.close(new)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sys.argv = [req["exe"], *req["args"]]
        from bench.cli import entry

        try:
            entry()
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        import atexit
        import threading

        threading._shutdown()  # type: ignore[attr-defined]  # what the interpreter does at exit
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _die_with_parent() -> None:
    """SIGTERM when the pytest worker that started this process is gone (Linux)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main() -> int:
    _die_with_parent()
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    from reports.render import template

    template()  # compiled once here, not in every `bench report` (0.35 s)
    from bench.core.catalog.duck import EXTENSIONS, connect_loading, extension_path

    # DuckDB checks its extensions' signatures here once, not in every command's first connection (0.3 s)
    connect_loading([extension_path(name) for name in EXTENSIONS]).close()
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    requests = os.fdopen(os.dup(0), "r")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the server's own stdio: nothing reads or writes the protocol's pipes by mistake
    os.dup2(null, 1)
    reply.write("ready\n")
    for line in requests:
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            requests.close()
            reply.close()
            _child(req)
        reply.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        reply.write(json.dumps({"rc": os.waitstatus_to_exitcode(status)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
