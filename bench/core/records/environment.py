"""The machine a result was measured on: what the measurement depends on, recorded in every result."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Facts(BaseModel):
    """Machine facts: the fields readers use are typed; any other fact is kept as recorded (for humans)."""

    model_config = ConfigDict(extra="allow")


class CpuFacts(_Facts):
    model: str | None = None
    logical_cores: int | None = None
    usable_cores: int | None = None  # the cores this process may run on (affinity)
    cgroup_cpu_limit: float | None = None


class MemoryFacts(_Facts):
    total_bytes: int | None = None
    swap_bytes: int | None = None
    cgroup_limit_bytes: int | None = None


class DiskFacts(_Facts):
    """The file system holding the warehouse (or, for a remote one, the local state)."""

    device: str | None = None
    fstype: str | None = None
    total_bytes: int | None = None
    free_bytes: int | None = None
    rotational: bool | None = None
    rotational_note: str | None = None


class OsFacts(_Facts):
    distribution: str | None = None
    kernel: str | None = None


class VersionFacts(_Facts):
    version: str | None = None


class Environment(_Facts):
    """What the measurement depends on, recorded in every result (bench.core.machine.environment); no
    hostname, user name or address."""

    packages: dict[str, str | None] = Field(default_factory=dict)
    python: VersionFacts = Field(default_factory=VersionFacts)
    java: VersionFacts = Field(default_factory=VersionFacts)
    cpu: CpuFacts = Field(default_factory=CpuFacts)
    memory: MemoryFacts = Field(default_factory=MemoryFacts)
    disk: DiskFacts = Field(default_factory=DiskFacts)
    os: OsFacts = Field(default_factory=OsFacts)
    instance_type: str | None = None  # the EC2 instance type measured on (None: not a known one)
    # the Iceberg Java release of the harness's own JVMs (datagen's commits, the reference reader, the conformance
    # writer, the readers): one per run, whatever each engine runs
    iceberg_java: str | None = None
    warehouse: dict[str, Any] | None = None  # where the warehouse was (no secrets)

    @property
    def cores(self) -> int | None:
        """The node's cores: usable, else logical."""
        return self.cpu.usable_cores or self.cpu.logical_cores

    def describe(self) -> str:
        """One line for a report headline, e.g. 'Intel Xeon ... , 2 cores, 23.5 GiB RAM, ext4 SSD'."""
        cpu, mem, disk = self.cpu, self.memory, self.disk
        parts = [str(x) for x in (self.instance_type, cpu.model) if x]
        if self.cores:
            parts.append(f"{self.cores} cores")
        if mem.total_bytes:
            parts.append(f"{mem.total_bytes / 2**30:.1f} GiB RAM")
        if disk.fstype:
            rotational = disk.rotational
            kind = "" if disk.rotational_note or rotational is None else ("HDD" if rotational else "SSD")
            parts.append(f"{disk.fstype} {kind}".strip())
        return ", ".join(parts) or "unknown machine"
