"""Row lineage (format v3): a compaction moves existing rows to new data files, and the spec's row-lineage rules ask
a writer that moves a row to copy its `_row_id` (field id 2147483540) and, for a row it did not modify, its
`_last_updated_sequence_number` (2147483539) into the new file.  A new file without them reads its rows' ids as its
first_row_id + position: new ids, the rows' lineage lost.  One `row_lineage_kept` check over the data files a run
wrote on a v3 table, about the output's metadata."""

from __future__ import annotations

import pyarrow.parquet as pq

from bench.core.records.verification import Check
from bench.core.table.files import open_uri

ROW_ID, LAST_UPDATED = 2147483540, 2147483539
NAMES = {ROW_ID: "_row_id", LAST_UPDATED: "_last_updated_sequence_number"}
RULE = ("row lineage (format v3): every data file the run wrote carries each moved row's _row_id and "
        "_last_updated_sequence_number (field ids 2147483540, 2147483539), none null, as the spec's row-lineage rules "
        "ask of a writer that moves rows")


def _missing(uri: str) -> list[str]:
    """The lineage columns one file lacks or leaves null in some row, in words."""
    fs, path = open_uri(uri)
    with fs.open_input_file(path) as fh:
        f = pq.ParquetFile(fh)
        by_id = {int(x.metadata[b"PARQUET:field_id"]): x.name for x in f.schema_arrow
                 if x.metadata and b"PARQUET:field_id" in x.metadata}
        out = []
        for fid, name in NAMES.items():
            if fid not in by_id:
                out.append(f"no {name}")
                continue
            nulls = f.read(columns=[by_id[fid]]).column(0).null_count
            if nulls:
                out.append(f"{name} null in {nulls} of {f.metadata.num_rows} rows")
    return out


def lineage_check(paths: list[str]) -> Check:
    """`row_lineage_kept` over the data files a run wrote on a v3 table."""
    problems = [(p, m) for p in paths if (m := _missing(p))]
    return Check(name="row_lineage_kept", ok=not problems, whose="engine", about="metadata",
                 message=(f"{len(paths)} new data file(s) carry every moved row's _row_id and "
                          "_last_updated_sequence_number" if not problems else
                          f"{len(problems)} of {len(paths)} new data file(s) lose the rows' lineage (their rows read "
                          "new row ids: first_row_id + position): " + "; ".join(
                              f"{p.rsplit('/', 1)[-1]}: {', '.join(m)}" for p, m in problems[:5])))
