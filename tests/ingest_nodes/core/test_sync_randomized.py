"""Randomized end-to-end check of machine + engine against a naive reference venue.

A reference venue changes one level per update id and groups consecutive ids into diff events
(spot: contiguous ids; futures: ids with holes and a ``pu`` chain). A lossy delivery drops events,
replays old ones, disconnects, and answers snapshot requests late and from a random moment (too
old, exactly on an event boundary, inside an event, newer than the stream). After every step the
engine must either be synced and hold exactly the venue's book at ``engine.update_id``, or not be
synced and hold nothing. A final loss-free phase must bring every run back to synced.
"""

from __future__ import annotations

import bisect
import random
from decimal import Decimal

import orjson
import pytest

from ingest_nodes.core.engine import BookEngine, EngineResult
from ingest_nodes.core.events import DepthSnapshot, DepthUpdate, Level
from ingest_nodes.core.sync import AlpacaSyncMachine, FuturesSyncMachine, SpotSyncMachine
from tests.ingest_nodes.core.reference import ASK_PRICES, BID_PRICES, Book, written


class Venue:
    """One symbol at a reference venue: per-id level changes grouped into diff events."""

    def __init__(self, rng: random.Random, *, futures: bool) -> None:
        self.rng = rng
        self.futures = futures
        self.book = Book()
        self.last_id = 1000
        self.ids = [self.last_id]  # every id that changed the book, ascending
        self.history = {self.last_id: self.book.copy()}
        self.prev_final = self.last_id

    def change(self) -> tuple[str, Level]:
        side = self.rng.choice("ba")
        price = self.rng.choice(BID_PRICES if side == "b" else ASK_PRICES)
        present = price in (self.book.bids if side == "b" else self.book.asks)
        if present and self.rng.random() < 0.35:
            quantity = self.rng.choice(["0", "0.00000000", "0.0"])
        else:
            quantity = written(Decimal(self.rng.randint(1, 50_000)) / 1000, self.rng)
        level = (written(price, self.rng), quantity)
        self.book.set(side, price, level)
        self.last_id += self.rng.randint(1, 9) if self.futures else 1
        self.ids.append(self.last_id)
        self.history[self.last_id] = self.book.copy()
        return side, level

    def event(self, ingest_time: int) -> DepthUpdate:
        changes = [self.change() for _ in range(self.rng.randint(1, 4))]
        first = self.ids[-len(changes)]
        update = DepthUpdate(
            symbol="BTCUSDT",
            first_update_id=first,
            final_update_id=self.last_id,
            prev_final_update_id=self.prev_final if self.futures else None,
            event_time=ingest_time,
            ingest_time=ingest_time,
            bids=tuple(level for side, level in changes if side == "b"),
            asks=tuple(level for side, level in changes if side == "a"),
        )
        self.prev_final = self.last_id
        return update

    def state_at(self, update_id: int) -> Book:
        """The book as of ``update_id`` (an id in a hole sees the last change before it)."""
        return self.history[self.ids[bisect.bisect_right(self.ids, update_id) - 1]]

    def snapshot(self, last_update_id: int, limit: int) -> DepthSnapshot:
        bids, asks = self.state_at(last_update_id).sides()
        return DepthSnapshot("BTCUSDT", last_update_id, tuple(bids[:limit]), tuple(asks[:limit]), limit)


def check(engine: BookEngine, expected: Book | None, result: EngineResult, *, full_depth: bool) -> None:
    if not engine.synced:
        assert not result.changed
        assert engine.book.bids() == [] and engine.book.asks() == []
        return
    assert expected is not None
    bids, asks = expected.sides()
    if full_depth:
        assert (engine.book.bids(), engine.book.asks()) == (bids, asks)
        assert engine.book.top_bids(3) == [orjson.dumps(level) for level in bids[:3]]
        return
    top_bids = [tuple(orjson.loads(level)) for level in engine.book.top_bids(1000)]
    top_asks = [tuple(orjson.loads(level)) for level in engine.book.top_asks(1000)]
    assert top_bids == bids[: len(top_bids)]
    assert top_asks == asks[: len(top_asks)]


