"""Alpaca books through the real runtime and the fake venue: handshake, keys, resets, reconnects.

Every book is compared, whole, with the venue's true book while its symbol is stalled (Alpaca
messages carry no id to ask the venue for a past state by).
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as redis

from book_store.codec import BookStatus
from book_store.reader import BookReader
from ingest_nodes.runtime.replica import BookReplica
from tests.ingest_nodes.runtime.harness import Harness, published_as, running, venue_config, wait_synced
from tests.waiting import wait_until

ALPACA = "alpaca-crypto"
PAIRS = ["BTC/USD", "ETH/USD", "SOL/USD", "LTC/USD"]
KEYS = (("key-a", "secret-a"), ("key-b", "secret-b"))
GOOD = {"exchanges": ALPACA, "alpaca_key_id": "key-a", "alpaca_secret_key": "secret-a"}


def config(**overrides: Any) -> Any:
    return venue_config(alpaca_symbols=len(PAIRS), alpaca_credentials=KEYS, **overrides)


async def stalled_truth(harness: Harness, replicas: list[BookReplica]) -> None:
    """Stall the venue, let the last frames land, and compare every replica with the true book."""
    await harness.control(action="stall", venue="alpaca", seconds=2)
    await asyncio.sleep(0.3)
    for replica in replicas:
        assert replica.engine.synced, replica.symbol
        await harness.whole_truth(replica)


def connection_of(harness: Harness) -> Any:
    [connection] = harness.exchanges[ALPACA].feed.connections
    return connection


async def test_a_good_key_syncs_many_pairs_on_one_connection(redis_client: redis.Redis) -> None:
    async with running(config(), redis_client, **GOOD) as harness:
        replicas = [harness.replica(ALPACA, pair) for pair in PAIRS]
        await wait_synced(replicas)
        connection = connection_of(harness)
        assert connection.refused is None and connection.stats.connects == 1
        await harness.control(action="rate", venue="alpaca", rate=0)
        await asyncio.sleep(0.3)
        frames, applied = connection.stats.frames, sum(r.engine.update_id or 0 for r in replicas)
        await harness.control(action="burst", venue="alpaca", count=5)  # every pair, 5 times, at once
        await wait_until(
            lambda: sum(r.engine.update_id or 0 for r in replicas) == applied + 5 * len(PAIRS), 5, "the burst"
        )
        assert connection.stats.frames - frames < 5, "frames carry messages of several pairs"
        await stalled_truth(harness, replicas)
        stored = await BookReader(redis_client).many([r.book for r in replicas])
        for replica in replicas:
            snapshot = stored[replica.book][1]
            assert snapshot.status is BookStatus.SYNCED
            assert snapshot.update_id == replica.engine.update_id, "update_id: messages applied"


async def test_a_bad_key_is_refused_without_a_reconnect_storm(redis_client: redis.Redis) -> None:
    bad = {**GOOD, "alpaca_secret_key": "wrong"}
    async with running(config(), redis_client, **bad) as harness:
        replica = harness.replica(ALPACA, "BTC/USD")
        await wait_until(lambda: replica.refusal is not None, 5, "the venue's refusal")
        assert replica.refusal is not None and replica.refusal.reason == "credentials_refused"
        assert replica.refusal.code == 402
        await wait_until(
            lambda: published_as(harness, replica) is BookStatus.REFUSED, 5, "the refusal published"
        )
        await asyncio.sleep(1.0)
        connection = connection_of(harness)
        assert connection.stats.connects == 1, "no retry soon after a refusal"
        assert not replica.engine.synced


async def test_the_connection_limit_is_a_refusal_not_a_storm(redis_client: redis.Redis) -> None:
    async with running(config(alpaca_connection_limit=1), redis_client, **GOOD) as first:
        held = first.replica(ALPACA, "BTC/USD")
        await wait_synced([held])
        second = Harness(first.venue, redis_client, first.session, **GOOD)
        try:
            blocked = second.replica(ALPACA, "BTC/USD", index=2)
            await wait_until(lambda: blocked.refusal is not None, 5, "406")
            assert blocked.refusal is not None and blocked.refusal.reason == "connection_limit"
            await asyncio.sleep(1.0)
            assert connection_of(second).stats.connects == 1
            assert held.engine.synced, "the connection holding the key keeps its books"
        finally:
            await second.close()


async def test_two_replicas_of_a_book_on_one_node_need_two_keys(redis_client: redis.Redis) -> None:
    async with running(config(alpaca_connection_limit=1), redis_client, **GOOD) as harness:
        first = harness.replica(ALPACA, "BTC/USD")
        second = harness.replica(ALPACA, "BTC/USD", index=2)
        assert second.refusal is not None and second.refusal.reason == "credentials_missing"
        await wait_synced([first])
        await asyncio.sleep(0.3)
        assert not second.engine.synced and len(harness.exchanges[ALPACA].feed.connections) == 1
    pool = {"exchanges": ALPACA, "alpaca_credentials": "key-a:secret-a,key-b:secret-b"}
    async with running(config(alpaca_connection_limit=1), redis_client, **pool) as harness:
        replicas = [harness.replica(ALPACA, "BTC/USD"), harness.replica(ALPACA, "BTC/USD", index=2)]
        await wait_synced(replicas)
        assert replicas[0].source is not replicas[1].source
        await stalled_truth(harness, replicas)


async def test_unsubscribe_and_resubscribe(redis_client: redis.Redis) -> None:
    async with running(config(), redis_client, **GOOD) as harness:
        replicas = [harness.replica(ALPACA, pair) for pair in PAIRS[:2]]
        await wait_synced(replicas)

        async def subscribed() -> list[str]:
            async with harness.session.get(harness.venue.url + "/_fake/connections?venue=alpaca") as r:
                [conn] = (await r.json())["connections"]
                return sorted(conn["orderbooks"])

        await harness.exchanges[ALPACA].feed.detach(replicas[1])
        await replicas[1].stop()
        for _ in range(50):
            if await subscribed() == ["BTC/USD"]:
                break
            await asyncio.sleep(0.05)
        assert await subscribed() == ["BTC/USD"]
        before = replicas[0].stats.restarts
        replicas[0].invalidate("replica_mismatch")  # rebuilt by subscribing again: a fresh full book
        assert not replicas[0].engine.synced
        await wait_synced(replicas[:1])
        assert replicas[0].stats.restarts == before + 1
        await stalled_truth(harness, replicas[:1])


async def test_resets_and_a_reset_storm_keep_the_book_true(redis_client: redis.Redis) -> None:
    async with running(config(), redis_client, **GOOD) as harness:
        replicas = [harness.replica(ALPACA, pair) for pair in PAIRS]
        await wait_synced(replicas)
        await harness.control(action="alpaca_reset", symbol="BTC/USD")
        await harness.control(action="alpaca_reset", count=25)
        await asyncio.sleep(0.2)
        assert all(r.engine.synced for r in replicas) and not any(r.stats.restarts for r in replicas)
        await stalled_truth(harness, replicas)


async def test_reconnects_with_backoff_and_resyncs_from_the_next_full_book(redis_client: redis.Redis) -> None:
    async with running(config(), redis_client, **GOOD) as harness:
        replicas = [harness.replica(ALPACA, pair) for pair in PAIRS]
        await wait_synced(replicas)
        connection = connection_of(harness)
        await harness.control(action="disconnect", venue="alpaca", mode="drop")
        await wait_until(lambda: connection.stats.connects == 2, 10, "the reconnect")
        await wait_synced(replicas)
        assert all(r.stats.resyncs["disconnect"] == 1 for r in replicas)
        await stalled_truth(harness, replicas)
