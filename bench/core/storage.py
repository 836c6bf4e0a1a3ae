"""The storage a node can hold an Iceberg table on, as the node model needs it: a throughput, whether reads
and writes share it, and the assumption behind the number.  Figures are AWS's published limits for the
published node (m5.4xlarge); none was measured here.

    shared  (EBS)  a run's bytes read + written go through one limit: (read + write) / rate
    duplex  (S3)   through the network, which AWS specifies per direction ("up to 10 Gbps inbound and,
                   simultaneously, up to 10 Gbps outbound"): max(read, write) / rate

`effective_mb_s` folds the duplex case into the node model's one rate over the bytes read and written, so
bench.core.fit.NodeModel is used unchanged.
"""

from __future__ import annotations

from pydantic import BaseModel

from bench.core.errors import UserError
from bench.core.published import PUBLISHED_STORAGE_NAMES

MB = 1e6


class StorageOption(BaseModel):
    name: str  # gp3-baseline | gp3-max | s3-sustained | s3-burst
    label: str  # for people: "gp3 at its baseline"
    mb_s: float  # MB/s (10^6 bytes) through the limit
    duplex: bool = False  # reads and writes each get `mb_s` (a network), else they share it (a volume)
    warehouse: str = "ebs"  # where the table lives: ebs | s3
    volume_iops: int = 3000  # the gp3 data volume beside it (on S3: scratch space, logs and results)
    volume_mib_s: int = 125
    assumption: str = ""

    def seconds(self, read_bytes: float, write_bytes: float) -> float:
        """The least time this storage needs to move the bytes (nothing else counted)."""
        moved = max(read_bytes, write_bytes) if self.duplex else read_bytes + write_bytes
        return moved / (self.mb_s * MB)

    def effective_mb_s(self, read_bytes: float, write_bytes: float) -> float:
        """The one rate over read + written bytes that takes `seconds` (the node model's form)."""
        total = read_bytes + write_bytes
        secs = self.seconds(read_bytes, write_bytes)
        return total / secs / MB if secs > 0 else self.mb_s

    def needed_mb_s(self, read_bytes: float, write_bytes: float, seconds: float) -> float:
        """What this storage would have to move per second for the bytes to take `seconds` (per direction
        for a duplex one)."""
        moved = max(read_bytes, write_bytes) if self.duplex else read_bytes + write_bytes
        return moved / seconds / MB


GP3_BASELINE_MB_S = 125 * 1.048576  # gp3's free 125 MiB/s, in MB/s
# the most an m5.4xlarge moves to and from EBS: 4,750 Mbps (AWS, EBS-optimized instances; for a 4xlarge the
# baseline and the maximum are the same), i.e. what a gp3 volume at its maximum (1,000 MiB/s) is held to
M5_4XLARGE_EBS_MB_S = 4750 / 8
M5_4XLARGE_NETWORK_BURST_MB_S = 10_000 / 8  # "up to 10 Gbps": the burst, on network I/O credits
M5_4XLARGE_NETWORK_BASELINE_MB_S = 5_000 / 8  # its baseline bandwidth, what it keeps without credits

M5_4XLARGE_STORAGE: list[StorageOption] = [
    StorageOption(name="gp3-baseline", label="gp3 at its baseline", mb_s=GP3_BASELINE_MB_S,
                  assumption="gp3's free 125 MiB/s (3,000 IOPS), read and write sharing it; sustained"),
    StorageOption(name="gp3-max", label="gp3 at the instance's EBS maximum", mb_s=M5_4XLARGE_EBS_MB_S,
                  volume_iops=16000, volume_mib_s=1000,
                  assumption="gp3 provisioned to 1,000 MiB/s and 16,000 IOPS, held to the m5.4xlarge's EBS "
                             "bandwidth of 4,750 Mbps (its baseline and maximum alike), read and write sharing "
                             "it; sustained"),
    StorageOption(name="s3-sustained", label="S3, the network's baseline", mb_s=M5_4XLARGE_NETWORK_BASELINE_MB_S,
                  duplex=True, warehouse="s3",
                  assumption="S3 in the same region through the instance's network at its 5 Gbps baseline, "
                             "per direction (reads in, writes out at once); many parallel connections (one "
                             "flow is held to 5 Gbps); no S3 request throttling; sustained for any length"),
    StorageOption(name="s3-burst", label="S3, the network's burst", mb_s=M5_4XLARGE_NETWORK_BURST_MB_S,
                  duplex=True, warehouse="s3",
                  assumption="S3 as above at the instance's 'up to 10 Gbps' burst, per direction: AWS grants it "
                             "on network I/O credits for typically 5 to 60 minutes and best effort; a run of "
                             "a few minutes may get it all, a longer one falls back to the baseline"),
]
STORAGE_OPTIONS = {o.name: o for o in M5_4XLARGE_STORAGE}
assert tuple(STORAGE_OPTIONS) == PUBLISHED_STORAGE_NAMES, "the CLI offers PUBLISHED_STORAGE_NAMES: keep them alike"


def storage_option(name: str) -> StorageOption:
    try:
        return STORAGE_OPTIONS[name]
    except KeyError:
        raise UserError(f"--storage {name!r}: one of {', '.join(STORAGE_OPTIONS)}") from None


def custom_storage(mb_s: float) -> StorageOption:
    """A volume of the given throughput (bench plan --storage-mb-s)."""
    if mb_s <= 0:
        raise UserError(f"--storage-mb-s {mb_s:g}: give a positive throughput in MB/s")
    return StorageOption(name=f"{mb_s:g}MB/s", label=f"{mb_s:g} MB/s", mb_s=mb_s,
                         assumption=f"{mb_s:g} MB/s shared by reads and writes, as given")
