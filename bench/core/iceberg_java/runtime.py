"""Iceberg's Java library, provisioned offline: the jars any JVM of the harness needs.

Offline (the default) every jar comes from a pinned package already on the machine:
1. the Iceberg runtime jar shipped by the PyPI package `snowpark-connect-deps-iceberg`
   (`iceberg-spark-runtime-3.5_2.12-1.10.2.jar`: Iceberg's core, Parquet, Avro and ORC, shaded);
2. the Jackson classes that jar references under `org.apache.iceberg.shaded.com.fasterxml.jackson`
   but does not contain (without them the first CREATE TABLE fails with `NoClassDefFoundError ...
   JsonFactoryBuilder`), built from the Jackson 2.15.2 jars inside the pyspark wheel, relocated with
   Debian's jarjar (package libjarjar-java) by `provision()` (`bench setup`);
3. the SQLite JDBC driver (Debian package libxerial-sqlite-jdbc-java) for Iceberg's JdbcCatalog;
4. the Hadoop client (`hadoop-client-api/-runtime`) and logging jars inside the pyspark wheel (the
   only offline source of Hadoop), for a JVM that is not already a Hadoop application.
The relocated jar is built into a cache directory keyed by the hashes of its inputs, in a temporary
directory renamed into place, so a half-built cache is never used.

Online (`BENCH_MAVEN=1`, e.g. on AWS; `BENCH_SPARK_MAVEN=1` is honoured too) the official Maven
Central artifacts are downloaded into `<cache>/maven/` instead (checked against Maven's .sha1 files),
plus `iceberg-aws-bundle` (S3FileIO and the AWS SDK v2) for an S3 warehouse, which only Maven Central
has: offline, no JVM of the harness can reach S3.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

from bench.core.errors import UserError
from bench.core.machine import java_binary, java_version
from bench.core.requirements import Requirement

PROJECT_ROOT = Path(__file__).resolve().parents[3]

ICEBERG_VERSION = "1.10.2"
RUNTIME_ARTIFACT = "iceberg-spark-runtime-3.5_2.12"  # the Iceberg runtime jar PyPI ships
RUNTIME_JAR_NAME = f"{RUNTIME_ARTIFACT}-{ICEBERG_VERSION}.jar"
RUNTIME_PACKAGE = "snowpark_connect_deps_iceberg"
RUNTIME_DIST = "snowpark-connect-deps-iceberg==1.0.3"
JARS_PACKAGE = "pyspark"  # ships Hadoop's client and Jackson as jars
JARS_DIST = "pyspark==3.5.9"

JACKSON_VERSION = "2.15.2"
JACKSON_JARS = ("jackson-annotations", "jackson-core", "jackson-databind", "jackson-datatype-jsr310")
JACKSON_PREFIX = "com.fasterxml.jackson."
SHADED_PREFIX = "org.apache.iceberg.shaded.com.fasterxml.jackson."
JARJAR_RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"
RELOCATED_JAR_NAME = f"iceberg-shaded-jackson-{JACKSON_VERSION}.jar"
RECIPE_VERSION = "1"  # bump when the build recipe changes: it is part of the cache key
REQUIRED_CLASSES = (  # a relocated jar without one of these is incomplete (one per input jar)
    "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactoryBuilder.class",
    "org/apache/iceberg/shaded/com/fasterxml/jackson/databind/ObjectMapper.class",
    "org/apache/iceberg/shaded/com/fasterxml/jackson/annotation/JsonProperty.class",
    "org/apache/iceberg/shaded/com/fasterxml/jackson/datatype/jsr310/JavaTimeModule.class",
)
# Hadoop's client and logging, for a plain JVM (prefixes of jar names in the wheel's jars/ directory)
HADOOP_JAR_PREFIXES = ("hadoop-client-api-", "hadoop-client-runtime-", "slf4j-api-", "log4j-api-",
                       "log4j-core-", "log4j-slf4j2-impl-", "commons-logging-")

JAVA_DIR = Path("/usr/share/java")
JARJAR_CANDIDATES = ("jarjar.jar", "jarjar-1.4.jar")
SQLITE_JDBC_CANDIDATES = ("xerial-sqlite-jdbc.jar", "sqlite-jdbc.jar")
JARJAR_FIX = "apt-get install -y libjarjar-java"
SQLITE_FIX = "apt-get install -y libxerial-sqlite-jdbc-java"
JAVA_FIX = "apt-get install -y openjdk-17-jre-headless"
SETUP_FIX = "run `make setup` or `bench setup`"
SUPPORTED_JAVA = (11, 17, 21)  # Iceberg 1.10

MAVEN_REPO = "https://repo1.maven.org/maven2"
MAVEN_ARTIFACTS = {  # name -> (group, artifact, version)
    "runtime": ("org.apache.iceberg", RUNTIME_ARTIFACT, ICEBERG_VERSION),
    "sqlite-jdbc": ("org.xerial", "sqlite-jdbc", "3.40.1.0"),
    "aws-bundle": ("org.apache.iceberg", "iceberg-aws-bundle", ICEBERG_VERSION),
}
S3_OFFLINE = ("an S3 warehouse needs Iceberg's S3FileIO (iceberg-aws-bundle, the AWS SDK v2) in the JVM, "
              "which only Maven Central has (not PyPI or Debian)")
S3_FIX = "on a node with internet access (e.g. AWS) set BENCH_MAVEN=1, or use a local --warehouse"


# ------------------------------------------------------------------------------------------------
# Where things are


def use_maven() -> bool:
    """Online: official jars from Maven Central (BENCH_MAVEN=1; BENCH_SPARK_MAVEN=1 is honoured too)."""
    return any(os.environ.get(k, "").strip().lower() in ("1", "true", "yes")
               for k in ("BENCH_MAVEN", "BENCH_SPARK_MAVEN"))


def cache_root() -> Path:
    """The harness's cache root: $BENCH_CACHE_DIR, else <project root>/.cache."""
    env = os.environ.get("BENCH_CACHE_DIR")
    return Path(env).expanduser().resolve() if env else PROJECT_ROOT / ".cache"


