"""The guard that keeps tests off compiled modules that no longer match their source."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import stale_compiled_modules

SUFFIX = ".cpython-311-x86_64-linux-gnu.so"


def package(root: Path, *modules: str) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    for module in modules:
        (root / "pkg" / f"{module}.py").write_text("")
        (root / "pkg" / f"{module}{SUFFIX}").write_bytes(b"")


def test_a_module_compiled_after_its_source_and_listed_is_current(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text('COMPILED = [\n    "pkg/fast.py",\n]\n')
    package(tmp_path, "fast")
    assert stale_compiled_modules(tmp_path) == []


def test_a_source_changed_since_it_was_compiled_is_stale(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text('COMPILED = ["pkg/fast.py"]\n')
    package(tmp_path, "fast")
    compiled = (tmp_path / "pkg" / f"fast{SUFFIX}").stat().st_mtime
    os.utime(tmp_path / "pkg" / "fast.py", (compiled + 10, compiled + 10))
    assert stale_compiled_modules(tmp_path) == ["pkg/fast.py"]


def test_a_module_no_longer_listed_in_setup_py_is_stale(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text('COMPILED = ["pkg/fast.py"]\n')
    package(tmp_path, "fast", "dropped")
    assert stale_compiled_modules(tmp_path) == ["pkg/dropped.py"]
