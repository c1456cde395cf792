"""The hot path: publishes reach the cache within milliseconds, and steady reads touch no store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from functools import partial
from typing import cast

import orjson
import pytest
import redis.asyncio as redis

from book_store.codec import BookStatus, SnapshotMeta, encode_message
from book_store.delta import INSERT, REPLACE, Op, encode_delta
from book_store.schema import BookKey
from book_store.writer import BookWriter
from ladder_process.clock import now_ms
from read_functions.books.change_feed import ChangeFeed
from tests.read_functions.helpers import ETH, Stack, open_stack, snapshot
from tests.stores import command_calls, publish_change, subscribe_commands
from tests.waiting import wait_until


async def read_update_id(stack: Stack, headers: dict[str, str]) -> int:
    async with stack.http.get(f"{stack.url}/v1/books/binance.com/ETHBTC", headers=headers) as r:
        assert r.status == 200, await r.text()
        return int(orjson.loads(await r.read())["update_id"])


async def test_a_publish_is_visible_on_the_next_read(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    assert await read_update_id(stack, headers) == 1  # now cached and subscribed
    for update_id in range(2, 12):
        await stack.publish(ETH, 0, snapshot(update_id))
        published = time.perf_counter()
        while await read_update_id(stack, headers) != update_id:
            assert time.perf_counter() - published < 0.05, "publish not visible within 50 ms"
            await asyncio.sleep(0.001)


@pytest.fixture
async def quiet_stack(clean_redis_url: str, redis_client: redis.Redis) -> AsyncIterator[Stack]:
    """A stack whose background refreshes are slow enough not to blur a command count."""
    stack = await open_stack(clean_redis_url, redis_client, auth_max_age_ms=60_000, catalog_refresh_s=3600)
    yield stack
    await stack.close()


async def test_steady_reads_make_no_store_calls(quiet_stack: Stack, redis_client: redis.Redis) -> None:
    stack = quiet_stack
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(5))
    for _ in range(20):  # warm every cache: key, tenant, entitlement, catalog, book, rate-limit lease
        await read_update_id(stack, headers)
    before = await command_calls(redis_client)
    started = time.monotonic()
    reads = 300
    for _ in range(reads):
        await read_update_id(stack, headers)
    elapsed = time.monotonic() - started
    after = await command_calls(redis_client)
    delta = {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name, 0)}
    delta.pop("info", None)
    assert delta.get("hgetall", 0) == 0 and delta.get("hget", 0) == 0, delta
    # What remains is background work (a usage flush a second, keys' last use), never per request.
    assert sum(delta.values()) <= 5 + 6 * elapsed < reads / 4, (delta, elapsed)


async def test_misses_of_one_loop_turn_share_one_pipeline(stack: Stack, redis_client: redis.Redis) -> None:
    books = [BookKey("binance.com", f"M{i}") for i in range(40)]
    for i, book in enumerate(books):
        await stack.publish(book, 0, snapshot(i + 1))
    before = await command_calls(redis_client)
    entries = await asyncio.gather(*(stack.deps.books.entry(book) for book in books))
    after = await command_calls(redis_client)
    assert [e.replicas[0].meta.update_id for e in entries] == list(range(1, 41))
    assert after["hgetall"] - before.get("hgetall", 0) == 40 + 1  # and the nodes' heartbeats
    subscribes = after.get("subscribe", 0) + after.get("ssubscribe", 0)
    subscribes -= before.get("subscribe", 0) + before.get("ssubscribe", 0)
    assert subscribes == subscribe_commands(redis_client, [b.channel for b in books])  # 1 (per slot)


async def test_a_dropped_feed_drops_the_cache(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    assert await read_update_id(stack, headers) == 1
    assert len(stack.deps.books) == 1
    await stack.drop_feed()
    assert len(stack.deps.books) == 0
    await stack.publish(ETH, 0, snapshot(2))  # published while the feed may still be down
    deadline = time.monotonic() + 5
    while await read_update_id(stack, headers) != 2:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)


async def test_idle_books_are_unsubscribed(clean_redis_url: str, redis_client: redis.Redis) -> None:
    stack = await open_stack(clean_redis_url, redis_client, book_idle_s=0.2)
    try:
        headers = await stack.subscriber(ETH)
        await stack.publish(ETH, 0, snapshot(1))
        await read_update_id(stack, headers)
        assert len(stack.deps.books) == 1
        await asyncio.sleep(0.5)
        assert len(stack.deps.books) == 0
        assert await read_update_id(stack, headers) == 1  # loaded again on demand
    finally:
        await stack.close()


async def test_the_feed_survives_pings_with_nothing_subscribed(clean_redis_url: str) -> None:
    resets: list[None] = []
    feed = ChangeFeed(clean_redis_url, lambda _c, _d: None, lambda: resets.append(None), ping_interval_s=0.05)
    feed.start()
    try:
        assert await feed.wait_connected(5)
        await asyncio.sleep(0.4)  # several PINGs answered with a plain +PONG
        assert feed.connected and resets == []
    finally:
        await feed.close()


@pytest.mark.single_store("one feed on one node's URL; a cluster's feeds per shard: test_cache_cluster")
async def test_a_sharded_feed_resubscribed_at_once_keeps_the_new_subscription(clean_redis_url: str) -> None:
    # The reply to an unsubscribe that arrives after the channel was subscribed again ends nothing
    # of the new subscription: only a node ending a subscription itself counts as dropping it.
    dropped: list[bytes] = []
    messages: list[bytes] = []
    feed = ChangeFeed(clean_redis_url, lambda _c, data: messages.append(bytes(data)), lambda: None,
                      on_dropped=dropped.append)  # fmt: skip
    feed.start()
    try:
        assert await feed.wait_connected(5)
        await feed.subscribe(["ladder:{b|X}:changes"])
        feed.unsubscribe(["ladder:{b|X}:changes"])
        await feed.subscribe(["ladder:{b|X}:changes"])  # its confirmation comes after the reply above
        assert dropped == []
        client = redis.from_url(clean_redis_url)
        try:
            await client.spublish("ladder:{b|X}:changes", b"still followed")
        finally:
            await client.aclose()
        await wait_until(lambda: messages == [b"still followed"], 2.0, "the message")
    finally:
        await feed.close()


async def test_undecodable_messages_are_ignored_never_served(stack: Stack, redis_client: redis.Redis) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    assert await read_update_id(stack, headers) == 1  # cached and subscribed
    newer = snapshot(2)  # published later than the cached one: it would win if it were accepted
    unknown_status = bytearray(newer)
    unknown_status[43] = 9  # the status byte (see test_codec)
    snapshots = [newer[:-1], newer + b",", b"\x63" + newer[1:], bytes(unknown_status)]
    bad = [b"\x00", *(encode_message(0, raw) for raw in snapshots)]
    books, before = stack.deps.books, stack.deps.books.messages
    for message in bad:
        await publish_change(redis_client, ETH.channel, message)
    deadline = time.monotonic() + 5
    while books.messages < before + len(bad):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.005)
    assert await read_update_id(stack, headers) == 1
    assert books.resets == 0
    await stack.publish(ETH, 0, snapshot(3))
    deadline = time.monotonic() + 5
    while await read_update_id(stack, headers) != 3:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.005)


async def test_a_message_published_earlier_does_not_replace_a_later_one(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    published = now_ms()
    await stack.publish(ETH, 0, snapshot(5, publish_time=published))
    assert await read_update_id(stack, headers) == 5
    books, before = stack.deps.books, stack.deps.books.messages
    await stack.publish(ETH, 0, snapshot(9, publish_time=published - 1))  # a late, older publish
    await stack.publish(ETH, 0, snapshot(4, publish_time=published))  # same publish, lower update id
    deadline = time.monotonic() + 5
    while books.messages < before + 2:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.005)
    assert await read_update_id(stack, headers) == 5
    await stack.publish(ETH, 0, snapshot(6, publish_time=published))
    deadline = time.monotonic() + 5
    while await read_update_id(stack, headers) != 6:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.005)


async def test_a_change_renders_nothing_and_the_next_read_renders_what_it_serves(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    assert await read_update_id(stack, headers) == 1  # renders the default view of snapshot 1
    entry = stack.deps.books._entries[ETH]
    first = entry.views_of

    def has(update_id: int) -> bool:
        return entry.replicas[0].meta.update_id == update_id

    for update_id in (2, 3):  # changes nobody reads in between: none of them is rendered
        await stack.publish(ETH, 0, snapshot(update_id))
        await wait_until(partial(has, update_id), 2.0, f"snapshot {update_id}")
        assert entry.views_of is first and len(entry.views) == 1
    assert await read_update_id(stack, headers) == 3
    assert entry.views_of is entry.replicas[0]
    assert [b'"update_id":3,' in view.head for view in entry.views.values()] == [True]


async def test_a_change_of_a_replica_not_served_keeps_the_views_of_the_one_served(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(10, replica=0))
    await stack.publish(ETH, 1, snapshot(5, replica=1))
    assert await read_update_id(stack, headers) == 10  # replica 0: the newer update id
    entry = stack.deps.books._entries[ETH]
    views, served = dict(entry.views), entry.views_of
    await stack.publish(ETH, 1, snapshot(6, replica=1))
    await wait_until(lambda: entry.replicas[1].meta.update_id == 6, 2.0, "replica 1 at 6")
    assert entry.views_of is served and entry.views == views
    assert all(entry.views[key] is view for key, view in views.items())
    assert await read_update_id(stack, headers) == 10


async def read_status(stack: Stack, headers: dict[str, str]) -> tuple[int, dict[str, object]]:
    async with stack.http.get(f"{stack.url}/v1/books/binance.com/ETHBTC", headers=headers) as r:
        return r.status, orjson.loads(await r.read())


async def test_a_quiet_book_is_served_while_its_node_s_heartbeat_vouches_for_it(
    stack: Stack, redis_client: redis.Redis
) -> None:
    node = BookWriter(redis_client, node_id="node-a", node=7)
    headers = await stack.subscriber(ETH)
    quiet_since = now_ms() - 20_000  # far beyond max_silence_ms (5 s)
    await stack.publish(ETH, 0, snapshot(1, publish_time=quiet_since, node=7))
    assert (await read_status(stack, headers))[0] == 503  # no heartbeat yet: silent

    node.heartbeat(now_ms(), quiet_since - 1)
    await node.drain()
    await wait_until(lambda: len(stack.deps.books.heartbeats) == 1, 5, "the heartbeat")  # from the channel
    status, body = await read_status(stack, headers)
    assert status == 200 and body["update_id"] == 1
    assert int(str(body["age_ms"])) >= 19_000  # since the venue state was known, not since the heartbeat

    await stack.drop_feed()  # heartbeats may have been missed: forgotten with the books ...
    assert len(stack.deps.books.heartbeats) == 0
    await wait_until(lambda: stack.deps.books.following, 5, "the feed back")
    assert (await read_status(stack, headers))[0] == 200  # ... and read again with the book
    assert len(stack.deps.books.heartbeats) == 1


async def test_a_heartbeat_vouches_for_nothing_older_than_its_since_nor_for_another_node(
    stack: Stack, redis_client: redis.Redis
) -> None:
    node = BookWriter(redis_client, node_id="node-a", node=7)
    headers = await stack.subscriber(ETH)
    now = now_ms()
    await stack.publish(ETH, 0, snapshot(1, publish_time=now - 20_000, node=7))
    await stack.publish(ETH, 1, snapshot(2, 1, publish_time=now - 20_000, node=8))
    node.heartbeat(now, now - 10_000)  # vouches only for what node 7 wrote in the last 10 s
    await node.drain()
    await wait_until(lambda: len(stack.deps.books.heartbeats) == 1, 5, "the heartbeat")
    assert (await read_status(stack, headers))[0] == 503
    await stack.publish(ETH, 0, snapshot(3, publish_time=now - 9_000, node=7))
    status, body = await read_status(stack, headers)
    assert status == 200 and body["update_id"] == 3


async def test_a_node_whose_heartbeats_stop_falls_silent(stack: Stack, redis_client: redis.Redis) -> None:
    node = BookWriter(redis_client, node_id="node-a", node=7)
    headers = await stack.subscriber(ETH)
    now = now_ms()
    await stack.publish(ETH, 0, snapshot(1, publish_time=now - 20_000, node=7))
    node.heartbeat(now - 5_500, now - 60_000)  # its last heartbeat, 5.5 s ago
    await node.drain()
    await wait_until(lambda: len(stack.deps.books.heartbeats) == 1, 5, "the heartbeat")
    assert (await read_status(stack, headers))[0] == 503


def delta(prev: int, update_id: int, bid_ops: list[Op], *, publish_time: int | None = None) -> bytes:
    """A delta of ``snapshot(prev)``'s replica 0 (5 levels a side) to ``update_id``."""
    published = now_ms() if publish_time is None else publish_time
    meta = SnapshotMeta(update_id, published - 2, published - 1, published, 0, BookStatus.SYNCED)
    return encode_delta(meta, prev, 0, 5, (5, 5), bid_ops, [])


