"""Fixtures for the terraform tests: the tools (or a skip saying what is missing) and workspaces."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.iac.tooling import PLUGIN_DIR_ENV, find_plugin_mirror, find_terraform
from tests.iac.workspace import Workspace, WorkspaceFactory


@pytest.fixture(scope="session")
def terraform_bin() -> str:
    found = find_terraform()
    if found is None:
        pytest.skip("terraform is not installed (no `terraform` on PATH); the iac tests need it")
    return found


@pytest.fixture(scope="session")
def plugin_dir(terraform_bin: str) -> Path:
    found = find_plugin_mirror()
    if found is None:
        pytest.skip(
            f"no offline AWS provider mirror found: set {PLUGIN_DIR_ENV} to a -plugin-dir holding "
            "registry.terraform.io/hashicorp/aws, or install one under /opt/tf-plugins"
        )
    return found


@pytest.fixture(scope="session")
def make_workspace(terraform_bin: str, plugin_dir: Path) -> WorkspaceFactory:
    """Build an initialised workspace: ``make_workspace(tmp_dir, root)``, root relative to iac/aws."""

    def make(base: Path, root: str) -> Workspace:
        workspace = Workspace(terraform_bin, plugin_dir, base, root)
        workspace.init()
        return workspace

    return make
