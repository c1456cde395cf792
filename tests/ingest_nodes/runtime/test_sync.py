"""Spot and USD-M futures books synced by the real runtime against the fake venue, checked with its truth."""

from __future__ import annotations

import redis.asyncio as redis

from book_store.codec import BookStatus
from book_store.reader import BookReader
from book_store.schema import BookKey
from tests.ingest_nodes.runtime.harness import running, venue_config, wait_synced
from tests.waiting import wait_until

SPOT = ["BTCUSDT", "ETHUSDT", "ETHBTC", "BNBBTC", "SOLUSDT"]
FUTURES = ["BTCUSDT", "ETHUSDT", "SOLUSDT", "XRPUSDT", "LINKUSDT"]


async def test_spot_and_futures_books_equal_the_venue_at_their_update_id(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client) as harness:
        replicas = [harness.replica("binance.com", s) for s in SPOT]
        replicas += [harness.replica("binance.com-futures", s) for s in FUTURES]
        await wait_synced(replicas)
        for _ in range(3):
            for replica in replicas:
                await harness.truth(replica)
        await harness.writer.drain()
        stored = await BookReader(redis_client).many([r.book for r in replicas])
        for replica in replicas:
            snapshot = stored[replica.book][1]
            assert snapshot.meta.status is BookStatus.SYNCED
            assert snapshot.bids(5) and snapshot.asks(5)
        # Futures ids jump between events (one id space for every symbol): pu chains them, not U.
        assert all(r.stats.resyncs["gap"] == 0 for r in replicas)
        stats = await harness.venue_stats()
        assert stats["http_429"] == 0 and stats["http_418"] == 0


async def test_the_snapshot_depth_follows_the_published_depth(redis_client: redis.Redis) -> None:
    """Publishing 20 levels: futures snapshots use limit 20 (weight 2), spot the 1-100 tier (weight 5)."""
    async with running(venue_config(), redis_client) as harness:
        spot = harness.replica("binance.com", "ETHBTC", depth=20)
        futures = harness.replica("binance.com-futures", "ETHUSDT", depth=20)
        assert (spot.snapshot_limit, futures.snapshot_limit) == (100, 20)
        await wait_synced([spot, futures])
        # Refreshes of the trusted window stay in the same tiers (spot 100, futures 50: weight 2).
        schedulers = [x.scheduler for x in harness.exchanges.values()]
        await wait_until(
            lambda: not any(s.in_flight or s.pending for s in schedulers), 5, "no fetch under way"
        )
        spent = {e: x.stats.weight_spent for e, x in harness.exchanges.items()}
        fetched = {r: r.stats.snapshots + r.stats.background_snapshots for r in (spot, futures)}
        assert spent["binance.com"] == 5 * fetched[spot]
        assert spent["binance.com-futures"] == 2 * fetched[futures]
        stats = await harness.venue_stats()
        assert sum(stats["venues"]["futures"]["weight_used"].values()) == spent["binance.com-futures"]


async def test_a_non_ascii_symbol_syncs(redis_client: redis.Redis) -> None:
    symbol = "币安人生USDT"
    async with running(venue_config(unicode_symbol=True), redis_client) as harness:
        replica = harness.replica("binance.com", symbol)
        await wait_synced([replica])
        await harness.truth(replica)
        assert replica.book == BookKey("binance.com", symbol)
        await wait_until(lambda: harness.publisher.published(replica) is not None, 2, "a publish")
