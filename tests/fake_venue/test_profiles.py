"""The replayed profiles: Binance's 100 ms cadence at the stated shares and levels, the truth exact."""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from fake_venue import FakeVenue
from fake_venue.market.book import Book
from fake_venue.market.cycle import record
from fake_venue.market.generator import ChangeSet, Generator
from fake_venue.market.profiles import PROFILES, SWEEP_LEVELS, Activity

from .conftest import small_config
from .helpers import DecimalBook, control, get_json, next_event


def levels_of(book: Book) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    return book.bids.levels(None), book.asks.levels(None)


def test_binance_real_shares_and_levels_follow_the_rank() -> None:
    real = PROFILES["binance-real"]
    # The busiest market sends in every window, the 100th in half, the 1000th in a third.
    assert real.activity(1, False, 0.0).share == 1.0
    assert real.activity(100, False, 0.0).share == pytest.approx(0.50, abs=0.01)
    assert real.activity(1000, False, 0.0).share == pytest.approx(0.355, abs=0.01)
    # ~15,000 events/s for 2013 + 2013 markets at 10 windows a second.
    per_venue = sum(10 * real.activity(k, False, 0.0).share for k in range(1, 2014))
    assert 7_000 < per_venue < 8_000
    assert real.activity(1, False, 0.0).mean_levels == 50.0
    assert real.activity(1000, True, 0.0).mean_levels == pytest.approx(12.6, abs=0.1)
    # Only the ten busiest futures sweep.
    assert real.activity(10, True, 0.0).sweep_share > 0
    assert real.activity(11, True, 0.0).sweep_share == 0 and real.activity(1, False, 0.0).sweep_share == 0
    assert all(PROFILES["venue-max"].activity(k, False, 0.0).share == 1.0 for k in (1, 2013))
    assert PROFILES["skewed"].activity(10, False, 1.0) == Activity(0.1)


@pytest.mark.parametrize("mean", [3.0, 12.6, 50.0])
def test_frames_carry_the_mean_levels_and_a_cycle_returns_the_book(mean: float) -> None:
    sizes: list[int] = []
    gaps: list[int] = []
    for seed in range(20):
        rng = random.Random(seed)
        generator = Generator(rng, 200, 1000, 100_000)
        book = Book()
        generator.seed(book)
        before = levels_of(book)
        cycle = record(generator, ChangeSet(book), Activity(0.5, mean), rng)
        assert levels_of(book) == before  # recording leaves the book as it was
        for frame in cycle.frames:  # one turn of the cycle leaves it there too
            for tick, qty in frame.bids:
                book.bids.set(tick, qty)
            for tick, qty in frame.asks:
                book.asks.set(tick, qty)
            assert list(frame.bids) == sorted(frame.bids, reverse=True)
            assert list(frame.asks) == sorted(frame.asks)
            assert frame.span >= frame.levels
            best_bid, best_ask = book.bids.best, book.asks.best
            assert best_bid is not None and best_ask is not None and best_bid < best_ask
        assert levels_of(book) == before
        sizes += [frame.levels for frame in cycle.frames]
        gaps += [frame.gap for frame in cycle.frames]
    assert statistics.mean(sizes) == pytest.approx(mean, rel=0.2)
    assert statistics.mean(gaps) == pytest.approx(2.0, rel=0.2)  # a busy share of 0.5


def test_the_busiest_futures_sweep_hundreds_of_levels() -> None:
    rng = random.Random(3)
    generator = Generator(rng, 500, 1000, 100_000)
    book = Book()
    generator.seed(book)
    sweeping = Activity(1.0, 50, 0.1)
    frames = [f for _ in range(8) for f in record(generator, ChangeSet(book), sweeping, rng).frames]
    assert max(frame.levels for frame in frames) >= SWEEP_LEVELS[0]


@pytest.fixture
async def venue_max() -> AsyncIterator[FakeVenue]:
    # 40 windows a second, so a turn of a cycle (32 frames) takes under a second.
    fake = FakeVenue(small_config(profile="venue-max", rate=40.0))
    await fake.start()
    yield fake
    await fake.stop()


async def count_events(
    ws: aiohttp.ClientWebSocketResponse, seconds: float
) -> dict[str, list[dict[str, Any]]]:
    events: dict[str, list[dict[str, Any]]] = {}
    deadline = asyncio.get_running_loop().time() + seconds
    while (left := deadline - asyncio.get_running_loop().time()) > 0:
        try:
            event = await next_event(ws, left)
        except TimeoutError:
            break
        events.setdefault(event["s"], []).append(event)
    return events


async def test_binance_real_sends_each_market_its_share_of_windows(http: aiohttp.ClientSession) -> None:
    fake = FakeVenue(small_config(profile="binance-real", rate=40.0))
    await fake.start()
    try:
        names = ["btcusdt", "ethusdt", "ethbtc", "bnbbtc", "bnbusdt", "solusdt", "xrpusdt", "adausdt",
                 "dogeusdt", "ltcusdt"]  # fmt: skip
        streams = "/".join(f"{name}@depth@100ms" for name in names)
        async with http.ws_connect(f"{fake.url}/stream?streams={streams}") as ws:
            await count_events(ws, 0.5)  # books built
            _, _, stats = await get_json(http, fake.url + "/_fake/stats")
            asked = sum(40 * k**-0.15 for k in range(1, 11))
            assert stats["venues"]["spot"]["active_rate"] == pytest.approx(asked)
            events = await count_events(ws, 3.0)
    finally:
        await fake.stop()
    made = sum(map(len, events.values())) / 3.0
    assert made == pytest.approx(asked, rel=0.25)
    # The busiest (every window) sends more than the tenth (k^-0.15 = 0.71 of them).
    assert len(events["BTCUSDT"]) > len(events["LTCUSDT"])
    levels = [len(e["b"]) + len(e["a"]) for e in events["BTCUSDT"]]
    assert statistics.mean(levels) > 20  # tens of levels, not the skewed profile's ~3.5


