"""The Spark + Iceberg runtime, provisioned offline.

Spark finds Iceberg through `spark.jars`, local files only (Maven Central is unreachable offline):

1. the Iceberg Spark runtime jar shipped by the PyPI package `snowpark-connect-deps-iceberg`
   (`iceberg-spark-runtime-3.5_2.12-1.10.2.jar`, with the SQL extensions inside);
2. the Jackson classes that jar references under `org.apache.iceberg.shaded.com.fasterxml.jackson`
   but does not contain (without them the first CREATE TABLE fails with
   `NoClassDefFoundError ... JsonFactoryBuilder`).  We build them from the Jackson 2.15.2 jars that
   ship inside pyspark, relocated with Debian's jarjar (package libjarjar-java);
3. the SQLite JDBC driver (Debian package libxerial-sqlite-jdbc-java) for Iceberg's JdbcCatalog.

The relocated jar is built by `provision()` (`bench setup`) into a cache directory keyed by the hashes
of its inputs, built in a temporary directory and renamed into place, so a half-built cache is never
used.  With `BENCH_SPARK_MAVEN=1` (a machine with internet, e.g. on AWS) Spark resolves the official
Maven artifacts through `spark.jars.packages` instead; the offline path is the default.
"""

from __future__ import annotations

import contextlib
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
import zipfile
from pathlib import Path
from typing import Iterator

from bench.engines.base import Requirement
from bench.errors import UserError

PROJECT_ROOT = Path(__file__).resolve().parent.parent

ICEBERG_VERSION = "1.10.2"
SCALA_VERSION = "2.12"
SPARK_MINOR = "3.5"
RUNTIME_JAR_NAME = f"iceberg-spark-runtime-{SPARK_MINOR}_{SCALA_VERSION}-{ICEBERG_VERSION}.jar"
RUNTIME_PACKAGE = "snowpark_connect_deps_iceberg"
RUNTIME_DIST = "snowpark-connect-deps-iceberg==1.0.3"
PYSPARK_DIST = "pyspark==3.5.9"

JACKSON_VERSION = "2.15.2"
JACKSON_JARS = ("jackson-annotations", "jackson-core", "jackson-databind", "jackson-datatype-jsr310")
JACKSON_PREFIX = "com.fasterxml.jackson."
SHADED_PREFIX = "org.apache.iceberg.shaded.com.fasterxml.jackson."
JARJAR_RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"
RELOCATED_JAR_NAME = f"iceberg-shaded-jackson-{JACKSON_VERSION}.jar"
# Bump when the build recipe changes: it is part of the cache key.
RECIPE_VERSION = "1"
# Classes the runtime jar needs (one per input jar) - a jar without them is incomplete.
REQUIRED_CLASSES = (
    "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactoryBuilder.class",
    "org/apache/iceberg/shaded/com/fasterxml/jackson/databind/ObjectMapper.class",
    "org/apache/iceberg/shaded/com/fasterxml/jackson/annotation/JsonProperty.class",
    "org/apache/iceberg/shaded/com/fasterxml/jackson/datatype/jsr310/JavaTimeModule.class",
)

JAVA_DIR = Path("/usr/share/java")
JARJAR_CANDIDATES = ("jarjar.jar", "jarjar-1.4.jar")
SQLITE_JDBC_CANDIDATES = ("xerial-sqlite-jdbc.jar", "sqlite-jdbc.jar")
JARJAR_FIX = "apt-get install -y libjarjar-java"
SQLITE_FIX = "apt-get install -y libxerial-sqlite-jdbc-java"
JAVA_FIX = "apt-get install -y openjdk-17-jre-headless (Spark 3.5 runs on Java 8, 11 or 17)"
SETUP_FIX = "run `make setup` or `bench setup`"
SUPPORTED_JAVA = (8, 11, 17)

# The online alternative (BENCH_SPARK_MAVEN=1): the official, complete artifacts.
MAVEN_PACKAGES = (
    f"org.apache.iceberg:iceberg-spark-runtime-{SPARK_MINOR}_{SCALA_VERSION}:{ICEBERG_VERSION}",
    "org.xerial:sqlite-jdbc:3.40.1.0",
)
# An S3 warehouse: Iceberg's S3FileIO needs the AWS SDK v2, bundled as iceberg-aws-bundle (Maven
# Central only: neither PyPI nor Debian has it, so offline Spark cannot reach S3).
AWS_BUNDLE_PACKAGE = f"org.apache.iceberg:iceberg-aws-bundle:{ICEBERG_VERSION}"
S3_OFFLINE = ("Spark cannot use an S3 warehouse offline: Iceberg's S3FileIO needs iceberg-aws-bundle "
              "(AWS SDK v2), which only Maven Central has (not PyPI or Debian)")
