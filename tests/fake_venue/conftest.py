"""A fake venue per test, on a free port, with small books and short timers to keep tests fast."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from fake_venue import FakeVenue, VenueConfig


def small_config(**overrides: object) -> VenueConfig:
    """Few symbols, 200-level books, 20 updates/s; a weight window no test run will straddle."""
    settings: dict[str, object] = {
        "spot_symbols": 12,
        "futures_symbols": 12,
        "alpaca_symbols": 12,
        "levels": 200,
        "rate": 20.0,
        "weight_window_s": 3600.0,
        "ban_base_s": 1.0,
        "alpaca_auth_timeout_s": 0.5,
    }
    settings.update(overrides)
    return VenueConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture
async def venue() -> AsyncIterator[FakeVenue]:
    fake = FakeVenue(small_config())
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session
