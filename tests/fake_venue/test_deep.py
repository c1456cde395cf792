"""Deep books: activity thousands of levels deep."""

from __future__ import annotations

import random

import aiohttp
import pytest

from fake_venue import FakeVenue
from fake_venue.book import Book
from fake_venue.config import VenueConfig
from fake_venue.decimal_text import LevelStyle
from fake_venue.market import ContiguousIds, Market, Motion
from fake_venue.symbols import spot_catalogue

from .helpers import control

STYLE = LevelStyle(1, 2, 1, 3, trim=False, zero_qty="0")


def deep_market(levels: int, deep_share: float) -> Market:
    spec = spot_catalogue(1)[0]
    config = VenueConfig(levels=levels, deep_share=deep_share)
    return Market(spec, spec.status, STYLE, ContiguousIds(), config, random.Random(3), Motion(config))


def changed_at_depth(before: Book, after: Book, shallowest: int, deepest: int) -> tuple[int, int]:
    """How many levels ranked ``shallowest``..``deepest`` (from the touch) in ``before`` were resized,
    and how many deleted, by ``after``."""
    resized = deleted = 0
    for side in (True, False):
        for tick, qty in before.side(side).levels(deepest + 1)[shallowest:]:
            now = after.side(side).get(tick)
            resized += now not in (0, qty)
            deleted += now == 0
    return resized, deleted


@pytest.mark.parametrize(("deep_share", "expected"), [(0.0, False), (0.5, True)])
def test_deep_activity_resizes_and_deletes_levels_thousands_deep(deep_share: float, expected: bool) -> None:
    market = deep_market(6000, deep_share)
    before = market.book.copy()
    for _ in range(300):
        market.step()
    resized, deleted = changed_at_depth(before, market.book, 1000, 5000)
    if expected:
        assert resized >= 50 and deleted >= 20
    else:
        assert resized == deleted == 0  # without it, only the touch and the far edge move
    assert 5600 <= market.book.bids.count <= 6000 and 5600 <= market.book.asks.count <= 6000


async def test_deep_activity_per_symbol_venue_wide_and_reset(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    markets = venue.spot.markets
    await control(http, venue, action="deep_activity", venue="spot", share=0.25)
    await control(http, venue, action="deep_activity", venue="spot", symbol="ETHBTC", share=1)
    ethbtc, btc = markets.get("ETHBTC"), markets.get("BTCUSDT")
    assert ethbtc is not None and btc is not None
    assert (ethbtc.effective_deep_share, btc.effective_deep_share) == (1.0, 0.25)
    await control(http, venue, action="reset")
    assert ethbtc.effective_deep_share == btc.effective_deep_share == 0.0
    async with http.post(
        venue.url + "/_fake/control", json={"action": "deep_activity", "venue": "spot", "share": 1.5}
    ) as response:
        assert response.status == 400
