"""The tests' zygote (tests/helpers.py Zygote, tests/zygote.py): a command forked from it is the command, and a
zygote that ended before it took a request is started again, saying how it ended."""

import shutil
import signal
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, Zygote, bench_env


def test_a_zygote_that_ended_unseen_is_started_again_and_says_how_it_ended(monkeypatch):
    exe = shutil.which("bench", path=str(Path(sys.executable).parent)) or "bench"
    z = Zygote()
    try:
        first = z.run([exe, "--help"], bench_env(), str(ROOT), 60)
        assert first.returncode == 0 and "Usage" in first.stdout
        dead = z.proc
        assert dead is not None
        dead.send_signal(signal.SIGKILL)
        monkeypatch.setattr(dead, "poll", lambda: None)  # it ends between the check and the request
        with pytest.warns(UserWarning, match=r"ended before forking .*exit status -9"):
            again = z.run([exe, "list"], bench_env(), str(ROOT), 60)
        assert z.proc is not dead and again.returncode == 0 and "bin-packing" in again.stdout
    finally:
        z.stop()
