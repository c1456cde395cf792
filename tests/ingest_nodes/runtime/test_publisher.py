"""The publisher against a real Valkey: head and deep snapshots, their flags, and the deep rate."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import cast

import orjson
import redis.asyncio as redis
import uvloop

from book_store.codec import BookStatus, Snapshot, decode_message
from book_store.connect import opened, store_client
from book_store.delta import REPLACE, Delta, read_change
from book_store.liveness import decode_heartbeat
from book_store.reader import BookReader, StoredBook
from book_store.schema import NODES_ALIVE, BookKey
from book_store.writer import BookWriter
from ingest_nodes.core.engine import BookEngine
from ingest_nodes.core.stall_watch import Rhythm
from ingest_nodes.core.sync import SpotSyncMachine
from ingest_nodes.ops.telemetry import IngestTelemetry
from ingest_nodes.runtime.publisher import BASE_BUDGET, Publisher
from ingest_nodes.venues.stream import Refused
from ladder_process.telemetry.setup import Telemetry
from tests.ingest_nodes.core.driver import snap, upd
from tests.stores import ChangeMessages

BOOK = BookKey("binance.com", "ETHBTC")
HEAD = 10


def levels(first: int, count: int, step: int) -> list[tuple[str, str]]:
    return [(str(first + step * i), "1") for i in range(count)]


@dataclass
class Replica:
    """The publisher's view of a replica (``Publishable``), driving a real engine."""

    depth: int
    book: BookKey = BOOK
    replica: int = 1
    refusal: Refused | None = None
    engine: BookEngine = field(default_factory=lambda: BookEngine(SpotSyncMachine()))
    watch: Rhythm = field(default_factory=lambda: Rhythm(int(time.time() * 1000)))
    stalled: bool = False
    lagging: bool = False
    stale_after_ms: int = 60_000

    def status(self, now: int) -> BookStatus:
        """As a replica decides it (``BookReplica.status``, tested with the replica itself)."""
        if not self.engine.synced:
            return BookStatus.RESYNCING if self.refusal is None else BookStatus.REFUSED
        silent = self.watch.check_failed and now - self.watch.suspect_at() > self.stale_after_ms
        return BookStatus.STALE if self.stalled or self.lagging or silent else BookStatus.SYNCED

    def sync(self, bids: list[tuple[str, str]], asks: list[tuple[str, str]], limit: int) -> None:
        self.engine.on_update(upd(10, 10))
        self.engine.on_snapshot(snap(10, bids=bids, asks=asks, limit=limit))
        self.engine.on_update(upd(11, 11))
        assert self.engine.synced


def side(snapshot: Snapshot, name: str) -> list[list[str]]:
    blob = snapshot.bids(snapshot.bid_count) if name == "bids" else snapshot.asks(snapshot.ask_count)
    parsed: list[list[str]] = orjson.loads(b"[" + bytes(blob) + b"]")
    return parsed


async def stored(client: redis.Redis, writer: BookWriter) -> StoredBook:
    await asyncio.sleep(0)
    await writer.drain()
    return await BookReader(client).stored(BOOK)


def publisher(
    writer: BookWriter,
    deep_levels_per_s: int = 1000,
    *,
    keepalive_ms: int = 1000,
    quiet_keepalive_ms: int | None = None,
    stale_after_ms: int = 60_000,
) -> Publisher:
    return Publisher(
        writer,
        telemetry=IngestTelemetry(Telemetry.disabled("ladder-test")),
        head_levels=HEAD,
        deep_levels_per_s=deep_levels_per_s,
        publish_interval_ms=0,
        keepalive_ms=keepalive_ms,
        quiet_keepalive_ms=quiet_keepalive_ms,
        stale_after_ms=stale_after_ms,
        node=7,
    )


