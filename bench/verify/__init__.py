"""Verification: what a table holds before and after a compaction, measured the same way for every
engine from the table's own metadata and files, never from what an engine says it did.

    readers   content readers with different code paths (by name, by field id, delete-aware)
    referee   who decides when readers disagree, and the findings about the readers that read otherwise
    stats     TableStats of a snapshot (files, bytes, codecs, row groups, rows, checksum)
    checks    the declarative checks per scenario kind and `verify()`
    integrity what a compaction must never change: identity, history, the kind of its commits
    uncommitted  the files of an engine that commits nothing, staged as a scratch table to verify
    untouched the partitions outside a partition filter, and the outcome per partition
"""

from bench.verify.checks import RULES, VerifyInput, verify
from bench.verify.integrity import IntegrityInput, integrity_checks
from bench.verify.readers import READERS, ReaderUnavailable
from bench.verify.stats import table_stats
from bench.verify.uncommitted import remove_output, stage_output
from bench.verify.untouched import outcome as partition_outcome

__all__ = ["READERS", "RULES", "IntegrityInput", "ReaderUnavailable", "VerifyInput", "integrity_checks",
           "partition_outcome", "remove_output", "stage_output", "table_stats", "verify"]
