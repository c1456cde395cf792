"""Run the modules' own `terraform test` suites (mocked AWS provider, no emulator needed).

They assert what a plan of the full root cannot show, because it is only known after apply: the
environment, secrets and stop timeout each container and the function receive, the API URL in
each exposure mode, and that every cross-variable precondition fires on its own.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.iac.workspace import WorkspaceFactory


def _lambda_zip(directory: Path) -> Path:
    package = directory / "ladder-lambda.zip"
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("read_functions/__init__.py", "")
    return package


@pytest.mark.parametrize("module", ["services", "read_functions", "store"])
def test_module_suite_passes(make_workspace: WorkspaceFactory, tmp_path: Path, module: str) -> None:
    workspace = make_workspace(tmp_path, f"modules/{module}")
    suites = sorted(p.name for p in (workspace.directory / "tests").glob("*.tftest.hcl"))
    assert suites, f"modules/{module} has no terraform test suite"
    # The read function hashes its zip at plan time, so it needs a real (if empty) one.
    extra = [f"-var=package_path={_lambda_zip(tmp_path)}"] if module == "read_functions" else []

    result = workspace.run("test", *extra)

    assert "0 failed" in result.stdout and " passed" in result.stdout, result.stdout
