"""Synthesizes Iceberg tables from declarative recipes, deterministically from a seed.

Knows Iceberg and Parquet; knows nothing of engines.  See `datagen.dataset` for the entry point.
"""
