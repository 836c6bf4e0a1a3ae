"""Verification: what a table holds before and after a compaction, from its own metadata and files."""
