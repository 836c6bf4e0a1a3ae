"""What Spark's status store says of the rewrite's jobs: Iceberg's rewrite runs each file group as a Spark job
described "Rewriting N files (..., file group i/T, ...)" (RewriteDataFilesSparkAction.jobDesc; the position-delete
rewrite's say "position delete files" and are not matched).  Each task of those jobs reads its share of the group's
data files and opens the delete files that apply to them."""

from __future__ import annotations

import re
from typing import Any

FILE_GROUP_DESC = re.compile(r"^Rewriting \d+ files \(.*?file group \d+/(\d+)")


def rewrite_jobs(spark: Any) -> list[tuple[int, int]]:
    """(file groups planned, tasks) of every rewrite job in the status store."""
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    out = []
    for i in range(jobs.size()):
        job = jobs.apply(i)
        desc = job.description()
        m = FILE_GROUP_DESC.search(str(desc.get())) if desc.isDefined() else None
        if m:
            out.append((int(m.group(1)), int(job.numTasks())))
    return out


def rewrite_tasks(spark: Any) -> int | None:
    """The tasks of the rewrite's jobs (None: no such job, or the status store could not be read)."""
    try:
        jobs = rewrite_jobs(spark)
    except Exception:  # noqa: BLE001 - not reported, not guessed
        return None
    return sum(t for _, t in jobs) if jobs else None
