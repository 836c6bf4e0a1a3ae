"""Iceberg compaction benchmark harness."""

__version__ = "0.1.0"
