"""The hand-off from datagen to the runner and the verifier: a generated table and its ground truth.

A dataset is one Iceberg table plus its manifest, `<state>/datasets/<table>.json`, written LAST by
datagen, so a half-written dataset has no manifest and is never mistaken for a complete one.  The
manifest records the recipe, its hash, seed and scale, the snapshot and metadata file to reset to,
every file under the table's location (so a reset can restore them byte for byte), and the
generator's ground truth: the rows and content checksum the table must hold, computed by the generator
from the rows it generated, never by reading the table back.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bench.core.fileio import write_atomic
from bench.core.records.verification import ReaderFinding


class PartitionTruth(BaseModel):
    """What one partition of a partitioned table holds, computed by the generator like the whole."""

    model_config = ConfigDict(extra="forbid")

    values: list[int]  # the partition tuple, in Iceberg's representation (days, hours, bucket numbers)
    rows: int  # rows a reader sees in it
    checksum: str  # bench.core.checksum over those rows: the partitions' checksums sum to the table's
    data_files: int = 0
    delete_files: int = 0


class GroundTruth(BaseModel):
    """What the table holds, computed by the generator (`bench.core.checksum` over generated rows)."""

    model_config = ConfigDict(extra="forbid")

    rows: int  # rows a reader must see (deleted rows excluded)
    checksum: str  # order-independent checksum over all columns of those rows
    computed_by: str = "generator"
    rows_written: int = 0  # rows in data files, deleted or not
    data_files: int = 0
    data_bytes: int = 0
    uncompressed_bytes: int = 0  # Parquet uncompressed page bytes of the data files
    position_delete_files: int = 0
    equality_delete_files: int = 0
    position_delete_bytes: int = 0
    equality_delete_bytes: int = 0
    position_deleted_rows: int = 0
    equality_deleted_rows: int = 0
    equality_keys: int = 0
    unmatched_equality_keys: int = 0
    rows_per_data_file: int = 0
    commits: int = 0
    partition_spec: str = ""  # e.g. "[1000: event_date: identity(12)]"; "" when unpartitioned
    partitions: dict[str, PartitionTruth] = Field(default_factory=dict)  # by partition path (datagen.partitions)
    # a user's table (bench.runner.source): readers the reference reader (Iceberg's Java library) overruled
    findings: list[ReaderFinding] = Field(default_factory=list)


class GeneratedTable(BaseModel):
    """A complete dataset: the table and everything needed to reset and verify it."""

    model_config = ConfigDict(extra="forbid")

    table: str  # "namespace.table"
    kind: str  # the recipe kind (smallfiles | deletes)
    recipe_hash: str
    recipe: dict[str, Any]  # the recipe as generated (validated model, dumped)
    scale: float  # bytes and rows
    file_scale: float | None = None  # file counts, when not `scale` (--file-scale); None: those of `scale`
    seed: int
    snapshot_id: int | None  # None: a user's empty table (no snapshot), cloned as it is
    metadata_location: str  # the metadata file a reset restores
    location: str  # the table's location
    files: int  # live data + delete files
    bytes: int
    rows: int
    live_files: list[str] = Field(default_factory=list)  # every data and delete file of the snapshot
    table_files: dict[str, int] = Field(default_factory=dict)  # every file under the location -> size
    # every file under the location -> content hash (bench.core.table.hashes; {} on S3 and in older manifests)
    table_hashes: dict[str, str] = Field(default_factory=dict)
    ground_truth: GroundTruth
    created_at: str = ""
    generation_s: float = 0.0
    generator_version: str = ""
    reused: bool = Field(default=False, exclude=True)  # set when a cached dataset was returned

    @property
    def counts_scale(self) -> float:
        """The scale the table's file counts are of."""
        return self.scale if self.file_scale is None else self.file_scale


def manifest_path(state_dir: Path, table_name: str) -> Path:
    return Path(state_dir) / "datasets" / f"{table_name}.json"


def hashes_cache_path(state_dir: Path, table_name: str) -> Path:
    """The stamps and hashes of the table's files when they were last hashed (bench.core.table.hashes)."""
    return Path(state_dir) / "datasets" / f"{table_name}.hashes.json"


def load_manifest(state_dir: Path, table_name: str) -> GeneratedTable | None:
    """The dataset's manifest, or None when there is none (or it is from an older, incompatible
    harness: then the dataset is generated again)."""
    p = manifest_path(state_dir, table_name)
    try:
        return GeneratedTable.model_validate_json(p.read_text())
    except FileNotFoundError:
        return None
    except ValueError:
        return None


def spare_dir(state_dir: Path, table_name: str) -> Path:
    """The dataset's vault: a restorable copy of each of its files (bench.core.table.state.vault)."""
    return Path(state_dir) / "datasets" / f"{table_name}.spare"


def parked_dir(state_dir: Path, table_name: str) -> Path:
    """Where a local table's directory waits while an engine sets up (bench.core.table.state.park):
    beside the warehouse directory, not in it (an engine that lists the warehouse must not find it),
    on the same file system (a rename); inside the state directory where the parent does not allow it."""
    state = Path(state_dir).resolve()
    beside = state.parent / f".{state.name}.parked"
    try:
        if os.access(state.parent, os.W_OK) and state.parent.stat().st_dev == state.stat().st_dev:
            return beside / table_name
    except OSError:
        pass
    return state / "datasets" / f"{table_name}.parked"


def save_manifest(state_dir: Path, ds: GeneratedTable) -> Path:
    """Write the manifest atomically (last step of datagen: its presence means complete)."""
    return write_atomic(manifest_path(state_dir, ds.table.split(".")[-1]), ds.model_dump_json(indent=1))
