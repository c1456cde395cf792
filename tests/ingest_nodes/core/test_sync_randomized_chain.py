"""Randomized check of the OKX and Bybit machines with the engine against a naive reference venue.

The reference venue keeps one book, changes a few levels per message (every change, or only what
changes in the channel's best ``limit`` levels, as a venue keeping that window would) and chains
its messages the venue's way (OKX: ``prevSeqId`` -> ``seqId`` with holes, heartbeats and id
restarts; Bybit: ``u`` + 1, restarts at ``u`` = 1 with a snapshot). It sends a snapshot of its
best ``limit`` levels when asked (a subscribe) and now and then on its own. Delivery is lossy:
messages are lost, the last one is sent twice, an old one is replayed, the connection drops.
After every step the engine is either synced and holds the venue's book as of the message it
applied last, its trusted levels a prefix of the venue's sides, or not synced and empty.
Whenever the engine asks (a resync), the caller resubscribes: a loss-free phase at the end must
bring every run back to synced, at the venue's last message (a book that dropped live messages
as replays would sit at an old one).
"""

from __future__ import annotations

import random
from decimal import Decimal

import orjson
import pytest

from ingest_nodes.core.engine import BookEngine, EngineResult
from ingest_nodes.core.events import DepthUpdate, Level
from ingest_nodes.core.sync import BybitSyncMachine, OkxSyncMachine
from tests.ingest_nodes.core.reference import ASK_PRICES, BID_PRICES, Book, written


class ChainVenue:
    """One instrument of a snapshot-on-the-stream venue; remembers the book after each message."""

    def __init__(self, rng: random.Random, *, okx: bool, limit: int, window: bool = False) -> None:
        self.rng = rng
        self.okx = okx
        self.limit = limit
        self.window = window
        """Send only what changes in the best ``limit`` levels (levels entering it, levels leaving it
        as size 0), as a venue that keeps the channel's window itself would; else every change."""
        self.book = Book()
        self.seq = rng.randint(0, 10_000)
        self.after: dict[int, Book] = {}  # id(message) -> the book right after it
        self.sent: list[DepthUpdate] = []

    def _message(
        self, prev: int | None, bids: tuple[Level, ...], asks: tuple[Level, ...], reset: bool
    ) -> DepthUpdate:
        message = DepthUpdate(
            symbol="X",
            first_update_id=self.seq,
            final_update_id=self.seq,
            prev_final_update_id=prev,
            event_time=0,
            ingest_time=0,
            bids=bids,
            asks=asks,
            reset=reset,
            limit=self.limit if reset else 0,
        )
        self.after[id(message)] = self.book.copy()
        self.sent.append(message)
        return message

    def snapshot(self) -> DepthUpdate:
        bids, asks = self.book.sides()
        return self._message(
            -1 if self.okx else None, tuple(bids[: self.limit]), tuple(asks[: self.limit]), True
        )

    def restart(self) -> DepthUpdate | None:
        """The venue's ids start over: OKX chains on with a smaller id, Bybit sends a u=1 snapshot."""
        if self.okx:
            prev, self.seq = self.seq, self.rng.randint(0, max(0, self.seq - 1))
            return self._message(prev, (), (), False)
        self.seq = 1
        return self.snapshot()

    def update(self) -> DepthUpdate:
        prev = self.seq
        if self.okx and self.rng.random() < 0.1:
            return self._message(prev, (), (), False)  # the heartbeat of a quiet book
        bids: list[Level] = []
        asks: list[Level] = []
        before = self._window()
        for _ in range(self.rng.randint(1, 4)):
            side = self.rng.choice("ba")
            price = self.rng.choice(BID_PRICES if side == "b" else ASK_PRICES)
            levels = self.book.bids if side == "b" else self.book.asks
            if price in levels and self.rng.random() < 0.4:
                quantity = self.rng.choice(["0", "0.000"])
            else:
                quantity = written(Decimal(self.rng.randint(1, 9_000)) / 1000, self.rng)
            level = (written(price, self.rng), quantity)
            self.book.set(side, price, level)
            (bids if side == "b" else asks).append(level)
        if self.window:
            bids, asks = self._window_changes(before)
        self.seq += self.rng.randint(1, 40) if self.okx else 1
        return self._message(prev if self.okx else None, tuple(bids), tuple(asks), False)

    def _window(self) -> tuple[dict[Decimal, Level], dict[Decimal, Level]]:
        """The best ``limit`` levels a side, by price."""
        bids, asks = self.book.sides()
        return (
            {Decimal(level[0]): level for level in bids[: self.limit]},
            {Decimal(level[0]): level for level in asks[: self.limit]},
        )

    def _window_changes(
        self, before: tuple[dict[Decimal, Level], dict[Decimal, Level]]
    ) -> tuple[list[Level], list[Level]]:
        """What changed in the window: levels new or resized in it, and the ones that left it."""
        sides = []
        for old, new in zip(before, self._window(), strict=True):
            changed = [level for price, level in new.items() if old.get(price) != level]
            changed += [(level[0], "0") for price, level in old.items() if price not in new]
            sides.append(changed)
        return sides[0], sides[1]


