"""Spark SQL as the fallback reader (not implemented yet: says why)."""

from __future__ import annotations

from bench.core.catalog import CatalogSettings
from bench.core.results import ReadQuery

NAME = "spark-sql"


def table_ref(table: str) -> str:
    return f"bench_cat.{table}"


def unavailable(settings: CatalogSettings) -> str:
    return "the Spark SQL fallback reader is not implemented yet"


def run_queries(settings: CatalogSettings, table: str, queries: list[ReadQuery],
                cache_mode: str) -> dict[str, tuple[list[str], float]]:
    raise NotImplementedError(unavailable(settings))
