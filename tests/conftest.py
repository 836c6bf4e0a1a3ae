import fcntl
import os
import tempfile
from pathlib import Path

import pytest

from tests.jvm_cds import QUIET as CDS_QUIET
from tests.jvm_cds import TEST_JAVA_TOOL_OPTIONS, ensure_archive
from tests.schedule import DurationRecorder, LongestFileFirst


def pytest_addoption(parser):
    parser.addoption("--record-durations", metavar="PATH", default=None,
                     help="merge each test file's seconds (setup + call + teardown) into PATH, e.g. "
                          "tests/durations.json, the table the longest-file-first schedule reads")


@pytest.fixture(scope="session")
def shared_warehouse(tmp_path_factory) -> Path:
    """One warehouse for the session: datasets are generated once and reused, as users would.  Under
    pytest-xdist each worker has its own (a warehouse takes one run at a time: workers never wait on each
    other's lock), so a dataset is generated once per worker that needs it."""
    return tmp_path_factory.mktemp("warehouse")


# Tests marked `serial` measure time or CPU (the sampler, grace periods, deadlines): under pytest-xdist
# they run alone.  Every other test holds a shared lock while it runs (setup, call, teardown); a serial
# test takes it exclusively.  A turnstile lock taken first keeps a serial test waiting for the exclusive
# lock from being overtaken by the other workers' next tests.  A process a test forks without exec (a
# fixture's catalog server, which may outlive the test) closes its copies of them: else it would hold the shared
# lock after the test, and a serial test would wait for it while every other test waits behind the serial one.
_HELD: list = []  # this worker's lock files while a test runs


def _close_held_in_child() -> None:
    for f in _HELD:
        f.close()  # the child's descriptor only: the lock stays with the worker
    _HELD.clear()


os.register_at_fork(after_in_child=_close_held_in_child)


# Every JVM the tests start (Spark drivers, executors and daemons, the Iceberg Java gateway) compiles with
# C1 only: a tiny-scale run is mostly JVM start-up, where the C2 compiler's threads are a third of the CPU
# of a whole `bench run` with Spark (22 s -> 15 s measured).  What the JVMs compute is the same; the
# harness's settings (heap, direct memory, ...) are untouched.  A JAVA_TOOL_OPTIONS already set is kept.
# (TEST_JAVA_TOOL_OPTIONS lives in tests/jvm_cds.py, beside the archive trained with them.)
# ... and maps one archive of the classes a Spark driver loads, made once per virtualenv (tests/jvm_cds.py: a tiny
# Spark run 14 s instead of 19-24 s).


def pytest_configure(config):
    if "JAVA_TOOL_OPTIONS" not in os.environ:  # workers and subprocesses inherit it
        opts = TEST_JAVA_TOOL_OPTIONS
        # the controller (before its workers start): the shared classes; collecting only, no JVM starts
        if not hasattr(config, "workerinput") and not config.option.collectonly:
            archive = ensure_archive(opts)
            opts += f" -XX:SharedArchiveFile={archive} {CDS_QUIET}" if archive else ""
        os.environ["JAVA_TOOL_OPTIONS"] = opts
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        if config.getoption("record_durations"):
            config.pluginmanager.register(DurationRecorder(Path(config.getoption("record_durations"))),
                                          "record-durations")
        fd, path = tempfile.mkstemp(prefix="bench-tests-serial-", suffix=".lock")
        os.close(fd)
        config.serial_lock = path


def pytest_unconfigure(config):
    path = getattr(config, "serial_lock", None)
    if path:
        for p in (path, path + ".turnstile"):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` (addopts): the longest files first, a file to a worker once it is idle
    (tests/schedule.py).  Any other --dist is xdist's own."""
    if config.getvalue("dist") == "loadfile":
        return LongestFileFirst(config, log)
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput["serial_lock"] = node.config.serial_lock


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = getattr(item.config, "workerinput", {}).get("serial_lock")
    if path is None:  # not under xdist: tests run one at a time anyway
        yield
        return
    serial = item.get_closest_marker("serial") is not None
    with open(path + ".turnstile", "a") as turnstile, open(path, "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if serial else fcntl.LOCK_SH)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        _HELD[:] = [turnstile, lock]
        try:
            yield
        finally:
            _HELD.clear()
