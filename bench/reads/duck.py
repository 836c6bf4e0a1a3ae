"""DuckDB's iceberg extension through the loopback REST catalog: the reader of choice (it applies
position and equality deletes itself)."""

from __future__ import annotations

import time

from bench.core.catalog import CatalogSettings
from bench.core.catalog.duck import ALIAS, duckdb_connect_iceberg
from bench.core.checksum import arrow_checksum
from bench.core.machine import drop_page_cache
from bench.core.records.reads import ReadQuery
from bench.core.sql import ident
from bench.reads.queries import aggregate_answer, query_sql

NAME = "duckdb-iceberg"


def table_ref(table: str) -> str:
    ns, name = table.split(".")[-2:]
    return f"{ALIAS}.{ident(ns)}.{ident(name)}"


def execute(con, q: ReadQuery, sql: str):
    cur = con.execute(sql)
    return cur.fetch_arrow_table() if q.name == "point-lookup" else cur.fetchone()


def answer(q: ReadQuery, raw) -> list[str]:
    if q.name == "point-lookup":
        n, s = arrow_checksum(raw)
        return [str(n), str(s)]
    return aggregate_answer(raw)


def run_queries(settings: CatalogSettings, table: str, queries: list[ReadQuery],
                cache_mode: str) -> dict[str, tuple[list[str], float]]:
    """Per query, on one connection attached before any clock starts: cold = the page cache dropped
    right before the timed run; otherwise one untimed run, then the timed one."""
    out: dict[str, tuple[list[str], float]] = {}
    con = duckdb_connect_iceberg(settings)
    try:
        for q in queries:
            sql = query_sql(q, table_ref(table))
            if cache_mode == "cold":
                drop_page_cache()
            else:
                execute(con, q, sql)
            t0 = time.perf_counter()
            raw = execute(con, q, sql)
            seconds = time.perf_counter() - t0
            out[q.name] = (answer(q, raw), seconds)
    finally:
        con.close()
    return out
