"""Results to and from S3: upload a run's files under ``s3://<bucket>/runs/<run-id>/``, status last.

This file needs only the standard library and boto3, because the cloud bootstrap
(terraform/bootstrap.sh) runs it as a plain script *before* the harness is installed, and again after
the harness failed, so that logs reach S3 whatever happened::

    python3 -I cloud.py publish s3://BUCKET/runs/RUN/ --dir results=PATH --dir logs=PATH \
        --file report.html=PATH [--status-field status=ok ...] [--outcomes FILE.tsv]
    python3 -I cloud.py download s3://BUCKET/runs/RUN/ DEST
    python3 -I cloud.py ls s3://BUCKET/runs/RUN/
    python3 -I cloud.py status s3://BUCKET/runs/RUN/

Layout of a run prefix: ``results/`` (the harness's JSON and samples files), ``logs/``,
``report.html``, and ``status.json``, which is always written LAST: a reader that sees it knows the
run is over and every other object was attempted (failures are listed in it).

Credentials and region come from boto3's usual chain (the instance role on EC2).  The endpoint can be
overridden for tests with boto3's own ``AWS_ENDPOINT_URL_S3`` (or ``AWS_ENDPOINT_URL``) variable, or
with ``endpoint_url=`` / ``--endpoint-url``.
"""

from __future__ import annotations

import argparse
import json
import mimetypes
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

try:  # inside the harness: bad input is a UserError (the CLI prints one line, exit 2)
    from bench.core.errors import UserError
except ImportError:  # run as a standalone script by the bootstrap
    class UserError(Exception):
        """Bad input: one line saying what is wrong."""