def cache_dir() -> Path:
    """Where the relocated Jackson jar is built."""
    return cache_root() / "iceberg-java"


def _package_dir(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def runtime_jar() -> Path | None:
    """The Iceberg runtime jar from the PyPI package, or None."""
    pkg = _package_dir(RUNTIME_PACKAGE)
    if pkg is None:
        return None
    p = pkg / "jars" / RUNTIME_JAR_NAME
    return p if p.is_file() else None


def wheel_jars_dir() -> Path | None:
    pkg = _package_dir(JARS_PACKAGE)
    return pkg / "jars" if pkg is not None and (pkg / "jars").is_dir() else None


def jackson_jars() -> list[Path] | None:
    """The wheel's Jackson jars in a fixed order, or None when one is missing."""
    d = wheel_jars_dir()
    if d is None:
        return None
    jars = [d / f"{name}-{JACKSON_VERSION}.jar" for name in JACKSON_JARS]
    return jars if all(j.is_file() for j in jars) else None


def hadoop_jars() -> list[Path]:
    """Hadoop's client and the logging jars from the wheel (for a JVM that is not a Hadoop app)."""
    d = wheel_jars_dir()
    if d is None:
        raise UserError(f"the Hadoop client jars come from the {JARS_DIST} wheel, which is not installed: "
                        f"pip install {JARS_DIST} (or `make setup`)")
    jars = sorted(p for p in d.glob("*.jar") if p.name.startswith(HADOOP_JAR_PREFIXES))
    if not any(p.name.startswith("hadoop-client-api-") for p in jars):
        raise UserError(f"no hadoop-client-api jar in {d}: reinstall {JARS_DIST}")
    return jars


def _find_java_jar(candidates: tuple[str, ...]) -> Path | None:
    for name in candidates:
        p = JAVA_DIR / name
        if p.is_file():
            return p.resolve()
    return None


def jarjar_jar() -> Path | None:
    return _find_java_jar(JARJAR_CANDIDATES)


def sqlite_jdbc_jar() -> Path | None:
    return _find_java_jar(SQLITE_JDBC_CANDIDATES)


# ------------------------------------------------------------------------------------------------
# The relocated Jackson jar (offline)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _cache_key(inputs: list[Path]) -> str:
    h = hashlib.sha256(f"recipe={RECIPE_VERSION}\n{JARJAR_RULE}".encode())
    for p in inputs:
        h.update(f"{p.name}={_sha256(p)}\n".encode())
    return h.hexdigest()[:16]


def _build_inputs() -> list[Path]:
    """The files the relocated jar is built from (Jackson jars + the jarjar tool); UserError if missing."""
    jars = jackson_jars()
    if jars is None:
        raise UserError(f"the wheel's Jackson {JACKSON_VERSION} jars are missing: pip install {JARS_DIST} "
                        "into the project's virtualenv")
    jj = jarjar_jar()
    if jj is None:
        raise UserError(f"jarjar not found in {JAVA_DIR}: {JARJAR_FIX}, then `bench setup`")
    return [*jars, jj]


def relocated_jar_path() -> Path | None:
    """Where the relocated Jackson jar for the current inputs lives (built or not), or None when
    its inputs are missing."""
    try:
        inputs = _build_inputs()
    except UserError:
        return None
    return cache_dir() / f"jackson-{_cache_key(inputs)}" / RELOCATED_JAR_NAME


def check_relocated_jar(path: Path | None, full: bool = True) -> tuple[bool, str]:
    """Is `path` a complete relocated Jackson jar?  `full` also checks every entry's CRC."""
    if path is None or not path.is_file():
        return False, f"{path} not built"
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            missing = [c for c in REQUIRED_CLASSES if c not in names]
            if missing:
                return False, f"{path} is incomplete: missing {missing[0]}"
            left = sorted(n for n in names if n.startswith("com/fasterxml/"))
            if left:
                return False, f"{path} still has unrelocated classes, e.g. {left[0]}"
            services = [n for n in names if n.startswith("META-INF/services/")]
            if not services or any(not n.startswith("META-INF/services/" + SHADED_PREFIX) for n in services):
                return False, f"{path} lacks relocated META-INF/services entries"
            if full:
                bad = z.testzip()
                if bad is not None:
                    return False, f"{path} is corrupt (bad CRC in {bad})"
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        return False, f"{path} is not a readable jar: {e}"
    classes = sum(1 for n in names if n.endswith(".class"))
    return True, f"{path} ({classes} classes)"


def _merge_jackson(jars: list[Path], out: Path) -> dict:
    """Merge the Jackson jars into one jar jarjar accepts: no duplicate entries, no multi-release
    `META-INF/versions`, no `module-info.class`, no manifest, no services (rewritten later)."""
    seen: set[str] = set()
    services: dict[str, list[str]] = {}
    dropped = 0
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for jar in jars:
            with zipfile.ZipFile(jar) as src:
                for info in src.infolist():
                    name = info.filename
                    if name.startswith("META-INF/services/") and not info.is_dir():
                        lines = src.read(info).decode().splitlines()
                        services.setdefault(name[len("META-INF/services/"):], []).extend(
                            ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))
                        continue
                    if (info.is_dir() or name.startswith("META-INF/")
                            or name.endswith("module-info.class") or name in seen):
                        dropped += 1
                        continue
                    seen.add(name)
                    dst.writestr(info, src.read(info))
    return {"entries": len(seen), "dropped": dropped, "services": services}