async def read_book(stack: Stack, headers: dict[str, str]) -> dict[str, object]:
    async with stack.http.get(f"{stack.url}/v1/books/binance.com/ETHBTC", headers=headers) as r:
        assert r.status == 200, await r.text()
        body: dict[str, object] = orjson.loads(await r.read())
        return body


async def test_a_delta_changes_the_cached_book_with_no_store_round_trip(
    quiet_stack: Stack, redis_client: redis.Redis
) -> None:
    stack = quiet_stack
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(5))
    before = await read_book(stack, headers)
    calls = await command_calls(redis_client)
    ops: list[Op] = [(REPLACE, 0, b'["100.05","7.5"]'), (INSERT, 1, b'["99.50","2"]')]
    stack.writer.put_delta(ETH, 0, delta(5, 6, ops))
    await stack.writer.drain()
    await wait_until(lambda: stack.deps.books._entries[ETH].replicas[0].update_id == 6, 2.0, "the delta")
    after = await read_book(stack, headers)
    bids = cast(list[list[str]], before["bids"])
    assert after["update_id"] == 6 and after["asks"] == before["asks"]
    assert after["bids"] == [["100.05", "7.5"], ["99.50", "2"], *bids[1:4]]  # the last fell off
    reads = {k: v - calls.get(k, 0) for k, v in (await command_calls(redis_client)).items()}
    assert reads.get("hgetall", 0) == 0 and stack.deps.books.doubts == 0