STATUS_KEY = "status.json"
RUNS_PREFIX = "runs"


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` -> ``("bucket", "some/prefix")`` (no leading slash)."""
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        raise UserError(f"not an S3 URI (expected s3://bucket/prefix): {uri!r}")
    bucket, _, key = uri[len("s3://"):].partition("/")
    if not bucket:
        raise UserError(f"S3 URI without a bucket: {uri!r}")
    return bucket, key.lstrip("/")


def run_prefix(run_id: str) -> str:
    """The key prefix of one run: ``runs/<run-id>/``."""
    if not run_id or "/" in run_id or run_id in (".", ".."):
        raise UserError(f"bad run id {run_id!r}: use letters, digits, '.', '_' or '-'")
    return f"{RUNS_PREFIX}/{run_id}/"


def _join(prefix: str, rel: str) -> str:
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    return prefix + rel.lstrip("/")


def make_client(region: str | None = None, endpoint_url: str | None = None):
    """A boto3 S3 client with patient retries.  Endpoint: argument, else boto3's env variables."""
    import boto3
    from botocore.config import Config

    cfg = Config(retries={"max_attempts": 10, "mode": "standard"},
                 s3={"addressing_style": "path"} if (endpoint_url or _env_endpoint()) else None)
    return boto3.session.Session().client(
        "s3", region_name=region or None, endpoint_url=endpoint_url or None, config=cfg)


def _env_endpoint() -> str | None:
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")


@dataclass
class UploadReport:
    uploaded: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def extend(self, other: UploadReport) -> None:
        self.uploaded += other.uploaded
        self.errors += other.errors


def _extra_args(path: Path) -> dict:
    ctype, _ = mimetypes.guess_type(path.name)
    if path.suffix == ".json":
        ctype = "application/json"
    return {"ContentType": ctype} if ctype else {}


def upload_path(local: str | os.PathLike, uri: str, *, client=None) -> UploadReport:
    """Upload a file to the key ``uri``, or a directory tree under the prefix ``uri``.

    Never raises for one failed object: the failure is recorded in the report, so that the caller can
    still upload the rest (logs above all) and say what is missing in the status object.
    """
    client = client or make_client()
    bucket, key = parse_s3_uri(uri)
    local = Path(local)
    report = UploadReport()
    if local.is_file():
        items = [(local, key if key and not key.endswith("/") else _join(key, local.name))]
    elif local.is_dir():
        items = [(p, _join(key, p.relative_to(local).as_posix()))
                 for p in sorted(local.rglob("*")) if p.is_file()]
    else:
        report.errors.append(f"{local}: does not exist")
        return report
    for path, k in items:
        try:
            client.upload_file(str(path), bucket, k, ExtraArgs=_extra_args(path))
            report.uploaded.append(k)
        except Exception as e:  # noqa: BLE001 - recorded, reported in status.json
            report.errors.append(f"s3://{bucket}/{k}: {type(e).__name__}: {e}")
    return report


def write_status(uri: str, status: Mapping, *, client=None) -> str:
    """Write ``status.json`` under the run prefix ``uri``; returns its key."""
    client = client or make_client()
    bucket, prefix = parse_s3_uri(uri)
    key = _join(prefix, STATUS_KEY)
    client.put_object(Bucket=bucket, Key=key, ContentType="application/json",
                      Body=json.dumps(dict(status), indent=2, sort_keys=True).encode())
    return key


def publish(uri: str, parts: Mapping[str, str | os.PathLike], status: Mapping | None = None, *,
            client=None) -> UploadReport:
    """Upload each local path in ``parts`` under ``uri/<name>``, then, LAST, ``status.json``.

    ``parts`` maps a name inside the run prefix (``results``, ``logs``, ``report.html``) to a local
    file or directory; a missing local path is recorded as an error, not raised.  The status object
    gets ``uploaded`` (count), ``upload_errors`` and ``finished_at`` added.
    """
    client = client or make_client()
    report = UploadReport()
    for name, local in parts.items():
        report.extend(upload_path(local, _join(uri, name), client=client))
    if status is not None:
        doc = dict(status)
        doc.setdefault("finished_at", _now_iso())
        doc["uploaded"] = len(report.uploaded)
        doc["upload_errors"] = report.errors
        write_status(uri, doc, client=client)
    return report


def list_keys(uri: str, *, client=None) -> list[str]:
    client = client or make_client()
    bucket, prefix = parse_s3_uri(uri)
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


def read_status(uri: str, *, client=None) -> dict | None:
    """The run's ``status.json``, or None while the run has not finished (or never started)."""
    client = client or make_client()
    bucket, prefix = parse_s3_uri(uri)
    try:
        body = client.get_object(Bucket=bucket, Key=_join(prefix, STATUS_KEY))["Body"].read()
    except client.exceptions.NoSuchKey:
        return None
    return json.loads(body)


def download(uri: str, dest: str | os.PathLike, *, client=None) -> list[Path]:
    """Download every object under the prefix ``uri`` into ``dest`` (or one object to ``dest``)."""
    client = client or make_client()
    bucket, prefix = parse_s3_uri(uri)
    dest = Path(dest)
    keys = list_keys(uri, client=client)
    if not keys:
        raise UserError(f"nothing under {uri}")
    out = []
    if len(keys) == 1 and keys[0] == prefix and not prefix.endswith("/"):
        dest.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(bucket, prefix, str(dest))
        return [dest]
    base = prefix if prefix.endswith("/") or not prefix else prefix + "/"
    for k in keys:
        rel = k[len(base):] if k.startswith(base) else Path(k).name
        if not rel or rel.endswith("/"):
            continue
        target = (dest / rel).resolve()
        if dest.resolve() not in target.parents:
            raise UserError(f"refusing to write outside {dest}: key {k!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(bucket, k, str(target))
        out.append(target)
    return out


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_outcomes(path: str | os.PathLike) -> list[dict]:
    """Parse the bootstrap's ``scenario<TAB>exit_code<TAB>seconds`` lines."""
    rows = []
    p = Path(path)
    if not p.exists():
        return rows
    for line in p.read_text().splitlines():
        if not line.strip():
            continue
        name, rc, secs = (line.split("\t") + ["", ""])[:3]
        rows.append({"scenario": name, "exit_code": int(rc) if rc.lstrip("-").isdigit() else None,
                     "seconds": int(secs) if secs.isdigit() else None})
    return rows


def _pairs(values: Iterable[str], what: str) -> list[tuple[str, str]]:
    out = []
    for v in values or []:
        name, sep, val = v.partition("=")
        if not sep or not name:
            raise UserError(f"{what} must be NAME=VALUE, got {v!r}")
        out.append((name, val))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="cloud.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoint-url", default=None, help="S3 endpoint (tests); default: boto3's")
    ap.add_argument("--region", default=None)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("publish", help="upload parts of a run, then (optionally) status.json last")
    p.add_argument("uri")
    p.add_argument("--dir", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--file", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--status-field", action="append", default=[], metavar="KEY=VALUE",
                   help="write status.json with these fields (strings) after the uploads")
    p.add_argument("--int-field", action="append", default=[], metavar="KEY=INT")
    p.add_argument("--outcomes", default=None, help="TSV of scenario, exit code, seconds")
    d = sub.add_parser("download", help="download a prefix (or one object)")
    d.add_argument("uri")
    d.add_argument("dest")
    ls = sub.add_parser("ls", help="list keys under a prefix")
    ls.add_argument("uri")
    st = sub.add_parser("status", help="print status.json of a run prefix (exit 3 if absent)")
    st.add_argument("uri")
    a = ap.parse_args(argv)
    try:
        client = make_client(a.region, a.endpoint_url)
        if a.cmd == "publish":
            parts = dict(_pairs(a.dir, "--dir") + _pairs(a.file, "--file"))
            status = None
            if a.status_field or a.int_field or a.outcomes:
                status = dict(_pairs(a.status_field, "--status-field"))
                for k, v in _pairs(a.int_field, "--int-field"):
                    status[k] = int(v) if v.lstrip("-").isdigit() else None
                if a.outcomes:
                    status["scenarios"] = read_outcomes(a.outcomes)
            t0 = time.monotonic()
            rep = publish(a.uri, parts, status, client=client)
            print(f"cloud: uploaded {len(rep.uploaded)} objects to {a.uri} in "
                  f"{time.monotonic() - t0:.1f} s{' + status.json' if status is not None else ''}; "
                  f"{len(rep.errors)} errors", file=sys.stderr)
            for e in rep.errors:
                print(f"cloud: upload error: {e}", file=sys.stderr)
            return 1 if rep.errors else 0
        if a.cmd == "download":
            files = download(a.uri, a.dest, client=client)
            print(f"cloud: downloaded {len(files)} files to {a.dest}", file=sys.stderr)
            return 0
        if a.cmd == "ls":
            for k in list_keys(a.uri, client=client):
                print(k)
            return 0
        if a.cmd == "status":
            s = read_status(a.uri, client=client)
            if s is None:
                print(f"no {STATUS_KEY} under {a.uri} (run not finished)", file=sys.stderr)
                return 3
            print(json.dumps(s, indent=2, sort_keys=True))
            return 0
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
