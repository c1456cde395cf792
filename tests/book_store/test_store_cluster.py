"""book_store on a real Valkey Cluster: books spread over the shards, change messages sharded."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from redis.asyncio.cluster import ClusterPubSub, RedisCluster

from book_store.codec import DEEP, BookStatus, Snapshot, SnapshotMeta, decode_message, encode_snapshot
from book_store.connect import store_client
from book_store.reader import BookReader
from book_store.schema import BookKey
from book_store.writer import BookWriter

BOOKS = [BookKey("binance.com", f"COIN{i}USDT") for i in range(9)]


def snap(update_id: int, replica: int, *, levels: int = 1, deep: bool = False) -> bytes:
    meta = SnapshotMeta(update_id, 1, 1, 1000, replica, BookStatus.SYNCED)
    bids = [f'["{update_id}.{i}","1"]'.encode() for i in range(levels)]
    return encode_snapshot(meta, bids, [], DEEP if deep else 0)


@pytest.fixture
async def cluster(clean_cluster_url: str) -> AsyncIterator[RedisCluster]:
    client = store_client(clean_cluster_url, cluster=None)
    assert isinstance(client, RedisCluster)
    await client.initialize()
    yield client
    await client.aclose()


async def sharded_messages(
    pubsub: ClusterPubSub, count: int, timeout_s: float = 5.0
) -> list[tuple[str, bytes]]:
    """The next ``count`` sharded messages (channel, data), reading every shard's connection."""
    got: list[tuple[str, bytes]] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while len(got) < count and loop.time() < deadline:
        for name in list(pubsub.node_pubsub_mapping):
            node = pubsub.cluster.get_node(node_name=name)
            message = await pubsub.get_sharded_message(timeout=0.01, target_node=node)
            if message is not None and message["type"] == "smessage":
                got.append((message["channel"].decode(), message["data"]))
    return got


async def test_writer_spreads_books_over_the_shards_and_shards_their_messages(cluster: RedisCluster) -> None:
    assert len({cluster.get_node_from_key(book.snapshots).name for book in BOOKS}) == 3  # type: ignore[union-attr]
    pubsub = cluster.pubsub()
    for book in BOOKS:
        await pubsub.ssubscribe(book.channel)
    broadcast = cluster.pubsub()
    await broadcast.subscribe(*(book.channel for book in BOOKS))
    writer = BookWriter(cluster)
    for i, book in enumerate(BOOKS):
        writer.put(book, 0, snap(i + 1, 0))
        writer.put(book, 1, snap(i + 100, 1, levels=50, deep=True), deep=True)  # through the script
    await writer.drain()

    stored = await BookReader(cluster).stored_many(BOOKS)
    assert {b: s.heads[0].meta.update_id for b, s in stored.items()} == {
        b: i + 1 for i, b in enumerate(BOOKS)
    }
    assert {b: s.deeps[1].meta.update_id for b, s in stored.items()} == {
        b: i + 100 for i, b in enumerate(BOOKS)
    }

    received = await sharded_messages(pubsub, 2 * len(BOOKS) + 2)  # pick up any extra
    assert sorted(received) == sorted(
        [(b.channel, b"\x00\x00" + snap(i + 1, 0)) for i, b in enumerate(BOOKS)]
        + [(b.channel, b"\x01\x00" + snap(i + 100, 1, levels=50, deep=True)) for i, b in enumerate(BOOKS)]
    )
    assert await broadcast.get_message(timeout=0.2) is not None  # its subscribe confirmation
    leaked = [
        m
        for m in [await broadcast.get_message(timeout=0.2) for _ in range(3)]
        if m and m["type"] == "message"
    ]
    assert leaked == [], "change messages are sharded, never broadcast"
    await pubsub.aclose()
    await broadcast.aclose()


async def test_a_removed_replica_is_deleted_and_announced_by_a_tombstone(cluster: RedisCluster) -> None:
    book = BOOKS[4]
    writer = BookWriter(cluster)
    writer.put(book, 3, snap(7, 3))
    await writer.drain()
    pubsub = cluster.pubsub()
    await pubsub.ssubscribe(book.channel)
    writer.remove(book, 3)
    await writer.drain()
    assert (await BookReader(cluster).stored(book)).heads == {}
    messages = await sharded_messages(pubsub, 2)
    assert [channel for channel, _ in messages] == [book.channel] * 2
    tombstones = [decode_message(data) for _, data in messages]
    assert [replica for replica, _ in tombstones] == [3, 3]
    assert sorted(Snapshot(bytes(t)).deep for _, t in tombstones) == [False, True]
    assert {Snapshot(bytes(t)).status for _, t in tombstones} == {BookStatus.RESYNCING}
    await pubsub.aclose()
