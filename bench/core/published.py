"""The published benchmark's node, in one place: its instance type, size and on-demand price.

Everything that compares with the published figures (the cost table, the plan's default instance, the sweep's
node model, the frontier's "does it fit" against the published RAM, the report's machine reasons, the harness
scaling's target cores) reads these; nothing else restates them."""

from __future__ import annotations

PUBLISHED_INSTANCE = "m5.4xlarge"
PUBLISHED_VCPU = 16
PUBLISHED_MEMORY_GIB = 64  # AWS's figure for the instance
PUBLISHED_RAM_BYTES = 64 * 10**9  # "64 GB" as published (AWS: 64 GiB; the published text says GB)
PUBLISHED_USD_PER_HOUR = 0.768  # on-demand, us-east-1, the rate the published benchmark used
PUBLISHED_MACHINE = f"AWS {PUBLISHED_INSTANCE} ({PUBLISHED_VCPU} vCPU, {PUBLISHED_RAM_BYTES // 10**9} GB, EBS)"
# The published node's storage options by name, in order (bench.core.storage.M5_4XLARGE_STORAGE describes them):
# named here so the CLI offers them (`bench plan --storage`) without loading pydantic.
PUBLISHED_STORAGE_NAMES = ("gp3-baseline", "gp3-max", "s3-sustained", "s3-burst")
