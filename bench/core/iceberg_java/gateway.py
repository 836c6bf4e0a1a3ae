"""A JVM with Iceberg's Java library and the harness catalog, reached over py4j.

    with JavaIceberg(settings) as java:
        table = java.load_table("bench.t")          # org.apache.iceberg.Table
        table.newRowDelta()...

The JVM is a plain one (no Spark session): classpath = the Iceberg jars of `runtime.iceberg_jars()`
plus Hadoop's client; it starts in well under a second and exits when this process closes it (or
dies: py4j's die-on-exit watches its stdin).  The catalog is Iceberg's JdbcCatalog on the embedded
SQLite file, or its REST client for an external catalog.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from bench.core import children
from bench.core.catalog import CatalogSettings
from bench.core.errors import UserError
from bench.core.fileio import write_atomic
from bench.core.iceberg_java import runtime
from bench.core.machine import java_binary

QUIET_LOG4J2 = """\
# bench: Iceberg/Hadoop console logging at WARN, without the native-hadoop warning every JVM prints
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
    """A log4j2 configuration for the harness's JVMs (written once, content-addressed)."""
    digest = hashlib.sha256(QUIET_LOG4J2.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"bench-log4j2-{digest}.properties"
    if not path.exists():
        write_atomic(path, QUIET_LOG4J2)
    return path


def catalog_properties(settings: CatalogSettings, rest: bool = False) -> dict[str, str]:
    """Properties for Iceberg's CatalogUtil.buildIcebergCatalog: the implementation and its settings.  An
    external catalog is always reached through Iceberg's REST client; the embedded one through its JdbcCatalog on
    the SQLite file, or with `rest` through the loopback REST server that serves it (an engine's catalog)."""
    if rest or settings.external_rest:
        return {"type": "rest", **settings.java_rest_properties()}
    return {"catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog", **settings.java_catalog_properties()}


def archive_dir() -> Path:
    return runtime.cache_root() / "cds"


def class_data_sharing(java: str, classpath: list[str]) -> tuple[list[str], tuple[Path, Path] | None]:
    """JVM options mapping an archive of the classes this gateway loads (JDK class-data sharing), and, when there
    is none yet, (the file the JVM writes that archive to at its exit, the archive's path): `close` renames one to
    the other.

    The gateway is the harness's own JVM (datagen's and the writers' commits), never an engine: its start-up
    (about 3.5 s of CPU, most of it loading and verifying Iceberg's classes from the jars) is paid per table
    generated and per writer.  The archive is made by the first gateway of a cache and keyed by the java binary
    and the class path, so a changed JDK or jar makes a new one; a JVM that cannot map it runs without it."""
    quiet = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    java = os.path.realpath(java)
    h = hashlib.sha256()
    for item in [java, *classpath]:
        try:
            st = os.stat(item)
            h.update(f"{item}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{item}\0missing\n".encode())
    path = archive_dir() / f"iceberg-gateway-{h.hexdigest()[:16]}.jsa"
    if path.is_file():
        return [f"-XX:SharedArchiveFile={path}", *quiet], None
    base = Path(java).parents[1] / "lib" / "server" / "classes.jsa"
    if not base.is_file():
        return [], None
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(f"{path.stem}.{os.getpid()}.{id(path)}.tmp")
    # the JDK's own base archive named: a SharedArchiveFile already in JAVA_TOOL_OPTIONS is not the base
    return [f"-XX:SharedArchiveFile={base}", f"-XX:ArchiveClassesAtExit={fresh}", *quiet], (fresh, path)


class JavaIceberg:
    """A py4j gateway to a JVM with Iceberg's Java library and the catalog of `settings` open."""

    def __init__(self, settings: CatalogSettings, heap: str = "512m", log_file: str | None = None):
        self.settings = settings
        self.heap = heap
        self.log_file = log_file
        self.gateway: Any = None
        self.jvm: Any = None
        self.catalog: Any = None
        self.proc: Any = None
        self._archive: tuple[Path, Path] | None = None  # (written at exit, renamed to): class_data_sharing

    def __enter__(self) -> JavaIceberg:
        from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway

        java = java_binary()
        if java is None:
            raise UserError(f"java not found: {runtime.JAVA_FIX}")
        classpath = runtime.iceberg_jars(remote=self.settings.is_remote) + [str(p) for p in runtime.hadoop_jars()]
        cds, self._archive = class_data_sharing(java, classpath)
        err = open(self.log_file, "ab") if self.log_file else None  # noqa: SIM115 - lives with the JVM
        try:
            port, self.proc = launch_gateway(
                classpath=os.pathsep.join(classpath), java_path=java, die_on_exit=True, return_proc=True,
                javaopts=[f"-Xmx{self.heap}", f"-Dlog4j2.configurationFile={quiet_log4j2_file().as_uri()}",
                          "-XX:+ExitOnOutOfMemoryError", *cds],
                redirect_stderr=err, redirect_stdout=err)
        finally:
            if err is not None:
                err.close()
        children.guard(self.proc.pid)  # killed with the harness (it may run in a writer thread)
        self.gateway = JavaGateway(gateway_parameters=GatewayParameters(port=port, auto_convert=True))
        self.jvm = self.gateway.jvm
        try:
            props = self.jvm.java.util.HashMap()
            for k, v in catalog_properties(self.settings).items():
                props.put(k, v)
            conf = self.jvm.org.apache.hadoop.conf.Configuration()
            self.catalog = self.jvm.org.apache.iceberg.CatalogUtil.buildIcebergCatalog(self.settings.name, props, conf)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def load_table(self, ident: str) -> Any:
        return self.catalog.loadTable(self.jvm.org.apache.iceberg.catalog.TableIdentifier.parse(ident))

    def int_array(self, values: list[int]) -> Any:
        arr = self.gateway.new_array(self.jvm.int, len(values))
        for i, v in enumerate(values):
            arr[i] = int(v)
        return arr

    def close(self) -> None:
        gw, self.gateway = self.gateway, None
        if gw is not None:
            try:
                gw.shutdown()
            except Exception:  # noqa: BLE001 - the JVM may be gone already
                pass
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                if proc.stdin:
                    proc.stdin.close()  # die-on-exit: the JVM exits when its stdin closes
                proc.wait(timeout=30)
            except Exception:  # noqa: BLE001 - still alive: make sure it is gone
                proc.kill()
                proc.wait()
            children.unguard(proc.pid)
        archive, self._archive = self._archive, None
        if archive is not None:
            fresh, path = archive
            if proc is not None and proc.returncode == 0 and fresh.is_file():
                os.replace(fresh, path)  # atomic: never half a file
            fresh.unlink(missing_ok=True)
