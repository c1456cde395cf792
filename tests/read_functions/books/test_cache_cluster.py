"""The book cache on a real Valkey Cluster: sharded change messages keep books true, and a shard's
loss forgets exactly that shard's books."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.asyncio.cluster import RedisCluster

from book_store.codec import BookStatus, SnapshotMeta, encode_snapshot
from book_store.connect import store_client
from book_store.schema import BookKey
from book_store.writer import BookWriter
from ladder_process.clock import now_ms
from ladder_process.errors import StoreError
from read_functions.books.cache import BookCache
from read_functions.books.sharded_feed import ShardedChangeFeed
from tests.valkey_cluster import ValkeyCluster
from tests.waiting import wait_until

BOOKS = [BookKey("binance.com", f"COIN{i}USDT") for i in range(12)]


def snap(update_id: int) -> bytes:
    meta = SnapshotMeta(update_id, 1, 1, 1000, 0, BookStatus.SYNCED)
    return encode_snapshot(meta, [f'["{update_id}","1"]'.encode()], [])


async def open_cache(url: str) -> tuple[RedisCluster, BookCache]:
    client = store_client(url, cluster=None)
    assert isinstance(client, RedisCluster)
    await client.initialize()
    cache = BookCache(client, url, idle_s=600)
    await cache.start()
    assert isinstance(cache.feed, ShardedChangeFeed)
    return client, cache


@pytest.fixture
async def cached(clean_cluster_url: str) -> AsyncIterator[tuple[RedisCluster, BookCache]]:
    client, cache = await open_cache(clean_cluster_url)
    yield client, cache
    await cache.close()
    await client.aclose()


def update_ids(cache: BookCache, books: list[BookKey]) -> list[int | None]:
    return [cache._entries[b].replicas[0].meta.update_id if b in cache._entries else None for b in books]


async def test_books_of_every_shard_stay_true_from_sharded_messages(
    cached: tuple[RedisCluster, BookCache],
) -> None:
    client, cache = cached
    writer = BookWriter(client)
    for book in BOOKS:
        writer.put(book, 0, snap(1))
    await writer.drain()
    entries = await cache.entries(BOOKS)
    assert all(e.live for e in entries) and [e.replicas[0].meta.update_id for e in entries] == [1] * 12
    misses = cache.misses
    for update_id in (2, 3):
        for book in BOOKS:
            writer.put(book, 0, snap(update_id))
        await writer.drain()
    await wait_until(lambda: update_ids(cache, BOOKS) == [3] * 12, 5, "every book's latest snapshot")
    await cache.entries(BOOKS)
    assert cache.misses == misses, "the changes came by message, not by reading the store"


async def test_a_killed_primary_forgets_only_its_books_and_they_come_back() -> None:
    with ValkeyCluster() as cluster:
        client, cache = await open_cache(cluster.url)
        try:
            writer = BookWriter(client)
            for book in BOOKS:
                writer.put(book, 0, snap(1))
            await writer.drain()
            await cache.entries(BOOKS)
            victim = cluster.primaries[0]
            doomed = [b for b in BOOKS if client.get_node_from_key(b.snapshots).port == victim.port]  # type: ignore[union-attr]
            spared = [b for b in BOOKS if b not in doomed]
            assert doomed and spared
            spared_entries = [cache._entries[b] for b in spared]

            cluster.kill(victim)
            await wait_until(
                lambda: all(b not in cache._entries for b in doomed), 15, "the shard's books dropped"
            )
            assert all(e.live for e in spared_entries), "books of the other shards were not touched"
            feed = cache.feed
            assert feed is not None
            await wait_until(lambda: feed.connected, 10, "the plain feed at another node")

            await asyncio.to_thread(cluster.wait_healthy, 30)  # the replica took over
            for _ in range(50):  # the slot map catches up with the promotion
                try:
                    entries = await cache.entries(doomed)
                    break
                except StoreError:  # a store error (a 503 with Retry-After), never anything else
                    await asyncio.sleep(0.2)
            else:
                raise AssertionError("the shard's books never came back")
            assert all(e.live for e in entries)
            for book in BOOKS:
                writer.put(book, 0, snap(9))
            await writer.drain()
            await wait_until(lambda: update_ids(cache, BOOKS) == [9] * 12, 10, "changes of every shard again")
        finally:
            await cache.close()
            await client.aclose()


async def test_a_node_s_heartbeat_reaches_the_cache_on_a_cluster_and_vouches_for_its_quiet_books(
    cached: tuple[RedisCluster, BookCache],
) -> None:
    client, cache = cached
    writer = BookWriter(client, node_id="node-a", node=7)
    meta = SnapshotMeta(1, 1, 1, 1000, 0, BookStatus.SYNCED, node=7)  # published long ago
    for book in BOOKS:
        writer.put(book, 0, encode_snapshot(meta, [b'["1","1"]'], []))
    writer.heartbeat(now_ms(), 0)
    await writer.drain()
    assert writer.store_lost.is_set()  # the store held no heartbeat of this node before
    await wait_until(lambda: len(cache.heartbeats) == 1, 5, "the heartbeat on the plain feed")
    entries = await cache.entries(BOOKS)
    assert all(entry.served(now_ms(), 5000) is not None for entry in entries)
    await writer.close()
