"""Spark standalone clusters: one the harness starts on this node (a master and one or more workers, all
bound to 127.0.0.1, from the Spark distribution that pyspark ships: SPARK_HOME = the pyspark package
directory, whose `bin/spark-class` runs the daemons; nothing is downloaded; stopped with the run), or one
that already runs elsewhere (`ClusterView`: a master URL and its web UI, e.g. the Terraform cluster).

    cluster = StandaloneCluster(root, cores=2, worker_memory_mib=1024, workers=2, daemon_memory="256m",
                                daemon_java_options=[...])
    cluster.start()            # the master, once ALIVE the workers; returns when every worker is ALIVE
    cluster.master_url         # spark://127.0.0.1:<port>
    cluster.app(app_id)        # the master's view of an application (cores, memory per executor)
    cluster.stop()             # SIGTERM, wait, SIGKILL: the workers (their executors with them), the master

Ports: two free loopback ports for the master (RPC, web UI) and two per worker are picked by binding
port 0; the daemons run with spark.port.maxRetries=0, so a port taken in between fails the start at once
(instead of moving to another port) and the start is retried with new ports.
Readiness: the master's JSON status (http://127.0.0.1:<master web UI>/json/) says ALIVE (only then are
the workers started: a master in STANDBY drops a registration, and a worker retries 5-15 s later), then
lists every worker ALIVE.
Files: everything under `root` (the run's work dir): conf/ (an empty SPARK_CONF_DIR, so no spark-env.sh
of the machine applies), master.log and worker.log / worker-<i>.log (the daemons' stdout/stderr),
work/ or work-<i>/ (each worker's own dir: its executors' stdout/stderr), local/ or local-<i>/
(SPARK_LOCAL_DIRS: shuffle and spill).

Lifetime: the daemons are plain children of the engine process (same process group, same memory cgroup,
inside the runner's telemetry of the engine's process tree), never daemonized.  Each is started with
prctl(PR_SET_PDEATHSIG, SIGKILL): if the engine process dies (kill -9, a time limit, an OOM kill) the
kernel kills them.  spark-class execs the JVM, so the JVM keeps that setting.  An executor is a child of
the worker and exits when the worker goes (its WorkerWatcher loses the worker: ~2 s here); stop() also
kills any of the worker's descendants that outlive it.  Start the cluster from the engine's main thread:
the death signal follows the thread that forked, not the process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.core.children import die_with_parent

LOOPBACK = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
MARKER_PROPERTY = "bench.spark.standalone"  # -Dbench.spark.standalone=<root> on every JVM of the cluster
START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
START_ATTEMPTS = 3
# A port already taken fails the start (retried on fresh ports) instead of moving a daemon to a port nobody
# asked for.  Spark 4.1's master serves its unauthenticated submission REST API by default, on the fixed
# port 6066: off, so that two clusters on one machine never collide there (a master whose REST server
# cannot bind stays in STANDBY) and nothing can submit jobs to it.
DAEMON_OPTIONS = ("-Dspark.port.maxRetries=0", "-Dspark.master.rest.enabled=false")
BIND_FAILURE = ("BindException", "Address already in use", "Failed to bind", "Service '")
# inherited settings that would change the daemons behind our back
FOREIGN_ENV = ("SPARK_CONF_DIR", "SPARK_ENV_LOADED", "SPARK_MASTER_", "SPARK_WORKER_", "SPARK_DAEMON_",
               "SPARK_LOCAL_DIRS", "SPARK_PUBLIC_DNS", "SPARK_IDENT_STRING", "SPARK_HISTORY_OPTS")


class ClusterError(RuntimeError):
    """The standalone cluster did not start (the message carries the daemons' log tails)."""

    def __init__(self, message: str, bind_failure: bool = False):
        super().__init__(message)
        self.bind_failure = bind_failure  # a port was taken between choosing and binding it: retry


def spark_home() -> Path:
    """The Spark distribution inside the pyspark package (bin/spark-class, jars/)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_ports(n: int) -> list[int]:
    """`n` distinct loopback ports free at this moment (sockets held until all are chosen)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _get_json(url: str, timeout_s: float = 2.0) -> Any:
    """GET a JSON document from a loopback URL, ignoring any HTTP proxy of the environment."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout_s) as resp:
        return json.loads(resp.read().decode())


def is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def parse_master(url: str) -> tuple[str, int]:
    """spark://HOST:PORT -> (HOST, PORT); ValueError otherwise."""
    if not url.startswith("spark://") or ":" not in url[8:]:
        raise ValueError(f"a standalone master URL is spark://HOST:PORT, got {url!r}")
    host, _, port = url[8:].rpartition(":")
    if not host or not port.isdigit() or "/" in host:
        raise ValueError(f"a standalone master URL is spark://HOST:PORT, got {url!r}")
    return host, int(port)


def _tail(path: Path, n: int) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [ln[:400] for ln in lines[-n:]]


class ClusterView:
    """What the harness reads of a standalone cluster through its master's web UI (JSON): the workers,
    the applications and, through each worker's own web UI, its executors.  For a cluster that runs
    elsewhere (`--spark-master`) this is all the harness has; a StandaloneCluster adds the daemons."""

    def __init__(self, master_url: str = "", master_webui: str = ""):
        self.master_url = master_url
        self._master_webui = master_webui.rstrip("/")

    @property
    def master_webui(self) -> str:
        return self._master_webui

    def status(self) -> dict[str, Any] | None:
        """The master's JSON status (workers, active and completed apps), or None when not answering."""
        if not self.master_webui:
            return None
        try:
            return _get_json(f"{self.master_webui}/json/")
        except (OSError, ValueError):
            return None

    def alive_workers(self) -> list[dict[str, Any]]:
        return [w for w in (self.status() or {}).get("workers", []) if w.get("state") == "ALIVE"]

    def workers_json(self) -> list[dict[str, Any]]:
        """Each ALIVE worker's own JSON status (its executors, cores and memory used), where it answers."""
        out = []
        for w in self.alive_workers():
            url = str(w.get("webuiaddress") or "").rstrip("/")
            try:
                out.append(_get_json(f"{url}/json/") if url else {})
            except (OSError, ValueError):
                continue
        return out

    def app(self, app_id: str) -> dict[str, Any] | None:
        """The master's entry of application `app_id` (cores, memoryperexecutor, state), or None."""
        status = self.status() or {}
        for key in ("activeapps", "completedapps"):
            for a in status.get(key, []):
                if a.get("id") == app_id:
                    return a
        return None

    def finished_executors(self, app_id: str) -> list[dict[str, Any]]:
        """The workers' executors of `app_id` that have ended (killed, failed or exited)."""
        return [e for w in self.workers_json() for e in w.get("finishedexecutors", []) if e.get("appid") == app_id]

    def hosts(self) -> list[str]:
        """The distinct hosts of the ALIVE workers."""
        return sorted({str(w.get("host", "")) for w in self.alive_workers()} - {""})

    def executor_command_lines(self) -> list[list[str]]:
        return []  # on other machines: not visible from here

    def log_tails(self, n: int = 15) -> str:
        return f"(the cluster's logs are on its own machines; master {self.master_url}, UI {self.master_webui})"

    def describe(self) -> dict[str, Any]:
        workers = self.alive_workers()
        return {"master_url": self.master_url, "master_webui": self.master_webui, "started_by_harness": False,
                "workers": [{k: w.get(k) for k in ("id", "host", "cores", "memory", "webuiaddress")} for w in workers],
                "hosts": self.hosts()}

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        pass  # not ours to stop


class StandaloneCluster(ClusterView):
    """One master and `workers` workers on 127.0.0.1 (see the module docstring); `cores` and
    `worker_memory_mib` are per worker."""

    def __init__(self, root: str | Path, cores: int, worker_memory_mib: int, daemon_memory: str = "256m",
                 daemon_java_options: list[str] | None = None, start_timeout_s: float = START_TIMEOUT_S,
                 workers: int = 1):
        super().__init__()
        self.root = Path(root)
        self.cores = max(1, int(cores))
        self.worker_memory_mib = int(worker_memory_mib)
        self.worker_count = max(1, int(workers))
        self.daemon_memory = daemon_memory
        self.daemon_java_options = list(daemon_java_options or [])
        self.start_timeout_s = start_timeout_s
        self.home = spark_home()
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.ports: dict[str, int] = {}
        self.worker_status: list[dict[str, Any]] = []
        self.started_s: float | None = None  # seconds from the first spawn to every worker ALIVE at the master
        self.attempts = 0

    # -- paths and environment -----------------------------------------------------------------------
    def _suffix(self, i: int) -> str:
        return "" if self.worker_count == 1 else f"-{i}"

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    def worker_dir(self, i: int = 0) -> Path:
        return self.root / f"work{self._suffix(i)}"

    def local_dir(self, i: int = 0) -> Path:
        return self.root / f"local{self._suffix(i)}"

    def worker_name(self, i: int) -> str:
        return f"worker{self._suffix(i)}"

    def log_file(self, daemon: str) -> Path:
        return self.root / f"{daemon}.log"

    @property
    def master_webui(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.get('master_webui', 0)}" if self.ports else ""

    def worker_webui(self, i: int = 0) -> str:
        return f"http://{LOOPBACK}:{self.ports.get(f'worker_webui{i}', 0)}"

    def marker(self) -> str:
        """The JVM option that names this cluster on every JVM of it (daemons and executors)."""
        return f"-D{MARKER_PROPERTY}={self.root}"

    def environment(self, i: int | None = None) -> dict[str, str]:
        """The daemons' environment (`i`: worker i's, with its own dirs and ports)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV)}
        java_opts = [*self.daemon_java_options, *DAEMON_OPTIONS, self.marker()]
        w = 0 if i is None else i
        env.update({
            "SPARK_HOME": str(self.home),
            "SPARK_CONF_DIR": str(self.conf_dir),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_LOCAL_HOSTNAME": LOOPBACK,
            "SPARK_PUBLIC_DNS": LOOPBACK,
            "SPARK_MASTER_HOST": LOOPBACK,
            "SPARK_MASTER_PORT": str(self.ports["master"]),
            "SPARK_MASTER_WEBUI_PORT": str(self.ports["master_webui"]),
            "SPARK_WORKER_PORT": str(self.ports[f"worker{w}"]),
            "SPARK_WORKER_WEBUI_PORT": str(self.ports[f"worker_webui{w}"]),
            "SPARK_WORKER_DIR": str(self.worker_dir(w)),
            "SPARK_WORKER_CORES": str(self.cores),
            "SPARK_WORKER_MEMORY": f"{self.worker_memory_mib}m",
            "SPARK_LOCAL_DIRS": str(self.local_dir(w)),
            "SPARK_DAEMON_MEMORY": self.daemon_memory,
            "SPARK_DAEMON_JAVA_OPTS": " ".join(java_opts),
        })
        return env

    def commands(self) -> dict[str, list[str]]:
        spark_class = str(self.home / "bin" / "spark-class")
        out = {"master": [spark_class, MASTER_CLASS, "--host", LOOPBACK, "--port", str(self.ports["master"]),
                          "--webui-port", str(self.ports["master_webui"])]}
        for i in range(self.worker_count):
            out[self.worker_name(i)] = [
                spark_class, WORKER_CLASS, f"spark://{LOOPBACK}:{self.ports['master']}", "--host", LOOPBACK,
                "--port", str(self.ports[f"worker{i}"]), "--webui-port", str(self.ports[f"worker_webui{i}"]),
                "--cores", str(self.cores), "--memory", f"{self.worker_memory_mib}m",
                "--work-dir", str(self.worker_dir(i))]
        return out

    # -- start -----------------------------------------------------------------------------------------
    def start(self) -> StandaloneCluster:
        """Start the master and the workers; return when every worker is ALIVE at the master.  Raises
        ClusterError (with the log tails) on a timeout or a daemon that exits; nothing is left running."""
        if not (self.home / "bin" / "spark-class").exists():
            raise ClusterError(f"no bin/spark-class in the pyspark package ({self.home}): cannot start a "
                               "standalone cluster")
        for d in (self.conf_dir, *(f(i) for i in range(self.worker_count) for f in (self.worker_dir, self.local_dir))):
            d.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        for attempt in range(1, START_ATTEMPTS + 1):
            self.attempts = attempt
            try:
                self._start_once()
                self.started_s = time.perf_counter() - t0
                return self
            except ClusterError as e:
                self.stop()
                if attempt == START_ATTEMPTS or not e.bind_failure:
                    raise
        raise AssertionError("unreachable")

    def _spawn(self, daemon: str, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = self.log_file(daemon)
        with open(log, "ab") as out:
            out.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(cmd)}\n".encode())
            out.flush()
            return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    env=env, cwd=self.root, close_fds=True, preexec_fn=die_with_parent)

    def _start_once(self) -> None:
        names = ["master", "master_webui"] + [f"{k}{i}" for i in range(self.worker_count)
                                              for k in ("worker", "worker_webui")]
        self.ports = dict(zip(names, free_ports(len(names))))
        self.master_url = f"spark://{LOOPBACK}:{self.ports['master']}"
        cmds = self.commands()
        deadline = time.monotonic() + self.start_timeout_s
        # The workers start once the master is ALIVE: a registration that reaches a master still in
        # STANDBY (its UI answers before it is elected leader) is dropped, and a worker retries only
        # 5-15 s later (measured: 12 s).
        self.master = self._spawn("master", cmds["master"], self.environment())
        self._wait(deadline, "master", lambda st: st.get("status") == "ALIVE")
        self.workers = [self._spawn(self.worker_name(i), cmds[self.worker_name(i)], self.environment(i))
                        for i in range(self.worker_count)]
        n = self.worker_count
        what = "worker" if n == 1 else f"{n} workers"
        status = self._wait(deadline, what, lambda st: sum(w.get("state") == "ALIVE"
                                                            for w in st.get("workers", [])) >= n)
        self.worker_status = [w for w in status["workers"] if w.get("state") == "ALIVE"]

    def _daemons(self) -> list[tuple[str, subprocess.Popen | None]]:
        return [("master", self.master), *((self.worker_name(i), p) for i, p in enumerate(self.workers))]

    def _wait(self, deadline: float, what: str, ready: Any) -> dict[str, Any]:
        """Poll the master's status until `ready(status)`; raise when a daemon exits or at the deadline."""
        while True:
            for daemon, proc in self._daemons():
                code = None if proc is None else proc.poll()
                if code is not None:
                    log = "\n".join(_tail(self.log_file(daemon), 60))
                    raise ClusterError(f"the Spark standalone {daemon} exited with code {code} while starting"
                                       f"\n{self.log_tails()}", bind_failure=any(m in log for m in BIND_FAILURE))
            status = self.status()
            if status is not None and ready(status):
                return status
            if time.monotonic() > deadline:
                raise ClusterError(f"the Spark standalone {what} not ready (master {self.master_url}) within "
                                   f"{self.start_timeout_s:.0f} s (master status: {self._short(status)})\n"
                                   f"{self.log_tails()}")
            time.sleep(0.1)

    @staticmethod
    def _short(status: dict[str, Any] | None) -> str:
        if status is None:
            return "not answering"
        return (f"{status.get('status')}, workers "
                f"{[(w.get('id'), w.get('state')) for w in status.get('workers', [])]}")

    # -- what the daemons report -----------------------------------------------------------------------
    def executors(self) -> list[Any]:
        """psutil.Process of the workers' live descendants (their executors, while the workers run)."""
        import psutil

        out: list[Any] = []
        for w in self.workers:
            if w.poll() is not None:
                continue
            try:
                children = psutil.Process(w.pid).children(recursive=True)
            except psutil.Error:
                continue
            for c in children:
                try:
                    if c.status() != psutil.STATUS_ZOMBIE:  # spark-class's launcher, never reaped by the JVM
                        out.append(c)
                except psutil.Error:
                    continue
        return out

    def executor_command_lines(self) -> list[list[str]]:
        """The command lines of the executors running under the workers."""
        out = []
        for p in self.executors():
            try:
                cmd = p.cmdline()
            except Exception:  # noqa: BLE001 - gone in between
                continue
            if EXECUTOR_CLASS in cmd:
                out.append(cmd)
        return out

    def executor_files(self, app_id: str | None = None) -> list[Path]:
        """The executors' stderr files in the workers' dirs (of one application, or all)."""
        pattern = f"{app_id}/*/stderr" if app_id else "app-*/*/stderr"
        files = [f for i in range(self.worker_count) for f in self.worker_dir(i).glob(pattern)]
        return sorted(files, key=lambda f: (f.stat().st_mtime, str(f)))

    def log_tails(self, n: int = 15) -> str:
        parts = []
        daemons = [self.log_file(d) for d, _ in self._daemons()] or [self.log_file("master")]
        for f in [*daemons, *self.executor_files()[-2:]]:
            lines = _tail(f, n)
            if lines:
                parts.append(f"--- {f} (last {len(lines)} lines)\n" + "\n".join(lines))
        return "\n".join(parts) or f"(no daemon logs under {self.root})"

    def describe(self) -> dict[str, Any]:
        """What is recorded of the cluster in the outcome."""
        return {"spark_home": str(self.home), "master_url": self.master_url, "master_webui": self.master_webui,
                "started_by_harness": True, "worker_count": self.worker_count,
                "worker_webuis": [self.worker_webui(i) for i in range(self.worker_count)],
                "worker_dirs": [str(self.worker_dir(i)) for i in range(self.worker_count)],
                "ports": dict(self.ports), "worker_cores": self.cores,
                "worker_memory_mib": self.worker_memory_mib, "daemon_memory": self.daemon_memory,
                "daemon_java_options": [*self.daemon_java_options, *DAEMON_OPTIONS],
                "logs": str(self.root), "start_s": None if self.started_s is None else round(self.started_s, 3),
                "start_attempts": self.attempts, "hosts": [LOOPBACK],
                "pids": {"master": self.master.pid if self.master else None,
                         "workers": [w.pid for w in self.workers]}}

    # -- stop ----------------------------------------------------------------------------------------
    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop the workers (SIGTERM, wait, SIGKILL), then the master; kill whatever the workers started that
        outlives them (executors).  Safe to call twice and after a failed start."""
        import psutil

        leftovers = self.executors()
        for proc in (*self.workers, self.master):
            if proc is None:
                continue
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        proc.kill()
                    proc.wait()
        _, alive = psutil.wait_procs(leftovers, timeout=grace_s)
        for p in alive:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(alive, timeout=grace_s)
