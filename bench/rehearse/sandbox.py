"""The instance booted here: its user data, taken from the emulator as EC2 hands it to an instance, run in a
sandbox directory with the emulator as its AWS.

What differs from an instance is only where this machine already has what the instance would install or do, each
stand-in a small script first on the sandbox's PATH:
- /opt/bench and /var/log/bench live under the sandbox directory; the data directory is the sandbox's
  data/ and there is no data disk to format (BENCH_DATA_DIR, BENCH_DATA_DEVICE=none);
- `apt-get`: `update` does nothing, `install` succeeds only if every package is installed here (xfsprogs,
  never used without a data disk, and python3-boto3, whose place the harness's Python takes as
  BENCH_PYTHON, excepted);
- `make -C <harness> setup`: the harness's virtualenv is made from the packages this checkout's environment
  already has (no download), with the unpacked archive first on its path, this machine's jar cache (the Maven
  Central jars of the lock, AWS SDK bundles included) linked or copied in, then the real `bench setup`, which
  finds every jar there;
- `shutdown -P +N` (the deadline) is recorded, not armed: the rehearsal's own timeout is the deadline;
- `systemctl poweroff` asks the emulator's EC2 API to stop or terminate the instance, as its
  instance-initiated shutdown behaviour says;
- credentials: the instance role's, from the emulator's STS (AssumeRole), as the instance metadata would give.
"""

from __future__ import annotations

import base64
import gzip
import re
import shlex
import sys
import sysconfig
from pathlib import Path

from bench.core.errors import UserError
from bench.core.iceberg_java.runtime import CACHE_NAME

# Debian packages of the bootstrap a rehearsal may lack, and why that is fine here
SUBSTITUTED_PACKAGES = {"xfsprogs": "no data disk to format in the sandbox",
                        "python3-boto3": "the harness's Python (with boto3) runs the uploader"}


def user_data(ec2, instance_id: str) -> str:
    """The instance's user data as EC2 hands it over (base64; gunzipped when gzip, as cloud-init does)."""
    attr = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    raw = base64.b64decode((attr.get("UserData") or {}).get("Value") or "")
    if not raw:
        raise UserError(f"instance {instance_id} has no user data in the emulator")
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


