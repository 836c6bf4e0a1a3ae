"""What tests share that is not a fixture: the repository root, the tiny scale, the test-only engines
and running the real `bench` CLI in a subprocess."""

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent  # the repository
TINY = "0.00005"  # 16 files, ~10 MB: seconds per scenario
# the required checks that a compaction left the same table (bench.verify.integrity)
INTEGRITY_CHECKS = ("same_table", "same_schema", "same_partitioning", "same_sort_order", "same_properties",
                    "input_is_ancestor", "history_kept", "commits_are_replace", "summary_totals")
TEST_ENGINES = ",".join([
    "rewrite=tests.fakes.corrupt:RewriteEngine",
    "corrupt=tests.fakes.corrupt:CorruptEngine",
    "partial=tests.fakes.corrupt:PartialEngine",
    "wrongcodec=tests.fakes.corrupt:WrongCodecEngine",
    "altered=tests.fakes.corrupt:AlteredEngine",
    "noids=tests.fakes.corrupt:NoFieldIdsEngine",
    "leaky=tests.fakes.corrupt:LeakyEngine",
    "overwrite=tests.fakes.corrupt:OverwriteEngine",
    "recreate=tests.fakes.corrupt:RecreateEngine",
    "expire=tests.fakes.corrupt:ExpireEngine",
    "misstate=tests.fakes.corrupt:MisstateEngine",
    "evolve-props=tests.fakes.corrupt:EvolveEngine",
    "evolve-schema=tests.fakes.corrupt:EvolveSchemaEngine",
    "evolve-spec=tests.fakes.corrupt:EvolveSpecEngine",
    "evolve-sort=tests.fakes.corrupt:EvolveSortEngine",
    "setupwork=tests.fakes.corrupt:SetupWorkEngine",
    "setuppeek=tests.fakes.corrupt:SetupPeekEngine",
    "crash=tests.fakes.faulty:CrashEngine",
    "hang=tests.fakes.faulty:HangEngine",
    "restrewrite=tests.fakes.faulty:RestRewriteEngine",
    "hog=tests.fakes.faulty:HogEngine",
    "heap=tests.fakes.faulty:HeapEngine",
    "lossyfloor=tests.fakes.floors:LossyFloor",
    "committingfloor=tests.fakes.floors:CommittingFloor",
    "ghostfloor=tests.fakes.floors:GhostFloor",
    "unsortedfloor=tests.fakes.floors:UnsortedFloor",
    "knobby=tests.fakes.knobby:KnobbyEngine",
    "ignorefilter=tests.fakes.partitioned:IgnoreFilterEngine",
    "losingfilter=tests.fakes.partitioned:LosingFilterEngine",
])


@contextlib.contextmanager
def moto_server(*buckets: str) -> Iterator[str]:
    """A real S3-compatible server (moto) on 127.0.0.1 with `buckets`, stopped on exit; yields its endpoint.
    moto keeps its objects per process, not per server: the state is reset first, so that a module never sees
    what an earlier module on the same pytest worker left in a bucket of the same name."""
    import urllib.request

    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=30)
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                              aws_secret_access_key="testing")
        for bucket in buckets:
            client.create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        server.stop()


def checkov_home() -> Path:
    """Where terraform/ci/install-checkov.sh keeps checkov's virtualenvs: the harness's cache, one per machine
    (`make checkov` and the tests' fixture both ask here)."""
    from bench.core.iceberg_java.runtime import cache_root

    return cache_root() / "checkov"


def bench_env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["BENCH_EXTRA_ENGINES"] = TEST_ENGINES
    env["BENCH_READERS"] = "off"  # reader queries only where a test asks for them (--readers on): suite time
    # no page cache dropped before each engine run (the other pytest worker's libraries and jars with it):
    # suite time; the cold default is tested where a test asks for it (tests/runner/test_run.py)
    env["BENCH_CACHE"] = "warm"
    env.update(extra)
    return env


