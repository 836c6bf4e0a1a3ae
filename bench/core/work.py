"""The work a compaction is asked to do, stated once: which data files and partitions count as work and what
becomes of delete files.  A scenario states it (`work:`, `bench.scenario`); resolved against the table
(`Work.on`) it travels to every engine in the CompactionJob (`job.work`), each engine derives its own options
from it, and the verifier's completeness and delete-file checks read the same object, so the options asked of
an engine and the checks it is held to cannot disagree.

Semantics (what a data engineer running "bin-pack my table" expects):
  files: small         a data file below the small-file threshold is work; a partition is work when it holds at
                       least `min_files` of them (default 2: one small file alone is a remainder, nothing to pack
                       it with); after the run at most `min_files - 1` small input files are live per partition
                       (the default of a bin-packing scenario);
         with-deletes  the data files a delete file applies to are work (the default of a delete-compaction
                       scenario: copy-on-write of a CDC table); complete when no delete file is live;
         all           every data file is work (a full rewrite); after the run no input data file is live.
  deletes: apply  (default) on a table with delete files, applying them is part of the work: every data file a
                  delete file applies to is rewritten without the deleted rows, and no delete file stays live
                  (those left dangling are removed);
           keep   delete files are not work: they stay as they are (the rows they delete stay deleted: the
                  content is checked all the same), and no engine is asked to remove them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

FilesIntent = Literal["small", "with-deletes", "all"]
DeletesIntent = Literal["apply", "keep"]


class Work(BaseModel):
    """What a scenario states under `work:` (every field has the default a plain compaction means)."""

    model_config = ConfigDict(extra="forbid")

    files: FilesIntent = "small"
    min_files: int = Field(default=2, ge=1)  # files small: a partition with fewer small data files is not work
    deletes: DeletesIntent = "apply"

    def on(self, delete_files: bool, stated_by: str = "") -> WorkIntent:
        """This intent resolved against a table: `delete_files`, whether its input holds live delete files."""
        return WorkIntent(**self.model_dump(), delete_files=delete_files, stated_by=stated_by)


class WorkIntent(Work):
    """The intent resolved against the table an engine compacts (CompactionJob.work, VerifyInput.work)."""

    delete_files: bool = False  # the input holds live delete files
    stated_by: str = ""  # where the intent comes from (e.g. "scenario bin-packing"), for the record

    @property
    def applies_deletes(self) -> bool:
        """Applying delete files is part of the work (the table has some and the intent applies them)."""
        return self.deletes == "apply" and self.delete_files

    def describe(self) -> str:
        files = {"all": "every data file", "with-deletes": "the data files a delete file applies to",
                 "small": f"small data files, in every partition holding {self.min_files} or more"}[self.files]
        deletes = ("no delete file" if not self.delete_files else
                   "apply the delete files (none stays live)" if self.applies_deletes else
                   "keep the delete files as they are")
        return f"rewrite {files}; {deletes}"

    def small_files_left_allowed(self) -> int | None:
        """Input data files (small ones for files small) a partition may still hold after the run (None: not
        counted: files with-deletes is complete when no delete file is live)."""
        return {"all": 0, "small": self.min_files - 1}.get(self.files)


def default_work(kind: str) -> Work:
    """The work of a scenario of `kind` that states none: bin-packing rewrites small files, a delete compaction
    the data files its delete files apply to; both apply delete files."""
    return Work(files="with-deletes" if kind == "deletes" else "small")


def default_intent(kind: str, delete_files: bool | None = None) -> WorkIntent:
    """The intent of a job or verification that was given none: the default work of `kind` on a table with (a
    deletes table, unless told otherwise) or without delete files."""
    has = kind == "deletes" if delete_files is None else delete_files
    return default_work(kind).on(has, stated_by=f"default for a {kind} scenario")
