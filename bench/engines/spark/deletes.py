"""The Spark engine's delete steps, after `rewrite_data_files` on a table with deletes: no delete file stays live.

rewrite_data_files removes the dangling deletes it can see (remove-dangling-deletes); position deletes still live (on
an unpartitioned table their sequence numbers can equal the new files': Iceberg 1.10.2 leaves them, 1.12.0's rewrite
leaves none) go through `rewrite_position_delete_files` (rewrite-all), and on an unpartitioned table
neither procedure drops the equality deletes that no longer apply to any live data file, so they are found by the
harness's delete rules (`bench.core.table.deletes`) and removed in one metadata-only commit through Iceberg's Java API
in the engine's JVM (`bench.core.iceberg_java.commit`).  Every engine must reach the same end state (no live delete
file), so these steps are part of its run.

On a branch (job.branch; lines whose rewrite_data_files takes one) every step reads the branch's head and commits to
the branch: rewrite_data_files removes the dangling deletes it sees there, and the Java API's removal commits to it
(RewriteFiles.toBranch).  rewrite_position_delete_files is not run there: its procedure has no branch parameter and its
action plans from and commits to main (Iceberg 1.12.0), so it would rewrite main's delete files; the removal through
the Java API takes the dangling position deletes it would have dropped, by the same rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.core.iceberg_java.commit import remove_delete_files
from bench.core.sql import spark_literal
from bench.engines.base import CompactionJob, PhaseClock
from bench.engines.procedure import row_dict

# what the engine is asked beyond rewrite_data_files on a table with deletes (`asked`'s steps)
STEPS = ["rewrite_position_delete_files (rewrite-all), where position delete files are still live (main only)",
         "remove the delete files still live that apply to no live data file (Java API), where any"]


class DeleteSteps:
    """The steps after rewrite_data_files, in the engine's session: `sql` runs (and records) a statement, `note`
    records an action; the pyiceberg catalog client reads the live delete files."""

    def __init__(self, spark: Any, sql: Callable[[str], list], note: Callable[[str], None], clock: PhaseClock,
                 job: CompactionJob):
        self.spark, self.sql, self.note = spark, sql, note
        with clock.phase("inspector", "pyiceberg catalog client and the delete rules, for dangling deletes"):
            import pyiceberg.io.pyarrow  # noqa: F401

            import bench.core.table.deletes  # noqa: F401
            from bench.core.catalog import load_catalog

            self.inspector = load_catalog(job.catalog)

    def finish(self, job: CompactionJob, clock: PhaseClock, table: str, where: str, result: dict[str, Any]) -> None:
        """No delete file stays live (see the module's text); what each step did, into `result`."""
        with clock.phase("inspect", "count live delete files in the manifests (pyiceberg)"):
            left = self.live_deletes(job)
        result["delete_files_left_after_rewrite"] = {"position": left[0], "equality": left[1]}
        if left[0] and job.branch != "main":
            self.note(f"rewrite_position_delete_files not run on branch {job.branch}: its procedure has no branch "
                      "parameter and its action rewrites main's delete files")
        elif left[0]:
            with clock.phase("rewrite_position_delete_files", "rewrite-all: drops dangling position deletes"):
                rows = self.sql(f"CALL {job.catalog.name}.system.rewrite_position_delete_files("
                                f"table => {spark_literal(table)}, options => map('rewrite-all', 'true'){where})")
            result["rewrite_position_delete_files"] = row_dict(rows)
        if sum(left):
            with clock.phase("remove dangling deletes", "metadata-only commit through Iceberg's Java API"):
                result["remove_dangling_deletes"] = self.remove_dangling(job, table)

    def _head(self, job: CompactionJob) -> tuple[Any, int | None]:
        """The table (pyiceberg) and the snapshot the job's branch points to now."""
        tbl = self.inspector.load_table(job.catalog.qualified(job.table))
        ref = tbl.metadata.refs.get(job.branch)
        return tbl, ref.snapshot_id if ref is not None else None

    def live_deletes(self, job: CompactionJob) -> tuple[int, int]:
        """(position, equality) delete files live on the job's branch now."""
        from bench.core.table.entries import live_files

        tbl, head = self._head(job)
        files = live_files(tbl, head)
        return len(files.position), len(files.equality)

    def remove_dangling(self, job: CompactionJob, table: str) -> dict[str, int]:
        """Remove live delete files that apply to no live data file (bench.core.table.deletes), in one
        RewriteFiles commit in this JVM; with a partition filter, only those of the partitions it selects."""
        from bench.core.partition_filter import table_selector
        from bench.core.table.deletes import classify, scope
        from bench.core.table.entries import live_files

        tbl, head = self._head(job)
        files = live_files(tbl, head)
        dangling = classify(files, tbl.specs()).dangling
        where = ""
        selected = table_selector(tbl, job.partition_filter, files)
        if selected is not None:
            keep = {e.data_file.file_path for e in files.deletes if selected(scope(e.data_file))}
            dangling = [p for p in dangling if p in keep]
            where = f" in the partitions {job.partition_filter!r} selects"
        jvm = self.spark.sparkContext._jvm
        jtable = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(self.spark._jsparkSession, table)
        on = "" if job.branch == "main" else f".toBranch({job.branch!r})"
        self.note(f"Java API: remove the {len(dangling)} delete file(s) of {table}{where} that apply to no "
                  f"live data file (table.newRewrite(){on}.deleteFile(f) for each, one commit)")
        removed = remove_delete_files(jvm, jtable, set(dangling), {"bench.step": "remove-dangling-deletes"},
                                      branch=job.branch)
        return {"removed_equality_delete_files": removed["equality"],
                "removed_position_delete_files": removed["position"]}
