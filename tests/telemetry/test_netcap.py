"""The storage cap of an S3 warehouse on this machine, for real: a moto S3 server on 127.0.0.1, its loopback
traffic shaped per direction by the kernel (tc htb); a GET slows to the read cap, a PUT to the write cap, the
shaper counts the bytes, and it leaves nothing behind."""

from __future__ import annotations

import shutil
import subprocess
import time

import boto3
import pytest

from bench.core.errors import UserError
from bench.core.units import MiB
from bench.telemetry.confine import Confiner, parse_storage_cap
from bench.telemetry.netcap import HANDLE, LoopbackShaper, check_shaper, loopback_port
from tests.helpers import moto_server


def _can_shape() -> bool:
    if shutil.which("tc") is None:
        return False
    probe = subprocess.run(["tc", "qdisc", "show", "dev", "lo", "root"], capture_output=True, text=True).stdout
    return probe.startswith("qdisc noqueue") or f"htb {HANDLE}:" in probe


def test_loopback_endpoints_only():
    assert loopback_port("http://127.0.0.1:9000") == 9000 and loopback_port("http://localhost") == 80
    assert loopback_port("https://s3.amazonaws.com") is None and loopback_port(None) is None
    for endpoint in (None, "https://s3.us-east-1.amazonaws.com"):
        with pytest.raises(UserError, match="127.0.0.1"):
            check_shaper(endpoint)


def test_a_shaped_s3_server_serves_reads_and_writes_at_the_cap():
    if not _can_shape():
        pytest.skip("no tc, or the loopback has a queueing discipline of its own")
    with moto_server("bench-netcap") as endpoint:
        port = int(endpoint.rsplit(":", 1)[1])
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                              aws_secret_access_key="testing")
        body = bytes(6 * MiB)
        t0 = time.perf_counter()
        client.put_object(Bucket="bench-netcap", Key="free", Body=body)
        free_put = time.perf_counter() - t0
        t0 = time.perf_counter()
        client.get_object(Bucket="bench-netcap", Key="free")["Body"].read()
        free_get = time.perf_counter() - t0

        assert check_shaper(endpoint) == port
        confiner = Confiner(parse_storage_cap("4MiB/s,3MiB/s"), None, None, s3_port=port)
        try:
            with pytest.raises(UserError, match="another run is shaping"):
                LoopbackShaper(port, MiB, MiB).start()  # one shaper at a time on a machine
            t0 = time.perf_counter()
            client.get_object(Bucket="bench-netcap", Key="free")["Body"].read()
            get = time.perf_counter() - t0
            t0 = time.perf_counter()
            client.put_object(Bucket="bench-netcap", Key="capped", Body=body)
            put = time.perf_counter() - t0
            confiner.finish()
        finally:
            confiner.release()
        rec = confiner.storage
        assert rec is not None and "tc htb" in rec.mechanism and str(port) in rec.device
        # 6 MiB at 4 MiB/s read: ~1.5 s (the first 1 MiB passes at once: the burst); at 3 MiB/s written: ~2 s
        assert get > 1.0 and get > 3 * free_get, (get, free_get)
        assert put > 1.4 and put > 3 * free_put, (put, free_put)
        assert rec.device_read_bytes >= 6 * MiB and rec.device_write_bytes >= 6 * MiB
        out = subprocess.run(["tc", "qdisc", "show", "dev", "lo", "root"], capture_output=True, text=True).stdout
        assert f"htb {HANDLE}:" not in out  # removed after the run
