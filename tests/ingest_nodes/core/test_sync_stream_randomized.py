"""Randomized checks of the snapshot-on-the-stream machines + engine against reference venues.

Kraken: a reference venue keeps a whole book and shows a subscriber its top ``depth`` levels, as the
venue's rules say: a message carries the levels of that view that changed, and the removal of a
level that left the book, but nothing for a level pushed out of the view, and the checksum of the
view's top 10. Delivery loses messages, corrupts checksums and drops the connection; a book
thrown away is resubscribed (its next message is a snapshot). After every message: a corrupted
checksum threw the book away at once; a synced book's top 10 equals the venue's; and while nothing
was lost since its snapshot, its whole view does. (A lost message that changed only levels past the
top 10 is invisible to the checksum: that is the protocol's limit, and docs/architecture.md says so.)

Coinbase: a reference venue numbers every message of one connection, several products' events and
heartbeats alike. Delivery loses messages, replays them and drops the connection. After every
message: each synced book equals its product's venue book as of the last message it applied
(never a wrong book, at most a late one until the next number shows the loss), and the message
after a loss throws every book of the connection away.
"""

from __future__ import annotations

import random
from dataclasses import replace
from decimal import Decimal

import pytest

from ingest_nodes.core.engine import BookEngine, EngineResult
from ingest_nodes.core.events import DepthUpdate, Level
from ingest_nodes.core.sync import CoinbaseSyncMachine, KrakenSyncMachine
from ingest_nodes.core.sync.coinbase import ConnectionSequence, Continuity
from ingest_nodes.core.sync.kraken import kraken_checksum
from tests.ingest_nodes.core.reference import ASK_PRICES, BID_PRICES, Book


def fixed(value: Decimal, places: int) -> str:
    """Kraken writes every price and quantity of a pair with the pair's fixed number of places."""
    return f"{value:.{places}f}"


def change(rng: random.Random, book: Book) -> None:
    """One level of ``book`` set to a new quantity, or removed."""
    side = rng.choice("ba")
    price = rng.choice(BID_PRICES if side == "b" else ASK_PRICES)
    present = price in (book.bids if side == "b" else book.asks)
    quantity = Decimal(0) if present and rng.random() < 0.4 else Decimal(rng.randint(1, 50_000)) / 1000
    book.set(side, price, (fixed(price, 2), fixed(quantity, 8)))


def view(book: Book, depth: int) -> tuple[list[Level], list[Level]]:
    bids, asks = book.sides()
    return bids[:depth], asks[:depth]


def view_changes(before: list[Level], after: list[Level]) -> tuple[Level, ...]:
    """What the venue sends for one side: every level of the new view that is new or changed, and a
    removal for every level of the old view that left the book (not for one pushed out of view)."""
    old = dict(before)
    return tuple(level for level in after if old.get(level[0]) != level[1])


def kraken_message(
    book: Book, before: tuple[list[Level], list[Level]], depth: int, removed: set[str], t: int
) -> DepthUpdate:
    bids, asks = view(book, depth)
    gone_bids = [(price, fixed(Decimal(0), 8)) for price, _ in before[0] if price in removed]
    gone_asks = [(price, fixed(Decimal(0), 8)) for price, _ in before[1] if price in removed]
    return DepthUpdate(
        "BTC/USD", 0, 0, None, t, t,
        (*gone_bids, *view_changes(before[0], bids)),
        (*gone_asks, *view_changes(before[1], asks)),
        checksum=kraken_checksum(bids, asks),
    )  # fmt: skip


def kraken_snapshot(book: Book, depth: int, t: int) -> DepthUpdate:
    bids, asks = view(book, depth)
    return DepthUpdate(
        "BTC/USD", 0, 0, None, t, t, tuple(bids), tuple(asks), reset=True,
        checksum=kraken_checksum(bids, asks), limit=depth,
    )  # fmt: skip


def run_kraken(seed: int, steps: int = 300) -> None:
    rng = random.Random(seed)
    depth = rng.choice([10, 25])
    venue = Book()
    for _ in range(60):
        change(rng, venue)
    engine = BookEngine(KrakenSyncMachine())
    snapshot_due = True  # the venue sends a snapshot after each subscribe
    clean = False  # nothing lost since the book's snapshot
    for step in range(steps + 40):
        lossy = step < steps
        before = view(venue, depth)
        book_before = {level[0] for side in venue.sides() for level in side}
        for _ in range(rng.randint(1, 3)):
            change(rng, venue)
        removed = book_before - {level[0] for side in venue.sides() for level in side}
        if snapshot_due:
            message = kraken_snapshot(venue, depth, step)
            snapshot_due, clean = False, True
        else:
            message = kraken_message(venue, before, depth, removed, step)
        roll = rng.random()
        if lossy and roll < 0.03:
            clean = False  # lost on the way
            snapshot_due = message.reset  # a book left waiting for its snapshot is resubscribed
            continue
        if lossy and roll < 0.05:
            engine.on_disconnect()
            snapshot_due = True  # the reconnect subscribes again
            continue
        corrupt = lossy and roll < 0.08
        if corrupt:
            assert message.checksum is not None
            message = replace(message, checksum=message.checksum ^ 1)
        was_synced = engine.synced
        result = engine.on_update(message)
        if corrupt and (was_synced or message.reset):
            assert result.resync_reason == "checksum", f"seed {seed} step {step}: a corrupted checksum passed"
        if result.resync_reason is not None:
            snapshot_due = True  # the caller resubscribes the symbol
        check_kraken(engine, venue, depth, clean, f"seed {seed} step {step}")
    assert engine.synced, f"seed {seed}: not synced after the loss-free phase"


