"""Iceberg's Java library from Maven Central: the jars every JVM of the harness loads, by Spark line.

The lock `maven.lock.toml` beside this module names each Spark line the harness runs (its pyspark, its Iceberg
release, the `iceberg-spark-runtime` and `iceberg-aws-bundle` artifacts, the Java versions it supports) and every
artifact's size and SHA-256.  `bench setup` (`provision`) downloads each artifact once into `<cache>/maven/`, in
Maven's own layout, checked against the lock and against the SHA-1 that Maven Central publishes beside it, and
renames it into place (a half-downloaded jar is never used).  A JVM asks `iceberg_jars(line)` for its class path
and never downloads: a missing jar is one line naming `bench setup`.  A mirror or proxy of Maven Central:
$BENCH_MAVEN_REPO.

The harness's own JVMs (datagen's commits, the reference reader, the conformance writer, the readers) and the
`spark` engine run the lock's `harness_line`, whose pyspark is the harness's; another line (`spark-3.5`) runs in an
engine environment of its own with that line's pyspark.  A plain JVM without Spark (`gateway`) takes Hadoop's
client from the harness's pyspark wheel.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import re
import tempfile
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bench.core.errors import UserError
from bench.core.machine import java_binary, java_version
from bench.core.requirements import Requirement
from bench.core.settings import env_settings

PROJECT_ROOT = Path(__file__).resolve().parents[3]
LOCK_FILE = Path(__file__).with_name("maven.lock.toml")
MAVEN_REPO = "https://repo1.maven.org/maven2"
JAVA_FIX = "apt-get install -y openjdk-17-jre-headless"
SETUP_FIX = "run `bench setup` (or `make setup`)"
# Hadoop's client and logging, for a plain JVM (prefixes of jar names in the pyspark wheel's jars/ directory)
HADOOP_JAR_PREFIXES = ("hadoop-client-api-", "hadoop-client-runtime-", "slf4j-api-", "log4j-api-",
                       "log4j-core-", "log4j-slf4j2-impl-", "commons-logging-")
DOWNLOAD_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Artifact:
    """One jar of Maven Central, pinned by the lock."""

    group: str
    artifact: str
    version: str
    size: int
    sha256: str

    @property
    def coordinate(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    @property
    def file_name(self) -> str:
        return f"{self.artifact}-{self.version}.jar"

    @property
    def relative(self) -> str:
        return f"{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.file_name}"

    def url(self, repo: str | None = None) -> str:
        return f"{(repo or maven_repo()).rstrip('/')}/{self.relative}"

    @property
    def path(self) -> Path:
        return cache_root() / "maven" / self.relative

    def present(self) -> bool:
        """In the cache with the locked size (the SHA-256 was checked when it was written)."""
        try:
            return self.path.stat().st_size == self.size
        except OSError:
            return False


@dataclass(frozen=True)
class SparkLine:
    """A Spark line the harness runs: its pyspark and its Iceberg runtime, one Iceberg release."""

    name: str  # "4.1"
    pyspark: str
    iceberg: str
    runtime: Artifact
    aws: Artifact
    java: tuple[int, ...]

    def describe(self) -> str:
        return f"Spark {self.pyspark} + Iceberg {self.iceberg}"

    def iceberg_at_least(self, release: str) -> bool:
        """Whether the line's Iceberg release is `release` or newer (numeric parts compared: 1.12.0 > 1.10.2)."""
        return release_key(self.iceberg) >= release_key(release)


def release_key(version: str) -> tuple[int, ...]:
    """A release's numeric parts, for ordering (a suffix such as -rc1 is ignored)."""
    return tuple(int(x) for x in re.findall(r"\d+", version.split("-")[0]))


@dataclass(frozen=True)
class Lock:
    harness_line: str
    lines: dict[str, SparkLine]
    jdbc: Artifact
    artifacts: tuple[Artifact, ...]


@cache
def lock() -> Lock:
    """The lock file, parsed once (a malformed one is the project's bug: it raises)."""
    raw = tomllib.loads(LOCK_FILE.read_text())
    pinned = raw["artifacts"]

    def artifact(coordinate: str) -> Artifact:
        group, name, version = coordinate.split(":")
        entry = pinned[coordinate]
        return Artifact(group, name, version, int(entry["size"]), str(entry["sha256"]).lower())

    lines = {name: SparkLine(name, str(spec["pyspark"]), str(spec["iceberg"]), artifact(spec["runtime"]),
                             artifact(spec["aws"]), tuple(int(v) for v in spec["java"]))
             for name, spec in raw["lines"].items()}
    return Lock(str(raw["harness_line"]), lines, artifact(raw["jdbc"]), tuple(artifact(c) for c in pinned))


