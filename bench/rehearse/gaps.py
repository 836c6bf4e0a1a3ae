"""What the emulator (moto) lacks or does differently from AWS, met by the rehearsal, and what it does about each.
The rehearsal prints those that apply to the run and records them in rehearsal.json."""

from __future__ import annotations

ALWAYS = [
    "MonitorInstances is not implemented: the rehearsal sets detailed_monitoring = false (AWS runs keep it on)",
    "no Debian AMI: the emulator is handed a stand-in named debian-12-amd64-* from Debian's account 136693071363, "
    "so the module's AMI lookup runs; nothing boots from it",
    "the provider's version: hashicorp/aws from the local plugin directory (terraform/ pins ~> 6.0), "
    "max_retries = 2, endpoints and test credentials in an override file of the temporary copy",
    "bucket policies are evaluated without the request's context (a Deny with a condition denies everything): "
    "the module's DenyInsecureTransport policy would refuse every upload, so the rehearsal's copy does not apply "
    "it, and the emulator serves plain HTTP on 127.0.0.1 (which the engines' S3 clients reach without a custom CA)",
    "gp3 iops and throughput are accepted and ignored, the instance's vpc_security_group_ids read back empty: "
    "EBS performance and the network are not rehearsed",
    "the S3 lifecycle configuration takes ~55 s to apply against the emulator",
    "the instance runs nothing: its user data is taken from the emulator and run here in a sandbox (stand-ins "
    "for apt-get, make setup, shutdown and systemctl poweroff: bench.rehearse.sandbox)",
]
PLACEMENT = ("aws_placement_group is not implemented: the rehearsal's copy creates none (count = 0), the Spark "
             "workers are applied without one")
SPOT = "spot instances plan as \"must be replaced\" right after the apply (the emulator's read-back); destroy works"


def met(spark_workers: int = 0, spot: bool = False) -> list[str]:
    out = list(ALWAYS)
    if spark_workers:
        out.append(PLACEMENT)
    if spot:
        out.append(SPOT)
    return out
