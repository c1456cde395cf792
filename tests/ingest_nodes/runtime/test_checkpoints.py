"""Replica cross-checks: checkpoints at shared ids, digests, and the majority rule on a mismatch."""

from __future__ import annotations

import redis.asyncio as redis

from book_store.schema import BookKey
from ingest_nodes.core.book import OrderBook
from ingest_nodes.ops.checkpoints import (
    COMPARED,
    SLICE,
    Checkpoint,
    ReplicaChecker,
    checkpoint_key,
    digest_of,
    same_top,
    selected,
)
from ingest_nodes.ops.stats import ReplicaStats
from tests.ingest_nodes.runtime.harness import running, venue_config, wait_synced
from tests.waiting import wait_until


def test_checkpoint_ids_are_a_fixed_sample_of_about_one_in_every() -> None:
    chosen = [uid for uid in range(10**9, 10**9 + 64_000) if selected(uid, 64)]
    assert 800 <= len(chosen) <= 1200
    assert chosen == [uid for uid in range(10**9, 10**9 + 64_000) if selected(uid, 64)]


def test_digests_ignore_how_numbers_are_written_but_not_what_they_are() -> None:
    a, b, c = OrderBook(), OrderBook(), OrderBook()
    a.load([("4.00", "1.50")], [("4.10", "2")], bids_complete=True, asks_complete=True)
    b.load([("4.0", "1.5")], [("4.1000", "2.0")], bids_complete=True, asks_complete=True)
    c.load([("4.0", "1.6")], [("4.1", "2")], bids_complete=True, asks_complete=True)
    assert digest_of(a, 1, 1) == digest_of(b, 1, 1) != digest_of(c, 1, 1)
    assert same_top(a, b, 20) and not same_top(a, c, 20)


async def test_replicas_of_one_book_agree_at_equal_ids(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client) as harness:
        replicas = [harness.replica("binance.com-futures", "BTCUSDT", index=i) for i in (1, 2)]
        assert replicas[0].source is not replicas[1].source, "replicas of a book never share a socket"
        await wait_synced(replicas)
        checker = ReplicaChecker(redis_client, resync=True)
        await wait_until(lambda: harness.checkpoints.recorded > 40, 5, "checkpoints")
        await harness.writer.drain()
        await harness.checkpoints.drain()
        assert await checker.check(replicas) == []
        assert checker.compared > 0 and checker.mismatches == 0


class Kept:
    """A replica as the checker sees it, recording whether it was invalidated."""

    def __init__(self, book: BookKey, replica: int) -> None:
        self.book = book
        self.replica = replica
        self.stats = ReplicaStats()
        self.invalidated: list[str] = []

    def invalidate(self, reason: str) -> None:
        self.invalidated.append(reason)


async def store_checkpoints(client: redis.Redis, book: BookKey, digests: dict[int, str]) -> None:
    """Replica -> digest at update 1000 (same depth), as each replica would have recorded it."""
    for replica, digest in digests.items():
        await client.hset(book.snapshots, str(replica), b"")
        await client.lpush(checkpoint_key(book, replica), Checkpoint(1000, 20, 20, digest).encode())


async def test_the_minority_is_invalidated(redis_client: redis.Redis) -> None:
    book = BookKey("binance.com", "ETHBTC")
    await store_checkpoints(redis_client, book, {1: "aa", 2: "aa", 3: "bb"})
    kept = [Kept(book, r) for r in (1, 2, 3)]
    checker = ReplicaChecker(redis_client, resync=True)
    found = await checker.check(kept)
    assert [(m.replica, m.agreeing, m.compared) for m in found] == [(3, 1, 3)]
    assert [k.invalidated for k in kept] == [[], [], ["replica_mismatch"]]
    assert await checker.check(kept) == [], "a mismatch is reported once"


async def test_two_disagreeing_replicas_both_resync(redis_client: redis.Redis) -> None:
    book = BookKey("binance.com-futures", "ETHUSDT")
    await store_checkpoints(redis_client, book, {4: "aa", 7: "cc"})
    kept = [Kept(book, 4), Kept(book, 7)]
    checker = ReplicaChecker(redis_client, resync=True)
    assert len(await checker.check(kept)) == 2
    assert all(k.invalidated == ["replica_mismatch"] and k.stats.mismatches == 1 for k in kept)
    report_only = ReplicaChecker(redis_client, resync=False)
    fresh = [Kept(book, 4), Kept(book, 7)]
    assert len(await report_only.check(fresh)) == 2
    assert all(not k.invalidated for k in fresh)


async def test_records_of_different_depths_are_not_compared(redis_client: redis.Redis) -> None:
    book = BookKey("binance.com", "BNBBTC")
    await redis_client.hset(book.snapshots, mapping={"1": b"", "2": b""})
    await redis_client.lpush(checkpoint_key(book, 1), Checkpoint(5, 20, 20, "aa").encode())
    await redis_client.lpush(checkpoint_key(book, 2), Checkpoint(5, 12, 20, "bb").encode())
    checker = ReplicaChecker(redis_client, resync=True)
    assert await checker.check([Kept(book, 1), Kept(book, 2)]) == []
    assert checker.compared == 0


async def test_a_round_reads_every_book_a_slice_at_a_time_and_only_the_newest_checkpoints(
    redis_client: redis.Redis,
) -> None:
    books = [BookKey("binance.com", f"SLICE{i}USDT") for i in range(2 * SLICE + 7)]
    for book in books:
        await store_checkpoints(redis_client, book, {1: "aa", 2: "aa"})
    last = books[-1]  # in the last slice: disagrees at a newer id
    await redis_client.lpush(checkpoint_key(last, 1), Checkpoint(1001, 20, 20, "aa").encode())
    await redis_client.lpush(checkpoint_key(last, 2), Checkpoint(1001, 20, 20, "bb").encode())
    first = books[0]  # disagrees only at an id older than the newest COMPARED: not read again
    await redis_client.delete(checkpoint_key(first, 1), checkpoint_key(first, 2))
    for replica, digest in ((1, "aa"), (2, "bb")):
        key = checkpoint_key(first, replica)
        await redis_client.lpush(key, Checkpoint(900, 20, 20, digest).encode())
        for update_id in range(901, 901 + COMPARED):
            await redis_client.lpush(key, Checkpoint(update_id, 20, 20, "aa").encode())
    checker = ReplicaChecker(redis_client, resync=False)
    found = await checker.check([Kept(book, r) for book in books for r in (1, 2)])
    assert sorted((m.book.market, m.replica, m.update_id) for m in found) == [
        (last.market, 1, 1001),
        (last.market, 2, 1001),
    ]
    assert checker.compared == 2 * (len(books) + 1) + 2 * (COMPARED - 1)
