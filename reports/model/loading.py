"""Loading: the result files under the paths a report is given, each with its samples file and the reasons it
does not count, and the run.json of every run directory involved (an incomplete run is reported, not an error)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bench.core.campaign import SUMMARY_FILES
from bench.core.children import pid_alive
from bench.core.errors import UserError
from bench.core.records.engine_run import Cost
from bench.core.results import RUN_STATE_FILE, RunResult, RunState, is_result, iter_result_files, read_run_state

RESULT_NAME = re.compile(r"[^/]+--[^/]+--(rep\d+|warmup)[^/]*\.json")  # <scenario>--<engine>--rep<N>.json


@dataclass
class LoadedRun:
    result: RunResult
    path: Path
    samples: Any = None  # pandas DataFrame or None
    samples_note: str = ""  # why there are no samples
    cost: Cost | None = None  # the cost shown: stored, or re-priced with --instance-type
    reasons: list[str] = field(default_factory=list)  # why it does not count (failed checks, error)
    advisory: list[str] = field(default_factory=list)  # failed advisory checks (shown, not decisive)

    @property
    def r(self) -> RunResult:
        return self.result

    @property
    def counts(self) -> bool:
        return self.result.counts


@dataclass
class RunDirState:
    """A run directory's run.json, and what it says about the results beside it."""

    path: Path
    state: RunState
    written: int  # result files in the directory
    alive: bool | None  # the harness process still exists (None: no pid recorded)

    @property
    def incomplete(self) -> bool:
        return self.state.state != "complete" or (self.state.expected_results > 0 and
                                                  self.written < self.state.expected_results)

    @property
    def warning(self) -> str:
        s = self.state
        of = f"{self.written} of {s.expected_results or '?'} results written"
        if s.state == "running" and self.alive:
            return (f"incomplete run: {of}; the run is still in progress (harness pid {s.pid} is alive, "
                    f"started {s.started_at or '?'}): this report shows the results written so far")
        if s.state == "running":
            return (f"incomplete run: {of}; run.json still says running but the harness "
                    f"{f'(pid {s.pid}) ' if s.pid else ''}is gone: it was killed before it could record the end "
                    f"of the run (started {s.started_at or '?'})")
        if s.state == "interrupted":
            return (f"incomplete run: {of}; interrupted{f' at {s.ended_at}' if s.ended_at else ''}"
                    f"{f': {s.note}' if s.note else ''}")
        return f"incomplete run: {of}; run.json says complete, but results are missing from {self.path}"


@dataclass
class Loaded:
    runs: list[LoadedRun]
    states: dict[Path, RunDirState]  # run directory -> its run.json


def _run_dir_state(run_dir: Path) -> RunDirState | None:
    state = read_run_state(run_dir)
    if state is None:
        return None
    written = sum(1 for p in run_dir.glob("*.json") if p.name != RUN_STATE_FILE and not p.name.startswith("."))
    return RunDirState(run_dir, state, written, pid_alive(state.pid, state.started_at))


def load_runs(paths, allow_empty: bool = False) -> Loaded:
    """Every RunResult JSON under `paths` (files or directories), with its samples file if present, and
    the run.json of every run directory involved (a run directory with only run.json is an incomplete
    run: reported, not an error).  Campaign summaries (sweep.json, frontier.json, tune.json) are not
    results: they are skipped here (reports.campaigns reads them); `allow_empty` when the paths hold one."""
    out: list[LoadedRun] = []
    seen: set[Path] = set()
    run_dirs: dict[Path, None] = {}
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise UserError(f"no such results file or directory: {p}")
        if p.is_dir():
            for s in sorted(p.rglob(RUN_STATE_FILE)):
                if "work" not in s.relative_to(p).parts[:-1]:
                    run_dirs[s.parent.resolve()] = None
        elif p.name == RUN_STATE_FILE:
            run_dirs[p.parent.resolve()] = None
            continue
        elif p.name in SUMMARY_FILES.values():
            continue
        for f in iter_result_files(p):
            f = f.resolve()
            if f in seen:
                continue
            seen.add(f)
            try:
                data = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError) as e:
                if p.is_file() or RESULT_NAME.fullmatch(f.name):  # named as a result: never skipped silently
                    raise UserError(f"{f} is not a readable JSON result ({e}): a corrupt result file; move it "
                                    "aside to report the others") from None
                continue  # some other file beside the results
            if not is_result(data):
                if p.is_file():
                    raise UserError(f"{f} is not a bench result (no run_id/engine/status)")
                continue
            try:
                r = RunResult.model_validate(data)
            except ValidationError as e:
                raise UserError(f"{f} is not a valid result: {str(e).splitlines()[0]}") from None
            out.append(LoadedRun(r, f))
            run_dirs[f.parent] = None
    states: dict[Path, RunDirState] = {}
    for d in run_dirs:
        st = _run_dir_state(d)
        if st is not None:
            states.setdefault(d, st)
    if not out and not states and not allow_empty:
        raise UserError(f"no results found in {', '.join(map(str, paths))} (expected "
                        f"<run-id>/<scenario>--<engine>--rep<N>.json files written by `bench run`)")
    for lr in out:
        _attach_samples(lr)
        lr.reasons, lr.advisory = run_reasons(lr.r)
    return Loaded(out, states)


def _attach_samples(lr: LoadedRun) -> None:
    sf = lr.r.samples_file
    if not sf:
        lr.samples_note = "no samples file recorded"
        return
    p = Path(sf)
    candidates = [p] if p.is_absolute() else [lr.path.parent / p, Path.cwd() / p]
    for c in candidates:
        if c.exists():
            try:
                import pyarrow.parquet as pq

                lr.samples = pq.read_table(c).to_pandas()
            except Exception as e:  # noqa: BLE001 - a broken samples file is shown, not fatal
                lr.samples_note = f"samples file unreadable: {type(e).__name__}: {e}"
            return
    lr.samples_note = f"samples file missing: {sf}"


def run_reasons(r: RunResult) -> tuple[list[str], list[str]]:
    """Why a run does not count (its failed required checks with their messages, or its error), and
    its failed advisory checks."""
    v = r.verification
    reasons: list[str] = []
    if r.streaming is not None:
        t = r.streaming.totals
        reasons.append(f"streaming ({r.streaming.mode}): {t.cycles} cycles, {t.unsafe_cycles} unsafe"
                       + (f" from cycle {t.first_unsafe_cycle}" if t.first_unsafe_cycle else "")
                       + " (its maintenance is timed per cycle: see its streaming section)")
    elif r.status == "ok" and not r.verified:
        failed = [c for c in v.checks if not c.ok and c.required]
        for c in failed:
            reasons.append(f"{c.name}: {c.message}" if c.message else c.name)
        shown = {c.name for c in failed}
        for d in v.differences:  # anything the verifier said that is not a check above
            name = d.split(":", 1)[0]
            if name not in shown and not d.endswith("(advisory)"):
                reasons.append(d)
        if not reasons:
            reasons.append("the verifier did not accept the output (no failed check recorded)")
    if r.error:
        reasons.append(r.error)
    if r.live_writer is not None:
        reasons.insert(0, f"live writer ({r.live_writer.case}): {r.live_writer.verdict}: {r.live_writer.reason} "
                          f"(judged, not timed: its time includes the writer's hold)")
    advisory = [f"{c.name}: {c.message}" if c.message else c.name for c in v.checks if not c.ok and not c.required]
    return reasons, advisory
