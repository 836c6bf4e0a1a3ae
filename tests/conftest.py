import fcntl
import os
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_warehouse(tmp_path_factory) -> Path:
    """One warehouse for the session: datasets are generated once and reused, as users would.  Under
    pytest-xdist each worker has its own (a warehouse takes one run at a time: workers never wait on each
    other's lock), so a dataset is generated once per worker that needs it."""
    return tmp_path_factory.mktemp("warehouse")


# Tests marked `serial` measure time or CPU (the sampler, grace periods, deadlines): under pytest-xdist
# they run alone.  Every other test holds a shared lock while it runs (setup, call, teardown); a serial
# test takes it exclusively.  A turnstile lock taken first keeps a serial test waiting for the exclusive
# lock from being overtaken by the other workers' next tests.


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
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
        yield