def check_kraken(engine: BookEngine, venue: Book, depth: int, clean: bool, where: str) -> None:
    if not engine.synced:
        assert engine.book.bids() == [] and engine.book.asks() == [], where
        return
    bids, asks = view(venue, depth)
    assert engine.book.bids()[:10] == bids[:10] and engine.book.asks()[:10] == asks[:10], where
    assert engine.checksum_matched, where
    if clean:
        assert (engine.book.bids(), engine.book.asks()) == (bids, asks), where
        windows = engine.book.window()
        assert [w.trusted for w in windows] == [len(bids), len(asks)], where


@pytest.mark.parametrize("seed", range(25))
def test_kraken_engine_is_checked_every_message(seed: int) -> None:
    run_kraken(seed)


def coinbase_event(
    product: str, book: Book, *, snapshot: bool, t: int, levels: tuple[Level, ...] = ()
) -> DepthUpdate:
    if snapshot:
        bids, asks = book.sides()
        return DepthUpdate(product, 0, 0, None, t, t, tuple(bids), tuple(asks), reset=True)
    changed_bids = tuple(level for level in levels if Decimal(level[0]) < 95)
    changed_asks = tuple(level for level in levels if Decimal(level[0]) > 95)
    return DepthUpdate(product, 0, 0, None, t, t, changed_bids, changed_asks)


def run_coinbase(seed: int, steps: int = 400) -> None:
    rng = random.Random(seed)
    products = ["BTC-USD", "ETH-USD", "SOL-USD"]
    venue = {product: Book() for product in products}
    engines = {product: BookEngine(CoinbaseSyncMachine()) for product in products}
    truth_at_applied: dict[str, Book] = {}
    numbering = ConnectionSequence()
    number = 0
    pending_snapshots = list(products)  # the subscribe: each product's first event is its snapshot
    sent: list[tuple[int, str | None, DepthUpdate | None]] = []

    def deliver(entry: tuple[int, str | None, DepthUpdate | None], step: int) -> None:
        seq, product, event = entry
        if numbering.receive(seq) is Continuity.BROKEN:
            # The message out of line is dropped (it may be a stale one), every book resubscribed.
            for name, engine in engines.items():
                engine.invalidate("gap")
                assert not engine.synced, f"seed {seed} step {step}: {name} survived a break"
            pending_snapshots[:] = list(products)
            return
        if product is None or event is None:
            return  # a heartbeat
        engine = engines[product]
        result = engine.on_update(event)
        assert result.resync_reason is None, f"seed {seed} step {step}: {result}"
        if result.changed:
            truth_at_applied[product] = truths[seq]

    truths: dict[int, Book] = {}
    for step in range(steps + 60):
        lossy = step < steps
        if pending_snapshots:
            product: str | None = pending_snapshots.pop(0)
            assert product is not None
            event: DepthUpdate | None = coinbase_event(product, venue[product], snapshot=True, t=step)
        elif rng.random() < 0.1:
            product, event = None, None  # a heartbeat takes a number too
        else:
            product = rng.choice(products)
            book = venue[product]
            before = {k: v for k, v in (*book.bids.items(), *book.asks.items())}
            for _ in range(rng.randint(1, 3)):
                change(rng, book)
            after = {k: v for k, v in (*book.bids.items(), *book.asks.items())}
            levels = tuple(
                after.get(price, (fixed(price, 2), "0"))
                for price in sorted(set(before) | set(after))
                if before.get(price) != after.get(price)
            )
            event = coinbase_event(product, book, snapshot=False, t=step, levels=levels)
        entry = (number, product, event)
        if product is not None:
            truths[number] = venue[product].copy()
        number += 1
        sent.append(entry)
        roll = rng.random()
        if lossy and roll < 0.03:
            # Lost: the number is gone with it. A lost snapshot can go unseen (the first message of a
            # socket has no number before it): the book left waiting for it is resubscribed.
            if product is not None and event is not None and event.reset and product not in pending_snapshots:
                pending_snapshots.append(product)
            continue
        if lossy and roll < 0.05:
            for engine in engines.values():
                engine.on_disconnect()
            numbering.restart()
            number = 0
            sent.clear()  # a new socket: nothing of the old one can arrive on it
            pending_snapshots[:] = list(products)
            continue
        deliver(entry, step)
        if lossy and rng.random() < 0.02 and len(sent) > 2:
            deliver(rng.choice(sent[-5:-1]), step)  # a replay of an earlier message
        for name, engine in engines.items():
            if engine.synced:
                held = (engine.book.bids(), engine.book.asks())
                assert held == truth_at_applied[name].sides(), f"seed {seed} step {step}: {name}"
            else:
                assert engine.book.bids() == [] and engine.book.asks() == []
    assert all(engine.synced for engine in engines.values()), f"seed {seed}: unsynced at the end"


@pytest.mark.parametrize("seed", range(25))
def test_coinbase_engines_are_exact_or_resynced_by_the_connection(seed: int) -> None:
    run_coinbase(seed)


def test_engine_results_carry_no_snapshot_request() -> None:
    # Neither venue serves snapshots over REST: no result of theirs ever asks for one.
    engine = BookEngine(KrakenSyncMachine())
    book = Book()
    book.set("b", BID_PRICES[0], (fixed(BID_PRICES[0], 2), "1.00000000"))
    assert engine.on_update(kraken_snapshot(book, 10, 1)) == EngineResult(True, False, None)
