"""Iceberg's Java library in a JVM the harness starts itself (py4j), for what only it can do here:
committing delete files (pyiceberg cannot) and metadata-only removals of delete files.

    runtime   the jars (offline from pinned packages, online from Maven Central) and `bench setup`
    gateway   JavaIceberg: a JVM with the harness catalog open, tables loaded by identifier
    commit    RowDelta commits of files written elsewhere; removal of delete files by path
"""
