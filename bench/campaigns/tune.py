"""`bench tune ENGINE SCENARIO`: a small, bounded search for a fairly tuned configuration.

Strategy (stated in every tune.json): coordinate descent from the published configuration (the scenario's
options).  The engine declares its knobs, in order (`Engine.knobs`); for each knob in turn, every other
value is tried with the best settings found so far for the others.  A value is kept only when every run
of it verified and its median compaction time is at least `min_gain` (5 %) below the best so far: a
smaller gain is noise on a shared machine.  A configuration already measured (e.g. a knob back at its
published value once another knob has moved) is compared by its measurement, not run again: a second
single run of the same settings would only add a chance to keep noise.  Each configuration is an ordinary
`bench run` (its own run directory, `cfg-NN`, results verified like any run), with the configuration in
the result's `engine_options`.  The search stops at `max_configs` configurations or after
`budget_minutes`; every value it did not try is listed with why, never skipped silently.  A configuration
is cut off at max(60 s, 3 x the published configuration's process wall time) (recorded as a timeout).
Knobs an engine cannot vary fairly (e.g. one that only a table property sets) are listed with the reason.

Then the best configuration is written as profile ENGINE:tuned (scenarios/profiles/ENGINE/tuned.yaml,
per scenario, with its provenance), and confirmed: one run of ENGINE and ENGINE:tuned with
`confirm_reps` repetitions, order rotated, compared pair by pair.  The confirmation is what the
report quotes; the search's single runs only steer it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from bench.campaigns.frontier import MIN_PROBE_TIMEOUT_S
from bench.campaigns.points import stat_of
from bench.campaigns.shared import campaign_dir
from bench.core.campaign import TuneConfig, TuneConfirmation, TuneKnob, TuneSummary, recorded, write_summary
from bench.core.catalog import CatalogSettings
from bench.core.errors import UserError
from bench.core.machine import environment, usable_cores
from bench.core.progress import Progress
from bench.core.results import RunResult, now_iso
from bench.core.spread import Spread
from bench.core.units import check_scale
from bench.engines import engine_class, split_label
from bench.engines.base import Knob
from bench.runner.context import CommonOptions, RunOptions
from bench.runner.run import run_scenario
from bench.scenario import deep_merge, load_scenario, save_profile_entry

MIN_GAIN = 0.05
MAX_CONFIGS = 16
BUDGET_MINUTES = 30.0
CONFIRM_REPS = 3
SLOWDOWN_CUTOFF = 3.0  # a configuration slower than this x the published one is stopped (timeout)
STRATEGY = ("coordinate descent from the published configuration over the engine's declared knobs, in order: "
            "each other value of a knob with the best settings so far for the rest; a value is kept when every "
            "run of it verified and its median time is at least {gain:.0%} below the best so far; a configuration "
            "already measured is compared, not run again; at most "
            "{configs} configurations and {minutes:g} minutes, untried values listed; the best is confirmed "
            "against the published configuration in one run, {confirm} paired repetitions, order rotated")


@dataclass(kw_only=True)
class TuneOptions(CommonOptions):
    engine: str
    scale: float | None = None
    reps: int = 1  # per configuration in the search
    confirm_reps: int = CONFIRM_REPS
    max_configs: int = MAX_CONFIGS
    budget_minutes: float = BUDGET_MINUTES
    min_gain: float = MIN_GAIN
    profile: str = "tuned"
    write_profile: bool = True
    memory_budget: str | None = None  # (the shared `options`: part of every configuration)


def nested(path: str, value: Any) -> dict[str, Any]:
    """'rewrite_options.max-concurrent-file-group-rewrites', 2 -> {'rewrite_options': {'max-...': 2}}."""
    head, dot, rest = path.partition(".")
    return {head: {rest: value}} if dot else {head: value}


def overrides_of(changed: dict[str, Any], knobs: dict[str, Knob]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in changed.items():
        out = deep_merge(out, nested(knobs[name].path, value))
    return out


def beats(cfg: TuneConfig, best_s: float, min_gain: float) -> bool:
    """Kept: every run of it verified and its median is at least `min_gain` below the best so far."""
    t = cfg.duration_s.median
    return bool(cfg.runs) and cfg.verified == cfg.runs and t is not None and t < best_s * (1 - min_gain)


def _wall(results: list[RunResult]) -> float | None:
    walls = [r.process_wall_s for r in results if r.counts and r.process_wall_s]
    return max(walls) if walls else None


class Search:
    def __init__(self, opts: TuneOptions, progress: Progress) -> None:
        self.opts, self.progress = opts, progress
        self.name, profile = split_label(opts.engine)
        if profile:
            raise UserError(f"tune the engine itself ({self.name}), not a profile of it ({opts.engine})")
        if opts.profile == "" or not opts.profile.replace("-", "").replace("_", "").isalnum():
            raise UserError(f"--profile {opts.profile!r}: letters, digits, '-' and '_' only")
        if not 0 <= opts.min_gain < 1:
            raise UserError(f"--min-gain {opts.min_gain}: give a share between 0 and 1, e.g. 0.05")
        self.sc = load_scenario(opts.scenario)
        if opts.source is not None and opts.scale is not None:
            raise UserError("--scale shapes the generated table; with --source-table your table is the input")
        self.scale = None if opts.source else check_scale(self.sc.local_scale if opts.scale is None else opts.scale)
        cls = engine_class(self.name)
        self.cores = usable_cores()
        self.knobs = {k.name: k for k in cls.knobs}
        if not any(k.values for k in cls.knobs):
            raise UserError(f"{self.name} declares no knobs to tune")
        self.sc.options_for(self.name, opts.options)  # bad --option: one line, before anything runs
        self.directory = campaign_dir(opts.results_dir, opts.run_id, "tune", self.sc.name)
        self.timeout_s = opts.timeout_s
        self.deadline = 0.0

    def summary(self) -> TuneSummary:
        o = self.opts
        settings = CatalogSettings.for_warehouse(o.warehouse)
        env = environment(settings.state_path if settings.is_remote else settings.warehouse_path)
        knobs = []
        for k in self.knobs.values():
            values, published = k.resolved(self.cores)
            knobs.append(TuneKnob(name=k.name, path=k.path, values=values, published=published, note=k.note,
                                  searchable=bool(values)))
        return TuneSummary(tune_id=self.directory.name, engine=self.name, scenario=self.sc.name,
                           scenario_record=self.sc.record(), scale=self.scale or 0.0, reps=o.reps,
                           source_table=o.source.table if o.source else "",
                           strategy=STRATEGY.format(gain=o.min_gain, configs=o.max_configs, minutes=o.budget_minutes,
                                                    confirm=o.confirm_reps),
                           min_gain=o.min_gain, max_configs=o.max_configs, budget_s=o.budget_minutes * 60,
                           started_at=now_iso(), pid=os.getpid(), machine=env.describe(), cores=self.cores,
                           knobs=knobs)

    def run(self, run_id: str, engines: str, reps: int, overrides: dict[str, Any] | None,
            timeout_s: int) -> list[RunResult]:
        o = self.opts
        options = dict(o.options)
        if overrides:
            options[self.name] = deep_merge(options.get(self.name, {}), overrides)
        return run_scenario(RunOptions(**o.common(results_dir=str(self.directory), run_id=run_id, timeout_s=timeout_s,
                                                  options=options),
                                       scale=self.scale, engines=engines, reps=reps, memory_budget=o.memory_budget,
                                       readers=False), self.progress)

    def evaluate(self, s: TuneSummary, changed: dict[str, Any], knob: str | None, value: Any) -> TuneConfig:
        cfg = TuneConfig(index=len(s.configs), changed=dict(changed), knob=knob, value=value,
                         overrides=overrides_of(changed, self.knobs), run_dir=f"cfg-{len(s.configs):02d}")
        what = ", ".join(f"{k}={v}" for k, v in changed.items()) or "the published configuration"
        self.progress.info(f"tune {s.tune_id}: configuration {cfg.index + 1} of at most {s.max_configs}: {what}")
        try:
            got = self.run(cfg.run_dir, self.name, self.opts.reps, cfg.overrides, self.timeout_s)
        except UserError as e:  # e.g. a value the engine rejects: recorded, the search goes on
            cfg.error = str(e)
            got = []
        measured = [r for r in got if not r.warmup]
        cfg.runs = len(measured)
        cfg.verified = sum(r.counts for r in measured)
        cfg.statuses = [r.status if r.status != "ok" or r.verified else "unverified" for r in measured]
        cfg.duration_s = stat_of([r.duration_s for r in measured if r.counts and r.duration_s is not None])
        peaks = [r.telemetry.peak_rss_bytes for r in measured if r.counts and r.telemetry.peak_rss_bytes]
        cfg.peak_rss_bytes = max(peaks) if peaks else None
        if not cfg.error and cfg.runs and cfg.verified < cfg.runs:
            cfg.error = next((r.error for r in measured if r.error), None) or "not verified"
        s.configs.append(cfg)
        if knob is None:  # the published configuration sets the cut-off for the others
            wall = _wall(measured)
            if wall:
                self.timeout_s = min(self.opts.timeout_s, max(MIN_PROBE_TIMEOUT_S, int(SLOWDOWN_CUTOFF * wall) + 1))
        return cfg

    def search(self, s: TuneSummary) -> None:
        base = self.evaluate(s, {}, None, None)
        if base.verified < max(base.runs, 1) or base.duration_s.median is None:
            s.notes.append("the published configuration did not verify here: nothing to compare against; "
                           f"no search ({base.error})")
            return
        base.accepted = True
        best: dict[str, Any] = {}
        best_time = base.duration_s.median
        for k in s.knobs:
            if not k.searchable:
                s.notes.append(f"{k.name}: not searched: {k.note}")
                continue
            for v in k.values:
                current = best.get(k.name, k.published)
                if v == current:
                    continue
                changed = {**best, k.name: v}
                if k.published is not None and v == k.published:
                    changed.pop(k.name)
                seen = next((c for c in s.configs if c.changed == changed), None)
                if seen is not None:  # e.g. back to a published value: measured already, not run again
                    t = seen.duration_s.median
                    s.notes.append(f"{k.name}={v}: the same configuration as cfg-{seen.index:02d} "
                                   f"({', '.join(f'{a}={b}' for a, b in changed.items()) or 'published'}); "
                                   "its measurement is compared, not run again")
                    if beats(seen, best_time, s.min_gain):
                        best, best_time = changed, t
                    continue
                if len(s.configs) >= s.max_configs or time.monotonic() > self.deadline:
                    why = "configuration budget" if len(s.configs) >= s.max_configs else "time budget"
                    s.not_tried.append(f"{k.name}={v}: {why} spent")
                    continue
                cfg = self.evaluate(s, changed, k.name, v)
                t = cfg.duration_s.median
                if beats(cfg, best_time, s.min_gain):
                    cfg.accepted, best, best_time = True, changed, t
                write_summary(self.directory, s)
        s.best = best
        s.best_overrides = overrides_of(best, self.knobs)

    def confirm(self, s: TuneSummary) -> None:
        o = self.opts
        label = f"{self.name}:{o.profile}"
        got = self.run("confirm", f"{self.name},{label}", o.confirm_reps, None, self.opts.timeout_s)
        c = TuneConfirmation(reps=o.confirm_reps, run_dir="confirm")
        pub = {r.rep: r for r in got if r.engine == self.name and not r.warmup}
        tun = {r.rep: r for r in got if r.engine == label and not r.warmup}
        c.published_verified = sum(r.counts for r in pub.values())
        c.tuned_verified = sum(r.counts for r in tun.values())
        c.published = stat_of([r.duration_s for r in pub.values() if r.counts and r.duration_s])
        c.tuned = stat_of([r.duration_s for r in tun.values() if r.counts and r.duration_s])
        ratios = [pub[i].duration_s / tun[i].duration_s for i in pub if i in tun and pub[i].counts and tun[i].counts
                  and pub[i].duration_s and tun[i].duration_s]
        c.speedup, c.pairs = stat_of(ratios), len(ratios)
        s.confirmation = c

    def provenance(self, s: TuneSummary) -> dict[str, Any]:
        best = next((c for c in reversed(s.configs) if c.accepted), None)
        base = s.configs[0] if s.configs else None
        return {"tune_id": s.tune_id, "written_at": now_iso(), "machine": s.machine, "cores": s.cores,
                "scale": s.scale, "strategy": s.strategy, "configs_tried": len(s.configs),
                "changed": s.best or "nothing: no configuration beat the published one by the minimum gain",
                "search_median_s": {"published": base.duration_s.median if base else None,
                                    "best": best.duration_s.median if best else None}}

    def __call__(self) -> TuneSummary:
        o = self.opts
        s = self.summary()
        self.directory.mkdir(parents=True)
        write_summary(self.directory, s)
        self.deadline = time.monotonic() + s.budget_s
        with recorded(self.directory, s):
            self.search(s)
            searched = bool(s.configs) and s.configs[0].accepted
            if searched and o.write_profile:
                path = save_profile_entry(
                    self.name, o.profile, self.sc.name, s.best_overrides, self.provenance(s),
                    description=f"{self.name} tuned per scenario by `bench tune` (coordinate descent, see provenance)")
                s.profile, s.profile_path = f"{self.name}:{o.profile}", str(path)
                self.progress.info(f"tune {s.tune_id}: wrote {s.profile} for {self.sc.name} to {path}")
                if o.confirm_reps:
                    self.confirm(s)
                    c = s.confirmation
                    assert c is not None
                    save_profile_entry(self.name, o.profile, self.sc.name, s.best_overrides, {
                        **self.provenance(s), "confirmation": {
                            "run": f"{s.tune_id}/{c.run_dir}", "pairs": c.pairs,
                            "published_median_s": c.published.median, "tuned_median_s": c.tuned.median,
                            "speedup": c.speedup.model_dump()}}, description="")
            elif searched:
                s.notes.append("--no-write-profile: the best configuration is in this summary only; not confirmed")
        self.progress.block(tune_table(s))
        self.progress.info(f"tune summary: {self.directory / 'tune.json'}")
        return s


def tune(opts: TuneOptions, progress: Progress) -> TuneSummary:
    return Search(opts, progress)()


def _fmt(st: Spread) -> str:
    if st.median is None:
        return "-"
    return f"{st.median:.2f} s" + (f" ({st.min:.2f}-{st.max:.2f})" if st.min != st.max else "")


def tune_table(s: TuneSummary) -> str:
    on = f"on your own table {s.source_table}" if s.source_table else f"at scale {s.scale:g}"
    rows = [f"tune {s.tune_id}: {s.engine} on {s.scenario} {on}, {len(s.configs)} configurations",
            f"{'#':>3} {'setting':<48} {'verified':>8} {'median time':>22}  kept"]
    for c in s.configs:
        what = f"{c.knob}={c.value}" if c.knob else "published"
        rows.append(f"{c.index:>3} {what:<48} {c.verified:>3} of {c.runs:<2} {_fmt(c.duration_s):>22}  "
                    f"{'yes' if c.accepted else ''}{'  ' + c.error[:60] if c.error else ''}")
    rows.append("best: " + (", ".join(f"{k}={v}" for k, v in s.best.items()) or "the published configuration"))
    if s.not_tried:
        rows.append(f"not tried ({len(s.not_tried)}): " + "; ".join(s.not_tried))
    c = s.confirmation
    if c is not None:
        rows.append(f"confirmed over {c.pairs} paired reps: published {_fmt(c.published)}, tuned {_fmt(c.tuned)}, "
                    f"speedup {_fmt(c.speedup).replace(' s', 'x')}")
    rows += s.notes
    return "\n".join(rows)


__all__ = ["TuneOptions", "nested", "overrides_of", "tune", "tune_table"]
