"""Read amplification: what readers gain from a compaction.

A fixed set of reader queries (`bench.core.results.ReadQuery`: full scan aggregate, a ~1 % key range,
a point lookup) is timed on the table before the compaction (the dataset snapshot) and after it (the
snapshot the verifier checked), with the same reader and cache policy, and every answer is checked
against the generator's truth (computed by datagen and handed in by the runner: nothing here reads
datagen).  Readers: DuckDB's iceberg extension through the REST catalog (`duck`), or, where its
equality-delete work is too large, Spark SQL in a subprocess (`spark`).  Files opened and delete files
merged come from the snapshot's manifests (`metadata`).  Depends on bench.core only.

    rec = read_before(tbl, settings, queries, truth, cache_mode)      # after the reset
    read_after(rec, tbl, settings, queries, truth, usable=verified)   # after verification
"""

from bench.reads.measure import read_after, read_before, skip_after, summary_line
from bench.reads.queries import check, check_query, query_sql

__all__ = ["check", "check_query", "query_sql", "read_after", "read_before", "skip_after", "summary_line"]
