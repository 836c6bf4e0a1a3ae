"""A partitioned table's compaction partition by partition: the partitions outside a partition
filter are untouched, and what the run did to each partition (`PartitionOutcome`).

Which partitions a filter selects is decided by `bench.core.partition_filter.selector`: pyiceberg's strict
projection of the filter onto the partition spec, evaluated on each partition's tuple (a filter must select
whole partitions: its inclusive projection agrees on every partition of the input).

untouched_partitions (required, with a filter): every live file of the input (data and delete) in a partition
the filter does not select is still live after the run with the same path, the same size and the same recorded
partition; and no live file the run wrote lies in such a partition.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from pyiceberg.table import Table
from pyiceberg.typedef import Record

from bench.core.dataset import GroundTruth
from bench.core.partition_filter import PartitionKey, table_selector
from bench.core.records.verification import Check, PartitionOutcome
from bench.core.spread import Spread
from bench.core.table.deletes import scope
from bench.core.table.entries import LiveFiles

RULE = ("partition filter: every live file (data and delete) of the input in a partition the filter does not "
        "select is live after the run with the same path, size and recorded partition, and no file the run wrote "
        "lies outside the filter (each partition judged by pyiceberg's strict projection of the filter onto the "
        "spec; the filter must select whole partitions); completeness, file count and no live delete file apply "
        "to the selected partitions only")
Selected = Callable[[PartitionKey], bool]


def selected_truth(gt: GroundTruth, selected: Selected, spec_id: int) -> tuple[int, int, int]:
    """(partitions, rows, checksum) the generator's ground truth gives the partitions `selected` selects: its
    per-partition truth summed over them (the checksum is a sum over rows: partitions add up,
    bench.core.checksum).  The generator's partitions are of the table's spec `spec_id`."""
    chosen = [p for p in gt.partitions.values() if selected((spec_id, tuple(p.values)))]
    return len(chosen), sum(p.rows for p in chosen), sum(int(p.checksum) for p in chosen)


def _facts(files: LiveFiles) -> dict[str, tuple[int, PartitionKey]]:
    return {e.data_file.file_path: (int(e.data_file.file_size_in_bytes), scope(e.data_file)) for e in files.all}


def untouched_check(selected: Selected, before: LiveFiles, after: LiveFiles) -> Check:
    was, now = _facts(before), _facts(after)
    outside = {p: f for p, f in was.items() if not selected(f[1])}
    gone = [p for p in outside if p not in now]
    changed = [p for p in outside if p in now and now[p] != outside[p]]
    strays = [p for p, f in now.items() if p not in was and not selected(f[1])]
    parts = len({f[1] for f in outside.values()})
    ok = not (gone or changed or strays)
    if ok:
        msg = (f"the {len(outside)} live file(s) of the {parts} partition(s) outside the filter are the input's (same "
               "path, size and partition), and every file the run wrote is in a partition the filter selects")
    else:
        bits = []
        if gone:
            bits.append(f"{len(gone)} of the {len(outside)} input file(s) outside the filter are no longer live "
                        f"(e.g. {gone[0].rsplit('/', 1)[-1]})")
        if changed:
            bits.append(f"{len(changed)} changed size or recorded partition (e.g. {changed[0].rsplit('/', 1)[-1]})")
        if strays:
            bits.append(f"{len(strays)} file(s) the run wrote lie outside the filter "
                        f"(e.g. {strays[0].rsplit('/', 1)[-1]})")
        msg = "; ".join(bits)
    return Check(name="untouched_partitions", ok=ok, message=msg)


def _spread(counts: list[int]) -> Spread:
    return Spread.of(counts) if counts else Spread(min=0, median=0, max=0)  # (no partitions: 0 as ever written)


def outcome(tbl: Table, before: LiveFiles, after: LiveFiles, text: str | None) -> PartitionOutcome | None:
    """What the run did per partition (None for an unpartitioned table)."""
    spec, schema = tbl.spec(), tbl.schema()
    if all(s.is_unpartitioned() for s in tbl.specs().values()):
        return None
    selected = table_selector(tbl, text, before, after) or (lambda _: True)
    paths: dict[str, dict[PartitionKey, set[str]]] = {"before": defaultdict(set), "after": defaultdict(set)}
    counts: dict[str, dict[PartitionKey, list[int]]] = {"before": defaultdict(lambda: [0, 0]),
                                                        "after": defaultdict(lambda: [0, 0])}
    for when, files in (("before", before), ("after", after)):
        for i, entries in enumerate((files.data, files.deletes)):
            for e in entries:
                k = scope(e.data_file)
                paths[when][k].add(e.data_file.file_path)
                counts[when][k][i] += 1
    keys = sorted(set(paths["before"]) | set(paths["after"]), key=repr)
    rewritten = [k for k in keys if paths["before"].get(k, set()) != paths["after"].get(k, set())]
    most = max(keys, key=lambda k: (counts["after"].get(k, [0, 0])[0], repr(k))) if keys else None
    specs = tbl.specs()

    def per(when: str, i: int) -> Spread:
        return _spread([counts[when].get(k, [0, 0])[i] for k in keys])

    return PartitionOutcome(
        spec=", ".join(f"{f.transform}({schema.find_column_name(f.source_id)})" for f in spec.fields), filter=text,
        partitions=len(keys), selected=sum(1 for k in keys if selected(k)),
        rewritten=len(rewritten), untouched=len(keys) - len(rewritten),
        rewritten_outside_filter=sum(1 for k in rewritten if not selected(k)),
        data_files_before=per("before", 0), data_files_after=per("after", 0),
        delete_files_before=per("before", 1), delete_files_after=per("after", 1),
        most_files_left=specs[most[0]].partition_to_path(Record(*most[1]), schema) if most else "",
        most_files_left_count=counts["after"].get(most, [0, 0])[0] if most else 0,
        most_files_left_selected=bool(most and selected(most)))
