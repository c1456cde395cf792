"""Node heartbeats: what they vouch for, how the writer sends them, and how readers combine them."""

import struct

import pytest
import redis.asyncio as redis

from book_store.codec import BookStatus, Snapshot, SnapshotMeta, encode_snapshot
from book_store.liveness import (
    Heartbeats,
    NodeHeartbeat,
    decode_heartbeat,
    encode_heartbeat,
    prune_heartbeats,
)
from book_store.reader import BookReader, choose_replica
from book_store.schema import NODES_ALIVE, BookKey
from book_store.writer import BookWriter
from ladder_process.errors import StoreError

BOOK = BookKey("binance.com", "ETHBTC")
SILENCE_MS = 5000


def snap(update_id: int, replica: int, publish_time: int, node: int) -> Snapshot:
    meta = SnapshotMeta(update_id, 1, 1, publish_time, replica, BookStatus.SYNCED, node=node)
    return Snapshot(encode_snapshot(meta, [b'["1","1"]'], []))


def test_a_heartbeat_round_trips_with_its_node_id() -> None:
    beat = NodeHeartbeat(node=7, time=100_000, since=40_000)
    assert decode_heartbeat(encode_heartbeat("host-1-2", beat)) == ("host-1-2", beat)
    with pytest.raises(StoreError):
        decode_heartbeat(b"\x01\x02")
    with pytest.raises(StoreError, match="version"):
        decode_heartbeat(struct.pack("<BQqq", 9, 7, 1, 1))


def test_a_node_vouches_for_what_it_wrote_since_its_since_and_nothing_else() -> None:
    beats = Heartbeats()
    beats.learn(NodeHeartbeat(7, 100_000, 40_000))
    assert beats.heard(50_000, 7) == 100_000  # quiet since 50 s: the node's word carries it
    assert beats.heard(30_000, 7) == 30_000  # older than since: only its own publish time
    assert beats.heard(50_000, 8) == 50_000  # another node
    assert beats.heard(50_000, 0) == 50_000  # a snapshot that names no node (codec version 3)
    assert beats.heard(120_000, 7) == 120_000  # published after the heartbeat: its own time is later


def test_only_a_later_heartbeat_replaces_a_known_one() -> None:
    beats = Heartbeats()
    beats.learn(NodeHeartbeat(7, 100_000, 40_000))
    beats.learn(NodeHeartbeat(7, 90_000, 30_000))  # a stored one read after the channel's newer one
    assert beats.heard(50_000, 7) == 100_000
    beats.learn_stored([b"unreadable", encode_heartbeat("n", NodeHeartbeat(7, 101_000, 41_000))])
    assert beats.heard(50_000, 7) == 101_000 and len(beats) == 1
    beats.clear()
    assert beats.heard(50_000, 7) == 50_000


def test_choose_replica_serves_a_quiet_replica_while_its_node_vouches_for_it() -> None:
    beats = Heartbeats()
    quiet = snap(10, 0, publish_time=50_000, node=7)
    other = snap(10, 1, publish_time=50_000, node=8)
    now = 100_000
    assert choose_replica([quiet, other], now, SILENCE_MS) is None
    assert choose_replica([quiet, other], now, SILENCE_MS, beats) is None
    beats.learn(NodeHeartbeat(7, 99_000, 40_000))
    assert choose_replica([quiet, other], now, SILENCE_MS, beats) is quiet
    assert choose_replica([quiet, other], 99_000 + SILENCE_MS + 1, SILENCE_MS, beats) is None  # node silent


@pytest.mark.single_store(
    "the order of a book's message and the heartbeat shows on one connection only; on a cluster the "
    "book's message comes through its shard's connection and the heartbeat through another"
)
async def test_the_writer_sends_the_heartbeat_after_the_snapshots_of_its_batch(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client, node_id="node-a", node=7)
    pubsub = redis_client.pubsub()
    await pubsub.subscribe(BOOK.channel, NODES_ALIVE)
    for _ in range(2):
        await pubsub.get_message(timeout=1)  # the subscribe confirmations
    writer.heartbeat(100_000, 40_000)
    writer.put(BOOK, 0, encode_snapshot(SnapshotMeta(1, 1, 1, 99_999, 0, BookStatus.SYNCED, node=7), [], []))
    await writer.drain()
    channels = []
    for _ in range(2):
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1)
        assert message is not None
        channels.append(message["channel"].decode())
    assert channels == [BOOK.channel, NODES_ALIVE]
    stored = await redis_client.hget(NODES_ALIVE, "node-a")
    assert isinstance(stored, bytes) and decode_heartbeat(stored) == (
        "node-a",
        NodeHeartbeat(7, 100_000, 40_000),
    )
    await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # unannotated before redis 8


async def test_a_fenced_writer_sends_no_heartbeat(redis_client: redis.Redis) -> None:
    writer = BookWriter(redis_client, node_id="node-a", node=7)
    writer.fence()
    writer.heartbeat(100_000, 40_000)
    await writer.drain()
    assert await redis_client.hget(NODES_ALIVE, "node-a") is None
    writer.unfence()
    await writer.drain()
    assert await redis_client.hget(NODES_ALIVE, "node-a") is not None


async def test_a_heartbeat_the_store_no_longer_held_tells_the_node(redis_client: redis.Redis) -> None:
    writer = BookWriter(redis_client, node_id="node-a", node=7)
    lost = writer.store_lost
    writer.heartbeat(1, 0)
    await writer.drain()
    assert lost.is_set()  # the first one is new too
    lost.clear()
    writer.heartbeat(2, 0)
    await writer.drain()
    assert not lost.is_set()
    await redis_client.flushdb()  # the store restarted empty
    writer.heartbeat(3, 0)
    await writer.drain()
    assert lost.is_set()
    await writer.forget_node()
    assert await redis_client.hlen(NODES_ALIVE) == 0


async def test_readers_read_heartbeats_with_the_books_and_old_ones_are_pruned(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client, node_id="node-a", node=7)
    writer.put(BOOK, 0, encode_snapshot(SnapshotMeta(1, 1, 1, 50_000, 0, BookStatus.SYNCED, node=7), [], []))
    writer.heartbeat(100_000, 40_000)
    await writer.drain()
    await redis_client.hset(NODES_ALIVE, "crashed", encode_heartbeat("crashed", NodeHeartbeat(9, 10_000, 0)))
    beats = Heartbeats()
    heads = await BookReader(redis_client).many([BOOK], beats)
    assert len(beats) == 2 and choose_replica(heads[BOOK].values(), 100_500, SILENCE_MS, beats) is not None
    assert await prune_heartbeats(redis_client, older_than_ms=50_000) == 1
    assert await redis_client.hkeys(NODES_ALIVE) == [b"node-a"]


async def test_a_node_leaving_an_unreachable_store_leaves_its_heartbeat_to_age_out() -> None:
    unreachable = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    writer = BookWriter(unreachable, node_id="node-a", node=7)
    await writer.forget_node()  # no store: logged, not raised, so the node's shutdown goes on
    await unreachable.aclose()
