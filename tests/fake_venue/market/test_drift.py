"""Drift: a mid that walks hundreds of ticks, sweeps that eat the touch, and a truth that keeps up."""

from __future__ import annotations

import asyncio
import itertools
import random
from decimal import Decimal
from typing import Any

import aiohttp
import pytest

from fake_venue import FakeVenue
from fake_venue.config import Drift, VenueConfig
from fake_venue.market.book import Book
from fake_venue.market.decimal_text import LevelStyle
from fake_venue.market.markets import ContiguousIds, Market, Motion, Update
from fake_venue.market.symbols import SymbolSpec, spot_catalogue
from tests.fake_venue.helpers import DecimalBook, control, get_json, next_event

STYLE = LevelStyle(1, 2, 1, 3, trim=False, zero_qty="0")


def drifting_market(drift: Drift, spec: SymbolSpec | None = None, levels: int = 300) -> Market:
    """A market driven at 10 updates a second, so each update stands for 0.1 s of drift."""
    spec = spec or spot_catalogue(1)[0]
    config = VenueConfig(levels=levels, rate=10.0, drift=drift)
    return Market(spec, spec.status, STYLE, ContiguousIds(), config, random.Random(5), Motion(config), levels)


def mid(market: Market) -> float:
    bid, ask = market.book.bids.best, market.book.asks.best
    assert bid is not None and ask is not None and bid < ask
    return (bid + ask) / 2


def sweep_side(update: Update, levels: int) -> bool | None:
    """The side (True = bids) an update swept: exactly ``levels`` deletes on one side, nothing else."""
    for is_bid, changed, other in ((True, update.bids, update.asks), (False, update.asks, update.bids)):
        if len(changed) == levels and not other and all(qty == 0 for _, qty in changed):
            return is_bid
    return None


def test_the_mid_walks_thousands_of_ticks_and_the_book_stays_whole() -> None:
    market = drifting_market(Drift(ticks_per_s=100, turn_every_s=0))
    start = mid(market)
    for _ in range(300):  # 30 s of venue time
        market.step()
        mid(market)  # uncrossed after every update
        assert 280 <= market.book.bids.count <= 300 and 280 <= market.book.asks.count <= 300
    assert abs(mid(market) - start) >= 2900  # 100 ticks/s for 30 s, never turning


def test_the_walk_turns_at_random() -> None:
    market = drifting_market(Drift(ticks_per_s=50, turn_every_s=2))
    directions = []
    for _ in range(600):
        market.step()
        directions.append(market.walk.direction)
    turns = sum(1 for a, b in itertools.pairwise(directions) if a != b)
    assert 10 <= turns <= 60  # about one every 2 s over 60 s


def test_a_low_priced_book_turns_back_before_its_bids_run_out() -> None:
    spec = next(s for s in spot_catalogue(20) if s.mid_ticks < 2000)
    market = drifting_market(Drift(ticks_per_s=300, turn_every_s=0), spec)
    market.walk.direction = -1  # head for zero: the walk starts with the direction it has
    lowest = mid(market)
    for _ in range(400):
        market.step()
        lowest = min(lowest, mid(market))
        assert market.book.bids.count > 0
    assert spec.mid_ticks / 2 - 5 <= lowest <= spec.mid_ticks / 2 + 35  # within one update's 30 ticks
    assert mid(market) > lowest + 1000  # it turned back up


def test_a_sweep_deletes_the_best_levels_of_one_side_then_the_book_refills() -> None:
    market = drifting_market(Drift(ticks_per_s=0, sweep_every_s=1.0, sweep_levels=25))
    books, updates = [market.book.copy()], []
    for _ in range(70):  # 7 s of venue time
        updates.append(market.step())
        books.append(market.book.copy())
    sweeps = [index for index, update in enumerate(updates) if sweep_side(update, 25) is not None]
    assert len(sweeps) == 6 and all(9 <= b - a <= 11 for a, b in itertools.pairwise(sweeps))
    for index in sweeps:
        side = sweep_side(updates[index], 25)
        assert side is not None
        before, after, later = books[index], books[index + 1], books[index + 4]
        changed = updates[index].bids if side else updates[index].asks
        assert sorted(changed) == sorted((tick, 0) for tick, _ in before.side(side).levels(25))
        assert after.side(side).best == before.side(side).levels(26)[25][0]
        assert spread(later) < spread(after)  # the other side refills behind the new touch


def spread(book: Book) -> int:
    bid, ask = book.bids.best, book.asks.best
    assert bid is not None and ask is not None
    return ask - bid


def is_sweep(event: dict[str, Any], levels: int) -> bool:
    """Exactly ``levels`` deletes on one side and nothing on the other."""
    changed = [event[key] for key in ("b", "a") if event[key]]
    return len(changed) == 1 and len(changed[0]) == levels and all(Decimal(q) == 0 for _, q in changed[0])