async def test_a_delta_that_does_not_continue_the_cached_head_sends_the_next_read_to_the_store(
    stack: Stack, redis_client: redis.Redis
) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(5))
    assert (await read_book(stack, headers))["update_id"] == 5
    books = stack.deps.books
    await publish_change(redis_client, ETH.channel, encode_message(0, delta(7, 8, [])))  # 6 and 7 missed
    await wait_until(lambda: books.doubts == 1, 2.0, "the gap seen")
    assert ETH not in books._entries  # nothing of it is served from the cache any more
    assert (await read_book(stack, headers))["update_id"] == 5  # the stored head, loaded again
    stack.writer.put_delta(ETH, 0, delta(5, 6, [(REPLACE, 0, b'["100.05","3"]')]))
    await stack.writer.drain()
    await wait_until(lambda: books._entries[ETH].replicas[0].update_id == 6, 2.0, "followed again")


async def test_deltas_that_arrive_while_a_book_loads_are_applied_once_it_has(stack: Stack) -> None:
    books = stack.deps.books
    published = now_ms()
    await stack.publish(ETH, 0, snapshot(5, publish_time=published))
    entry_of = asyncio.ensure_future(books.entry(ETH))
    await asyncio.sleep(0)  # registered; its load batch has not run yet
    # As the feed would hand it over between the subscription and the stored head's arrival:
    books._on_message(ETH.channel.encode(), encode_message(0, delta(5, 6, [], publish_time=published + 1)))
    entry = await entry_of
    assert entry.replicas[0].update_id == 6 and books.doubts == 0


async def test_a_delta_that_does_not_fit_its_head_is_never_served_and_the_book_loads_again(
    stack: Stack, redis_client: redis.Redis
) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(5))
    assert (await read_book(stack, headers))["update_id"] == 5
    books = stack.deps.books
    unfit = delta(5, 6, [(REPLACE, 7, b'["1","1"]')])  # a level past the five the head holds
    await publish_change(redis_client, ETH.channel, encode_message(0, unfit))
    # Nothing is rendered as the change arrives: the next read works the levels out, finds that
    # they do not fit, drops the entry and is refused (retry); the read after it loads the book.
    entry = books._entries[ETH]
    await wait_until(lambda: entry.replicas[0].meta.update_id == 6, 2.0, "the delta followed")
    async with stack.http.get(f"{stack.url}/v1/books/binance.com/ETHBTC", headers=headers) as r:
        assert (r.status, r.headers["Retry-After"]) == (503, "1"), await r.text()
    assert books.doubts == 1 and ETH not in books._entries
    assert (await read_book(stack, headers))["update_id"] == 5  # the stored head, loaded again
