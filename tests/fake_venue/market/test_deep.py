"""Deep books: per-symbol depth, activity thousands of levels deep, and snapshots of them."""

from __future__ import annotations

import asyncio
import gc
import itertools
import random
import time
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import aiohttp
import pytest

from fake_venue import FakeVenue
from fake_venue.config import VenueConfig
from fake_venue.market.book import Book
from fake_venue.market.decimal_text import LevelStyle
from fake_venue.market.markets import ContiguousIds, Market, Motion
from fake_venue.market.symbols import spot_catalogue
from tests.fake_venue.conftest import small_config
from tests.fake_venue.helpers import control, get_json, next_event, next_json

STYLE = LevelStyle(1, 2, 1, 3, trim=False, zero_qty="0")


def deep_market(levels: int, deep_share: float) -> Market:
    spec = spot_catalogue(1)[0]
    config = VenueConfig(levels=levels, deep_share=deep_share)
    return Market(spec, spec.status, STYLE, ContiguousIds(), config, random.Random(3), Motion(config), levels)


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


@pytest.fixture
async def deep_venue() -> AsyncIterator[FakeVenue]:
    """The first two symbols of each Binance catalogue 6000 levels deep, the others 200."""
    fake = FakeVenue(small_config(deep_symbols=2, deep_levels=6000))
    await fake.start()
    yield fake
    await fake.stop()


async def truth(http: aiohttp.ClientSession, venue: FakeVenue, query: str) -> Any:
    status, _, body = await get_json(http, f"{venue.url}/_fake/book?{query}")
    assert status == 200, body
    return body


@pytest.mark.parametrize(("market", "symbol", "levels"), [
    ("spot", "BTCUSDT", 6000), ("spot", "ETHUSDT", 6000), ("spot", "BNBUSDT", 200),
    ("futures", "BTCUSDT", 6000), ("futures", "SOLUSDT", 200), ("alpaca", "BTC/USD", 200),
])  # fmt: skip
async def test_the_first_symbols_of_each_binance_catalogue_are_deep(
    deep_venue: FakeVenue, http: aiohttp.ClientSession, market: str, symbol: str, levels: int
) -> None:
    body = await truth(http, deep_venue, f"venue={market}&symbol={symbol}")
    assert len(body["bids"]) == len(body["asks"]) == levels


