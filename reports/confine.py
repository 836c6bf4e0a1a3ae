"""The "confined runs" sections: runs under `--storage-cap` (compaction time against the cap per engine, beside
the node model's line) and under `--cores` (each engine's 1 -> 2 core efficiency and its Amdahl model).

Points come from every run set of one scenario and scale in the report (one `bench run` per cap, or per core
count).  Every number is over verified runs.  The storage model is the one the sweep carries to the published
node (bench.core.fit.NodeModel), applied here to this node:

    time(cap) = max(cpu-bound time, bytes through the disk / cap)

with the cpu-bound time the engine's uncapped time (`--storage-cap none`, flushed alike) and the bytes its input
files plus its output files (read and written at one shared rate, as a gp3 volume's throughput is shared; a v1
throttle gives reads and writes separate budgets, so where they overlap the run can be faster than the line).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.core.fit import CoreScaling, Fit, core_scalings, node_model
from bench.core.spread import Spread
from bench.core.units import MiB
from reports.model.view import ResultSet, by_scenario_scale

# what bounds the model's time: the uncapped run's time (the model's cpu-bound part: whatever held the engine back
# without a cap, the CPU or a shared disk) or the cap over the bytes
UNCAPPED, CAPPED = "uncapped time", "the cap"
MODEL = "time(cap) = max(uncapped time, (input bytes + output bytes) / cap): bench.core.fit.NodeModel on this node"


@dataclass
class CapPoint:
    run_id: str
    label: str
    color: str
    requested: str
    read_bps: int | None
    write_bps: int | None
    time: Spread
    mechanism: str = ""
    flush_s: float | None = None
    device_read_bytes: int | None = None
    device_write_bytes: int | None = None
    model_s: float | None = None
    bound: str = ""
    model_reads_s: float | None = None  # the same model with the reads alone through the cap (writes escaped)
    flushed_bytes: int = 0  # what the engine wrote in the table's directory (fsynced by the flush)

    @property
    def through_throttle(self) -> float | None:
        """The share of the written bytes the cgroup's counters saw reach the device (the rest escaped)."""
        if self.device_write_bytes is None or not self.flushed_bytes:
            return None
        return min(1.0, self.device_write_bytes / self.flushed_bytes)

    @property
    def cap_mib_s(self) -> float | None:
        """The cap on the chart's axis (reads' where they differ); None: no limit."""
        v = self.read_bps if self.read_bps is not None else self.write_bps
        return None if v is None else v / MiB


@dataclass
class CapSection:
    scenario: str
    scale: float
    points: list[CapPoint]
    models: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # label -> [(MiB/s, model s)]
    read_models: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # ... reads alone capped
    baselines: dict[str, float] = field(default_factory=dict)  # label -> uncapped seconds
    speedups: list[CapSpeedup] = field(default_factory=list)  # per cap: the fastest engine against each other
    notes: list[str] = field(default_factory=list)

    def chart_series(self) -> dict[str, list[tuple[float | None, float, float, float]]]:
        out: dict[str, list[tuple[float | None, float, float, float]]] = {}
        for p in self.points:
            t = p.time
            if t.median is not None and t.min is not None and t.max is not None:
                out.setdefault(p.label, []).append((p.cap_mib_s, t.median, t.min, t.max))
        return out


def model_seconds(uncapped_s: float, bytes_in: int, bytes_out: int, read_bps: int | None,
                  write_bps: int | None, cores: float) -> tuple[float | None, str]:
    """NodeModel's time on this node at a cap: the uncapped time as the cpu-bound part (fixed 0), storage at the
    shared rate that moves bytes_in at read_bps and bytes_out at write_bps in turn."""
    if read_bps is None and write_bps is None:
        return uncapped_s, UNCAPPED
    storage_s = bytes_in / (read_bps or float("inf")) + bytes_out / (write_bps or float("inf"))
    if storage_s <= 0:
        return uncapped_s, UNCAPPED
    gb = (bytes_in + bytes_out) / 1e9
    rate_mb_s = gb * 1e3 / storage_s
    model = node_model("this node", max(1, round(cores)), rate_mb_s, max(1, round(cores)), 1.0, "this node")
    m = model.seconds(Fit(quantity="duration_s", per_gb=uncapped_s / gb, fixed=0.0), gb)
    return m["seconds"], CAPPED if m["bound"] == "storage" else UNCAPPED


