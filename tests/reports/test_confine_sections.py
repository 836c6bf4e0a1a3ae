"""The confined-runs sections from hand-built results: time against the storage cap with the model's line and
the speedup per cap; the 1 -> 2 core efficiency with its Amdahl model, and the node model reading it."""

from __future__ import annotations

import pytest

from bench.core.errors import UserError
from bench.core.fit import Fit, core_scalings, node_model, scaling_for
from bench.core.records.telemetry import CoreLimit, StorageCap
from bench.core.units import MiB
from tests.reports.hand_built import make_result, render, table_row, write_results


def _capped(engine, requested, rate, duration, run_id):
    cap = StorageCap(requested=requested, mechanism="cgroup v1 blkio throttle" if rate else "none",
                     read_bytes_per_s=rate, write_bytes_per_s=rate, flush_s=0.5, device="vda 254:0",
                     device_read_bytes=10_000_000, device_write_bytes=9_000_000, flushed_bytes=9_000_000)
    return make_result(engine, 0, duration=duration, run_id=run_id, storage_cap=cap, bytes_out=9_000_000,
                       telemetry={"mean_cores": 2.0, "samples": 10, "interval_s": 0.1})


def _cored(engine, n, duration):
    return make_result(engine, n - 1, duration=duration, run_id="cores", cores=n,
                       core_limit=CoreLimit(cores=n, cpus="0" if n == 1 else "0,1", mechanism="cgroup v1 cpuset"))


def test_time_against_the_cap_beside_the_model_and_the_core_efficiency(tmp_path):
    # bytes in 10 MB + out 9 MB: at 1 MiB/s the storage term is 18.1 s
    caps = [("none", None, {"spark": 12.0, "risingwave": 3.0}), ("2MiB/s", 2 * MiB, {"spark": 13.0, "risingwave": 9.5}),
            ("1MiB/s", MiB, {"spark": 19.0, "risingwave": 18.5})]
    dirs = []
    for requested, rate, times in caps:
        run_id = f"cap-{requested.replace('/', '')}"
        dirs.append(write_results(tmp_path, [_capped(e, requested, rate, t, run_id) for e, t in times.items()],
                                  run_id=run_id))
    dirs.append(write_results(tmp_path, [_cored("spark", 1, 20.0), _cored("risingwave", 1, 5.0),
                                         _cored("spark", 2, 12.5), _cored("risingwave", 2, 2.5)], run_id="cores"))
    html = render(dirs)
    assert 'data-section="storage-caps"' in html and "<svg" in html.split('data-chart="storage-caps"')[1][:400]
    storage_s = 19_000_000 / MiB
    row = table_row(html, "storage-caps", engine="risingwave", cap="1MiB/s")
    assert f'data-metric="model_s" data-value="{storage_s!r}"' in row and "the cap" in row
    assert f'data-metric="model_reads_s" data-value="{10_000_000 / MiB!r}"' in row
    assert 'data-metric="through_throttle" data-value="1.0"' in row  # 9 MB from the cgroup of 9 MB written
    row = table_row(html, "storage-caps", engine="spark", cap="2MiB/s")
    assert 'data-metric="model_s" data-value="12.0"' in row and "uncapped time" in row  # 9.1 s < 12 s
    from reports.confine import cap_sections
    from reports.model.loading import load_runs
    from reports.model.sets import build

    (section,) = cap_sections(build(load_runs(dirs)).sets)
    sp = {s.requested: s for s in section.speedups}
    assert (sp["none"].faster, sp["none"].slower) == ("risingwave", "spark")
    assert (sp["none"].measured, sp["none"].model) == (pytest.approx(4.0), pytest.approx(4.0))
    assert sp["1MiB/s"].faster == "risingwave" and sp["1MiB/s"].measured == pytest.approx(19 / 18.5)
    assert sp["1MiB/s"].model == pytest.approx(1.0, abs=0.005)  # both storage-bound at the same bytes
    assert html.count("data-cap-speedup") == len(section.speedups) == 3  # each said in the section

    # the docs' generated block over the same runs: the same numbers as Markdown (bench docs)
    from reports.markdown import confinement_markdown
    md = confinement_markdown(dirs, root=tmp_path)
    assert "### bin-packing, scale 0.001: time against a storage cap" in md
    assert "### bin-packing, scale 0.001: 1 -> 2 cores" in md
    assert f"| 1 MiB/s, 1 MiB/s | risingwave | 1 | 18.5 s | {storage_s:.1f} s |" in md
    assert "| spark | 20.0 s | 12.5 s |" in md and "| 0.80 | 0.750 |" in md
    assert md.count(str(sp["1MiB/s"])) == 1  # the same words as the page's
    with pytest.raises(UserError, match="no run under --storage-cap or --cores"):
        confinement_markdown([write_results(tmp_path, [make_result("spark", 0, duration=1.0, run_id="plain")],
                                            run_id="plain")])

    spark = table_row(html, "core-scaling", engine="spark")
    assert 'data-metric="efficiency" data-value="0.8"' in spark
    assert "cores/bin-packing--spark--rep0, cores/bin-packing--spark--rep1" in spark
    rw = table_row(html, "core-scaling", engine="risingwave")
    assert 'data-value="1.0"' in rw and '<td data-metric="usable">yes</td>' in rw


def test_the_node_model_scales_by_the_measured_efficiency():
    results = [_cored("spark", 1, 20.0), _cored("spark", 2, 12.5)]
    (sc,) = core_scalings(results)
    assert sc.efficiency == pytest.approx(0.8) and sc.parallel_fraction == pytest.approx(0.75)
    assert sc.speedup(2) == pytest.approx(1.6) and sc.speedup(16) == pytest.approx(1 / (0.25 + 0.75 / 16))
    fit = Fit(quantity="duration_s", per_gb=10.0, fixed=0.0)
    linear = node_model("m5.4xlarge", 16, 1e9, 2.0, 1.0, "here")
    measured = node_model("m5.4xlarge", 16, 1e9, 2.0, 1.0, "here", sc)
    assert linear.seconds(fit, 1.0)["cpu_s"] == pytest.approx(10.0 * 2 / 16)
    assert measured.seconds(fit, 1.0)["cpu_s"] == pytest.approx(10.0 * sc.speedup(2) / sc.speedup(16))
    said = " ".join(measured.assumptions)
    assert "Amdahl" in said and "cores/bin-packing--spark--rep0" in said
    assert scaling_for([sc], "bin-packing", "spark") is sc
    # runs that kept their one core 30 % busy waited on something else: measured, shown, not used by the model
    idle = [_cored("spark", n, d) for n, d in ((1, 20.0), (2, 19.0))]
    for r in idle:
        r.telemetry.mean_cores = 0.3
    (waiting,) = core_scalings(idle)
    assert not waiting.usable and "NOT USED" in waiting.describe()
    assert scaling_for([waiting], "bin-packing", "spark") is None