async def test_a_shallow_book_is_one_head_snapshot_flagged_where_the_venue_may_hold_more(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    replica = Replica(depth=5)
    replica.sync(levels(100, 3, -1), levels(101, 20, 1), limit=20)  # bids whole, asks cut at 20
    publisher(writer).publish(replica, int(time.time() * 1000))
    book = await stored(redis_client, writer)
    assert book.deeps == {}
    head = book.heads[1]
    assert (head.bid_count, head.ask_count, head.more_bids, head.more_asks) == (3, 5, False, True)


async def test_a_deep_book_has_a_head_every_update_and_a_deep_snapshot_at_a_bounded_rate(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    pub = publisher(writer, deep_levels_per_s=1000)  # 50 levels: a deep snapshot every 50 ms at most
    replica = Replica(depth=50)
    replica.sync(levels(1000, 60, -1), levels(1001, 60, 1), limit=60)
    now = int(time.time() * 1000)
    pub.publish(replica, now)
    first = await stored(redis_client, writer)
    head, deep = first.heads[1], first.deeps[1]
    assert (head.bid_count, head.more_bids, head.deep) == (HEAD, True, False)
    assert (deep.bid_count, deep.ask_count, deep.deep, deep.update_id) == (50, 50, True, 11)
    assert side(deep, "asks")[:HEAD] == side(head, "asks")

    replica.engine.on_update(upd(12, 12, asks=[("1001", "0")]))
    pub.publish(replica, now + 10)  # 10 ms later: the head moves, the deep one waits its turn
    second = await stored(redis_client, writer)
    assert second.heads[1].update_id == 12 and second.deeps[1].update_id == 11
    await asyncio.sleep(0.08)
    third = await stored(redis_client, writer)
    assert third.deeps[1].update_id == 12 and side(third.deeps[1], "asks")[0] == ["1002", "1"]


async def test_a_quiet_deep_book_is_not_rewritten_and_a_status_change_is_at_once(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    pub = publisher(writer, deep_levels_per_s=100)  # 50 levels: at most every 500 ms
    replica = Replica(depth=50)
    replica.sync(levels(1000, 60, -1), levels(1001, 60, 1), limit=60)
    now = int(time.time() * 1000)
    pub.publish(replica, now)
    deep = (await stored(redis_client, writer)).deeps[1]
    pub.publish(replica, now + 1000)  # a keepalive: same update id, so the deep one stays as it was
    assert (await stored(redis_client, writer)).deeps[1].publish_time == deep.publish_time
    replica.engine.invalidate("gap")
    pub.publish(replica, now + 1010)  # within the deep interval, but the status changed
    resyncing = (await stored(redis_client, writer)).deeps[1]
    assert resyncing.status is BookStatus.RESYNCING and resyncing.bid_count == 0


async def test_a_book_that_shrinks_back_to_its_head_drops_its_deep_snapshot(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    pub = publisher(writer)
    replica = Replica(depth=50)
    replica.sync(levels(1000, 60, -1), levels(1001, 60, 1), limit=60)
    pub.publish(replica, int(time.time() * 1000))
    assert 1 in (await stored(redis_client, writer)).deeps
    replica.depth = HEAD
    pub.publish(replica, int(time.time() * 1000))
    book = await stored(redis_client, writer)
    assert book.deeps == {} and book.heads[1].bid_count == HEAD
    pub.untrack(replica)
    assert await stored(redis_client, writer) == StoredBook({}, {})


async def test_deep_snapshots_that_fall_due_together_are_written_one_per_loop_turn(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    pub = publisher(writer, deep_levels_per_s=1000)
    replicas = [Replica(depth=50, book=BookKey("binance.com", f"B{i}")) for i in range(3)]
    written: list[BookKey] = []
    put = writer.put

    def record(book: BookKey, replica: int, snapshot: bytes, *, deep: bool = False) -> None:
        if deep and Snapshot(snapshot).status is BookStatus.SYNCED:
            written.append(book)
        put(book, replica, snapshot, deep=deep)

    writer.put = record  # type: ignore[method-assign]
    now = int(time.time() * 1000)
    for replica in replicas:
        replica.sync(levels(1000, 60, -1), levels(1001, 60, 1), limit=60)
        pub.publish(replica, now)
    assert written == []  # newly synced: queued for the loop's next turns, not encoded in this one
    for turn in range(1, 4):
        await asyncio.sleep(0)  # one loop turn: at most one deep encode in it
        assert len(written) <= turn
    await asyncio.sleep(0.05)
    assert sorted(b.market for b in written) == ["B0", "B1", "B2"]


def test_deep_snapshots_are_drained_under_uvloop_too(clean_redis_url: str) -> None:
    """Nodes run on uvloop, whose ``call_at`` answers a handle without ``when()`` for a past time."""

    async def scenario() -> list[int]:
        client = await opened(store_client(clean_redis_url, cluster=None))
        writer = BookWriter(client)
        pub = publisher(writer, deep_levels_per_s=1000)
        now = int(time.time() * 1000)
        for i in range(3):
            replica = Replica(depth=50, book=BookKey("binance.com", f"U{i}"))
            replica.sync(levels(1000, 60, -1), levels(1001, 60, 1), limit=60)
            pub.publish(replica, now)
        await asyncio.sleep(0.05)
        await writer.drain()
        reader = BookReader(client)
        counts = [(await reader.stored(BookKey("binance.com", f"U{i}"))).deeps[1].bid_count for i in range(3)]
        await client.aclose()
        return counts

    assert uvloop.run(scenario()) == [50, 50, 50]


async def test_a_deep_snapshot_spread_over_loop_turns_is_the_book_at_one_update_id(
    redis_client: redis.Redis,
) -> None:
    """3000 levels a side are encoded over several turns while the book moves on: the snapshot is
    still the book exactly as it was at the update id it names."""
    writer = BookWriter(redis_client)
    pub = publisher(writer, deep_levels_per_s=1_000_000)
    served = replica = Replica(depth=3000)
    replica.sync(levels(100_000, 3000, -1), levels(100_001, 3001, 1), limit=3001)  # at update id 11
    moved_on: list[int] = []
    put = writer.put

    def record(book: BookKey, replica: int, snapshot: bytes, *, deep: bool = False) -> None:
        if deep:
            moved_on.append(served.engine.update_id or 0)
        put(book, replica, snapshot, deep=deep)

    writer.put = record  # type: ignore[method-assign]
    pub.publish(replica, int(time.time() * 1000))
    for update_id in range(12, 20):  # each turn the best ask goes, and nothing is published
        await asyncio.sleep(0)
        best = 100_001 + update_id - 12
        replica.engine.on_update(upd(update_id, update_id, asks=[(str(best), "0")]))
    await asyncio.sleep(0.05)
    deep = (await stored(redis_client, writer)).deeps[1]
    assert len(moved_on) == 1 and moved_on[0] > deep.update_id  # the book had moved on when it was written
    asks = side(deep, "asks")
    first_ask = 100_001 + deep.update_id - 11
    assert (deep.bid_count, len(asks)) == (3000, 3000)
    assert asks[0] == [str(first_ask), "1"] and asks[-1] == [str(first_ask + 2999), "1"]


async def test_a_deep_snapshot_on_its_way_never_lands_after_the_replica_stopped_being_synced(
    redis_client: redis.Redis,
) -> None:
    for turns in range(5):  # the resync comes after each step of the deep encode in turn
        writer = BookWriter(redis_client)
        pub = publisher(writer, deep_levels_per_s=1_000_000)
        replica = Replica(depth=3000)
        replica.sync(levels(100_000, 3000, -1), levels(100_001, 3000, 1), limit=3000)
        pub.publish(replica, int(time.time() * 1000))
        for _ in range(turns):
            await asyncio.sleep(0)
        replica.engine.invalidate("gap")
        pub.publish(replica, int(time.time() * 1000))
        await asyncio.sleep(0.05)
        deep = (await stored(redis_client, writer)).deeps[1]
        assert (deep.status, deep.bid_count) == (BookStatus.RESYNCING, 0), turns


async def run_keepalive_for(pub: Publisher, seconds: float) -> None:
    task = asyncio.get_running_loop().create_task(pub.run_keepalive())
    await asyncio.sleep(seconds)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_a_quiet_synced_book_is_vouched_for_by_the_heartbeat_and_republished_rarely(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client, node_id="node-a", node=7)
    pub = publisher(writer, keepalive_ms=100, quiet_keepalive_ms=600)
    quiet, resyncing = Replica(depth=5), Replica(depth=5, replica=2)
    quiet.sync(levels(100, 3, -1), levels(101, 3, 1), limit=20)
    pub.track(quiet)
    pub.track(resyncing)
    first = (await stored(redis_client, writer)).heads
    await run_keepalive_for(pub, 0.4)
    heads = (await stored(redis_client, writer)).heads
    assert heads[1].publish_time == first[1].publish_time and heads[1].node == 7  # not republished
    beat = decode_heartbeat(cast(bytes, await redis_client.hget(NODES_ALIVE, "node-a")))[1]
    assert beat.node == 7 and beat.time > heads[1].publish_time >= beat.since  # ... but vouched for
    await run_keepalive_for(pub, 0.4)  # past quiet_keepalive_ms: republished anyway
    assert (await stored(redis_client, writer)).heads[1].publish_time > first[1].publish_time


async def test_a_quiet_book_whose_failed_check_runs_out_is_published_stale_without_waiting(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client, node_id="node-a", node=7)
    pub = publisher(writer, keepalive_ms=100, quiet_keepalive_ms=60_000, stale_after_ms=200)
    suspect = Rhythm(int(time.time() * 1000) - 60_000)  # suspect long since
    replica = Replica(depth=5, watch=suspect, stale_after_ms=200)
    replica.sync(levels(100, 3, -1), levels(101, 3, 1), limit=20)
    pub.track(replica)
    assert (await stored(redis_client, writer)).heads[1].status is BookStatus.SYNCED
    replica.watch.check_failed = True  # the venue could not be asked
    await run_keepalive_for(pub, 0.3)
    assert (await stored(redis_client, writer)).heads[1].status is BookStatus.STALE


async def published(changes: ChangeMessages, count: int) -> list[Snapshot | Delta]:
    """The next ``count`` change messages of the book, decoded."""
    found: list[Snapshot | Delta] = []
    for _ in range(count):
        message = await changes.next()
        assert message is not None
        found.append(read_change(decode_message(message[1])[1]))
    return found


def top(book: StoredBook, replica: Replica, depth: int) -> bool:
    """Whether the stored head is the replica's book, ``depth`` levels a side."""
    head, engine = book.heads[1], replica.engine
    expected_bids = b",".join(engine.book.top_bids(depth))
    return (
        head.update_id == engine.update_id
        and bytes(head.bids(depth)) == expected_bids
        and bytes(head.asks(depth)) == b",".join(engine.book.top_asks(depth))
    )


async def test_a_changing_book_is_published_whole_once_and_then_as_what_changed(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    changes = ChangeMessages(redis_client)
    await changes.subscribe(BOOK.channel)
    pub = publisher(writer)
    replica = Replica(depth=HEAD)
    replica.sync(levels(1000, 30, -1), levels(1001, 30, 1), limit=30)
    now = int(time.time() * 1000)
    pub.publish(replica, now)
    for i in range(12, 22):
        replica.engine.on_update(upd(i, i, bids=[("1000", str(i)), ("999.5", "1")], asks=[("1001", "0")]))
        pub.publish(replica, now + i)
        await asyncio.sleep(0)
        await writer.drain()
        assert top(await stored(redis_client, writer), replica, HEAD)
    messages = await published(changes, 11)
    assert isinstance(messages[0], Snapshot)
    deltas = [m for m in messages[1:] if isinstance(m, Delta)]
    assert [d.prev_update_id for d in deltas] == list(range(11, 21))
    assert deltas[-1].bid_ops == [(REPLACE, 0, b'["1000","21"]')]  # 999.5 was already there
    await changes.close()


async def test_a_status_change_a_new_depth_or_a_new_book_is_published_whole(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    changes = ChangeMessages(redis_client)
    await changes.subscribe(BOOK.channel)
    pub = publisher(writer)
    replica = Replica(depth=5)
    replica.sync(levels(1000, 30, -1), levels(1001, 30, 1), limit=30)
    now = int(time.time() * 1000)

    async def publish(at: int) -> None:  # one publish per flush: whole snapshots left unsent are replaced
        pub.publish(replica, now + at)
        await stored(redis_client, writer)

    await publish(0)
    replica.stalled = True
    await publish(1)  # stale: a status change
    replica.stalled = False
    await publish(2)  # synced again
    replica.depth = 6
    await publish(3)
    replica.engine = BookEngine(SpotSyncMachine())  # a refresh swapped in: the same ids, a new book
    replica.sync(levels(1000, 30, -1), levels(1001, 30, 1), limit=30)
    await publish(4)
    await publish(5)  # nothing changed: news of a quiet book
    messages = await published(changes, 6)
    assert [type(m).__name__ for m in messages] == ["Snapshot"] * 5 + ["Delta"]
    assert [m.meta.status.label for m in messages[:3]] == ["synced", "stale", "synced"]
    await changes.close()


async def test_the_store_gets_a_fresh_base_once_the_deltas_after_it_add_up_to_the_budget(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    pub = publisher(writer)
    replica = Replica(depth=HEAD)
    replica.sync(levels(1000, 30, -1), levels(1001, 30, 1), limit=30)
    now = int(time.time() * 1000)
    pub.publish(replica, now)
    written: list[tuple[int, bool]] = []  # (delta bytes, with a fresh base)
    put_delta = writer.put_delta

    def record(book: BookKey, replica: int, delta: bytes, *, base: bytes | None = None) -> None:
        written.append((len(delta), base is not None))
        put_delta(book, replica, delta, base=base)

    writer.put_delta = record  # type: ignore[method-assign]
    fields = []
    for i in range(12, 212):
        replica.engine.on_update(upd(i, i, bids=[("1000", str(i))]))
        pub.publish(replica, now + i)
        await asyncio.sleep(0)
        await writer.drain()
        fields.append(len(await redis_client.hkeys(BOOK.snapshots)))
    assert top(await stored(redis_client, writer), replica, HEAD)
    # A head of ~280 bytes and deltas of ~100: a base carries BASE_BUDGET bytes of deltas, not its
    # own size, before the next one (whose delta is not stored beside it).
    since = 0
    for size, based in written:
        assert since <= BASE_BUDGET
        if based:
            assert since + size > BASE_BUDGET
            since = 0
        else:
            since += size
    assert sum(based for _, based in written) >= 3
    assert max(fields) <= 1 + BASE_BUDGET // min(size for size, _ in written)


async def test_a_lagging_book_is_published_stale_and_a_shedding_node_publishes_less_often(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    pub = Publisher(
        writer,
        telemetry=IngestTelemetry(Telemetry.disabled("ladder-test")),
        head_levels=HEAD,
        publish_interval_ms=0,
        keepalive_ms=1000,
        stale_after_ms=60_000,
        shed_lag_ms=1000,
        shed_publish_ms=200,
    )
    replica = Replica(depth=5)
    replica.sync(levels(1000, 30, -1), levels(1001, 30, 1), limit=30)
    replica.lagging = True
    pub.publish(replica, int(time.time() * 1000))
    assert (await stored(redis_client, writer)).heads[1].status is BookStatus.STALE
    replica.lagging = False
    pub.lag.second([0, 1500])  # the node's worst book runs 1.5 s behind: it sheds
    assert pub.lag.shedding
    published = []
    put_delta = writer.put_delta

    def record(book: BookKey, replica: int, delta: bytes, *, base: bytes | None = None) -> None:
        published.append(time.monotonic())
        put_delta(book, replica, delta, base=base)

    writer.put_delta = record  # type: ignore[method-assign]
    pub.publish(replica, int(time.time() * 1000))  # synced again: whole
    await stored(redis_client, writer)
    started = time.monotonic()
    while time.monotonic() - started < 0.5:  # a change every 10 ms
        replica.engine.on_update(upd(12 + len(published), 12 + len(published), bids=[("1000", "2")]))
        pub.mark(replica)
        await asyncio.sleep(0.01)
    assert 2 <= len(published) <= 4  # at most one every 200 ms, not fifty
