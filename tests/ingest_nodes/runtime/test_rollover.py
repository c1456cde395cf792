"""Connection endings: age-limit rollovers splice books onto a successor; shutdowns and drops resync."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as redis

from tests.ingest_nodes.runtime.harness import running, venue_config, wait_synced
from tests.waiting import wait_until

SPOT = ["BTCUSDT", "ETHBTC", "BNBBTC"]
FUTURES = ["BTCUSDT", "ETHUSDT", "SOLUSDT"]


async def test_rollovers_keep_every_book_synced_without_a_snapshot(redis_client: redis.Redis) -> None:
    async with running(
        venue_config(), redis_client, connection_max_age_s=1.0, rollover_jitter=0.0
    ) as harness:
        replicas = [harness.replica("binance.com", s) for s in SPOT]
        replicas += [harness.replica("binance.com-futures", s) for s in FUTURES]
        await wait_synced(replicas)
        snapshots = {r.book: r.stats.snapshots for r in replicas}
        feeds = [runtime.feed for runtime in harness.exchanges.values()]
        counted = [0] * len(feeds)
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline:
            unsynced = [r.book for r in replicas if not r.engine.synced]
            assert not unsynced, f"lost sync during a rollover: {unsynced}"
            now = [feed.connection_totals().rollovers for feed in feeds]
            assert all(n >= c for n, c in zip(now, counted, strict=True)), "a node's counters went down"
            counted = now
            await asyncio.sleep(0.01)
        for replica in replicas:
            assert replica.stats.handovers >= 2, replica.stats
            assert replica.stats.snapshots == snapshots[replica.book], "a handover must not cost a snapshot"
            assert replica.stats.restarts == 0, replica.stats
            await harness.truth(replica)
        for runtime in harness.exchanges.values():
            totals = runtime.feed.connection_totals()
            assert totals.rollovers >= 2 and totals.disconnects >= 2
            assert len(runtime.feed.connections) <= 2, "old connections are closed once empty"


async def test_a_server_shutdown_moves_books_to_a_successor(redis_client: redis.Redis) -> None:
    """The fake venue closes right after its notice: books resync on the successor connection."""
    async with running(venue_config(), redis_client) as harness:
        replicas = [harness.replica("binance.com-futures", s) for s in FUTURES]
        await wait_synced(replicas)
        await harness.control(action="server_shutdown", venue="futures")
        feed = harness.exchanges["binance.com-futures"].feed
        await wait_until(lambda: feed.connection_totals().shutdown_notices >= 1, 3, "the notice")
        await wait_until(lambda: all(r.stats.restarts for r in replicas), 3, "books leaving the old socket")
        await wait_synced(replicas, 5)
        for replica in replicas:
            await harness.truth(replica)
        assert feed.connection_totals().rollovers == 1


async def test_a_dropped_socket_reconnects_and_resyncs(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client) as harness:
        replicas = [harness.replica("binance.com", s) for s in SPOT]
        await wait_synced(replicas)
        await harness.control(action="disconnect", venue="spot", mode="drop")
        await wait_until(lambda: all(r.stats.resyncs["disconnect"] for r in replicas), 3, "resyncs")
        await wait_synced(replicas, 5)
        for replica in replicas:
            await harness.truth(replica)
        totals = harness.exchanges["binance.com"].feed.connection_totals()
        assert totals.connects == 2 and totals.disconnects == 1
