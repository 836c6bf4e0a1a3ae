"""The cost model reproduces the published arithmetic exactly and prices storage terms correctly."""

from __future__ import annotations

import pytest

from bench.core.cost import (
    DEFAULT_INSTANCE,
    PRICES,
    Gp3Volume,
    compute_usd,
    format_usd,
    parse_instance,
    run_cost,
    s3_usd,
)
from bench.core.errors import UserError
from bench.core.records.engine_run import Cost


@pytest.mark.parametrize("seconds, published", [(277, "0.059"), (1533, "0.327"), (369, "0.079"),
                                                (1923, "0.410"), (518, "0.111"), (490, "0.105")])
def test_published_arithmetic(seconds, published):
    # m5.4xlarge on demand x engine duration, rounded to 3 decimals as published (first two pairs are
    # quoted in the published benchmark; the others follow the same formula)
    assert DEFAULT_INSTANCE == "m5.4xlarge" and PRICES["m5.4xlarge"].usd_per_hour == 0.768
    assert f"{round(compute_usd(seconds), 3):.3f}" == published
    assert format_usd(run_cost(seconds).total_usd) == f"${published}"


def test_run_cost_record_is_compute_only_by_default():
    c = run_cost(277)
    assert isinstance(c, Cost)
    assert c.instance_type == "m5.4xlarge" and c.usd_per_hour == 0.768 and c.duration_s == 277
    assert c.compute_usd == pytest.approx(0.768 * 277 / 3600, rel=1e-12)
    assert c.total_usd == c.compute_usd
    assert c.storage_usd is None and c.s3_usd is None and c.extra == {}
    none = run_cost(None)
    assert none.total_usd is None and none.compute_usd is None and none.instance_type == "m5.4xlarge"
    # the result record round-trips through JSON unchanged
    assert Cost.model_validate_json(c.model_dump_json()) == c


def test_cost_is_hypothetical_unless_measured_on_that_instance_type():
    assert run_cost(277).hypothetical is True  # not an EC2 instance of a known type
    assert run_cost(277, ran_on="c5.4xlarge").hypothetical is True
    assert "hypothetical" in run_cost(277, ran_on="c5.4xlarge").note
    measured = run_cost(277, "m5.4xlarge", ran_on="m5.4xlarge")
    assert measured.hypothetical is False and "hypothetical" not in measured.note
    assert measured.total_usd == run_cost(277).total_usd  # the same arithmetic either way


def test_other_instance_types_and_custom_price():
    assert compute_usd(3600, "r5.4xlarge") == pytest.approx(1.008)
    assert compute_usd(1800, "c5.4xlarge") == pytest.approx(0.34)
    custom = parse_instance("m7a.4xlarge=0.9274")
    assert custom.usd_per_hour == 0.9274
    assert compute_usd(3600, custom) == pytest.approx(0.9274)
    with pytest.raises(UserError, match="unknown instance type"):
        parse_instance("m5.4xlargee")
    with pytest.raises(UserError, match="NAME=USD_PER_HOUR"):
        parse_instance("x=abc")


def test_gp3_prorated_with_iops_and_throughput_above_baseline():
    # AWS's own example: 2,000 GB for 12 hours of a 30-day month at $0.08 = $2.67
    vol = Gp3Volume(2000)
    c = run_cost(12 * 3600, gp3=vol)
    parts = c.extra["storage_usd_parts"]
    assert parts["storage"] == pytest.approx(2000 * 0.08 * 12 / 720)
    assert round(parts["storage"], 2) == 2.67
    assert parts["iops"] == 0 and parts["throughput"] == 0
    # provisioned 6,000 IOPS and 250 MB/s for a whole month: 3,000 x $0.005 + 125 x $0.04
    c = run_cost(30 * 86400, gp3=Gp3Volume(500, 6000, 250))
    parts = c.extra["storage_usd_parts"]
    assert parts["iops"] == pytest.approx(15.0)
    assert parts["throughput"] == pytest.approx(5.0)
    assert parts["storage"] == pytest.approx(40.0)
    assert c.storage_usd == pytest.approx(60.0)
    assert c.total_usd == pytest.approx(c.compute_usd + 60.0)
    with pytest.raises(UserError):
        Gp3Volume(500, 1000, 125)  # under gp3's free 3,000 IOPS


def test_s3_requests():
    assert s3_usd({"put": 1000, "list": 1000, "get": 10_000}) == pytest.approx(0.005 * 2 + 0.004)
    c = run_cost(277, s3_requests={"put": 2000, "get": 5000})
    assert c.s3_usd == pytest.approx(0.01 + 0.002)
    assert c.total_usd == pytest.approx(c.compute_usd + c.s3_usd)
