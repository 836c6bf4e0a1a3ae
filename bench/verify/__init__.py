"""Verification: what a table holds before and after a compaction, measured the same way for every
engine from the table's own metadata and files, never from what an engine says it did.

    readers   content readers with different code paths (by name, by field id, delete-aware)
    stats     TableStats of a snapshot (files, bytes, codecs, row groups, rows, checksum)
    checks    the declarative checks per scenario kind and `verify()`
"""

from bench.verify.checks import RULES, VerifyInput, verify
from bench.verify.readers import READERS, ReaderUnavailable
from bench.verify.stats import table_stats

__all__ = ["READERS", "RULES", "ReaderUnavailable", "VerifyInput", "table_stats", "verify"]