S3_FIX = ("on a node with internet access (e.g. AWS) set BENCH_SPARK_MAVEN=1, or use a local --warehouse "
          "(or leave spark out of --engines)")


# ------------------------------------------------------------------------------------------------
# Where things are


def use_maven() -> bool:
    return os.environ.get("BENCH_SPARK_MAVEN", "").strip().lower() in ("1", "true", "yes")


def cache_root() -> Path:
    """The harness's cache root: $BENCH_CACHE_DIR, else <project root>/.cache."""
    env = os.environ.get("BENCH_CACHE_DIR")
    return Path(env).expanduser().resolve() if env else PROJECT_ROOT / ".cache"


def cache_dir() -> Path:
    """Where the Spark runtime is built: <cache root>/spark-runtime."""
    return cache_root() / "spark-runtime"


def _package_dir(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def runtime_jar() -> Path | None:
    """The Iceberg Spark runtime jar from the PyPI package, or None."""
    pkg = _package_dir(RUNTIME_PACKAGE)
    if pkg is None:
        return None
    p = pkg / "jars" / RUNTIME_JAR_NAME
    return p if p.is_file() else None


def pyspark_jars_dir() -> Path | None:
    pkg = _package_dir("pyspark")
    return pkg / "jars" if pkg is not None and (pkg / "jars").is_dir() else None


def jackson_jars() -> list[Path] | None:
    """pyspark's Jackson jars in a fixed order, or None when one is missing."""
    d = pyspark_jars_dir()
    if d is None:
        return None
    jars = [d / f"{name}-{JACKSON_VERSION}.jar" for name in JACKSON_JARS]
    return jars if all(j.is_file() for j in jars) else None


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


def java_binary() -> str | None:
    """The java PySpark will launch: $JAVA_HOME/bin/java if JAVA_HOME is set, else java on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        p = Path(home) / "bin" / "java"
        return str(p) if p.is_file() else None
    return shutil.which("java")


def java_version(java: str | None = None) -> tuple[int | None, str]:
    """(major version, the `java -version` first line); (None, reason) when it cannot be run."""
    java = java or java_binary()
    if not java:
        return None, "java not found (JAVA_HOME unset and no java on PATH)"
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{java} -version failed: {e}"
    text = (proc.stderr or proc.stdout).strip()
    first = text.splitlines()[0] if text else ""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not m:
        return None, f"cannot parse the version of {java}: {first!r}"
    major = int(m.group(1))
    if major == 1 and m.group(2):  # "1.8.0_..." is Java 8
        major = int(m.group(2))
    return major, first


# ------------------------------------------------------------------------------------------------
# The cache


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
        raise UserError(f"pyspark's Jackson {JACKSON_VERSION} jars are missing: "
                        f"pip install {PYSPARK_DIST} into the project's virtualenv")
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


def check_relocated_jar(path: Path, full: bool = True) -> tuple[bool, str]:
    """Is `path` a complete relocated Jackson jar?  `full` also checks every entry's CRC."""
    if not path.is_file():
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
            if not services or any(not n.startswith("META-INF/services/" + SHADED_PREFIX)
                                   for n in services):
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
                z.writestr(f"META-INF/services/{_relocate(iface)}",
                           "".join(_relocate(i) + "\n" for i in impls))
        merged.unlink()
        rules.unlink()
        ok, detail = check_relocated_jar(out)
        if not ok:
            raise UserError(f"the relocated Jackson jar is incomplete: {detail}")
        yield f"relocated {JACKSON_PREFIX}** -> {SHADED_PREFIX}** with {jarjar.name}"
        (tmp / "build.json").write_text(json.dumps({
            "recipe": RECIPE_VERSION, "rule": JARJAR_RULE.strip(),
            "inputs": {p.name: _sha256(p) for p in inputs},
            "input_paths": [str(p) for p in inputs],
            "output_sha256": _sha256(out), "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }, indent=2))
        try:
            os.rename(tmp, final)  # atomic: the whole directory or nothing
        except OSError:
            # Another process finished first; its build is as good as ours.
            if not check_relocated_jar(final / RELOCATED_JAR_NAME)[0]:
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def provision(force: bool = False) -> Iterator[str]:
    """Build (or reuse) the relocated Jackson jar and check every local jar Spark needs.

    Yields progress lines.  Idempotent: a complete cached build for the same inputs is reused; an
    incomplete or corrupt one is replaced.  Raises UserError naming the missing piece and its fix.
    """
    t0 = time.perf_counter()
    rt = runtime_jar()
    if rt is None:
        raise UserError(f"Iceberg runtime jar {RUNTIME_JAR_NAME} not found: "
                        f"pip install {RUNTIME_DIST} into the project's virtualenv")
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
    if use_maven():
        yield "BENCH_SPARK_MAVEN=1: Spark will use spark.jars.packages " + ",".join(MAVEN_PACKAGES)
    yield f"spark runtime ready ({time.perf_counter() - t0:.1f} s)"


# ------------------------------------------------------------------------------------------------
# What Spark gets


def spark_jars() -> list[str]:
    """Local jars for `spark.jars`: Iceberg runtime, relocated Jackson, SQLite JDBC driver."""
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


def spark_jar_conf(remote: bool = False) -> dict[str, str]:
    """The Spark conf entries that put Iceberg and the JDBC driver (and, for an S3 warehouse
    (`remote`), the AWS bundle) on the classpath."""
    if use_maven():
        return {"spark.jars.packages": ",".join(MAVEN_PACKAGES + ((AWS_BUNDLE_PACKAGE,) if remote else ()))}
    if remote:
        raise UserError(f"{S3_OFFLINE}; {S3_FIX}")
    return {"spark.jars": ",".join(spark_jars())}


def s3_requirement() -> Requirement:
    """What Spark needs for an S3 warehouse (for `bench doctor` and the runner's up-front check)."""
    if use_maven():
        return Requirement("S3 warehouse (iceberg-aws-bundle)", True,
                           f"BENCH_SPARK_MAVEN=1: spark.jars.packages adds {AWS_BUNDLE_PACKAGE}, "
                           "catalog io-impl org.apache.iceberg.aws.s3.S3FileIO")
    return Requirement("S3 warehouse (iceberg-aws-bundle)", False, S3_OFFLINE, S3_FIX)


def iceberg_version_from_jars(jars: list[str] | None = None) -> str:
    for j in jars or []:
        m = re.search(r"iceberg-spark-runtime-[\d.]+_[\d.]+-([\w.\-]+?)\.jar$", j)
        if m:
            return m.group(1)
    return ICEBERG_VERSION


# ------------------------------------------------------------------------------------------------
# For `bench doctor`


def runtime_requirements() -> list[Requirement]:
    """Everything the Spark runtime needs, each with how to fix it.  No side effects."""
    reqs: list[Requirement] = []

    java = java_binary()
    if java is None:
        reqs.append(Requirement("java", False, "JAVA_HOME unset and no java on PATH", JAVA_FIX))
    else:
        major, line = java_version(java)
        ok = major in SUPPORTED_JAVA
        detail = f"{java}: {line}" + ("" if ok or major is None else
                                      f" (Spark 3.5 supports Java {', '.join(map(str, SUPPORTED_JAVA))})")
        reqs.append(Requirement("java", ok, detail, "" if ok else JAVA_FIX))

    try:
        pv = importlib.metadata.version("pyspark")
        found = importlib.util.find_spec("pyspark") is not None
    except importlib.metadata.PackageNotFoundError:
        pv, found = None, False
    reqs.append(Requirement("python module pyspark", found, f"pyspark {pv}" if found else "not importable",
                            "" if found else f"pip install {PYSPARK_DIST}"))

    if use_maven():
        reqs.append(Requirement("iceberg runtime (maven)", True,
                                "BENCH_SPARK_MAVEN=1: spark.jars.packages " + ",".join(MAVEN_PACKAGES)))
        return reqs

    rt = runtime_jar()
    reqs.append(Requirement("iceberg spark runtime jar", rt is not None,
                            str(rt) if rt else f"{RUNTIME_JAR_NAME} not found",
                            "" if rt else f"pip install {RUNTIME_DIST}"))

    jj = jarjar_jar()
    reqs.append(Requirement("jarjar", jj is not None, str(jj) if jj else f"not in {JAVA_DIR}",
                            "" if jj else JARJAR_FIX))

    reloc = relocated_jar_path()
    if reloc is None:
        reqs.append(Requirement("relocated jackson jar", False,
                                "cannot be built: its inputs (pyspark Jackson jars, jarjar) are missing",
                                f"fix the items above, then {SETUP_FIX}"))
    else:
        ok, detail = check_relocated_jar(reloc, full=True)
        reqs.append(Requirement("relocated jackson jar", ok, detail, "" if ok else SETUP_FIX))

    sq = sqlite_jdbc_jar()
    reqs.append(Requirement("sqlite jdbc jar", sq is not None, str(sq) if sq else f"not in {JAVA_DIR}",
                            "" if sq else SQLITE_FIX))
    return reqs


# ------------------------------------------------------------------------------------------------
# A SparkSession for the harness itself (datagen commits through Iceberg's Java API)


def catalog_conf(settings) -> dict[str, str]:
    """Spark conf that mounts the harness catalog (`bench.catalog.CatalogSettings`) as
    `spark_catalog.<settings.name>`: Iceberg's JdbcCatalog on the embedded SQLite file, or, with an
    external REST catalog, Iceberg's REST client (online only: the offline runtime lacks HttpClient5)."""
    name = settings.name
    conf = {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog"}
    if settings.external_rest:
        if not use_maven():
            raise UserError("offline Spark cannot use a REST catalog (the offline Iceberg runtime lacks "
                            "HttpClient5); use the embedded catalog or set BENCH_SPARK_MAVEN=1 online")
        conf[f"spark.sql.catalog.{name}.type"] = "rest"
        conf[f"spark.sql.catalog.{name}.uri"] = str(settings.rest_uri)
        for k, v in settings.properties.items():
            conf[f"spark.sql.catalog.{name}.{k}"] = str(v)
    else:
        conf[f"spark.sql.catalog.{name}.catalog-impl"] = "org.apache.iceberg.jdbc.JdbcCatalog"
        conf[f"spark.sql.catalog.{name}.uri"] = settings.jdbc_uri
        conf[f"spark.sql.catalog.{name}.warehouse"] = settings.warehouse_uri
        if getattr(settings, "is_remote", False):
            # S3 warehouse: Iceberg's S3FileIO (endpoint, path style, region; no keys: the AWS SDK reads
            # them from the environment or the instance role), online only (spark_jar_conf)
            from bench.catalog.s3 import S3Connection

            for k, v in S3Connection.from_env().spark_catalog_properties().items():
                conf[f"spark.sql.catalog.{name}.{k}"] = v
    return conf


def base_conf(settings, cores: int = 1, app_name: str = "bench") -> dict[str, str]:
    """Everything a local-mode session on this machine needs: loopback only, no UI, the Iceberg SQL
    extensions, the harness catalog and the local jars (or Maven packages with BENCH_SPARK_MAVEN=1)."""
    conf = {
        "spark.master": f"local[{max(1, int(cores))}]",
        "spark.app.name": app_name,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    }
    conf.update(catalog_conf(settings))
    conf.update(spark_jar_conf(remote=getattr(settings, "is_remote", False)))
    return conf


@contextlib.contextmanager
def spark_session(settings, cores: int = 1, heap: str = "1g", extra_conf: dict[str, str] | None = None,
                  app_name: str = "bench") -> Iterator["object"]:
    """A SparkSession (local mode, `cores` threads, `heap` driver heap) with the harness catalog, for
    the `with` block; on exit the session is stopped AND its JVM shut down, so a harness process never
    keeps a JVM (or its memory) around after e.g. datagen.  Refuses to run beside another active
    SparkContext in the same process (it would silently ignore this conf and be stopped here)."""
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        raise RuntimeError("a SparkContext is already active in this process; spark_session() needs its own")
    conf = base_conf(settings, cores, app_name)
    conf["spark.driver.memory"] = heap
    conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={quiet_log4j2_file().as_uri()}"
    conf.update({str(k): str(v) for k, v in (extra_conf or {}).items()})
    builder = SparkSession.builder
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = None
    try:
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        yield spark
    finally:
        if spark is not None:
            try:
                spark.stop()
            except Exception:  # noqa: BLE001 - the JVM may be gone already
                pass
        _shutdown_gateway()


QUIET_LOG4J2 = """\
# bench: Spark's console logging at WARN, without the native-hadoop warning every local session prints
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = error
"""


def quiet_log4j2_file() -> Path:
    """A log4j2 configuration for harness-side sessions (written once, content-addressed)."""
    digest = hashlib.sha256(QUIET_LOG4J2.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"bench-log4j2-{digest}.properties"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(QUIET_LOG4J2)
        os.replace(tmp, path)
    return path


def _shutdown_gateway(timeout_s: float = 30.0) -> None:
    """Stop the JVM PySpark launched for this process (SparkSession.stop() leaves it running)."""
    from pyspark import SparkContext

    gw = SparkContext._gateway
    SparkContext._gateway = None
    SparkContext._jvm = None
    if gw is None:
        return
    proc = getattr(gw, "proc", None)
    try:
        gw.shutdown()
    except Exception:  # noqa: BLE001
        pass
    if proc is None:
        return
    try:
        if proc.stdin:
            proc.stdin.close()  # PySpark's gateway JVM exits when its stdin closes
        proc.wait(timeout=timeout_s)
    except Exception:  # noqa: BLE001 - still alive or already reaped: make sure it is gone
        proc.kill()
        proc.wait()