def cap_sections(sets: list[ResultSet]) -> list[CapSection]:
    """One section per (scenario, scale) whose run sets hold runs under --storage-cap."""
    out = []
    for (scenario, scale), group in by_scenario_scale(sets):
        points: list[CapPoint] = []
        sizes: dict[str, tuple[int, int, float]] = {}  # label -> (bytes in, bytes out, cores) of the uncapped runs
        for rs in group:
            for label in rs.engines:
                runs = [lr.r for lr in rs.runs if lr.r.engine == label and lr.r.storage_cap is not None
                        and not lr.r.warmup]
                if not runs:
                    continue
                cap = runs[0].storage_cap
                assert cap is not None
                good = [r for r in runs if r.counts]
                p = CapPoint(run_id=rs.run_id, label=label, color=rs.colors.get(label, "#7B8794"),
                             requested=cap.requested, read_bps=cap.read_bytes_per_s, write_bps=cap.write_bytes_per_s,
                             time=Spread.of(r.duration_s for r in good), mechanism=cap.mechanism,
                             flush_s=Spread.of((r.storage_cap.flush_s if r.storage_cap else None) for r in good).median,
                             device_read_bytes=cap.device_read_bytes, device_write_bytes=cap.device_write_bytes,
                             flushed_bytes=cap.flushed_bytes)
                points.append(p)
                if p.cap_mib_s is None and good:
                    r = good[0]
                    sizes[label] = (r.bytes_in, r.bytes_out or 0, r.telemetry.mean_cores or float(r.cores or 1))
        if not points:
            continue
        section = CapSection(scenario=scenario, scale=scale,
                             points=sorted(points, key=lambda p: (p.label, -(p.cap_mib_s or float("inf")))))
        for p in section.points:
            if p.cap_mib_s is None and p.time.median is not None:
                section.baselines[p.label] = p.time.median
        for label in dict.fromkeys(p.label for p in section.points):
            if label not in section.baselines or label not in sizes:
                section.notes.append(f"{label}: no verified uncapped run (`--storage-cap none`) in this scenario and "
                                     "scale: no model line")
                continue
            b_in, b_out, cores = sizes[label]
            for p in section.points:
                if p.label == label:
                    p.model_s, p.bound = model_seconds(section.baselines[label], b_in, b_out, p.read_bps,
                                                       p.write_bps, cores)
                    p.model_reads_s = model_seconds(section.baselines[label], b_in, 0, p.read_bps, None, cores)[0]
            caps = [p.cap_mib_s for p in section.points if p.cap_mib_s is not None]
            if caps:
                lo, hi = min(caps) * 0.8, max(caps) * 1.25
                xs = [lo * (hi / lo) ** (i / 60) for i in range(61)]
                for lines, out_bytes in ((section.models, b_out), (section.read_models, 0)):
                    lines[label] = [(x, model_seconds(section.baselines[label], b_in, out_bytes, int(x * MiB),
                                                      int(x * MiB), cores)[0] or 0.0) for x in xs]
        section.speedups = _speedups(section.points)
        out.append(section)
    return out


@dataclass
class CapSpeedup:
    """At one cap: how many times faster `faster` is than `slower` (median over median), measured and as the
    model says (None without a model); `str()` says it."""
    requested: str
    faster: str
    slower: str
    measured: float
    model: float | None = None

    def __str__(self) -> str:
        model = f"; the model says {self.model:.2f}x" if self.model is not None else ""
        return f"cap {self.requested}: {self.faster} is {self.measured:.2f}x faster than {self.slower}{model}"


def _speedups(points: list[CapPoint]) -> list[CapSpeedup]:
    """Per cap: the fastest engine's lead over each other one (median over median)."""
    by_cap: dict[str, list[CapPoint]] = {}
    for p in points:
        if p.time.median:
            by_cap.setdefault(p.requested, []).append(p)
    out = []
    for requested, ps in sorted(by_cap.items(), key=lambda kv: -(kv[1][0].cap_mib_s or float("inf"))):
        if len(ps) < 2:
            continue
        ps = sorted(ps, key=lambda p: p.time.median or 0.0)
        lead = ps[0]
        for other in ps[1:]:
            out.append(CapSpeedup(requested=requested, faster=lead.label, slower=other.label,
                                  measured=(other.time.median or 0.0) / (lead.time.median or 1.0),
                                  model=other.model_s / lead.model_s if other.model_s and lead.model_s else None))
    return out


@dataclass
class CoreSection:
    scenario: str
    scale: float
    scalings: list[CoreScaling]


def core_sections(sets: list[ResultSet]) -> list[CoreSection]:
    """One section per (scenario, scale) with verified runs under --cores 1 and --cores 2 of one engine."""
    out = []
    for (scenario, scale), group in by_scenario_scale(sets):
        found = core_scalings([lr.r for rs in group for lr in rs.runs])
        if found:
            out.append(CoreSection(scenario=scenario, scale=scale, scalings=found))
    return out


__all__ = ["MODEL", "CapSection", "CoreSection", "cap_sections", "core_sections", "model_seconds"]
