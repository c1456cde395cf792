"""A node's counters in the store: written when they change, expiring, cheap to keep writing."""

from __future__ import annotations

import orjson
import redis.asyncio as redis

from book_store.schema import BookKey
from ingest_nodes.ops.reporting import REPLICA_STATS_TTL_S, StatsReporter
from ingest_nodes.ops.stats import ReplicaStats

BTC = BookKey("binance.com", "BTCUSDT")


async def events_of(client: redis.Redis) -> int:
    raw = await client.hget(BTC.stats, "1")
    assert isinstance(raw, bytes)
    return int(orjson.loads(raw)["events"])


async def test_entries_are_written_when_they_change_and_their_expiry_is_not_pushed_out_every_time(
    redis_client: redis.Redis,
) -> None:
    reporter = StatsReporter(redis_client, "node-1", ttl_s=30)
    stats = ReplicaStats(events=1)
    await reporter.report({"node_id": "node-1"}, {(BTC, 1): stats})
    assert 0 < await redis_client.ttl(BTC.stats) <= REPLICA_STATS_TTL_S
    assert await events_of(redis_client) == 1

    await redis_client.expire(BTC.stats, 100)
    stats.events = 2
    await reporter.report({"node_id": "node-1"}, {(BTC, 1): stats})
    assert await events_of(redis_client) == 2
    assert await redis_client.ttl(BTC.stats) <= 100  # written, but its expiry left as it was

    await redis_client.hset(BTC.stats, "1", b"tampered")
    await reporter.report({"node_id": "node-1"}, {(BTC, 1): stats})
    assert await redis_client.hget(BTC.stats, "1") == b"tampered"  # unchanged counters: not written