def spark_line(name: str | None = None) -> SparkLine:
    """A Spark line of the lock (default: the harness's)."""
    locked = lock()
    key = name or locked.harness_line
    if key not in locked.lines:
        raise UserError(f"no Spark line {key!r} in {LOCK_FILE.name} (lines: {', '.join(locked.lines)})")
    return locked.lines[key]


HARNESS_LINE = spark_line()
ICEBERG_VERSION = HARNESS_LINE.iceberg  # the Iceberg Java release of every JVM of the harness


# ------------------------------------------------------------------------------------------------
# Where things are


CACHE_NAME = "iceberg-compaction-bench"


def cache_root() -> Path:
    """The harness's cache, one per user and machine as pip's and Maven's are: $BENCH_CACHE_DIR, else
    $XDG_CACHE_HOME/iceberg-compaction-bench, else ~/.cache/iceberg-compaction-bench.  Every clone shares it: what it
    holds is keyed by what it is (a jar by its lock entry, an environment by its pins)."""
    env = env_settings().cache_dir
    if env:
        return Path(env).expanduser().resolve()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser().resolve() / CACHE_NAME


def maven_repo() -> str:
    """Maven Central, or the mirror in $BENCH_MAVEN_REPO."""
    return (env_settings().maven_repo or MAVEN_REPO).rstrip("/")


def wheel_jars_dir() -> Path | None:
    """The jars/ directory of the pyspark installed in this interpreter."""
    try:
        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    d = Path(list(spec.submodule_search_locations)[0]) / "jars"
    return d if d.is_dir() else None


def hadoop_jars() -> list[Path]:
    """Hadoop's client and the logging jars from the pyspark wheel (for a JVM that is not a Hadoop app)."""
    d = wheel_jars_dir()
    dist = f"pyspark=={HARNESS_LINE.pyspark}"
    if d is None:
        raise UserError(f"the Hadoop client jars come from the {dist} wheel, which is not installed: "
                        f"pip install {dist} (or `make setup`)")
    jars = sorted(p for p in d.glob("*.jar") if p.name.startswith(HADOOP_JAR_PREFIXES))
    if not any(p.name.startswith("hadoop-client-api-") for p in jars):
        raise UserError(f"no hadoop-client-api jar in {d}: reinstall {dist}")
    return jars


def line_artifacts(line: SparkLine, remote: bool = False) -> list[Artifact]:
    """The jars a Spark session or a plain JVM of `line` loads: the runtime, the JDBC driver, and for an S3
    warehouse (`remote`) the AWS SDK bundle (S3FileIO is in the runtime)."""
    return [line.runtime, lock().jdbc, *([line.aws] if remote else [])]


def iceberg_jars(remote: bool = False, line: str | None = None) -> list[str]:
    """The class path of Iceberg's Java library for `line` (default: the harness's), from the cache.  Raises
    UserError naming what is missing and the command that fetches it; never downloads."""
    arts = line_artifacts(spark_line(line), remote)
    missing = [a.coordinate for a in arts if not a.present()]
    if missing:
        raise UserError(f"{', '.join(missing)} not in the jar cache ({cache_root() / 'maven'}): {SETUP_FIX}")
    return [str(a.path) for a in arts]


def jdbc_jar() -> str:
    """The SQLite JDBC driver's jar, from the cache."""
    art = lock().jdbc
    if not art.present():
        raise UserError(f"{art.coordinate} not in the jar cache: {SETUP_FIX}")
    return str(art.path)


def iceberg_version_from_jars(jars: list[str] | None = None) -> str:
    for j in jars or []:
        m = re.search(r"iceberg-[\w.\-]*runtime-[\d.]+_[\d.]+-([\w.\-]+?)\.jar$", j)
        if m:
            return m.group(1)
    return ICEBERG_VERSION


# ------------------------------------------------------------------------------------------------
# Fetching (bench setup)