async def truth(http: aiohttp.ClientSession, venue: FakeVenue, query: str) -> Any:
    status, _, body = await get_json(http, f"{venue.url}/_fake/book?{query}")
    assert status == 200, body
    return body


def tick_mid(body: dict[str, Any], tick: Decimal) -> Decimal:
    return (Decimal(body["bids"][0][0]) + Decimal(body["asks"][0][0])) / 2 / tick


async def test_drift_moves_a_live_mid_hundreds_of_ticks(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    reply = await control(
        http, venue, action="drift", venue="spot", symbol="BTCUSDT", ticks_per_s=200, turn_every_s=0
    )
    assert reply["drift"] == {"ticks_per_s": 200, "turn_every_s": 0, "sweep_every_s": 0, "sweep_levels": 30}
    before = await truth(http, venue, "venue=spot&symbol=BTCUSDT&limit=1")
    await asyncio.sleep(2.0)
    after = await truth(http, venue, "venue=spot&symbol=BTCUSDT&limit=1")
    assert abs(tick_mid(after, Decimal("0.01")) - tick_mid(before, Decimal("0.01"))) >= 200


async def test_a_live_sweep_is_the_top_of_one_side_in_one_event(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    await control(
        http, venue, action="drift", venue="spot", symbol="ETHUSDT", ticks_per_s=20, sweep_every_s=0.5
    )
    async with http.ws_connect(f"{venue.spot_ws_url}/ws/ethusdt@depth@100ms") as ws:
        event = await next_event(ws)
        while not is_sweep(event, 30):
            event = await next_event(ws)
    swept = event["b"] or event["a"]
    side = "bids" if event["b"] else "asks"
    before = await truth(http, venue, f"venue=spot&symbol=ETHUSDT&update_id={event['U'] - 1}&limit=31")
    assert [price for price, _ in swept] == [price for price, _ in before[side][:30]]
    after = await truth(http, venue, f"venue=spot&symbol=ETHUSDT&update_id={event['u']}&limit=1")
    assert after[side][0] == before[side][30]


@pytest.mark.parametrize(("market", "rest", "stream"), [
    ("spot", "/api/v3/depth", "/ws/solusdt@depth@100ms"),
    ("futures", "/fapi/v1/depth", "/public/ws/solusdt@depth@100ms"),
])  # fmt: skip
async def test_snapshot_plus_diffs_equals_truth_at_every_id_while_drifting(
    venue: FakeVenue, http: aiohttp.ClientSession, market: str, rest: str, stream: str
) -> None:
    await control(
        http, venue, action="drift", venue=market, ticks_per_s=100, turn_every_s=1, sweep_every_s=0.3
    )
    async with http.ws_connect(venue.ws_url + stream) as ws:
        buffered = [await next_event(ws)]
        _, _, snapshot = await get_json(http, f"{venue.url}{rest}?symbol=SOLUSDT&limit=1000")
        book, book_id = DecimalBook(snapshot["bids"], snapshot["asks"]), snapshot["lastUpdateId"]
        assert len(snapshot["bids"]) < 1000 and len(snapshot["asks"]) < 1000  # the whole book
        applied: list[tuple[int, DecimalBook]] = []
        while len(applied) < 25:
            event = buffered.pop(0) if buffered else await next_event(ws)
            if event["u"] < book_id or (market == "spot" and event["u"] == book_id):
                continue
            book.apply(event["b"], event["a"])
            book_id = event["u"]
            assert not book.crossed
            applied.append((book_id, book.copy()))
    for update_id, expected in applied:
        body = await truth(http, venue, f"venue={market}&symbol=SOLUSDT&update_id={update_id}")
        assert expected.same_as(DecimalBook(body["bids"], body["asks"])), update_id


async def test_drift_venue_wide_off_and_reset(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    markets = venue.futures.markets
    await control(http, venue, action="drift", venue="futures", ticks_per_s=5)
    await control(http, venue, action="drift", venue="futures", symbol="BTCUSDT", sweep_every_s=2)
    btc, eth = markets.get("BTCUSDT"), markets.get("ETHUSDT")
    assert btc is not None and eth is not None
    assert (btc.effective_drift, eth.effective_drift) == (Drift(sweep_every_s=2), Drift(ticks_per_s=5))
    await control(http, venue, action="drift", venue="futures")
    assert not eth.effective_drift.on and btc.effective_drift.on
    await control(http, venue, action="reset", venue="futures")
    assert btc.effective_drift == eth.effective_drift == venue.config.drift
    async with http.post(
        venue.url + "/_fake/control", json={"action": "drift", "venue": "spot", "sweep_levels": 0}
    ) as response:
        assert response.status == 400