def role_credentials(iam, sts, ec2, instance_id: str) -> dict[str, str]:
    """The instance role's temporary credentials (AssumeRole on the role of its instance profile)."""
    inst = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    profile_arn = (inst.get("IamInstanceProfile") or {}).get("Arn", "")
    if not profile_arn:
        raise UserError(f"instance {instance_id} has no instance profile in the emulator")
    role = iam.get_instance_profile(InstanceProfileName=profile_arn.rsplit("/", 1)[1])["InstanceProfile"]["Roles"][0]
    c = sts.assume_role(RoleArn=role["Arn"], RoleSessionName=instance_id)["Credentials"]
    return {"AWS_ACCESS_KEY_ID": c["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": c["SecretAccessKey"],
            "AWS_SESSION_TOKEN": c["SessionToken"], "BENCH_REHEARSE_ROLE": role["RoleName"]}


def sandboxed(script: str, root: Path) -> str:
    """The user data with the instance's paths moved into the sandbox and the data disk switched off."""
    script = script.replace("/opt/bench", f"{root}/opt/bench")
    settings = {"BENCH_DATA_DIR": str(root / "data"), "BENCH_DATA_DEVICE": "none", "BENCH_PYTHON": sys.executable}
    for key, value in settings.items():
        script, n = re.subn(rf"^export {key}='[^']*'$", f"export {key}={shlex.quote(value)}", script, flags=re.M)
        if n != 1:
            raise UserError(f"the user data has no `export {key}=...` line: it no longer matches the rehearsal")
    return script


SHIMS = {
    "apt-get": """#!/bin/bash
# the rehearsal's apt-get: nothing is downloaded; install succeeds when this machine has every package
[[ $1 == update ]] && { echo "apt-get update: skipped (rehearsal)"; exit 0; }
missing=()
for p in "$@"; do
  [[ $p == -* || $p == install ]] && continue
  dpkg -s "$p" > /dev/null 2>&1 && continue
  case " $REHEARSE_SUBSTITUTED " in *" $p "*) echo "apt-get: $p not installed here: substituted (rehearsal)";;
    *) missing+=("$p");; esac
done
((${#missing[@]} == 0)) || { echo "apt-get: not installed on this machine: ${missing[*]}" >&2; exit 100; }
echo "apt-get install: every package present (rehearsal)"
""",
    "make": """#!/bin/bash
# the rehearsal's make: `make -C DIR setup` builds the harness's virtualenv from this machine's packages
if [[ $1 == -C && $3 == setup && $# == 3 ]]; then
  dir=$2
  "$REHEARSE_BASE_PYTHON" -m venv --without-pip "$dir/.venv" || exit 1
  site=$("$dir/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || exit 1
  printf '%s\\n%s\\n' "$dir" "$REHEARSE_SITE_PACKAGES" > "$site/rehearse-harness.pth"
  printf '#!%s\\nimport sys\\nfrom bench.cli import entry\\nsys.exit(entry())\\n' "$dir/.venv/bin/python" \\
    > "$dir/.venv/bin/bench"
  chmod +x "$dir/.venv/bin/bench"
  # the jars this machine fetched, in the instance's own cache (its root's): none downloaded
  if [[ -d $REHEARSE_JAR_CACHE && ! -e $REHEARSE_CACHE_DIR/maven ]]; then
    mkdir -p "$REHEARSE_CACHE_DIR" || exit 1
    cp -al "$REHEARSE_JAR_CACHE" "$REHEARSE_CACHE_DIR/maven" 2> /dev/null \
      || cp -a "$REHEARSE_JAR_CACHE" "$REHEARSE_CACHE_DIR/maven" || exit 1
  fi
  echo "make setup: virtualenv from this machine's packages, the jar cache linked in (rehearsal), then bench setup"
  exec "$dir/.venv/bin/bench" setup
fi
exec /usr/bin/make "$@"
""",
    "shutdown": """#!/bin/bash
# the rehearsal's shutdown: the deadline is recorded; the rehearsal's own timeout enforces it
echo "shutdown $*" >> "$REHEARSE_ROOT/deadline-armed"
""",
    "systemctl": """#!/bin/bash
# the rehearsal's systemctl: poweroff stops or terminates the instance through the emulator's EC2 API
[[ $1 == poweroff ]] || { echo "systemctl $*: not in the rehearsal" >&2; exit 1; }
exec "$REHEARSE_PYTHON" -I -c '
import os, boto3
ec2 = boto3.client("ec2")
iid = os.environ["REHEARSE_INSTANCE_ID"]
how = ec2.describe_instance_attribute(InstanceId=iid, Attribute="instanceInitiatedShutdownBehavior")
how = how["InstanceInitiatedShutdownBehavior"]["Value"]
(ec2.terminate_instances if how == "terminate" else ec2.stop_instances)(InstanceIds=[iid])
open(os.path.join(os.environ["REHEARSE_ROOT"], "powered-off"), "w").write(how + "\\n")
print("powered off:", how)
'
""",
}


def prepare(root: Path, script: str, instance_id: str, aws_env: dict[str, str],
            jar_cache: Path) -> tuple[Path, dict[str, str]]:
    """Write the sandbox (user data, stand-ins); return the script and the environment to run it with."""
    shims = root / "shims"
    shims.mkdir(parents=True)
    for name, text in SHIMS.items():
        (shims / name).write_text(text)
        (shims / name).chmod(0o755)
    (root / "root").mkdir()
    path = root / "user-data.sh"
    path.write_text(sandboxed(script, root))
    env = {
        "PATH": f"{shims}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": str(root / "root"), "LANG": "C.UTF-8", "USER": "root",
        "BENCH_LOG_DIR": str(root / "var" / "log" / "bench"),
        "REHEARSE_ROOT": str(root), "REHEARSE_INSTANCE_ID": instance_id, "REHEARSE_PYTHON": sys.executable,
        "REHEARSE_BASE_PYTHON": getattr(sys, "_base_executable", sys.executable),
        "REHEARSE_SITE_PACKAGES": sysconfig.get_paths()["purelib"],
        "REHEARSE_SUBSTITUTED": " ".join(SUBSTITUTED_PACKAGES), "REHEARSE_JAR_CACHE": str(jar_cache),
        # where the instance's harness keeps its cache: its root's, as bench.core.iceberg_java.runtime.cache_root
        # finds it without $BENCH_CACHE_DIR
        "REHEARSE_CACHE_DIR": str(root / "root" / ".cache" / CACHE_NAME),
        **aws_env,
    }
    return path, env
