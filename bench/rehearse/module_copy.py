"""The module the rehearsal applies: a copy of terraform/ in a temporary directory, plus the rehearsal's own
override file (the provider pointed at the emulator, the provider version of the local plugin directory, what
the emulator cannot create).  terraform/ itself is only read.  Terraform installs the provider from the local
plugin directory (a CLI configuration with a filesystem mirror): no registry is contacted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bench.core.errors import UserError
from bench.core.settings import env_settings

DEFAULT_PLUGIN_DIR = "/opt/tf-plugins"
PROVIDER = "registry.terraform.io/hashicorp/aws"
OVERRIDE = "zz_rehearse_override.tf"


def local_provider(plugin_dir: Path) -> str:
    """The newest hashicorp/aws version in a plugin directory (filesystem-mirror layout), else a UserError."""
    if not plugin_dir.is_dir():
        raise UserError(f"no plugin directory {plugin_dir}: the rehearsal needs the hashicorp/aws provider binary "
                        f"there ({PROVIDER}/<version>/linux_amd64/); set BENCH_TF_PLUGIN_DIR")
    found = sorted((tuple(int(x) for x in p.parts[-3].split(".") if x.isdigit()), p.parts[-3])
                   for p in plugin_dir.glob(f"{PROVIDER}/*/linux_amd64/terraform-provider-aws*"))
    if not found:
        raise UserError(f"no hashicorp/aws provider binary in {plugin_dir} (expected {PROVIDER}/<version>/"
                        "linux_amd64/terraform-provider-aws_*): set BENCH_TF_PLUGIN_DIR")
    return found[-1][1]


def override_text(endpoint: str, version: str, placement_group: bool) -> str:
    """The rehearsal's override file (Terraform merges it over the module's own blocks)."""
    ep = json.dumps(endpoint)
    text = f"""# Written by `bench aws rehearse` into its temporary copy of the module; never part of terraform/.
terraform {{
  required_providers {{
    aws = {{
      source  = "hashicorp/aws"
      version = ">= {version}" # the local plugin directory's version (terraform/ pins ~> 6.0)
    }}
  }}
}}

provider "aws" {{
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  s3_use_path_style           = true
  max_retries                 = 2

  endpoints {{
    ec2 = {ep}
    iam = {ep}
    s3  = {ep}
    sts = {ep}
  }}
}}
"""
    # the emulator evaluates a bucket policy without the request's context, so a Deny with a condition denies
    # every request: the module's DenyInsecureTransport (no plain HTTP) would refuse every upload.  Not applied.
    text += """
resource "aws_s3_bucket_policy" "results" {
  count = 0
}
"""
    if not placement_group:  # the emulator has no placement groups: the cluster's nodes get none
        text += """
resource "aws_placement_group" "cluster" {
  count = 0
}
"""
    return text


def copy_module(src: Path, dest: Path, endpoint: str, version: str, placement_group: bool) -> Path:
    """Copy the module (without state or .terraform) to dest/terraform and add the override; returns the copy."""
    if not (src / "main.tf").is_file():
        raise UserError(f"{src} is not the Terraform module (no main.tf)")
    copy = dest / "terraform"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns(".terraform*", "*.tfstate*", "tests", "ci", "render"))
    (copy / OVERRIDE).write_text(override_text(endpoint, version, placement_group))
    return copy


def cli_config(dest: Path, plugin_dir: Path) -> dict[str, str]:
    """A Terraform CLI configuration that installs hashicorp/aws from the plugin directory only; its env."""
    rc = dest / "terraformrc"
    rc.write_text(f"""provider_installation {{
  filesystem_mirror {{
    path    = {json.dumps(str(plugin_dir))}
    include = ["{PROVIDER}"]
  }}
}}
""")
    return {"TF_CLI_CONFIG_FILE": str(rc), "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}


def plugin_dir() -> Path:
    return Path(env_settings().tf_plugin_dir or DEFAULT_PLUGIN_DIR)
