"""The lower layer: what every other part of the harness stands on, and nothing above it.

Errors, sizes, atomic files, SQL quoting, machine facts, progress, the warehouse lock, cost
arithmetic, the content checksum, the results model, catalog settings and access (SQLite, the
loopback REST server, DuckDB, S3), table inspection (live manifest entries, Parquet footers, delete
rules, restoring a table's files) and Iceberg's Java library (the JVM-backed committer datagen needs).
Nothing here imports `datagen`, `bench.engines`, `bench.verify`, the runner, the CLI or `reports`
(checked by the import-linter contract in pyproject.toml), and nothing here names an engine.
"""
