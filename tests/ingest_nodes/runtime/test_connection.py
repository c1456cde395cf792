"""The connection manager: placement over connections, paced subscriptions, rejected batches."""

from __future__ import annotations

import asyncio

import redis.asyncio as redis

from ingest_nodes.runtime.connection import StreamConnection, rollover_age
from tests.ingest_nodes.runtime.harness import running, venue_config, wait_synced
from tests.waiting import wait_until

SPOT = ["BTCUSDT", "ETHUSDT", "ETHBTC", "BNBBTC", "BNBUSDT", "SOLUSDT", "XRPUSDT", "ADAUSDT", "DOGEUSDT"]


def test_rollover_ages_are_spread_below_the_limit() -> None:
    ages = [rollover_age(1000.0, 0.1) for _ in range(200)]
    assert all(900.0 <= age <= 1000.0 for age in ages)
    assert max(ages) - min(ages) > 50


async def test_replicas_fill_connections_and_never_share_one(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client, streams_per_connection=4) as harness:
        first = [harness.replica("binance.com", s) for s in SPOT]
        second = [harness.replica("binance.com", s, index=2) for s in SPOT[:3]]
        feed = harness.exchanges["binance.com"].feed
        assert [len(c) for c in feed.connections] == [4, 4, 4]
        for a, b in zip(first, second, strict=False):
            assert a.source is not b.source
        await wait_synced(first + second)
        for replica in second:
            await harness.truth(replica)


async def test_subscriptions_are_paced_under_the_message_limit(redis_client: redis.Redis) -> None:
    """Nine SUBSCRIBE messages to a venue that drops a client sending more than five a second."""
    async with running(venue_config(), redis_client) as harness:
        runtime = harness.exchanges["binance.com"]
        connection = StreamConnection(runtime.spec, name="paced", max_streams=20, subscribe_batch=1)
        replicas = [harness.replica("binance.com", s, index=3) for s in SPOT]
        for replica in replicas:
            await runtime.feed.detach(replica)
            connection.add(replica.symbol, replica)
            replica.source = connection
        connection.start()
        try:
            await wait_synced(replicas, 8)
            assert connection.stats.connects == 1 and connection.stats.disconnects == 0
            assert connection.stats.subscribe_errors == 0
        finally:
            await connection.close()


async def test_a_rejected_subscription_is_counted_and_retried(redis_client: redis.Redis) -> None:
    async with running(venue_config(max_streams_per_connection=2), redis_client) as harness:
        replicas = [harness.replica("binance.com", s) for s in SPOT[:3]]
        connection = harness.exchanges["binance.com"].feed.connections[0]
        await wait_until(lambda: connection.stats.subscribe_errors >= 1, 3, "the venue's refusal")
        await asyncio.sleep(0.3)
        assert not any(r.engine.synced for r in replicas), "nothing was subscribed"
        assert connection.stats.disconnects == 0, "a refused batch does not cost the connection"