async def sync_and_follow(
    http: aiohttp.ClientSession, fake: FakeVenue, seconds: float
) -> tuple[DecimalBook, int, int, int]:
    """Sync SOLUSDT futures the documented way and apply its events for ``seconds``: the book, its
    id, the events applied and the snapshot's id."""
    async with http.ws_connect(f"{fake.futures_ws_url}/stream?streams=solusdt@depth@100ms") as ws:
        buffered = [await next_event(ws)]
        _, _, snapshot = await get_json(http, f"{fake.url}/fapi/v1/depth?symbol=SOLUSDT&limit=1000")
        book, book_id, applied = DecimalBook(snapshot["bids"], snapshot["asks"]), snapshot["lastUpdateId"], 0
        synced = False
        deadline = asyncio.get_running_loop().time() + seconds
        while asyncio.get_running_loop().time() < deadline:
            event = buffered.pop(0) if buffered else await next_event(ws)
            if event["u"] < book_id:
                continue
            assert synced or event["U"] <= book_id <= event["u"]
            assert not synced or event["pu"] == book_id
            synced = True
            book.apply(event["b"], event["a"])
            book_id, applied = event["u"], applied + 1
    return book, book_id, applied, snapshot["lastUpdateId"]


async def test_venue_max_replays_with_the_truth_exact(
    venue_max: FakeVenue, http: aiohttp.ClientSession
) -> None:
    # Four seconds at 40 windows a second: 160 frames, five turns of the cycle, past the point where
    # the venue drops whole unread turns (2 turns + the history minimum).
    book, book_id, applied, snapshot_id = await sync_and_follow(http, venue_max, 4.0)
    assert applied >= 100
    status, _, truth = await get_json(
        http, f"{venue_max.url}/_fake/book?venue=futures&symbol=SOLUSDT&update_id={book_id}"
    )
    assert status == 200 and truth["update_id"] == book_id
    assert book.same_as(DecimalBook(truth["bids"], truth["asks"])) and not book.crossed
    # No one read the book for more than two turns: the venue skipped a whole turn unapplied, and
    # the states it skipped are gone (410), as an id out of history is.
    status, _, _ = await get_json(
        http, f"{venue_max.url}/_fake/book?venue=futures&symbol=SOLUSDT&update_id={snapshot_id}"
    )
    assert status == 410


async def test_a_fault_on_a_replayed_market_keeps_the_truth_exact(
    venue_max: FakeVenue, http: aiohttp.ClientSession
) -> None:
    await control(http, venue_max, action="empty_book", venue="futures", symbol="SOLUSDT", side="bids")
    book, book_id, _, _ = await sync_and_follow(http, venue_max, 4.0)
    _, _, truth = await get_json(
        http, f"{venue_max.url}/_fake/book?venue=futures&symbol=SOLUSDT&update_id={book_id}"
    )
    assert book.same_as(DecimalBook(truth["bids"], truth["asks"]))


async def test_the_clock_wakes_far_less_often_than_it_makes_updates(venue_max: FakeVenue) -> None:
    # 24 markets at 40 windows a second, due at random phases a few hundred microseconds apart: the
    # clock makes what is due within its early margin in one turn (it used to spin, waking up
    # early by a fraction of a millisecond, tens of thousands of times a second).
    for venue in (venue_max.spot, venue_max.futures):
        for name in list(venue.markets.specs)[:12]:
            venue.markets.get(name)
    made = venue_max.spot.events_generated + venue_max.futures.events_generated
    turns = venue_max.scheduler.wakeups
    await asyncio.sleep(1.0)
    made = venue_max.spot.events_generated + venue_max.futures.events_generated - made
    turns = venue_max.scheduler.wakeups - turns
    assert made > 500 and turns < made, (made, turns)


async def test_a_replayed_market_keeps_nothing_the_collector_walks() -> None:
    # A busy venue holds a few turns of unread frames and minutes of history for each of thousands
    # of markets; kept as objects, every full collection walked them all, holding every frame back.
    venue = FakeVenue(small_config(profile="venue-max"))
    market = venue.futures.markets.get("SOLUSDT")
    assert market is not None and market.cycle is not None
    turn = len(market.cycle.frames)
    for _ in range(turn):
        market.step()
    assert market.book is not None  # a reader applies the frames, which history records
    gc.collect()  # what is made of numbers only stops being tracked
    tracked, recorded = len(gc.get_objects()), len(market.history)
    for _ in range(3 * turn):  # unread frames ...
        market.step()
    for _ in range(turn):  # ... and frames read as they come, into history
        market.step()
        assert market.book is not None
    gc.collect()
    assert len(market.history) > recorded + turn
    assert len(gc.get_objects()) - tracked < 10
