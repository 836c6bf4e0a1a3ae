"""Where a sweep's fits lead: the stated model of the published node, its storage options, and the
extrapolation to a scale (1.0: the published size)."""

from __future__ import annotations

from bench.core.campaign import Extrapolation, Point, StorageAnswer
from bench.core.cost import PRICES
from bench.core.fit import CoreScaling, Fit, NodeModel, node_model, scaling_for
from bench.core.fmt import fmt_scale
from bench.core.machine import usable_cores
from bench.core.published import PUBLISHED_INSTANCE
from bench.core.storage import GP3_BASELINE_MB_S, M5_4XLARGE_EBS_MB_S, M5_4XLARGE_STORAGE, StorageOption
from bench.scenario import Scenario


def published_model(point: Point, scaling: CoreScaling | None = None) -> NodeModel:
    """The stated model carrying this node's per-core throughput to the published m5.4xlarge (by the engine's
    measured 1 -> 2 core efficiency where `scaling` is given, else linearly)."""
    here = f"{usable_cores()} cores"
    disk = (point.disk_gb + (point.output_disk_gb or 0.0)) / point.gb if point.gb else 1.0
    return node_model(PUBLISHED_INSTANCE, PRICES[PUBLISHED_INSTANCE].vcpu, GP3_BASELINE_MB_S,
                      point.mean_cores or 1.0, disk, here, scaling)


def extrapolate(sc: Scenario, points: list[Point], time_fits: dict[str, Fit], memory_fits: dict[str, Fit],
                scale: float = 1.0, scalings: list[CoreScaling] | None = None) -> list[Extrapolation]:
    pub = sc.published
    out = []
    for e, fit in time_fits.items():
        mine = sorted((p for p in points if p.engine == e and p.verified), key=lambda p: p.scale)
        if not mine:
            continue
        top = mine[-1]  # the largest measured scale: above the small-table floor, bytes scale with s
        gb = top.gb / top.scale * scale
        model = published_model(top, scaling_for(scalings or [], sc.name, e))
        m = model.seconds(fit, gb)
        fast = model.model_copy(update={"storage_mb_s": M5_4XLARGE_EBS_MB_S}).seconds(fit, gb)
        x = Extrapolation(engine=e, scale=scale, gb=gb, this_node_s=fit.predict(gb),
                          this_node_interval=fit.interval(gb),
                          this_node_peak_rss_bytes=memory_fits[e].predict(gb), model=model, model_s=m["seconds"],
                          model_bound=m["bound"], model_cpu_s=m["cpu_s"], model_storage_s=m["storage_s"],
                          model_fast_s=fast["seconds"], model_fast_bound=fast["bound"],
                          fast_storage_mb_s=M5_4XLARGE_EBS_MB_S,
                          published_s=pub.duration_s.get(e) if pub else None,
                          published_status=pub.status.get(e) if pub else None)
        if x.published_s and scale == 1.0:
            x.published_implied_mb_s = gb * model.disk_gb_per_logical_gb * 1e9 / x.published_s / 1e6
        if top.gb:
            x.read_gb, x.write_gb = top.disk_gb / top.gb * gb, (top.output_disk_gb or 0.0) / top.gb * gb
            x.storage = storage_answers(model, fit, gb, x.read_gb * 1e9, x.write_gb * 1e9,
                                        x.published_s if scale == 1.0 else None)
        notes = [f"{gb:,.0f} GB logical at scale {fmt_scale(scale)}, from the largest measured point "
                 f"({fmt_scale(top.scale)}: {top.gb:.2f} GB) scaled by size"]
        if fit.poor:
            notes.append(f"the time fit is poor ({fit.note})")
        if x.published_implied_mb_s and x.published_implied_mb_s > M5_4XLARGE_EBS_MB_S:
            notes.append(f"the published {x.published_s:,.0f} s implies {x.published_implied_mb_s:,.0f} MB/s through "
                         f"the disk for this table's {model.disk_gb_per_logical_gb:.2f} GB read and written per "
                         f"logical GB, more than an m5.4xlarge moves to EBS ({M5_4XLARGE_EBS_MB_S:,.0f} MB/s): the "
                         f"published input was smaller on disk, cached, or not on EBS")
        x.note = "; ".join(notes)
        out.append(x)
    return out


def storage_answers(model: NodeModel, fit: Fit, gb: float, read_bytes: float, write_bytes: float,
                    published_s: float | None,
                    options: list[StorageOption] = M5_4XLARGE_STORAGE) -> list[StorageAnswer]:
    """The node model with each storage option of the published node, and whether that storage alone can
    move the run's bytes within the published time (a model: bench.core.storage states each option)."""
    out = []
    for o in options:
        m = model.model_copy(update={"storage_mb_s": o.effective_mb_s(read_bytes, write_bytes)}).seconds(fit, gb)
        floor = o.seconds(read_bytes, write_bytes)
        out.append(StorageAnswer(option=o.name, label=o.label, mb_s=o.mb_s, duplex=o.duplex, model_s=m["seconds"],
                                 bound=m["bound"], storage_s=floor,
                                 needed_mb_s=o.needed_mb_s(read_bytes, write_bytes, published_s) if published_s
                                 else None,
                                 can_produce=floor <= published_s if published_s else None))
    return out
