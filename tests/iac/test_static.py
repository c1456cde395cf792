"""Checks that need terraform but no AWS: formatting of every file, validation of the root module."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.iac.workspace import REPO_ROOT, WorkspaceFactory


def test_terraform_files_are_formatted(terraform_bin: str) -> None:
    result = subprocess.run(
        [terraform_bin, "fmt", "-check", "-recursive", "-diff", "-no-color", "iac/"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "CHECKPOINT_DISABLE": "1", "TF_INPUT": "0"},
    )
    assert result.returncode == 0, f"run `terraform fmt -recursive iac/`:\n{result.stdout}{result.stderr}"


def test_root_module_validates(make_workspace: WorkspaceFactory, tmp_path: Path) -> None:
    # The moto test root is validated by applying it (test_moto_stack).
    workspace = make_workspace(tmp_path, ".")
    report = json.loads(workspace.run("validate", "-json").stdout)
    # Warnings count too: a deprecated argument today is a broken apply on the next provider major.
    assert (report["valid"], report["error_count"], report["warning_count"]) == (True, 0, 0), report