async def test_book_levels_sets_a_depth_before_first_use(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    await control(http, venue, action="book_levels", venue="spot", symbol="BNBUSDT", levels=3000)
    await control(http, venue, action="book_levels", venue="futures", symbol="LINKUSDT", levels=1200)
    await control(http, venue, action="book_levels", venue="spot", symbol="LTCUSDT", levels=2500)
    await control(http, venue, action="reset", venue="spot")  # drops what is not built yet
    for market, symbol, levels in (
        ("spot", "BNBUSDT", 200),
        ("futures", "LINKUSDT", 1200),
        ("spot", "LTCUSDT", 200),
    ):
        body = await truth(http, venue, f"venue={market}&symbol={symbol}")
        assert len(body["bids"]) == len(body["asks"]) == levels
    await control(http, venue, action="book_levels", venue="spot", symbol="SOLUSDT", levels=3000)
    body = await truth(http, venue, "venue=spot&symbol=SOLUSDT")
    assert len(body["bids"]) == len(body["asks"]) == 3000
    for refused in (
        {"symbol": "SOLUSDT", "levels": 10},
        {"symbol": "NOPE", "levels": 10},
        {"symbol": "XRPUSDT"},
    ):
        async with http.post(
            venue.url + "/_fake/control", json={"action": "book_levels", "venue": "spot", **refused}
        ) as response:
            assert response.status == 400


@pytest.mark.parametrize(("limit", "served", "weight"), [
    ("5000", 5000, 250), ("6000", 5000, 250), ("4999", 4999, 250), ("1001", 1001, 250),
    ("1000", 1000, 50), ("501", 501, 50), ("500", 500, 25), ("101", 101, 25), ("100", 100, 5), ("1", 1, 5),
])  # fmt: skip
async def test_spot_snapshots_of_a_6000_level_book(
    deep_venue: FakeVenue, http: aiohttp.ClientSession, limit: str, served: int, weight: int
) -> None:
    url = f"{deep_venue.url}/api/v3/depth?symbol=BTCUSDT&limit={limit}"
    status, headers, body = await get_json(http, url)
    assert status == 200 and headers["X-MBX-USED-WEIGHT-1M"] == str(weight)
    assert_best_first(body, served)


@pytest.mark.parametrize(("limit", "served", "weight"), [
    ("1000", 1000, 20), ("5000", 1000, 20), ("999", 1000, 20), ("500", 500, 10), ("101", 500, 10),
    ("100", 100, 5), ("50", 50, 2), ("20", 20, 2), ("10", 10, 2), ("5", 5, 2), ("1", 5, 2),
])  # fmt: skip
async def test_futures_snapshots_of_a_6000_level_book(
    deep_venue: FakeVenue, http: aiohttp.ClientSession, limit: str, served: int, weight: int
) -> None:
    url = f"{deep_venue.url}/fapi/v1/depth?symbol=BTCUSDT&limit={limit}"
    status, headers, body = await get_json(http, url)
    assert status == 200 and headers["X-MBX-USED-WEIGHT-1M"] == str(weight)
    assert_best_first(body, served)


def assert_best_first(body: dict[str, Any], levels: int) -> None:
    """Exactly ``levels`` a side, bids descending, asks ascending, uncrossed, no empty level."""
    bids = [(Decimal(p), Decimal(q)) for p, q in body["bids"]]
    asks = [(Decimal(p), Decimal(q)) for p, q in body["asks"]]
    assert len(bids) == len(asks) == levels
    assert all(a[0] > b[0] for a, b in itertools.pairwise(bids))
    assert all(a[0] < b[0] for a, b in itertools.pairwise(asks))
    assert bids[0][0] < asks[0][0] and all(q > 0 for _, q in bids + asks)


async def test_a_client_sees_deep_activity_beyond_depth_1000(
    deep_venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    await control(http, deep_venue, action="deep_activity", venue="spot", symbol="ETHUSDT", share=0.5)
    async with http.ws_connect(f"{deep_venue.spot_ws_url}/ws/ethusdt@depth@100ms") as ws:
        first = await next_event(ws)
        events = [await next_event(ws) for _ in range(30)]
    book = await truth(http, deep_venue, f"venue=spot&symbol=ETHUSDT&update_id={first['u']}")
    assert len(book["bids"]) > 5500 and len(book["asks"]) > 5500
    rank = {Decimal(p): i for side in ("bids", "asks") for i, (p, _) in enumerate(book[side])}
    deep = [
        (Decimal(p), Decimal(q)) for e in events for p, q in e["b"] + e["a"] if rank.get(Decimal(p), 0) > 1000
    ]
    assert sum(1 for _, qty in deep if qty > 0) >= 5  # resized thousands deep
    assert sum(1 for _, qty in deep if qty == 0) >= 2  # and deleted


async def test_subscribing_a_thousand_books_does_not_stall_the_event_loop(
    http: aiohttp.ClientSession,
) -> None:
    fake = FakeVenue(small_config(spot_symbols=1000, levels=1500, deep_symbols=20, rate=0.0))
    await fake.start()
    loop = asyncio.get_running_loop()
    gaps: list[float] = []

    async def tick() -> None:
        # The loop's own CPU time between ticks: what seeding held it for, and not the time a busy
        # machine kept the process off its core.
        last = time.thread_time()
        while True:
            await asyncio.sleep(0.001)
            now = time.thread_time()
            gaps.append(now - last)
            last = now

    # What earlier tests left in this worker's heap is not the venue's: a full collection over it
    # would count as a stall of the seeding.
    gc.freeze()
    ticker = loop.create_task(tick())
    try:
        streams = [f"{name.lower()}@depth" for name in list(fake.spot.markets.specs)[:1000]]
        async with http.ws_connect(f"{fake.spot_ws_url}/ws") as ws:
            await ws.send_json({"method": "SUBSCRIBE", "params": streams, "id": 1})
            assert await next_json(ws) == {"result": None, "id": 1}
            deadline = loop.time() + 30
            while len(fake.spot.markets.active) < 1000:
                assert loop.time() < deadline
                await asyncio.sleep(0.05)
        assert max(gaps) < 0.25  # all at once, 1000 seeds would hold the loop for over a second
    finally:
        ticker.cancel()
        gc.unfreeze()
        await fake.stop()