def run_bench(*args, cwd=None, env=None, timeout=600, fresh=False) -> subprocess.CompletedProcess:
    """`bench ARGS` to its end, its output captured: forked from the tests' pre-imported process (tests/zygote.py),
    or, with `fresh` (or an environment that changes what the harness reads at import), a new interpreter."""
    exe = shutil.which("bench", path=str(Path(sys.executable).parent)) or "bench"
    argv, env = [exe, *map(str, args)], env or bench_env()
    if not fresh and ZYGOTE.serves(env):
        return ZYGOTE.run(argv, env, str(cwd or os.getcwd()), timeout)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


class Zygote:
    """This pytest process's `python -m tests.zygote`, started at its first command, one command at a time."""

    IMPORT_TIME_ENV = ("BENCH_EXTRA_ENGINES", "PYTHONPATH")

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.env: dict = {}
        self.lock = threading.Lock()
        self.buf = b""
        self.stderr: IO[bytes] | None = None

    def serves(self, env: dict) -> bool:
        if os.environ.get("BENCH_ZYGOTE") == "off":
            return False
        base = self.env or bench_env()
        return all(env.get(k) == base.get(k) for k in self.IMPORT_TIME_ENV)

    def _line(self, timeout: float | None) -> bytes | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError("the tests' bench zygote ended")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line

    def _start(self) -> None:
        self.env = bench_env()
        if self.stderr is not None:
            self.stderr.close()
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - its complaints, for the message if it ends
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.zygote"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=self.env, cwd=ROOT)
        self.buf = b""
        if self._line(120) != b"ready":
            raise RuntimeError("the tests' bench zygote did not start")

    def _ended(self) -> str:
        """How the zygote ended: its exit status and the end of its stderr."""
        assert self.proc is not None
        try:
            rc: int | None = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            rc = None
        assert self.stderr is not None
        self.stderr.seek(0)
        tail = self.stderr.read().decode(errors="replace").strip().splitlines()[-5:]
        return f"exit status {rc}" + (f"; its stderr ends: {' | '.join(tail)}" if tail else "")

    def _fork(self, req: dict) -> int:
        """Send the request; the pid of the command it forked.  A zygote that ended before it forked (it did
        not take the request: nothing ran) is started again once, with a warning that says how it ended."""
        for attempt in (1, 2):
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            assert self.proc is not None and self.proc.stdin is not None
            try:
                self.proc.stdin.write((json.dumps(req) + "\n").encode())
                self.proc.stdin.flush()
                started = self._line(60)
            except (RuntimeError, BrokenPipeError) as e:
                how, self.proc = self._ended(), None
                if attempt == 2:
                    raise RuntimeError(f"the tests' bench zygote ended twice before forking: {how}") from e
                warnings.warn(f"the tests' bench zygote ended before forking {req['args']}: {how}; started again",
                              stacklevel=3)
                continue
            if started is None:
                raise RuntimeError(f"the tests' bench zygote did not fork {req['args']} within 60 s")
            return int(json.loads(started)["pid"])
        raise AssertionError("unreachable")

    def run(self, argv: list[str], env: dict, cwd: str, timeout: float) -> subprocess.CompletedProcess:
        if not self.lock.acquire(blocking=False):  # a test running two commands at once: the second is fresh
            return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        try:
            with tempfile.TemporaryDirectory(prefix="bench-zygote-") as d:
                out, err = Path(d) / "out", Path(d) / "err"
                out.touch()
                err.touch()
                pid = self._fork({"exe": argv[0], "args": argv[1:], "env": env, "cwd": cwd, "out": str(out),
                                  "err": str(err)})
                line = self._line(timeout)
                if line is None:  # as subprocess.run: the command killed, then TimeoutExpired
                    os.kill(pid, signal.SIGKILL)
                    self._line(60)
                    raise subprocess.TimeoutExpired(argv, timeout, out.read_text(errors="replace"),
                                                    err.read_text(errors="replace"))
                rc = json.loads(line)["rc"]
                return subprocess.CompletedProcess(argv, rc, out.read_text(errors="replace"),
                                                   err.read_text(errors="replace"))
        finally:
            self.lock.release()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.stderr is not None:
            self.stderr.close()


ZYGOTE = Zygote()
atexit.register(ZYGOTE.stop)
