"""Iceberg's `rewrite_data_files` procedure as Spark SQL text: the options an engine that speaks it (Spark with
Iceberg's Java procedures, repark's port of them) derives from the job's intent, and the map literal of a call's
options (its string literals: bench.core.sql.spark_literal).
"""

from __future__ import annotations

from typing import Any

from bench.core.sql import spark_literal
from bench.engines.base import CompactionJob

Scalar = str | int | float | bool


def spark_map(options: dict[str, Any]) -> str:
    """map('k', 'v', ...) of Spark SQL literals."""
    return "map(" + ", ".join(f"{spark_literal(k)}, {spark_literal(v)}" for k, v in options.items()) + ")"


def row_dict(rows: list) -> dict[str, Any]:
    """A procedure call's result rows as a dict (the first row; every row under `rows` when there are several)."""
    if not rows:
        return {}
    d = rows[0].asDict(recursive=True)
    if len(rows) > 1:
        d["rows"] = [r.asDict(recursive=True) for r in rows]
    return d


def derived_options(job: CompactionJob) -> dict[str, Scalar]:
    """rewrite_data_files' options from the job's sizes and intent (bench.core.work): small files are work in a
    partition holding `min_files` or more (min-input-files; Iceberg's default 5 would leave smaller partitions
    uncompacted), or every file (rewrite-all); applying deletes (and files with-deletes): every data file with a
    delete file is rewritten (delete-file-threshold 1) and the deletes left dangling are removed
    (remove-dangling-deletes; with a partition filter the harness's own step instead, scoped to it).  With files
    with-deletes Spark's size rule still packs small files too (in groups of min-input-files): it has no option
    that selects only the files with deletes."""
    work = job.intent()
    options: dict[str, Scalar] = {"target-file-size-bytes": int(job.target_file_size_bytes),
                                  "min-file-size-bytes": int(job.small_file_threshold_bytes)}
    if work.files == "all":
        options["rewrite-all"] = True
    else:
        options["min-input-files"] = work.min_files
    if work.applies_deletes:
        options["delete-file-threshold"] = 1
        if not job.partition_filter:  # Iceberg's removal scans the whole table: with a filter, the harness's step
            options["remove-dangling-deletes"] = True
    return options


def strategy_args(job: CompactionJob) -> str:
    """The procedure's strategy arguments: binpack; sort (no sort_order: the table's own sort order); or
    sort with sort_order => 'zorder(c1,c2,...)' (Iceberg's z-order)."""
    if job.strategy == "sort":
        return "strategy => 'sort', "
    if job.strategy == "zorder":
        return f"strategy => 'sort', sort_order => {spark_literal('zorder(' + ','.join(job.zorder_columns) + ')')}, "
    return "strategy => 'binpack', "


def where_arg(job: CompactionJob) -> str:
    """The procedures' partition filter argument (`, where => '...'`; Spark SQL: pyiceberg's syntax is a subset), or
    "" without one."""
    return f", where => {spark_literal(job.partition_filter)}" if job.partition_filter else ""
