"""The activity skew: a catalogue's first symbols are busy and its tail quiet, as on a real venue."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from fake_venue import FakeVenue

from .conftest import small_config
from .helpers import control, get_json


@pytest.fixture
async def skewed() -> AsyncIterator[FakeVenue]:
    fake = FakeVenue(small_config(rate=20.0, rate_skew=1.0))
    await fake.start()
    yield fake
    await fake.stop()


async def spot_stats(http: aiohttp.ClientSession, fake: FakeVenue) -> dict[str, float]:
    _, _, stats = await get_json(http, fake.url + "/_fake/stats")
    spot: dict[str, float] = stats["venues"]["spot"]
    return spot


async def test_the_kth_symbol_runs_at_rate_over_k_to_the_skew(
    skewed: FakeVenue, http: aiohttp.ClientSession
) -> None:
    # BTCUSDT is listed first, LTCUSDT tenth: 20 and 2 updates a second.
    async with http.ws_connect(f"{skewed.url}/stream?streams=btcusdt@depth@100ms/ltcusdt@depth@100ms") as ws:
        counts = {"BTCUSDT": 0, "LTCUSDT": 0}
        await asyncio.sleep(0.5)  # both books built and moving
        assert (await spot_stats(http, skewed))["active_rate"] == pytest.approx(22.0)
        deadline = asyncio.get_running_loop().time() + 3.0
        while (left := deadline - asyncio.get_running_loop().time()) > 0:
            try:
                message = await ws.receive_json(timeout=left)
            except TimeoutError:
                break
            if "data" in message:
                counts[message["data"]["s"]] += 1
    # The 100 ms stream merges BTCUSDT's 20 a second into at most 10 frames; LTCUSDT sends ~2.
    assert counts["BTCUSDT"] >= 25 and 2 <= counts["LTCUSDT"] <= 10, counts


async def test_a_venue_wide_rate_scales_the_whole_profile(
    skewed: FakeVenue, http: aiohttp.ClientSession
) -> None:
    for symbol in ("BTCUSDT", "ETHUSDT"):  # listed first and second
        await get_json(http, f"{skewed.url}/api/v3/depth?symbol={symbol}&limit=5")
    assert (await spot_stats(http, skewed))["active_rate"] == pytest.approx(30.0)
    await control(http, skewed, action="rate", venue="spot", rate=2.0)
    assert (await spot_stats(http, skewed))["active_rate"] == pytest.approx(3.0)
    await control(http, skewed, action="rate", venue="spot", symbol="ETHUSDT", rate=5.0)
    assert (await spot_stats(http, skewed))["active_rate"] == pytest.approx(7.0)
