"""The delete-heavy table of the copy-on-write scenarios, shaped like a streaming CDC writer.

Shape.  Writer checkpoint i (i = 0 .. n-1) closes one data file, and may close one position-delete file
deleting rows OF THAT data file and one equality-delete file deleting by the key (v1, v2).  With n data,
p position-delete and e equality-delete files, checkpoint i has a position delete iff
floor((i+1)p/n) > floor(ip/n) (exactly p of them, evenly spread), and likewise for equality deletes:
deletes-standard (20k : 10k : 10k) puts deletes on every other checkpoint, deletes-high (20k : 20k : 20k)
on every one.  Checkpoints commit in groups of K = `files_per_commit` (default 32): one snapshot adding
the group's data files and their position deletes, then a later one adding the group's equality
deletes.  So every equality delete has a higher data sequence number than every data file written at or
before its checkpoint and applies to all of them (Iceberg v2: an equality delete applies to data files
of smaller sequence number, a position delete to those of smaller or equal one) - the shape of the
generator iceberg-compaction is tested with.

Which rows die - decided at plan time, deterministic from the seed (`numpy` generators seeded with
(seed, file index, purpose)):
- data file j loses k_pos = max(1, round(f_pos x R)) rows to its own position-delete file when checkpoint
  j has one, f_pos = deleted_fraction x position_delete_share (defaults 0.2 x 0.5 = 10 %);
- and k_eq = round(f_eq x R) other rows to equality deletes, f_eq = deleted_fraction x (1 - share)
  (default 10 %): each such row is assigned to one of the first `equality_window` (default 4) equality-
  delete checkpoints at or after j, uniformly; rows of data files after the last equality checkpoint
  are not equality-deleted.  Keys (v1, v2) are unique in the table (v2 = file offset + row number), so a
  key deletes exactly the row it was taken from.
- Every equality-delete file also holds keys that match nothing, like a CDC stream's upserts of new keys
  and deletes of deleted keys: max(1, round(unmatched_key_ratio x matched keys)) of them (default ratio
  0.1), with v1 < 0 (data rows have v1 >= 0) and v2 uniform over all keys written so far, so each
  equality file's v2 bounds span the table's history and min/max pruning cannot skip it for any older
  data file.  With `equality_delete_bytes` set (deletes-massive: ~20 GB at scale 1.0) unmatched keys are
  added until each equality file reaches its share of that total (bytes per key measured once by
  writing a sample with the table's codec).

Scale rule (scale s; 1.0 = the published size):
    n = max(min_files, round(data_files x s))                     data files,
    p = round(n x position_delete_files / data_files)             position-delete files,
    e = round(n x equality_delete_files / data_files)             equality-delete files,
    R = max(100, round(rows_per_data_file x data_files x s / n))  rows per data file,
    equality_delete_bytes x s                                     equality-delete bytes (when set).
Above the floor (s >= min_files / data_files) files keep the published row count (50,000 by default:
our choice, the published row counts are unknown) and the count scales; below it the count stops at
`min_files` and the files shrink instead, which keeps tiny test scales meaningful (seconds, 8+ data files
with deletes).  The delete-file ratios hold at every scale.

Ground truth.  Each writer computes, for its own data file, the surviving rows (neither position- nor
equality-deleted) and their count and content checksum (`bench.core.checksum`: the verifier's SQL, sum of
DuckDB's hash over all columns) from the rows it generated - in parallel, one file at a time, never
reading the table back.  The per-file sums add up to the dataset's ground truth.

Files and commits.  Files are written on a pool of processes with pyiceberg's Parquet writer: data files
exactly as `datagen.writer.write_data_file`; position deletes = file_path (field id 2147483546, spelled
exactly as the manifest records the data file) + pos (2147483545), sorted by pos; equality deletes =
v1 (1), v2 (2) with equality_ids [1, 2].  Commits go through Iceberg's Java API (`RowDelta`, metrics from
Iceberg's own `ParquetUtil.fileMetrics`, `MetricsConfig.forPositionDelete` for position deletes so their
file_path bounds are exact) in a JVM over py4j (`bench.core.iceberg_java`): pyiceberg cannot commit
delete files, and adding the data files in the same RowDelta as their position deletes is what a
streaming writer does (one snapshot), which a pyiceberg append followed by a Java RowDelta could not
reproduce.  Commits are annotated with `bench.checkpoints` and `bench.commit` in the snapshot summary.  Each
file's metadata (Iceberg's Java DataFile/DeleteFile, metrics read from its footer) is built on a few threads as its
writer finishes, and the writers run a commit group ahead of the commits: what is committed, and in which order,
is the same as one file at a time.

Partitioned (`partitioning` set; layout, skew and scale rule in `datagen.partitions`): data file i is in
the partition the layout gives it, and checkpoint i's position- and equality-delete files are in that
partition too (their DataFiles carry its tuple).  Equality deletes are partition-scoped like a CDC
writer's: a row of data file j may only die in one of the next `equality_window` equality checkpoints at
or after j OF ITS PARTITION (unmatched keys still match nothing).  Ground truth per partition as well.

Modules: `plan` (what to write, deterministic), `write` (the writers, in worker processes), `generate`
(the pipeline: writers -> Java commits -> ground truth).
"""

from datagen.deletes.generate import generate, storage_requirement
from datagen.deletes.plan import DeletesPlan, deleted_rows, plan

__all__ = ["DeletesPlan", "deleted_rows", "generate", "plan", "storage_requirement"]
