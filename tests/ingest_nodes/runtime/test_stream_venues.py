"""Kraken and Coinbase books through the real runtime and the fake venue.

Every book is compared, while the venue keeps moving, with the venue's true book as of the last
message the book applied (the fake stamps a symbol's messages at least a millisecond apart, so
the millisecond a book was last stamped with names one state of the venue).
"""

from __future__ import annotations

import asyncio

import redis.asyncio as redis

from book_store.codec import BookStatus
from ingest_nodes.runtime.replica import BookReplica
from ladder_process.clock import now_ms
from tests.ingest_nodes.runtime.harness import Harness, published_as, running, venue_config, wait_synced
from tests.waiting import wait_until

KRAKEN = "kraken"
COINBASE = "coinbase"
PAIRS = ["BTC/USD", "ETH/USD", "SOL/USD"]
PRODUCTS = ["BTC-USD", "ETH-USD", "SOL-USD"]
CONFIG = venue_config(kraken_symbols=4, coinbase_symbols=4)


async def true_while_moving(harness: Harness, replicas: list[BookReplica], rounds: int = 5) -> None:
    for _ in range(rounds):
        for replica in replicas:
            assert replica.engine.synced, replica.symbol
            await harness.truth(replica)
        await asyncio.sleep(0.05)


def connection_of(harness: Harness, exchange: str) -> object:
    [connection] = harness.exchanges[exchange].feed.connections
    return connection


async def test_kraken_books_are_checked_at_every_message_and_true(redis_client: redis.Redis) -> None:
    async with running(CONFIG, redis_client, exchanges=KRAKEN) as harness:
        depths = (10, 20, 100)
        replicas = [
            harness.replica(KRAKEN, pair, depth=depth) for pair, depth in zip(PAIRS, depths, strict=True)
        ]
        await wait_synced(replicas)
        await true_while_moving(harness, replicas)
        for replica, kept in zip(replicas, (10, 25, 100), strict=True):
            machine = replica.engine.machine
            assert getattr(machine, "depth", None) == kept, "subscribed at the depth that covers the book's"
            assert replica.engine.checksum_matched is True and replica.engine.checksum is not None
            bids, asks = replica.engine.book.window()
            assert (bids.trusted, bids.bounded) == (kept, True) and (asks.trusted, asks.bounded) == (
                kept,
                True,
            )
        assert not any(replica.stats.restarts for replica in replicas)


async def test_a_corrupted_kraken_checksum_resyncs_that_book_at_once(redis_client: redis.Redis) -> None:
    async with running(CONFIG, redis_client, exchanges=KRAKEN) as harness:
        replicas = [harness.replica(KRAKEN, pair) for pair in PAIRS]
        await wait_synced(replicas)
        hit = replicas[0]
        await harness.control(action="rate", venue="kraken", rate=0)
        await asyncio.sleep(0.2)
        await harness.control(action="kraken_checksum", venue="kraken", symbol=hit.symbol)
        await harness.control(action="burst", venue="kraken", symbol=hit.symbol, count=1)
        await wait_until(lambda: hit.stats.resyncs["checksum"] == 1, 5, "the checksum failure")
        assert hit.engine.checksum_matched is False or hit.engine.synced
        await wait_synced(replicas)  # subscribed again: a fresh snapshot
        assert hit.engine.checksum_matched is True
        assert [r.stats.restarts for r in replicas[1:]] == [0, 0], "only the wrong book resyncs"
        await harness.control(action="rate", venue="kraken", rate=20)
        await true_while_moving(harness, replicas)


async def test_a_deeper_subscriber_resubscribes_the_pair_at_a_deeper_depth(redis_client: redis.Redis) -> None:
    async with running(CONFIG, redis_client, exchanges=KRAKEN) as harness:
        replica = harness.replica(KRAKEN, "ETH/USD", depth=10)
        await wait_synced([replica])
        replica.set_depth(150)
        await wait_until(lambda: getattr(replica.engine.machine, "depth", None) == 500, 5, "depth 500")
        await wait_synced([replica])
        bids, _asks = replica.engine.book.window()
        assert 150 < bids.trusted < 500 and not bids.bounded, "the fake's ~200 levels: the whole side"
        await true_while_moving(harness, [replica])


async def test_coinbase_books_are_true_while_the_venue_moves(redis_client: redis.Redis) -> None:
    async with running(CONFIG, redis_client, exchanges=COINBASE) as harness:
        replicas = [harness.replica(COINBASE, product) for product in PRODUCTS]
        await wait_synced(replicas)
        await true_while_moving(harness, replicas)
        for replica in replicas:
            bids, asks = replica.engine.book.window()
            assert not bids.bounded and not asks.bounded, "a snapshot is the whole book"
            assert replica.engine.checksum is None, "Coinbase sends no checksum: none is shown"