def run_binance(seed: int, *, futures: bool, limit: int, steps: int = 200) -> None:
    rng = random.Random(seed)
    venue = Venue(rng, futures=futures)
    engine = BookEngine(FuturesSyncMachine() if futures else SpotSyncMachine(max_buffer=40))
    delivered: list[DepthUpdate] = []
    request: tuple[int, int] | None = None  # (answer at step, venue id when asked)

    def handle(result: EngineResult, step: int) -> None:
        nonlocal request
        if result.need_snapshot and request is None:
            request = (step + rng.randint(0, 6), venue.last_id)
        expected = (
            venue.state_at(engine.update_id) if engine.synced and engine.update_id is not None else None
        )
        check(engine, expected, result, full_depth=limit > len(BID_PRICES))

    for step in range(steps + 60):
        lossy = step < steps
        event = venue.event(step)
        roll = rng.random()
        if lossy and roll < 0.04:
            pass  # lost in transit: a gap
        elif lossy and roll < 0.05:
            handle(engine.on_disconnect(), step)
            for _ in range(rng.randint(0, 2)):
                venue.event(step)  # lost while reconnecting
            request = None  # the driver drops its fetch with the connection
        else:
            delivered.append(event)
            handle(engine.on_update(event), step)
        if lossy and delivered and rng.random() < 0.05:
            handle(engine.on_update(rng.choice(delivered[-20:])), step)  # a replay
        if request is not None and step >= request[0]:
            asked_at = request[1]
            request = None
            low = max(venue.ids[0], asked_at - 12) if lossy else venue.last_id
            snapshot_id = rng.randint(low, venue.last_id)
            if futures and lossy and rng.random() < 0.5:
                snapshot_id = rng.choice([i for i in venue.ids if i >= low])  # exactly on a change id
            handle(engine.on_snapshot(venue.snapshot(snapshot_id, limit)), step)
    assert engine.synced, f"seed {seed}: not synced after the loss-free phase"


@pytest.mark.parametrize("seed", range(20))
def test_spot_engine_is_synced_and_exact_or_not_synced(seed: int) -> None:
    run_binance(seed, futures=False, limit=1000)


@pytest.mark.parametrize("seed", range(20))
def test_futures_engine_is_synced_and_exact_or_not_synced(seed: int) -> None:
    run_binance(seed, futures=True, limit=1000)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("futures", [False, True])
def test_snapshots_cut_at_their_limit_serve_only_trusted_levels(seed: int, futures: bool) -> None:
    run_binance(1000 + seed, futures=futures, limit=8)


@pytest.mark.parametrize("seed", range(15))
def test_alpaca_engine_is_synced_and_exact_or_not_synced(seed: int) -> None:
    rng = random.Random(seed)
    venue = Venue(rng, futures=False)
    engine = BookEngine(AlpacaSyncMachine())
    reset_due = True  # the venue sends a reset after (re)subscribing
    for step in range(300):
        if rng.random() < 0.03:  # the connection drops; messages are lost until a reset
            check(engine, venue.book, engine.on_disconnect(), full_depth=True)
            for _ in range(rng.randint(0, 3)):
                venue.event(step)
            reset_due = rng.random() < 0.7
            continue
        event = venue.event(step)
        if reset_due or rng.random() < 0.02:
            bids, asks = venue.book.sides()
            event = DepthUpdate("BTC/USD", 0, 0, None, step, step, tuple(bids), tuple(asks), reset=True)
            reset_due = False
        else:
            event = DepthUpdate("BTC/USD", 0, 0, None, step, step, event.bids, event.asks)
        check(engine, venue.book, engine.on_update(event), full_depth=True)
        if rng.random() < 0.01:
            reset_due = True
    assert engine.synced or not reset_due
