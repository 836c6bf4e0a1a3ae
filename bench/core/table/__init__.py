"""Table inspection: what a snapshot holds, read from the table's own metadata and files.

    entries   live manifest entries of a snapshot, split into data / position / equality deletes
    files     Parquet footers: codecs, row groups, logical (uncompressed) bytes, field ids
    deletes   Iceberg v2 delete rules: which live delete files still apply, which are dangling
    state     the files under a table's location: list, fingerprint, restore byte for byte
Datagen, the verifier and engines that need it call these; nothing here knows who asks.
"""

from bench.core.table.entries import (
    LiveFiles,
    live_entries,
    live_files,
    manifest_live_entries,
    snapshot_of,
)
from bench.core.uri import local_path

__all__ = ["LiveFiles", "live_entries", "live_files", "local_path", "manifest_live_entries", "snapshot_of"]
