"""The "live writer" section: is each engine's compaction safe beside a writer that commits while it
runs?  One table per scenario and scale: engine x case -> verdict (safe / refused / unsafe /
inconclusive), with the reason and the evidence (which rows, which snapshots) one click away.  From the
results' `live_writer` records only."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from bench.core.records.live import LiveWriterRecord
from reports.model.view import ResultSet

CASE_ORDER = ("append", "position-delete", "equality-delete")  # as datagen.live.CASES
VERDICT_ORDER = ("unsafe", "inconclusive", "unsupported", "refused", "safe")  # a cell with several runs shows the worst
MEANING = {
    "safe": "the end state equals the dataset plus the writer's commit, and the engine's compaction committed "
            "(retried or validated on top of the writer's snapshot)",
    "refused": "the engine failed on the conflict and committed nothing; the writer's commit stands",
    "unsafe": "rows were lost, or rows the writer deleted are back",
    "inconclusive": "the commits did not interleave as planned, the engine ended for another reason, or it "
                    "ended ok without committing",
    "unsupported": "the engine cannot do what the case asks (e.g. compact a branch): not run, the reason given",
}


@dataclass
class SafetyCell:
    verdict: str
    runs: list[LiveWriterRecord]
    verdicts: dict[str, int]
    reason: str
    evidence: str  # JSON of the worst run's evidence
    main_delete_files: int | None = None  # --cow-branch: most delete files main showed after a publish


@dataclass
class SafetyView:
    scenario: str
    scale: float
    branch: str | None  # --cow-branch: the branch the writer and the compactor worked on
    run_ids: list[str]
    cases: list[str]
    engines: list[str]
    colors: dict[str, str]
    cells: dict[tuple[str, str], SafetyCell] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)  # case -> what the writer did
    holds: list[str] = field(default_factory=list)  # how engines were held, distinct


def safety_sections(sets: list[ResultSet]) -> list[SafetyView]:
    views: dict[tuple[str, float, str | None], SafetyView] = {}
    for rs in sets:
        for lr in rs.runs:
            r = lr.r
            lw = r.live_writer
            if lw is None or r.warmup:
                continue
            v = views.setdefault((rs.scenario_name, rs.scale, lw.branch),
                                 SafetyView(rs.scenario_name, rs.scale, lw.branch, [], [], [], {}))
            if rs.run_id not in v.run_ids:
                v.run_ids.append(rs.run_id)
            if lw.case not in v.cases:
                v.cases.append(lw.case)
            if r.engine not in v.engines:
                v.engines.append(r.engine)
            v.colors[r.engine] = rs.colors.get(r.engine, "#7B8794")
            if lw.description:
                v.descriptions.setdefault(lw.case, lw.description)
            if lw.hold and lw.hold.split(" (")[0] not in v.holds:
                v.holds.append(lw.hold.split(" (")[0])
            cell = v.cells.get((r.engine, lw.case))
            runs = (cell.runs if cell else []) + [lw]
            worst = min(runs, key=lambda x: VERDICT_ORDER.index(x.verdict))
            counts: dict[str, int] = {}
            for x in runs:
                counts[x.verdict] = counts.get(x.verdict, 0) + 1
            main = [x.main_delete_files for x in runs if x.main_delete_files is not None]
            v.cells[(r.engine, lw.case)] = SafetyCell(
                verdict=worst.verdict, runs=runs, verdicts=counts, reason=worst.reason,
                main_delete_files=max(main) if main else None,
                evidence=json.dumps({"hold": worst.hold, "held_s": worst.held_s, "order": worst.order,
                                     "writer_snapshot_id": worst.writer_snapshot_id, "branch": worst.branch,
                                     "published_snapshot_id": worst.published_snapshot_id,
                                     "main_delete_files": worst.main_delete_files,
                                     "expected_rows": worst.expected_rows, **worst.evidence}, indent=1, default=str))
    for v in views.values():
        v.cases.sort(key=lambda c: CASE_ORDER.index(c) if c in CASE_ORDER else len(CASE_ORDER))
    return list(views.values())
