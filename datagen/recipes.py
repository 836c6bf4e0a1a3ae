"""Table recipes: what datagen builds, as a union discriminated by `kind`.  Parameters are at scale
1.0 (the published size); each generator documents its scale rule."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

Codec = Literal["uncompressed", "snappy", "zstd", "gzip"]


PartitionSpecKind = Literal["day", "hour", "bucket", "day+bucket"]
TIME_SPECS = ("day", "hour", "day+bucket")
BUCKET_SPECS = ("bucket", "day+bucket")


class Partitioning(BaseModel):
    """A partitioned table (datagen/partitions.py, which documents the layout and the scale rule).

    spec: day         identity(event_date)            a day column, like a daily table's `dt`
          hour        hour(event_ts)
          bucket      bucket(buckets, v1)             v1: a column of the key (v1, v2)
          day+bucket  identity(event_date), bucket(buckets, v1)
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: PartitionSpecKind
    periods: int | None = Field(None, ge=1)  # days (day, day+bucket) or hours (hour) at scale 1.0
    buckets: int | None = Field(None, ge=2, le=1024)  # N of bucket(N, v1) (bucket, day+bucket)
    skew: float = Field(0.0, ge=0.0, le=4.0)  # files of the period r-th newest ~ 1/(r+1)^skew; 0: uniform
    min_files_per_partition: int = Field(2, ge=1)  # partitions shrink with the scale to keep this mean

    @model_validator(mode="after")
    def _fields_fit_the_spec(self) -> Partitioning:
        problems = []
        if (self.spec in TIME_SPECS) != (self.periods is not None):
            problems.append(f"periods (days or hours) is {'required' if self.spec in TIME_SPECS else 'not allowed'}"
                            f" for spec {self.spec!r}")
        if (self.spec in BUCKET_SPECS) != (self.buckets is not None):
            problems.append(f"buckets is {'required' if self.spec in BUCKET_SPECS else 'not allowed'} "
                            f"for spec {self.spec!r}")
        if self.spec == "bucket" and self.skew:
            problems.append("skew orders partitions by age: it needs a time partition (day, hour, day+bucket), "
                            "not spec 'bucket'")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def partitions(self) -> int:
        """Partitions at scale 1.0: periods x buckets."""
        return (self.periods or 1) * (self.buckets or 1)


class _Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    codec: Codec = "uncompressed"  # Parquet codec of the generated files
    codec_level: int | None = None
    files_per_commit: int = Field(32, ge=1)  # files (writer checkpoints) per commit
    min_files: int = Field(16, ge=1)  # floor on the data-file count at tiny scales
    partitioning: Partitioning | None = None  # None: unpartitioned


class SortKey(BaseModel):
    """One field of the table's sort order (Iceberg's identity transform on a column).  In YAML either a
    mapping or a string: `v2`, `v2 desc`, `v2 asc nulls last`.  Null order defaults as Iceberg's and
    Spark's: nulls first ascending, nulls last descending."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    column: str
    direction: Literal["asc", "desc"] = "asc"
    nulls: Literal["first", "last"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, v: object) -> object:
        if not isinstance(v, str):
            return v
        words = v.lower().split()
        out: dict[str, str] = {"column": v.split()[0]} if words else {}
        rest = words[1:]
        if rest and rest[0] in ("asc", "desc"):
            out["direction"], rest = rest[0], rest[1:]
        if len(rest) == 2 and rest[0] == "nulls":
            out["nulls"], rest = rest[1], []
        if not words or rest:
            raise ValueError(f"sort key {v!r}: write COLUMN [asc|desc] [nulls first|last]")
        return out

    @property
    def nulls_first(self) -> bool:
        return self.nulls == "first" if self.nulls else self.direction == "asc"

    def text(self) -> str:
        return f"{self.column} {self.direction} nulls {'first' if self.nulls_first else 'last'}"


class SmallFilesRecipe(_Recipe):
    """Many small data files (datagen/smallfiles.py)."""

    kind: Literal["smallfiles"] = "smallfiles"
    files: int = Field(17_358, ge=1)
    total_bytes: int = Field(193_000_000_000, ge=1)  # uncompressed Parquet bytes at scale 1.0
    # the table's sort order (datagen/smallfiles.py); set, the key v2 is written in a seeded order that
    # scatters it over every file (a stream's arrival order): what a sort-order compaction sorts
    sort_order: list[SortKey] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _known_columns(self) -> SmallFilesRecipe:
        from datagen.schema import PARTITIONED_SCHEMA, SCHEMA

        keys = self.sort_order or []
        names = [f.name for f in (SCHEMA if self.partitioning is None else PARTITIONED_SCHEMA).fields]
        for k in keys:
            if k.column not in names:
                raise ValueError(f"sort_order: {k.column!r} is not a column of the table ({', '.join(names)})")
        if len({k.column for k in keys}) != len(keys):
            raise ValueError("sort_order: a column appears twice")
        return self


class DeletesRecipe(_Recipe):
    """A CDC table full of position and equality deletes (datagen/deletes.py)."""

    kind: Literal["deletes"] = "deletes"
    min_files: int = Field(8, ge=1)
    data_files: int = Field(ge=1)
    position_delete_files: int = Field(0, ge=0)
    equality_delete_files: int = Field(0, ge=0)
    rows_per_data_file: int = Field(50_000, ge=1)
    deleted_fraction: float = Field(0.2, ge=0.0, lt=1.0)  # of a data file's rows, by position + equality
    position_delete_share: float = Field(0.5, ge=0.0, le=1.0)  # share of deleted_fraction by position
    equality_window: int = Field(4, ge=1)  # a row dies in one of the next N equality deletes
    unmatched_key_ratio: float = Field(0.1, ge=0.0)  # extra keys matching nothing, per matched key
    equality_delete_bytes: int | None = Field(None, ge=1)  # total equality-delete bytes at scale 1.0

    @model_validator(mode="after")
    def _one_delete_file_per_checkpoint(self) -> DeletesRecipe:
        if self.position_delete_files > self.data_files or self.equality_delete_files > self.data_files:
            raise ValueError(f"a writer checkpoint closes at most one delete file of each kind: "
                             f"position_delete_files ({self.position_delete_files}) and equality_delete_files "
                             f"({self.equality_delete_files}) must be <= data_files ({self.data_files})")
        return self


TableRecipe = Annotated[Union[SmallFilesRecipe, DeletesRecipe], Field(discriminator="kind")]
