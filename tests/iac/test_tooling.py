"""Locating the offline provider mirror: the env variable first, then the default, then a search."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.iac import tooling


def _mirror(base: Path, packed: bool) -> Path:
    """A -plugin-dir under ``base`` in the unpacked or the packed layout."""
    provider = base / "registry.terraform.io" / "hashicorp" / "aws"
    if packed:
        provider.mkdir(parents=True)
        (provider / "terraform-provider-aws_5.100.0_linux_amd64.zip").write_bytes(b"")
    else:
        binary_dir = provider / "5.100.0" / "linux_amd64"
        binary_dir.mkdir(parents=True)
        (binary_dir / "terraform-provider-aws_v5.100.0_x5").write_bytes(b"")
    return base


@pytest.fixture
def nowhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No env variable, no default mirror, and one empty search root."""
    monkeypatch.delenv(tooling.PLUGIN_DIR_ENV, raising=False)
    monkeypatch.setattr(tooling, "DEFAULT_PLUGIN_DIR", tmp_path / "absent")
    root = tmp_path / "search"
    root.mkdir()
    monkeypatch.setattr(tooling, "SEARCH_ROOTS", (root,))
    return root


def test_the_env_variable_wins_and_must_hold_the_provider(
    nowhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _mirror(nowhere / "found-by-search", packed=False)
    configured = _mirror(tmp_path / "configured", packed=True)
    monkeypatch.setenv(tooling.PLUGIN_DIR_ENV, str(configured))
    assert tooling.find_plugin_mirror() == configured

    monkeypatch.setenv(tooling.PLUGIN_DIR_ENV, str(tmp_path / "empty"))
    assert tooling.find_plugin_mirror() is None


@pytest.mark.parametrize("packed", [False, True], ids=["unpacked", "packed"])
def test_a_search_finds_the_mirror_root_of_a_provider_binary(nowhere: Path, packed: bool) -> None:
    assert tooling.find_plugin_mirror() is None
    expected = _mirror(nowhere / "opt" / "plugins", packed=packed)
    assert tooling.find_plugin_mirror() == expected
