"""Cost of a run: on-demand price x duration, plus optional storage and S3 request terms.

The published benchmark's cost is compute only: m5.4xlarge on-demand $0.768/h x engine duration
(277 s -> $0.059, 1,533 s -> $0.327).  `run_cost` reproduces that arithmetic exactly and can add:
- gp3 EBS storage, prorated by duration: GB-month, plus provisioned IOPS above the free 3,000 and
  throughput above the free 125 MB/s (what a volume sized for a 193 GB table would cost while the
  compaction runs);
- S3 requests, when the warehouse was on S3 (PUT/COPY/POST/LIST and GET tiers).
Prices are list prices; a real bill also has data transfer, snapshots, taxes and discounts.
Billing granularity (per second, 60 s minimum per instance launch) is not applied: a compaction runs
on a node that lives longer than it, so its share of the bill is proportional to its duration.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from bench.core.errors import UserError
from bench.core.published import PUBLISHED_INSTANCE, PUBLISHED_MEMORY_GIB, PUBLISHED_USD_PER_HOUR, PUBLISHED_VCPU

if TYPE_CHECKING:  # imported where used: the CLI reads PRICES and DEFAULT_INSTANCE without loading pydantic
    from bench.core.records.engine_run import Cost

PRICE_REGION = "us-east-1"
PRICE_DATE = "2025-12-04"
# Where the numbers come from.  These list prices have not changed since the types launched; the
# m5.4xlarge rate is the one the published benchmark used on PRICE_DATE, and c5.4xlarge's $0.68 is
# also AWS's own example in the EC2 Auto Scaling guide.  Re-check before quoting a bill.
PRICE_SOURCE = (
    "AWS list prices, US East (N. Virginia): EC2 On-Demand, Linux, shared tenancy "
    "(aws.amazon.com/ec2/pricing/on-demand); EBS gp3 (aws.amazon.com/ebs/pricing); "
    "S3 Standard requests (aws.amazon.com/s3/pricing); recorded " + PRICE_DATE
)
DEFAULT_INSTANCE = PUBLISHED_INSTANCE  # the published benchmark's machine


@dataclass(frozen=True)
class InstancePrice:
    name: str
    usd_per_hour: float
    vcpu: int
    memory_gib: float


PRICES: dict[str, InstancePrice] = {p.name: p for p in (
    InstancePrice("m5.2xlarge", 0.384, 8, 32),
    InstancePrice(PUBLISHED_INSTANCE, PUBLISHED_USD_PER_HOUR, PUBLISHED_VCPU, PUBLISHED_MEMORY_GIB),
    InstancePrice("m5.8xlarge", 1.536, 32, 128),
    InstancePrice("m5.12xlarge", 2.304, 48, 192),
    InstancePrice("m6i.4xlarge", 0.768, 16, 64),
    InstancePrice("m7i.4xlarge", 0.8064, 16, 64),
    InstancePrice("m6g.4xlarge", 0.616, 16, 64),
    InstancePrice("m7g.4xlarge", 0.6528, 16, 64),
    InstancePrice("c5.4xlarge", 0.68, 16, 32),
    InstancePrice("c6i.4xlarge", 0.68, 16, 32),
    InstancePrice("r5.4xlarge", 1.008, 16, 128),
    InstancePrice("r6i.4xlarge", 1.008, 16, 128),
)}

# EBS gp3, us-east-1
GP3_USD_PER_GB_MONTH = 0.08
GP3_FREE_IOPS = 3000
GP3_USD_PER_IOPS_MONTH = 0.005  # above the free 3,000
GP3_FREE_MBPS = 125
GP3_USD_PER_MBPS_MONTH = 0.04  # above the free 125 MB/s
SECONDS_PER_MONTH = 30 * 86_400  # AWS prorates EBS by the second over a 30-day month in its examples

# S3 Standard, us-east-1
S3_USD_PER_GB_MONTH = 0.023  # storage, the first 50 TB
S3_USD_PER_1000_WRITE = 0.005  # PUT, COPY, POST, LIST
S3_USD_PER_1000_READ = 0.0004  # GET, SELECT and all other requests


@dataclass(frozen=True)
class Gp3Volume:
    size_gb: float
    iops: int = GP3_FREE_IOPS
    throughput_mbps: float = GP3_FREE_MBPS

    def __post_init__(self):
        if self.size_gb <= 0:
            raise UserError(f"gp3 volume size must be positive, got {self.size_gb}")
        if self.iops < GP3_FREE_IOPS or self.throughput_mbps < GP3_FREE_MBPS:
            raise UserError(f"gp3 starts at {GP3_FREE_IOPS} IOPS and {GP3_FREE_MBPS} MB/s")


def parse_instance(spec: str | None) -> InstancePrice:
    """'m5.4xlarge' (from the table) or 'NAME=USD_PER_HOUR' for a type not in it."""
    spec = (spec or DEFAULT_INSTANCE).strip()
    if "=" in spec:
        name, _, price = spec.partition("=")
        try:
            usd = float(price)
        except ValueError:
            usd = -1.0
        if not name.strip() or not usd > 0:
            raise UserError(f"--instance-type {spec!r}: expected NAME=USD_PER_HOUR, e.g. m7a.4xlarge=0.927")
        known = PRICES.get(name.strip())
        return InstancePrice(name.strip(), usd, known.vcpu if known else 0,
                             known.memory_gib if known else 0.0)
    if spec not in PRICES:
        raise UserError(f"unknown instance type {spec!r}; known: {', '.join(PRICES)} "
                        f"(or give NAME=USD_PER_HOUR)")
    return PRICES[spec]


def compute_usd(duration_s: float, instance: InstancePrice | str = DEFAULT_INSTANCE) -> float:
    """On-demand price x duration, unrounded."""
    inst = instance if isinstance(instance, InstancePrice) else parse_instance(instance)
    if duration_s < 0:
        raise ValueError("duration must not be negative")
    return inst.usd_per_hour * duration_s / 3600.0


def gp3_usd(duration_s: float, volume: Gp3Volume) -> dict[str, float]:
    months = duration_s / SECONDS_PER_MONTH
    return {
        "storage": volume.size_gb * GP3_USD_PER_GB_MONTH * months,
        "iops": max(0, volume.iops - GP3_FREE_IOPS) * GP3_USD_PER_IOPS_MONTH * months,
        "throughput": max(0.0, volume.throughput_mbps - GP3_FREE_MBPS) * GP3_USD_PER_MBPS_MONTH * months,
    }


def s3_usd(requests: dict[str, int]) -> float:
    """`requests`: counts by kind; put/copy/post/list are billed at the write tier, the rest at GET."""
    write = sum(n for k, n in requests.items() if k.lower() in ("put", "copy", "post", "list"))
    read = sum(n for k, n in requests.items() if k.lower() not in ("put", "copy", "post", "list"))
    return write / 1000 * S3_USD_PER_1000_WRITE + read / 1000 * S3_USD_PER_1000_READ


def run_cost(duration_s: float | None, instance_type: str | None = DEFAULT_INSTANCE,
             gp3: Gp3Volume | None = None, s3_requests: dict[str, int] | None = None,
             ran_on: str | None = None, nodes: int = 1) -> Cost:
    """The `cost` record of a RunResult.  Amounts are unrounded USD; round only to display.

    `duration_s` is the engine's compaction time (the published cost used it); None (a run that
    never finished) gives no amounts.  `ran_on` is the instance type the run was measured on (None:
    not an EC2 instance of a known type); unless it is `instance_type`, the cost is hypothetical: the
    published node's price applied to this node's time.  `nodes` instances are paid for the whole
    duration (a cluster: every node counts for the whole run)."""
    from bench.core.records.engine_run import Cost

    inst = parse_instance(instance_type)
    hypothetical = ran_on != inst.name
    note = (f"{inst.name} on-demand price x the time measured on this {ran_on or 'machine'} (hypothetical)"
            if hypothetical else f"measured on {inst.name}: on-demand price x time")
    nodes = max(1, int(nodes))
    basis = "on-demand price x engine duration" + (f" x {nodes} nodes" if nodes > 1 else "")
    out = Cost(instance_type=inst.name, usd_per_hour=inst.usd_per_hour, region=PRICE_REGION,
               price_date=PRICE_DATE, basis=basis, duration_s=duration_s,
               hypothetical=hypothetical, note=note, nodes=nodes)
    if duration_s is None:
        return out
    out.compute_usd = compute_usd(duration_s, inst) * nodes
    total = out.compute_usd
    if gp3 is not None:
        parts = gp3_usd(duration_s, gp3)
        out.storage_usd = sum(parts.values())
        out.extra.update(gp3=asdict(gp3), storage_usd_parts=parts)
        total += out.storage_usd
    if s3_requests:
        out.s3_usd = s3_usd(s3_requests)
        out.extra.update(s3_requests=dict(s3_requests))
        total += out.s3_usd
    out.total_usd = total
    return out


def format_usd(amount: float | None) -> str:
    """Dollars to 3 decimals, as the published benchmark quotes them ($0.059)."""
    return "—" if amount is None else f"${amount:,.3f}"


def instance_type_option(what: str = "On-demand price used for cost"):
    """The `--instance-type` click option of the commands that price a run (`bench run`, `bench plan`)."""
    import click

    return click.option("--instance-type", default=DEFAULT_INSTANCE, show_default=True,
                        help=f"{what}: one of {', '.join(PRICES)}, or NAME=USD_PER_HOUR.")
