"""Settings from LADDER_* variables, the store they open, and where the pepper comes from."""

from __future__ import annotations

import uuid

import pydantic
import pytest

from control_plane.bootstrap import open_control_store, resolve_pepper
from control_plane.errors import ConfigurationError
from control_plane.settings import ControlSettings
from control_plane.stores.dynamodb import DynamoControlStore
from control_plane.stores.redis import RedisControlStore


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LADDER_CONTROL_STORE", "dynamodb")
    monkeypatch.setenv("LADDER_DYNAMODB_TABLE", "prod-control")
    monkeypatch.setenv("LADDER_NODE_TIMEOUT_MS", "5000")
    monkeypatch.setenv("LADDER_PEPPER", "p" * 32)
    settings = ControlSettings()
    assert (settings.control_store, settings.dynamodb_table, settings.node_timeout_ms) == (
        "dynamodb",
        "prod-control",
        5000,
    )
    assert settings.scheduler_interval_ms == 500
    with pytest.raises(pydantic.ValidationError):
        settings.node_timeout_ms = 1


@pytest.mark.parametrize(
    ("name", "value"),
    [("LADDER_ADMIN_KEY", "short"), ("LADDER_PEPPER", "short"), ("LADDER_CONTROL_STORE", "sqlite")],
)
def test_bad_settings_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(pydantic.ValidationError):
        ControlSettings()


async def test_redis_store_keeps_a_generated_pepper(valkey_url: str) -> None:
    settings = ControlSettings(redis_url=valkey_url, control_prefix=f"test-{uuid.uuid4().hex}:")
    async with open_control_store(settings) as store:
        assert isinstance(store, RedisControlStore)
        first = await resolve_pepper(settings, store)
    async with open_control_store(settings) as store:  # a restart
        assert await resolve_pepper(settings, store) == first
    assert len(first) == 32


async def test_a_configured_pepper_wins(redis_store: RedisControlStore) -> None:
    settings = ControlSettings(pepper="configured-pepper-0123456789")  # type: ignore[arg-type]
    assert await resolve_pepper(settings, redis_store) == b"configured-pepper-0123456789"


async def test_dynamodb_needs_a_configured_pepper(dynamodb_url: str) -> None:
    settings = ControlSettings(control_store="dynamodb", dynamodb_endpoint_url=dynamodb_url)
    async with open_control_store(settings) as store:
        assert isinstance(store, DynamoControlStore)
        with pytest.raises(ConfigurationError, match="LADDER_PEPPER"):
            await resolve_pepper(settings, store)


async def test_redis_store_needs_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LADDER_REDIS_URL", raising=False)
    with pytest.raises(ConfigurationError, match="LADDER_REDIS_URL"):
        async with open_control_store(ControlSettings()):
            pass