def _relocate(name: str) -> str:
    return SHADED_PREFIX + name[len(JACKSON_PREFIX):] if name.startswith(JACKSON_PREFIX) else name


def _build(inputs: list[Path], final: Path) -> Iterator[str]:
    jars, jarjar = inputs[:-1], inputs[-1]
    java = java_binary()
    if java is None:
        raise UserError(f"java not found: {JAVA_FIX}")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
    os.chmod(tmp, 0o755)
    try:
        merged = tmp / "jackson-merged.jar"
        info = _merge_jackson(jars, merged)
        yield f"merged {len(jars)} Jackson jars: {info['entries']} entries ({info['dropped']} dropped)"
        rules = tmp / "rules.txt"
        rules.write_text(JARJAR_RULE)
        out = tmp / RELOCATED_JAR_NAME
        proc = subprocess.run([java, "-jar", str(jarjar), "process", str(rules), str(merged), str(out)],
                              capture_output=True, text=True, timeout=300)
        # jarjar exits 0 even when it writes nothing (e.g. "Duplicate jar entries"): check the file.
        if proc.returncode != 0 or not out.is_file():
            msg = (proc.stderr or proc.stdout).strip().splitlines()
            raise UserError(f"jarjar failed (exit {proc.returncode}): {msg[-1] if msg else 'no output jar'}")
        # jarjar leaves META-INF/services alone: add them relocated (file name and contents).
        with zipfile.ZipFile(out, "a", zipfile.ZIP_DEFLATED) as z:
            for iface, impls in sorted(info["services"].items()):
                z.writestr(f"META-INF/services/{_relocate(iface)}", "".join(_relocate(i) + "\n" for i in impls))
        merged.unlink()
        rules.unlink()
        ok, detail = check_relocated_jar(out)
        if not ok:
            raise UserError(f"the relocated Jackson jar is incomplete: {detail}")
        yield f"relocated {JACKSON_PREFIX}** -> {SHADED_PREFIX}** with {jarjar.name}"
        (tmp / "build.json").write_text(json.dumps({
            "recipe": RECIPE_VERSION, "rule": JARJAR_RULE.strip(),
            "inputs": {p.name: _sha256(p) for p in inputs}, "input_paths": [str(p) for p in inputs],
            "output_sha256": _sha256(out), "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }, indent=2))
        try:
            os.rename(tmp, final)  # atomic: the whole directory or nothing
        except OSError:
            if not check_relocated_jar(final / RELOCATED_JAR_NAME)[0]:  # another process finished first
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# ------------------------------------------------------------------------------------------------
# Maven Central (online)


def maven_url(name: str, repo: str | None = None) -> str:
    group, artifact, version = MAVEN_ARTIFACTS[name]
    base = (repo or os.environ.get("BENCH_MAVEN_REPO") or MAVEN_REPO).rstrip("/")
    return f"{base}/{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.jar"


def maven_path(name: str) -> Path:
    group, artifact, version = MAVEN_ARTIFACTS[name]
    return cache_root() / "maven" / group / f"{artifact}-{version}.jar"


def fetch_maven(name: str, timeout_s: float = 120.0) -> Path:
    """Download one artifact into the cache (once), checked against its .sha1."""
    path = maven_path(name)
    if path.is_file():
        return path
    url = maven_url(name)
    opener = urllib.request.build_opener()
    try:
        with opener.open(url + ".sha1", timeout=timeout_s) as r:
            want = r.read().decode().split()[0].strip().lower()
        with opener.open(url, timeout=timeout_s) as r:
            data = r.read()
    except OSError as e:
        raise UserError(f"cannot download {url} ({e}); BENCH_MAVEN=1 needs access to Maven Central "
                        f"(or BENCH_MAVEN_REPO)") from None
    got = hashlib.sha1(data).hexdigest()  # noqa: S324 - Maven Central publishes SHA-1 checksums
    if got != want:
        raise UserError(f"{url}: SHA-1 {got} does not match the published {want}")
    from bench.core.fileio import write_atomic

    write_atomic(path, data)
    return path


# ------------------------------------------------------------------------------------------------
# What a JVM gets


def iceberg_jars(remote: bool = False) -> list[str]:
    """Jars that put Iceberg's Java library and the SQLite JDBC driver (and, for an S3 warehouse
    (`remote`), S3FileIO with the AWS SDK) on a JVM's classpath.  Raises UserError naming what is
    missing."""
    if use_maven():
        names = ["runtime", "sqlite-jdbc"] + (["aws-bundle"] if remote else [])
        return [str(fetch_maven(n)) for n in names]
    if remote:
        raise UserError(f"{S3_OFFLINE}; {S3_FIX}")
    rt = runtime_jar()
    if rt is None:
        raise UserError(f"Iceberg runtime jar {RUNTIME_JAR_NAME} not found: pip install {RUNTIME_DIST}")
    reloc = relocated_jar_path()
    if reloc is None:
        _build_inputs()  # raises the UserError naming what is missing
    ok, detail = check_relocated_jar(reloc, full=False)
    if not ok:
        raise UserError(f"the relocated Jackson jar for Iceberg is not ready ({detail}): {SETUP_FIX}")
    sq = sqlite_jdbc_jar()
    if sq is None:
        raise UserError(f"SQLite JDBC driver not found in {JAVA_DIR}: {SQLITE_FIX}")
    return [str(rt), str(reloc), str(sq)]


def iceberg_version_from_jars(jars: list[str] | None = None) -> str:
    for j in jars or []:
        m = re.search(r"iceberg-[\w.\-]*runtime-[\d.]+_[\d.]+-([\w.\-]+?)\.jar$", j)
        if m:
            return m.group(1)
    return ICEBERG_VERSION


def provision(force: bool = False) -> Iterator[str]:
    """Build (or reuse) the relocated Jackson jar and check every local jar a JVM needs (online:
    download the Maven artifacts).  Yields progress lines.  Idempotent."""
    t0 = time.perf_counter()
    if use_maven():
        for name in MAVEN_ARTIFACTS:
            yield f"{name}: {fetch_maven(name)} (Maven Central)"
        yield f"iceberg java runtime ready ({time.perf_counter() - t0:.1f} s)"
        return
    rt = runtime_jar()
    if rt is None:
        raise UserError(f"Iceberg runtime jar {RUNTIME_JAR_NAME} not found: pip install {RUNTIME_DIST} "
                        "into the project's virtualenv")
    yield f"iceberg runtime: {rt}"
    inputs = _build_inputs()
    key = _cache_key(inputs)
    final_dir = cache_dir() / f"jackson-{key}"
    jar = final_dir / RELOCATED_JAR_NAME
    ok, detail = check_relocated_jar(jar)
    if ok and not force:
        yield f"relocated jackson: {jar} (cached, key {key})"
    else:
        if final_dir.exists():
            yield f"discarding the cached build: {detail}" if not ok else "rebuilding (forced)"
            shutil.rmtree(final_dir)
        yield f"building the relocated Jackson jar into {final_dir}"
        yield from _build(inputs, final_dir)
        ok, detail = check_relocated_jar(jar)
        if not ok:
            raise UserError(f"the relocated Jackson jar is not usable: {detail}")
        yield f"relocated jackson: {detail}"
    sq = sqlite_jdbc_jar()
    if sq is None:
        raise UserError(f"SQLite JDBC driver not found in {JAVA_DIR}: {SQLITE_FIX}")
    yield f"sqlite jdbc: {sq}"
    yield f"iceberg java runtime ready ({time.perf_counter() - t0:.1f} s)"


# ------------------------------------------------------------------------------------------------
# For `bench doctor`


def java_requirement(supported: tuple[int, ...] = SUPPORTED_JAVA, who: str = "Iceberg 1.10") -> Requirement:
    java = java_binary()
    if java is None:
        return Requirement("java", False, "JAVA_HOME unset and no java on PATH", JAVA_FIX)
    v = java_version(java)
    ok = v["major"] in supported
    line = v["runtime"] or v["error"] or ""
    detail = f"{java}: {line.split(' | ')[0]}" + ("" if ok or v["major"] is None else
                                                  f" ({who} supports Java {', '.join(map(str, supported))})")
    return Requirement("java", ok, detail, "" if ok else JAVA_FIX)


def requirements() -> list[Requirement]:
    """Everything Iceberg's Java library needs here, each with how to fix it.  No side effects."""
    reqs = [java_requirement()]
    try:
        pv = importlib.metadata.version(JARS_PACKAGE)
        found = wheel_jars_dir() is not None
    except importlib.metadata.PackageNotFoundError:
        pv, found = None, False
    reqs.append(Requirement("hadoop client and jackson jars (pyspark wheel)", found,
                            f"{JARS_PACKAGE} {pv}" if found else "not installed",
                            "" if found else f"pip install {JARS_DIST}"))
    if use_maven():
        reqs.append(Requirement("iceberg runtime (maven)", True, "BENCH_MAVEN=1: " + ", ".join(
            maven_url(n) for n in ("runtime", "sqlite-jdbc"))))
        return reqs
    rt = runtime_jar()
    reqs.append(Requirement("iceberg runtime jar", rt is not None, str(rt) if rt else f"{RUNTIME_JAR_NAME} not found",
                            "" if rt else f"pip install {RUNTIME_DIST}"))
    jj = jarjar_jar()
    reqs.append(Requirement("jarjar", jj is not None, str(jj) if jj else f"not in {JAVA_DIR}",
                            "" if jj else JARJAR_FIX))
    reloc = relocated_jar_path()
    if reloc is None:
        reqs.append(Requirement("relocated jackson jar", False,
                                "cannot be built: its inputs (the wheel's Jackson jars, jarjar) are missing",
                                f"fix the items above, then {SETUP_FIX}"))
    else:
        ok, detail = check_relocated_jar(reloc, full=True)
        reqs.append(Requirement("relocated jackson jar", ok, detail, "" if ok else SETUP_FIX))
    sq = sqlite_jdbc_jar()
    reqs.append(Requirement("sqlite jdbc jar", sq is not None, str(sq) if sq else f"not in {JAVA_DIR}",
                            "" if sq else SQLITE_FIX))
    return reqs


def s3_requirement() -> Requirement:
    """What a JVM needs for an S3 warehouse."""
    if use_maven():
        return Requirement("S3 warehouse (iceberg-aws-bundle)", True,
                           f"BENCH_MAVEN=1: {maven_url('aws-bundle')}, catalog io-impl S3FileIO")
    return Requirement("S3 warehouse (iceberg-aws-bundle)", False, S3_OFFLINE, S3_FIX)
