"""The rehearsal's phases in order: emulator, copy of the module, `bench aws up`, the boot, `status`, `fetch`,
`down`; then the emulator stops and the temporary directory goes, whatever happened.  Each `bench aws` command is
the real one, run as a user runs it (a child process), with the emulator as its AWS and the copy as its module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.core import children
from bench.core.errors import UserError
from bench.core.iceberg_java import runtime
from bench.rehearse import gaps
from bench.rehearse.emulator import Emulator
from bench.rehearse.module_copy import cli_config, copy_module, local_provider, plugin_dir

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TF_DIR = PROJECT_ROOT / "terraform"
BENCH = [sys.executable, "-m", "bench.cli"]


class RehearsalFailed(Exception):
    """A phase failed: one line saying which and why (exit 1); what was created has been destroyed."""


@dataclass
class Options:
    results_dir: Path
    scenarios: str = "bin-packing"
    scale: float = 0.00005
    engines: str = "spark,risingwave"
    port: int = 0
    boot: bool = True
    timeout_min: int = 15
    up_args: list[str] = field(default_factory=list)  # the variant's own `bench aws up` options
    replan: bool = False  # a plan right after the apply: what the emulator reads back differently
    spark_workers: int = 0
    spot: bool = False


@dataclass
class Rehearsal:
    opts: Options
    say: Callable[[str], None]
    tmp: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="bench-rehearse-")))
    emulator: Emulator | None = None
    copy: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    summary: dict = field(default_factory=lambda: {"phases": {}, "gaps": [], "ok": False})
    applied: bool = False

    # ----- running things ------------------------------------------------------------------------------
    def run(self, phase: str, cmd: list[str], *, env: dict | None = None, cwd: Path | None = None,
            timeout: float = 900, check: bool = True) -> int:
        """Run a phase's command (its output in logs/<phase>.log), watching the emulator: if it dies, the
        command is stopped and the rehearsal fails with one line."""
        log = self.tmp / "logs" / f"{phase}.log"
        log.parent.mkdir(exist_ok=True)
        t0, cpu0 = time.monotonic(), _children_cpu()
        with log.open("ab") as out:
            proc = children.popen(cmd, env=env or self.env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                rc = self._wait(phase, proc, t0, timeout)
            finally:
                _kill_group(proc)
                children.release(proc, group=True)
        secs = round(time.monotonic() - t0, 1)
        cpu = round(_children_cpu() - cpu0, 1)
        self.summary["phases"][phase] = {"exit_code": rc, "seconds": secs, "cpu_seconds": cpu}
        if rc != 0 and check:
            raise RehearsalFailed(f"{phase} failed (exit {rc}) after {secs} s: {first_error(log)}")
        return rc

    def _wait(self, phase: str, proc: subprocess.Popen, t0: float, timeout: float) -> int:
        while True:
            try:
                return proc.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
            if self.emulator is not None and not self.emulator.alive():
                self.applied = False  # its state died with it: nothing left to destroy
                raise RehearsalFailed(f"the emulator died during {phase} ({self.emulator.log_tail()}); "
                                      "everything it held is gone with it")
            if time.monotonic() - t0 > timeout:
                raise RehearsalFailed(f"{phase} did not finish within {timeout:.0f} s")

    def bench(self, phase: str, *args: str, check: bool = True) -> int:
        return self.run(phase, [*BENCH, "aws", *args, "--terraform-dir", str(self.copy)], check=check)

    def terraform(self, *args: str) -> str:
        from bench.aws_cli import terraform_bin

        proc = subprocess.run([terraform_bin(), f"-chdir={self.copy}", *args], env=self.env, text=True,
                              capture_output=True, timeout=120)
        if proc.returncode != 0:
            raise RehearsalFailed(f"terraform {args[0]} failed: {first_line(proc.stderr)}")
        return proc.stdout

    def say_phase(self, phase: str, text: str) -> None:
        self.say(f"rehearse [{phase}] {text}")

    # ----- the phases ----------------------------------------------------------------------------------
    def prepare(self) -> None:
        from bench.aws_cli import terraform_bin

        tf = terraform_bin()
        emulator = Emulator(self.tmp, self.opts.port)  # moto installed, the port free
        plugins = plugin_dir()
        version = local_provider(plugins)
        self.emulator = emulator
        emulator.start()
        self.copy = copy_module(TF_DIR, self.tmp, self.emulator.endpoint, version, placement_group=False)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TF_"))}
        self.env = {**base, **cli_config(self.tmp, plugins), **self.emulator.aws_env(),
                    "BENCH_AWS_STATE_DIR": str(self.tmp / "state")}
        self.summary["versions"] = {"terraform": tf_version(tf), "hashicorp/aws": version,
                                    "moto": self.emulator.version}
        self.say_phase("emulator", f"moto {self.emulator.version} (pid {self.emulator.pid}) on "
                       f"{self.emulator.endpoint}; module copied to "
                       f"{self.copy} with the provider override (hashicorp/aws {version} from {plugins})")
        for gap in gaps.met(spark_workers=self.opts.spark_workers, spot=self.opts.spot):
            self.summary["gaps"].append(gap)
            self.say_phase("gap", gap)

    def up(self) -> None:
        o = self.opts
        args = ["up", "--auto-approve", "--run-id", self.run_id, "--engines", o.engines,
                "--max-lifetime", str(o.timeout_min), "--plan-from", str(self.tmp / "no-plan"),
                "--var", "detailed_monitoring=false", "--var", "upload_reserve_seconds=120", *o.up_args]
        if "--source-table" not in o.up_args:
            args += ["--scenarios", o.scenarios, "--scale", repr(o.scale)]
        self.say_phase("up", "bench aws up (terraform init + apply against the emulator) ...")
        self.applied = True  # from here on, whatever exists is destroyed at the end
        self.bench("up", *args)
        self.outputs = json.loads(self.terraform("output", "-json"))
        self.outputs = {k: v.get("value") for k, v in self.outputs.items()}
        state = _managed(self.terraform("state", "list").split())
        self.summary["applied_resources"] = state
        self.say_phase("up", f"applied in {self.summary['phases']['up']['seconds']} s: {len(state)} resources; "
                       f"instance {self.outputs.get('instance_id')} (AMI {self.outputs.get('ami_id')}), bucket "
                       f"{self.outputs.get('results_bucket')}")

    def replan(self) -> None:
        """`terraform plan` right after the apply: each resource it would change is a read-back difference."""
        var_files = sorted((self.tmp / "state").glob("run-*.tfvars.json"))[-1:]
        plan = self.tmp / "replan.tfplan"
        self.run("replan", [_tf(), f"-chdir={self.copy}", "plan", "-input=false", "-no-color", f"-out={plan}",
                            *(f"-var-file={f}" for f in var_files)])
        shown = json.loads(subprocess.run([_tf(), f"-chdir={self.copy}", "show", "-json", str(plan)], env=self.env,
                                          capture_output=True, text=True, timeout=120).stdout or "{}")
        changes = {c["address"]: "/".join(c["change"]["actions"]) for c in shown.get("resource_changes", [])
                   if c["change"]["actions"] not in (["no-op"], ["read"])}
        self.summary["replan_changes"] = changes
        gap = ("a plan right after the apply changes nothing" if not changes else
               "a plan right after the apply would " + ", ".join(f"{a} {r}" for r, a in sorted(changes.items()))
               + " (the emulator reads them back differently)")
        if changes:
            self.summary["gaps"].append(gap)
        self.say_phase("replan", gap)

    def boot(self) -> None:
        import boto3

        from bench.rehearse import sandbox

        iid = self.outputs["instance_id"]
        kw = {"endpoint_url": self.emulator.endpoint, "region_name": self.outputs.get("region") or "us-east-1",
              "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        ec2, iam, sts = (boto3.client(s, **kw) for s in ("ec2", "iam", "sts"))
        script = sandbox.user_data(ec2, iid)
        creds = sandbox.role_credentials(iam, sts, ec2, iid)
        root = self.tmp / "instance"
        path, env = sandbox.prepare(root, script, iid, {**self.emulator.aws_env(), **creds},
                                    runtime.cache_root() / "maven")
        self.say_phase("boot", f"instance {iid}: its user data ({len(script)} bytes) runs in {root} with the role "
                       f"{creds['BENCH_REHEARSE_ROLE']}'s credentials (log: bootstrap.log) ...")
        rc = self.run("boot", ["bash", str(path)], env=env, cwd=root, timeout=self.opts.timeout_min * 60 + 60,
                      check=False)
        state = ec2.describe_instances(InstanceIds=[iid])["Reservations"][0]["Instances"][0]["State"]["Name"]
        self.summary["instance_state_after_boot"] = state
        self.say_phase("boot", f"the user data exited {rc} after {self.summary['phases']['boot']['seconds']} s; "
                       f"instance {iid} is {state}")
        if state not in ("terminated", "stopped"):
            raise RehearsalFailed(f"boot: the instance is {state} after its user data ended (expected terminated "
                                  "or stopped: the power-off did not reach the emulator's EC2 API)")
        others = [*(self.outputs.get("node_instance_ids") or []), *(self.outputs.get("worker_instance_ids") or [])]
        if others:  # one node is booted; the others end as an interrupted node would, without their results
            ec2.terminate_instances(InstanceIds=others)
            self.say_phase("boot", f"not booted, terminated through the emulator's EC2 API: {' '.join(others)} "
                           "(`status` reports a benchmark node so ended as lost)")

    def fetch(self) -> None:
        self.bench("status", "status")
        self.say_phase("status", "bench aws status: finished (status.json present)")
        dest = self.opts.results_dir
        self.bench("fetch", "fetch", "--dest", str(dest))
        st = json.loads((dest / "status.json").read_text()) if (dest / "status.json").is_file() else {}
        if st.get("status") != "ok":
            raise RehearsalFailed(f"the instance's run ended {st.get('status', 'without status.json')}: "
                                  f"{st.get('message') or 'no message'} (its logs: {dest}/logs)")
        self.summary["verified"] = check_fetched(dest, self.opts.engines.split(","))
        self.say_phase("fetch", f"bench aws fetch -> {dest}: report.html, status.json, results of "
                       + ", ".join(f"{e} ({v})" for e, v in self.summary["verified"].items()))

    def down(self) -> None:
        self.say_phase("down", "bench aws down (terraform destroy, the results bucket kept) ...")
        self.bench("down", "down", "--auto-approve")
        self.applied = False
        left = self.terraform("state", "list").split()
        self.summary["state_after_down"] = left
        if left:
            raise RehearsalFailed(f"down: the state still lists {len(left)} resources: {' '.join(left[:5])}")
        self.say_phase("down", f"destroyed in {self.summary['phases']['down']['seconds']} s; the state lists "
                       "nothing (the results bucket is kept, outside Terraform)")

    def destroy_after_failure(self) -> str:
        """Destroy whatever the failed apply created; a few words for the failure's line."""
        if not self.applied or self.copy is None or not self.emulator or not self.emulator.alive():
            return ""
        from bench.aws_cli import terraform_bin

        n = len(_managed(_state_list(terraform_bin(), self.copy, self.env)))
        if self.outputs:  # the apply finished: as a user would, `bench aws down` (the results bucket kept)
            rc = self.bench("down-after-failure", "down", "--auto-approve", check=False)
        else:
            var_files = sorted((self.tmp / "state").glob("run-*.tfvars.json"))
            cmd = [terraform_bin(), f"-chdir={self.copy}", "destroy", "-input=false", "-auto-approve",
                   *(f"-var-file={f}" for f in var_files[-1:])]
            rc = self.run("destroy-after-failure", cmd, check=False)
        left = len(_managed(_state_list(terraform_bin(), self.copy, self.env)))
        self.applied = False
        kept = " (the results bucket kept, as `bench aws down` keeps it)" if self.outputs else ""
        return (f"; destroyed the {n} resources it had created{kept}" if rc == 0 and not left
                else f"; the destroy of the {n} resources it had created failed ({left} left)")

    def finish(self) -> None:
        """Stop the emulator, keep the logs beside the results, remove the temporary directory."""
        if self.emulator is not None:
            self.emulator.stop()
        dest = self.opts.results_dir / "rehearsal"
        dest.mkdir(parents=True, exist_ok=True)
        for log in (self.tmp / "logs").glob("*.log"):
            shutil.copy(log, dest / log.name)
        for name in ("moto.log", "instance/var/log/bench/bootstrap.log"):
            if (self.tmp / name).exists():
                shutil.copy(self.tmp / name, dest / Path(name).name)
        (dest / "rehearsal.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
        shutil.rmtree(self.tmp, ignore_errors=True)

    run_id: str = field(default_factory=lambda: time.strftime("rehearse-%Y%m%dT%H%M%SZ", time.gmtime()))
    outputs: dict = field(default_factory=dict)


def rehearse(opts: Options, say: Callable[[str], None]) -> dict:
    """The whole rehearsal; its summary (also in <results-dir>/rehearsal/rehearsal.json)."""
    opts.results_dir.mkdir(parents=True, exist_ok=True)
    r = Rehearsal(opts, say)
    t0 = time.monotonic()
    try:
        r.prepare()
        r.up()
        if opts.replan:
            r.replan()
        if opts.boot:
            r.boot()
            r.fetch()
        r.down()
        r.summary["ok"] = True
    except RehearsalFailed as e:
        r.summary["failure"] = f"{e}{r.destroy_after_failure()}"
        raise RehearsalFailed(r.summary["failure"]) from None
    except (UserError, KeyboardInterrupt) as e:
        r.summary["failure"] = str(e) or type(e).__name__
        r.destroy_after_failure()
        raise
    finally:
        r.summary["seconds"] = round(time.monotonic() - t0, 1)
        r.finish()
    return r.summary


def check_fetched(dest: Path, engines: list[str]) -> dict[str, str]:
    """Every engine has an ok, verified result among the fetched ones, and report.html is there."""
    if not (dest / "report.html").is_file():
        raise RehearsalFailed(f"fetch: no report.html in {dest}")
    seen: dict[str, str] = {}
    for f in sorted((dest / "results").rglob("*.json")):
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and doc.get("engine") in engines and "status" in doc:
            ok = doc.get("status") == "ok" and doc.get("verified") is True
            if ok or doc["engine"] not in seen:
                seen[doc["engine"]] = "verified" if ok else f"{doc.get('status')}, not verified"
    bad = {e: seen.get(e, "no result") for e in engines if seen.get(e) != "verified"}
    if bad:
        raise RehearsalFailed("fetch: " + ", ".join(f"{e}: {v}" for e, v in bad.items()))
    return seen


def first_error(log: Path) -> str:
    """The first `Error: ...` line of a log (Terraform's), else its last line."""
    try:
        text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text(errors="replace"))
        lines = [ln.strip(" │\t") for ln in text.splitlines()]
    except OSError:
        return "no log"
    for i, ln in enumerate(lines):
        if ln.startswith("Error:"):
            detail = next((x for x in lines[i + 1:i + 6] if x and not x.startswith(("with ", "on "))), "")
            return f"{ln} {detail}".strip()[:300] + f" (log: {log.name})"
    rest = [ln for ln in lines if ln]
    return (rest[-1][:300] if rest else "no output") + f" (log: {log.name})"


def first_line(text: str) -> str:
    return next((ln.strip(" │") for ln in text.splitlines() if ln.strip(" │")), "no output")[:300]


def tf_version(tf: str) -> str:
    out = subprocess.run([tf, "version", "-json"], capture_output=True, text=True, timeout=30).stdout
    try:
        return json.loads(out)["terraform_version"]
    except (ValueError, KeyError):
        return "unknown"


def _state_list(tf: str, copy: Path, env: dict) -> list[str]:
    proc = subprocess.run([tf, f"-chdir={copy}", "state", "list"], env=env, capture_output=True, text=True,
                          timeout=120)
    return proc.stdout.split() if proc.returncode == 0 else []


def _tf() -> str:
    from bench.aws_cli import terraform_bin

    return terraform_bin()


def _children_cpu() -> float:
    """CPU seconds of the waited-for children so far (a phase's: the difference)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _managed(addresses: list[str]) -> list[str]:
    """Resources, not data sources (module.x.data.y included)."""
    return [a for a in addresses if not a.startswith("data.") and ".data." not in a]


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
