"""The local AWS emulator of the rehearsal: moto's server as a child process on 127.0.0.1.

moto keeps everything in memory: when it stops, every "resource" the rehearsal created is gone with it.  It is
handed one stand-in AMI named like Debian's (owner 136693071363, the account Debian publishes from), so that the
module's AMI lookup (data "aws_ami" "debian") runs as it does on AWS; the image itself is not real.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bench.core import children
from bench.core.errors import UserError

HOST = "127.0.0.1"
DEBIAN_OWNER = "136693071363"
STAND_IN_AMI = {
    "ami_id": "ami-0de12a1b2c3d4e5f6",
    "name": "debian-12-amd64-20261101-1900",
    "description": "Debian 12 (bookworm) amd64: the rehearsal's stand-in, not a real image",
    "owner_id": DEBIAN_OWNER,
    "image_location": f"{DEBIAN_OWNER}/debian-12-amd64-20261101-1900",
    "state": "available",
    "public": True,
    "architecture": "x86_64",
    "virtualization_type": "hvm",
    "root_device_type": "ebs",
    "root_device_name": "/dev/xvda",
    "image_type": "machine",
    "hypervisor": "xen",
    "sriov": "simple",
}
INSTALL_HINT = "pip install -e '.[rehearse]' (moto's server, pinned in pyproject.toml)"


def moto_version() -> str:
    """moto's version, or a UserError saying how to install it."""
    try:
        from importlib.metadata import version

        import moto.server  # noqa: F401 - the server extra (flask) must import too
        return version("moto")
    except ImportError as e:
        raise UserError(f"the rehearsal needs moto's server ({e.name or 'moto'} is missing): {INSTALL_HINT}") from None


def free_port(port: int) -> int:
    """`port` if it can be bound on 127.0.0.1 (0: a free one), else a UserError."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError as e:
            raise UserError(f"port {port} on {HOST} is taken ({e.strerror}): choose another with --port, "
                            "or 0 for any free one") from None
        return s.getsockname()[1]


class Emulator:
    """moto's server in its own process group (guarded: it dies with the harness)."""

    def __init__(self, workdir: Path, port: int = 0) -> None:
        self.version = moto_version()
        self.workdir = workdir
        self.port = free_port(port)
        self.endpoint = f"http://{HOST}:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.log = workdir / "moto.log"

    def start(self, timeout: float = 60) -> None:
        amis = self.workdir / "amis.json"
        amis.write_text(json.dumps([STAND_IN_AMI]))
        env = {**os.environ, "MOTO_AMIS_PATH": str(amis), "MOTO_IAM_LOAD_MANAGED_POLICIES": "true",
               "AWS_EC2_METADATA_DISABLED": "true"}
        cmd = [sys.executable, "-c", "import sys; from moto.server import main; sys.exit(main())",
               "-H", HOST, "-p", str(self.port)]
        with self.log.open("wb") as out:
            self.proc = children.popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if not self.alive():
                raise UserError(f"the emulator (moto {self.version}) did not start on {self.endpoint}: "
                                f"{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.endpoint}/moto-api/data.json", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise UserError(f"the emulator did not answer on {self.endpoint} within {timeout:.0f} s")

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self) -> str:
        try:
            lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return "no log"
        return lines[-1][:300] if lines else "no output"

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except OSError:
            pass
        children.release(self.proc, group=True)
        self.proc = None

    def aws_env(self) -> dict[str, str]:
        """What an AWS SDK or CLI needs to talk to the emulator instead of AWS."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}