def fetch(art: Artifact, timeout_s: float = DOWNLOAD_TIMEOUT_S) -> Path:
    """Download `art` into the cache once: checked against Maven Central's .sha1 and the lock's size and SHA-256,
    written to a temporary file and renamed into place."""
    if art.present():
        return art.path
    url = art.url()
    art.path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{art.file_name}.", dir=art.path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        sha1, sha256 = hashlib.sha1(), hashlib.sha256()  # noqa: S324 - Maven Central publishes SHA-1 checksums
        try:
            with urllib.request.urlopen(url + ".sha1", timeout=timeout_s) as r:
                published = r.read().decode().split()[0].strip().lower()
            with urllib.request.urlopen(url, timeout=timeout_s) as r, open(tmp, "wb") as out:
                for chunk in iter(lambda: r.read(1 << 20), b""):
                    sha1.update(chunk)
                    sha256.update(chunk)
                    out.write(chunk)
        except OSError as e:
            raise UserError(f"cannot download {url} ({e}): Maven Central (or the mirror in BENCH_MAVEN_REPO) "
                            "must be reachable for `bench setup`") from None
        size = tmp.stat().st_size
        if sha1.hexdigest() != published:
            raise UserError(f"{url}: SHA-1 {sha1.hexdigest()} does not match the published {published}")
        if size != art.size or sha256.hexdigest() != art.sha256:
            raise UserError(f"{url}: {size} bytes, SHA-256 {sha256.hexdigest()}; the lock pins {art.size} bytes, "
                            f"{art.sha256} ({LOCK_FILE.name})")
        os.chmod(tmp, 0o644)
        os.replace(tmp, art.path)
    finally:
        tmp.unlink(missing_ok=True)
    return art.path


def provision() -> Iterator[str]:
    """Fetch (or find cached) every jar of the lock, saying what it does.  Idempotent."""
    t0 = time.perf_counter()
    fetched = 0
    for art in lock().artifacts:
        cached = art.present()
        fetch(art)
        fetched += not cached
        yield f"{art.coordinate}: {art.path}" + (" (cached)" if cached else f" (fetched from {maven_repo()})")
    yield (f"iceberg java ready: {', '.join(line.describe() for line in lock().lines.values())} "
           f"({fetched} jar(s) fetched, {time.perf_counter() - t0:.1f} s)")


# ------------------------------------------------------------------------------------------------
# For `bench doctor`


def java_requirement(line: SparkLine | None = None) -> Requirement:
    line = line or HARNESS_LINE
    java = java_binary()
    if java is None:
        return Requirement("java", False, "JAVA_HOME unset and no java on PATH", JAVA_FIX)
    v = java_version(java)
    ok = v["major"] in line.java
    text = v["runtime"] or v["error"] or ""
    detail = f"{java}: {text.split(' | ')[0]}" + ("" if ok or v["major"] is None else
                                                  f" ({line.describe()} supports Java "
                                                  f"{', '.join(map(str, line.java))})")
    return Requirement("java", ok, detail, "" if ok else JAVA_FIX)


def jar_requirements(line: SparkLine | None = None, remote: bool = False) -> list[Requirement]:
    """One line per jar of `line` (present with the locked size), each naming the command that fetches it."""
    line = line or HARNESS_LINE
    return [Requirement(f"jar {a.artifact} {a.version}", a.present(),
                        str(a.path) if a.present() else "not in the jar cache", "" if a.present() else SETUP_FIX)
            for a in line_artifacts(line, remote)]


def requirements() -> list[Requirement]:
    """Everything the harness's own JVMs need, each with how to fix it.  No side effects."""
    dist = f"pyspark=={HARNESS_LINE.pyspark}"
    try:
        pv = importlib.metadata.version("pyspark")
        found = wheel_jars_dir() is not None
    except importlib.metadata.PackageNotFoundError:
        pv, found = None, False
    return [java_requirement(),
            Requirement("hadoop client jars (pyspark wheel)", found, f"pyspark {pv}" if found else "not installed",
                        "" if found else f"pip install {dist}"),
            *jar_requirements()]


def s3_requirement(line: SparkLine | None = None) -> Requirement:
    """What a JVM needs for an S3 warehouse: the AWS SDK bundle beside the runtime's S3FileIO."""
    art = (line or HARNESS_LINE).aws
    return Requirement(f"S3 warehouse (jar {art.artifact} {art.version})", art.present(),
                       str(art.path) if art.present() else f"{art.coordinate} not in the jar cache ({art.path.parent})",
                       "" if art.present() else SETUP_FIX)
