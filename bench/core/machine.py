"""What a measurement depends on, and the machine facts the harness needs: node RAM, cores, Java,
CPU, memory, the warehouse disk, the OS, package versions.

`environment(path, packages)` returns the `Environment` recorded in every RunResult (`environment`).
It holds no hostname, user name or address: results are meant to be shared.  Engines declare their
own packages (`Engine.packages`); the runner passes them in, so nothing here names an engine.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import psutil

from bench.core.records.environment import Environment
from bench.core.settings import env_settings

# Distributions of the harness itself whose version can change a measurement (readers, samplers,
# data generation, charts).  Engines add theirs.
HARNESS_PACKAGES = (
    "pyiceberg", "pyarrow", "duckdb", "duckdb-extension-iceberg", "numpy", "pandas", "psutil",
    "SQLAlchemy", "iceberg-compaction-bench",
)


def package_versions(names=HARNESS_PACKAGES) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


DROP_CACHES = Path("/proc/sys/vm/drop_caches")


def drop_page_cache() -> None:
    """Sync, then drop the page cache (root only: raises OSError otherwise).  The one place."""
    os.sync()
    with open(DROP_CACHES, "w") as f:
        f.write("3\n")


def node_ram_bytes() -> int:
    """This machine's RAM."""
    return int(psutil.virtual_memory().total)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def java_binary() -> str | None:
    """The java a JVM will be launched with: $JAVA_HOME/bin/java if JAVA_HOME is set, else java on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        p = Path(home) / "bin" / "java"
        return str(p) if p.is_file() else None
    return shutil.which("java")


def java_version(java: str | None = None) -> dict:
    """`java -version` of `java` (default: java_binary()): {binary, major, version, runtime, error}."""
    return dict(_java_version(java or java_binary()))


@lru_cache(maxsize=8)
def _java_version(java: str | None) -> dict:
    out: dict = {"binary": java, "major": None, "version": None, "runtime": None, "error": None}
    if not java:
        out["error"] = "java not found (JAVA_HOME unset and no java on PATH)"
        return out
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        out["error"] = f"{java} -version failed: {e}"
        return out
    # "Picked up JAVA_TOOL_OPTIONS: ..." (and _JAVA_OPTIONS, JDK_JAVA_OPTIONS) comes first when those are set
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines()
             if ln.strip() and "Picked up " not in ln]
    out["runtime"] = " | ".join(lines[:3]) or None
    m = re.search(r'version "((\d+)(?:\.(\d+))?[^"]*)"', lines[0]) if lines else None
    if not m:
        out["error"] = f"cannot parse the version of {java}: {lines[0] if lines else ''!r}"
        return out
    major = int(m.group(2))
    if major == 1 and m.group(3):  # "1.8.0_..." is Java 8
        major = int(m.group(3))
    out.update(version=m.group(1), major=major)
    return out


def cpu_info() -> dict:
    model = None
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if model is None and line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif not flags and line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    usable = usable_cores()
    quota = None
    try:  # cgroup v2 CPU limit, e.g. "200000 100000" = 2 cores
        q, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        quota = None if q == "max" else round(int(q) / int(period), 2)
    except (OSError, ValueError):
        pass
    freq = psutil.cpu_freq() if hasattr(psutil, "cpu_freq") else None
    return {
        "model": model or platform.processor() or None,
        "architecture": platform.machine(),
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "usable_cores": usable,
        "cgroup_cpu_limit": quota,
        "max_mhz": round(freq.max) if freq and freq.max else None,
        "avx2": "avx2" in flags if flags else None,
        "avx512f": "avx512f" in flags if flags else None,
    }


def memory_info() -> dict:
    vm = psutil.virtual_memory()
    limit = None
    try:
        raw = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        limit = None if raw == "max" else int(raw)
    except (OSError, ValueError):
        pass
    return {"total_bytes": vm.total, "available_bytes": vm.available,
            "swap_bytes": psutil.swap_memory().total, "cgroup_limit_bytes": limit}


def _block_device_facts(device: str) -> dict:
    """Rotational flag, model and size of the whole disk behind a partition like /dev/nvme0n1p1."""
    name = Path(os.path.realpath(device)).name if device.startswith("/dev/") else None
    if not name or not Path(f"/sys/class/block/{name}").exists():
        return {}
    sys_dir = Path(os.path.realpath(f"/sys/class/block/{name}"))
    disk = sys_dir if (sys_dir / "queue").exists() else sys_dir.parent  # partition -> its disk

    def read(p: Path) -> str | None:
        try:
            return p.read_text().strip() or None
        except OSError:
            return None

    rot = read(disk / "queue" / "rotational")
    facts = {"disk": disk.name, "rotational": None if rot is None else rot == "1",
             "disk_model": read(disk / "device" / "model"),
             "scheduler": read(disk / "queue" / "scheduler")}
    if disk.name.startswith("vd"):  # virtio-blk: the flag says nothing about the backing store
        facts["rotational_note"] = "virtio-blk disk: the kernel's rotational flag is not reliable"
    return facts


def disk_info(path) -> dict:
    """The file system holding `path` (the warehouse): device, type, size, free, rotational."""
    p = Path(path).resolve() if path else Path.cwd()
    while not p.exists() and p != p.parent:
        p = p.parent
    best = None
    for part in psutil.disk_partitions(all=True):
        mp = part.mountpoint
        if (str(p) == mp or str(p).startswith(mp.rstrip("/") + "/")) and (
                best is None or len(mp) > len(best.mountpoint)):
            best = part
    usage = shutil.disk_usage(p)
    out = {"path": str(p), "total_bytes": usage.total, "free_bytes": usage.free}
    if best is not None:
        out.update({"device": best.device, "fstype": best.fstype, "mountpoint": best.mountpoint})
        out.update(_block_device_facts(best.device))
    return out


def os_info() -> dict:
    pretty = None
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                pretty = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return {"system": platform.system(), "kernel": platform.release(), "distribution": pretty,
            "libc": " ".join(platform.libc_ver()).strip() or None}


def environment(warehouse=None, packages=HARNESS_PACKAGES, iceberg_java: str | None = None) -> Environment:
    """Everything about this machine and software that affects a measurement (no hostname); `iceberg_java`: the
    Iceberg Java release of the harness's own JVMs."""
    java = {k: v for k, v in java_version().items() if k != "major"}
    return Environment.model_validate({
        "packages": package_versions(packages),
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation()},
        "java": java,
        "cpu": cpu_info(),
        "memory": memory_info(),
        "disk": disk_info(warehouse),
        "os": os_info(),
        "instance_type": env_settings().instance_type,
        "iceberg_java": iceberg_java,
    })