async def test_a_coinbase_alias_syncs_from_its_books_stream_apart_from_the_book(
    redis_client: redis.Redis,
) -> None:
    """BTC-USDC, the catalogue's alias of BTC-USD, rides under BTC-USD's name (the venue labels the
    events of either subscription ``BTC-USD``): each of the two books syncs on a connection of its
    own and equals the venue's BTC-USD book at every message."""
    async with running(CONFIG, redis_client, exchanges=COINBASE) as harness:
        feed = harness.exchanges[COINBASE].feed
        feed.aliases = {"BTC-USDC": "BTC-USD"}
        alias, book = harness.replica(COINBASE, "BTC-USDC"), harness.replica(COINBASE, "BTC-USD")
        await wait_synced([alias, book])
        assert alias.source is not None and book.source is not None and alias.source is not book.source
        assert alias.source.venue_name("BTC-USDC") == "BTC-USD" and alias.source.carries("BTC-USD")
        for _ in range(5):
            for replica in (alias, book):
                assert replica.engine.synced
                await harness.truth(replica, "BTC-USD")
            await asyncio.sleep(0.05)
        assert alias.stats.events > 5 and not alias.stats.resyncs


async def test_heartbeats_keep_a_quiet_book_served_and_confirmed(redis_client: redis.Redis) -> None:
    config = venue_config(kraken_symbols=4, coinbase_symbols=4, heartbeat_s=0.2)
    async with running(config, redis_client, exchanges="kraken,coinbase", stale_after_ms=400) as harness:
        replicas = [harness.replica(KRAKEN, "ETH/USD"), harness.replica(COINBASE, "ETH-USD")]
        await wait_synced(replicas)
        await harness.control(action="stall", venue="kraken", seconds=3)
        await harness.control(action="stall", venue="coinbase", seconds=3)
        await asyncio.sleep(2.0)  # silence for five times stale_after
        for replica in replicas:
            assert replica.engine.synced and published_as(harness, replica) is BookStatus.SYNCED, replica.book
            confirmed = replica.watch.confirmed_ms
            assert confirmed is not None and now_ms() - confirmed < 1000, "each heartbeat vouches for it"


async def test_a_lost_coinbase_message_resyncs_every_book_of_its_connection(
    redis_client: redis.Redis,
) -> None:
    async with running(CONFIG, redis_client, exchanges=COINBASE) as harness:
        replicas = [harness.replica(COINBASE, product) for product in PRODUCTS]
        other = harness.replica(COINBASE, PRODUCTS[0], index=2)  # a second replica: its own connection
        await wait_synced([*replicas, other])
        connection = replicas[0].source
        assert connection is not None and other.source is not connection
        conns = await _connection_ids(harness, PRODUCTS[1])
        hit = next(conn for conn in conns if conn["products"] == PRODUCTS)
        await harness.control(action="lose_message", venue="coinbase", connection=hit["id"])
        await wait_until(lambda: all(r.stats.resyncs["gap"] == 1 for r in replicas), 5, "every book resyncs")
        assert connection.stats.sequence_breaks == 1
        await wait_synced(replicas)
        assert other.stats.restarts == 0, "another connection's book is untouched"
        await true_while_moving(harness, [*replicas, other])
        # A gap in one product breaks the numbering of every connection that carries it.
        await harness.control(action="gap", venue="coinbase", symbol=PRODUCTS[2])
        await wait_until(
            lambda: all(r.stats.resyncs["gap"] == 2 for r in replicas), 5, "a gap in one product"
        )
        await wait_synced(replicas)
        assert other.stats.restarts == 0, "its connection does not carry that product"


async def test_a_snapshot_that_never_comes_is_asked_for_again(redis_client: redis.Redis) -> None:
    async with running(CONFIG, redis_client, exchanges=KRAKEN) as harness:
        replica = harness.replica(KRAKEN, "ETH/USD")
        await wait_synced([replica])
        assert not replica.retry_snapshot(now_ms() + 60_000, 1), "a synced book is never subscribed again"
        await harness.control(action="rate", venue="kraken", rate=0)
        await asyncio.sleep(0.2)
        await harness.control(action="lose_message", venue="kraken", connection="one")  # the next snapshot
        replica.invalidate("replica_mismatch")
        await asyncio.sleep(0.3)
        events = replica.stats.events
        await harness.control(action="rate", venue="kraken", rate=20)
        await asyncio.sleep(0.5)
        assert not replica.engine.synced and replica.stats.events > events, (
            "updates come, the snapshot did not"
        )
        assert not replica.retry_snapshot(now_ms(), 10_000), "not overdue yet"
        assert replica.retry_snapshot(now_ms() + 10_000, 10_000)
        await wait_synced([replica])
        await true_while_moving(harness, [replica])


async def _connection_ids(harness: Harness, product: str) -> list[dict[str, object]]:
    async with harness.session.get(
        f"{harness.venue.url}/_fake/connections?venue=coinbase&symbol={product}"
    ) as r:
        body: dict[str, list[dict[str, object]]] = await r.json()
        return body["connections"]
