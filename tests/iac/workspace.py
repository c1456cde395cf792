"""A private copy of iac/aws in a temporary directory, and terraform run against it offline.

Every test works on its own copy so that runs never share `.terraform`, lock files or state
(safe under pytest-xdist) and nothing is written into the repository. Terraform is made
non-interactive and offline: no prompts (TF_INPUT=0), no version check (CHECKPOINT_DISABLE), a CLI
config of our own instead of the user's, providers only from the plugin mirror, and no AWS
credentials or profile from the caller's environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
IAC_ROOT = REPO_ROOT / "iac" / "aws"
COMMAND_TIMEOUT_S = 300

# Services whose endpoints an override file points at the emulator (provider 5.x endpoint names).
EMULATED_SERVICES = (
    "acm",
    "apigatewayv2",
    "appautoscaling",
    "cloudwatch",
    "dynamodb",
    "ec2",
    "ecs",
    "elasticache",
    "iam",
    "lambda",
    "logs",
    "route53",
    "secretsmanager",
    "sns",
    "sts",
)

_NOT_COPIED = shutil.ignore_patterns(
    ".terraform", ".terraform.lock.hcl", "*.tfstate", "*.tfstate.*", "*.tfvars", "*_override.tf"
)


def _clean_environment(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TF_"))}
    cli_config = scratch / "terraformrc"
    cli_config.write_text(f'disable_checkpoint = true\nplugin_cache_dir = "{scratch / "plugin-cache"}"\n')
    (scratch / "plugin-cache").mkdir(exist_ok=True)
    env.update(
        {
            "TF_INPUT": "0",
            "TF_IN_AUTOMATION": "1",
            "CHECKPOINT_DISABLE": "1",
            "TF_CLI_CONFIG_FILE": str(cli_config),
            "TF_DATA_DIR": str(scratch / "tf-data"),
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    return env


class TerraformError(AssertionError):
    """A terraform command failed; the message carries its output."""


class Workspace:
    """A copy of iac/aws under ``base`` and a terraform bound to one directory of it."""

    def __init__(self, terraform: str, plugin_dir: Path, base: Path, root: str = ".") -> None:
        self.copy = base / "aws"
        shutil.copytree(IAC_ROOT, self.copy, ignore=_NOT_COPIED)
        self.directory = (self.copy / root).resolve()
        self._terraform = terraform
        self._plugin_dir = plugin_dir
        scratch = base / "scratch"
        scratch.mkdir()
        self._env = _clean_environment(scratch)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run one terraform command in the directory; raise TerraformError if it fails."""
        result = self.try_run(*args)
        if result.returncode != 0:
            raise TerraformError(
                f"terraform {' '.join(args)} exited {result.returncode}\n"
                f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
            )
        return result

    def try_run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run one terraform command and return its result, whatever the exit code."""
        return subprocess.run(
            [self._terraform, *args, "-no-color"],
            cwd=self.directory,
            env=self._env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )

    def init(self) -> None:
        self.run("init", "-backend=false", f"-plugin-dir={self._plugin_dir}", "-input=false")

    def outputs(self) -> dict[str, Any]:
        """`terraform output` as plain values."""
        raw: dict[str, dict[str, Any]] = json.loads(self.run("output", "-json").stdout)
        return {name: entry["value"] for name, entry in raw.items()}

    def planned(self, *plan_args: str) -> dict[str, Any]:
        """Plan with ``plan_args`` and return the plan as `terraform show -json` renders it."""
        self.run("plan", "-input=false", "-out=tfplan", *plan_args)
        plan: dict[str, Any] = json.loads(self.run("show", "-json", "tfplan").stdout)
        return plan

    def point_at_emulator(self, endpoint_url: str, region: str) -> None:
        """Add a provider override sending every AWS call to ``endpoint_url`` with fake credentials."""
        endpoints = "\n".join(f'    {service} = "{endpoint_url}"' for service in EMULATED_SERVICES)
        (self.directory / "emulator_override.tf").write_text(
            f"""provider "aws" {{
  region                      = "{region}"
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true

  endpoints {{
{endpoints}
  }}
}}
"""
        )


# make_workspace(base_dir, root): an initialised Workspace for `root` (relative to iac/aws).
WorkspaceFactory = Callable[[Path, str], Workspace]
