"""Spark's side of the engine's session: the conf every Spark JVM of the harness shares is the lower
layer's (`bench.core.iceberg_java.spark_conf`: loopback only, no driver UI, Iceberg's extensions and
jars, the harness catalog as `<settings.name>`); here what only the engine needs, a driver of the
standalone cluster of `bench.engines.spark.cluster`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["driver_address", "scenario_conf", "standalone_conf"]


def scenario_conf(spark_conf: dict[str, Any]) -> dict[str, str]:
    """A scenario's `spark_conf` as Spark settings (booleans as Spark spells them), applied last."""
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in spark_conf.items()}


def standalone_conf(cores: int, executors: int, executor_java_options: list[str]) -> dict[str, str]:
    """A driver of a standalone cluster whose workers have `cores` cores each: one executor per worker with
    all of them (its memory comes from the memory plan)."""
    return {
        "spark.executor.cores": str(cores),
        "spark.cores.max": str(cores * executors),
        "spark.executor.instances": str(executors),
        "spark.executor.extraJavaOptions": " ".join(executor_java_options),
        "spark.dynamicAllocation.enabled": "false",
    }


def driver_address(master_host: str) -> str:
    """The address of this node that the cluster's workers reach the driver at: $BENCH_SPARK_DRIVER_HOST, or
    127.0.0.1 for a master on loopback, or the local address of the route to the master."""
    import socket

    from bench.core.settings import env_settings
    from bench.engines.spark.cluster import is_loopback

    host = env_settings().spark_driver_host
    if host:
        return host

    if is_loopback(master_host):
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((master_host, 7077))  # UDP: no packet is sent; the kernel picks the route's address
        return str(s.getsockname()[0])