def check(engine: BookEngine, venue: ChainVenue, result: EngineResult) -> None:
    if not engine.synced:
        assert not result.changed
        assert engine.book.bids() == [] and engine.book.asks() == []
        return
    last = engine.machine.last  # type: ignore[union-attr]
    assert last is not None and last.final_update_id == engine.update_id
    bids, asks = venue.after[id(last)].sides()
    top_bids = [tuple(orjson.loads(level)) for level in engine.book.top_bids(1000)]
    top_asks = [tuple(orjson.loads(level)) for level in engine.book.top_asks(1000)]
    assert top_bids == bids[: len(top_bids)]
    assert top_asks == asks[: len(top_asks)]
    if venue.limit > len(BID_PRICES):
        assert (top_bids, top_asks) == (bids, asks)  # nothing cut: the whole book is trusted


def run(seed: int, *, okx: bool, limit: int, steps: int = 300, window: bool = False) -> None:
    rng = random.Random(seed)
    venue = ChainVenue(rng, okx=okx, limit=limit, window=window)
    engine = BookEngine(OkxSyncMachine() if okx else BybitSyncMachine())
    subscribe_at: int | None = 0  # the first subscribe brings the first snapshot

    for step in range(steps + 40):
        lossy = step < steps
        if subscribe_at is not None and step >= subscribe_at:
            subscribe_at = None
            message = venue.snapshot()
        elif lossy and rng.random() < 0.02:
            message = venue.snapshot()  # the venue resends its book on its own
        elif lossy and rng.random() < 0.02:
            restarted = venue.restart()
            assert restarted is not None
            message = restarted
        else:
            message = venue.update()
        roll = rng.random()
        if lossy and roll < 0.03:
            continue  # lost: a gap
        if lossy and roll < 0.05:
            check(engine, venue, engine.on_disconnect())
            subscribe_at = step + rng.randint(1, 3)  # reconnected: subscribed again
            continue
        result = engine.on_update(message)
        check(engine, venue, result)
        if lossy and rng.random() < 0.04:
            check(engine, venue, engine.on_update(message))  # the same message twice
        if lossy and rng.random() < 0.02:
            check(engine, venue, engine.on_update(rng.choice(venue.sent[-10:])))  # an old one again
        if result.resync_reason is not None or (not engine.synced and subscribe_at is None):
            subscribe_at = step + rng.randint(1, 3)  # the replica subscribes the book again
    assert engine.synced, f"seed {seed}: not synced after the loss-free phase"
    assert engine.update_id == venue.seq, f"seed {seed}: synced, but not at the venue's last message"


@pytest.mark.parametrize("seed", range(25))
def test_okx_engine_is_synced_and_exact_or_not_synced(seed: int) -> None:
    run(seed, okx=True, limit=400)


@pytest.mark.parametrize("seed", range(25))
def test_bybit_engine_is_synced_and_exact_or_not_synced(seed: int) -> None:
    run(seed, okx=False, limit=1000)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("okx", [False, True])
def test_a_channel_cut_at_its_depth_serves_only_a_prefix_of_the_venue(seed: int, okx: bool) -> None:
    run(500 + seed, okx=okx, limit=6)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("okx", [False, True])
def test_a_venue_that_keeps_the_window_itself_is_served_right_too(seed: int, okx: bool) -> None:
    """Whether the venue sends every change or only its window's, the served levels are right."""
    run(700 + seed, okx=okx, limit=6, window=True)
