"""GET /v1/stream over a real WebSocket: one message per snapshot, conflation, access checks."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson
import pytest

from book_store.codec import encode_message
from read_functions.handlers.reads.stream import BookStream
from read_functions.server.websocket.connection import StreamConnection
from tests.read_functions.helpers import ETH, Stack, levels, snapshot, validate
from tests.read_functions.hostile.raw_ws import upgrade
from tests.read_functions.wire import connect, read_reply
from tests.waiting import wait_until

STREAM = "/v1/stream?exchange=binance.com&market=ETHBTC"


async def next_book(socket: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    message = await asyncio.wait_for(socket.receive(), 5)
    assert message.type is aiohttp.WSMsgType.TEXT, message
    book: dict[str, Any] = orjson.loads(message.data)
    return book


def streams_of(stack: Stack) -> list[BookStream]:
    """The streams watching ETH in the read API's cache."""
    entry = stack.deps.books._entries.get(ETH)
    return [] if entry is None else [w for w in entry.watchers if isinstance(w, BookStream)]


async def test_one_message_per_published_snapshot(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    async with stack.http.ws_connect(f"{stack.url}{STREAM}&depth=2", headers=headers) as socket:
        first = await next_book(socket)
        validate(first, "Book")
        assert first["update_id"] == 1 and len(first["bids"]) == 2
        for update_id in (2, 3, 4):
            await stack.publish(ETH, 0, snapshot(update_id))
            assert (await next_book(socket))["update_id"] == update_id


async def parked_stream(stack: Stack) -> tuple[BookStream, StreamConnection]:
    """The one stream of ETH once its sender waits with nothing to do, and its connection."""
    await wait_until(lambda: any(s._parked for s in streams_of(stack)), 5, "the stream's sender waits")
    (stream,) = streams_of(stack)
    assert isinstance(stream.outlet, StreamConnection)
    return stream, stream.outlet


def feed_receives(stack: Stack, raw: bytes) -> None:
    """``raw`` (replica 0's snapshot of ETH) as the read API's change feed hands it to the cache."""
    stack.deps.books._on_message(ETH.channel.encode(), encode_message(0, raw))


async def test_a_change_is_sent_from_the_feed_s_callback_while_the_sender_waits(stack: Stack) -> None:
    """Not after the rest of the loop's turn: the frame is written before the callback returns."""
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    async with stack.http.ws_connect(f"{stack.url}{STREAM}&depth=2", headers=headers) as socket:
        assert (await next_book(socket))["update_id"] == 1
        stream, connection = await parked_stream(stack)
        written = connection._written
        feed_receives(stack, snapshot(2))
        assert connection._written > written and stream._parked, "sent at once, the sender left waiting"
        assert (await next_book(socket))["update_id"] == 2
        await stack.publish(ETH, 0, snapshot(3))
        assert (await next_book(socket))["update_id"] == 3, "the sender did not send 2 again"


async def test_a_due_recheck_is_never_skipped_by_a_change_sent_at_once(stack: Stack) -> None:
    """A change that comes when the key's recheck is due goes through the sender, which rechecks
    first: a revoked key gets its close, and not the book."""
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    async with stack.http.get(f"{stack.url}/v1/keys", headers=headers) as r:
        key_id = (await r.json())["keys"][0]["id"]
    async with stack.http.ws_connect(f"{stack.url}{STREAM}", headers=headers) as socket:
        assert (await next_book(socket))["update_id"] == 1
        stream, connection = await parked_stream(stack)
        async with stack.http.delete(f"{stack.url}/v1/admin/keys/{key_id}", headers=stack.admin) as r:
            assert r.status == 204
        stream._checked_at -= 60  # the recheck is due, and its timer has not fired yet
        written = connection._written
        feed_receives(stack, snapshot(2))
        assert connection._written == written, "not sent at once"
        message = await asyncio.wait_for(socket.receive(), 5)
        assert message.type is aiohttp.WSMsgType.CLOSE and socket.close_code == 4401


async def test_a_client_that_goes_away_is_no_longer_watched(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    async with stack.http.ws_connect(stack.url + STREAM, headers=headers) as socket:
        assert (await next_book(socket))["update_id"] == 1
        assert streams_of(stack)
    await wait_until(lambda: not streams_of(stack), 5, "the closed stream stopped watching its book")


async def test_a_stream_goes_on_after_the_change_feed_drops(stack: Stack) -> None:
    """The cache loads a watched book again by itself: the open stream is never left silent."""
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    async with stack.http.ws_connect(stack.url + STREAM, headers=headers) as socket:
        assert (await next_book(socket))["update_id"] == 1
        await stack.drop_feed()
        await wait_until(
            lambda: stack.deps.books.following and bool(streams_of(stack)), 5, "the book loaded again"
        )
        await stack.publish(ETH, 0, snapshot(2))
        assert (await next_book(socket))["update_id"] == 2, "the next snapshot, and not the last one again"


async def test_subprotocols_without_ladder_v1_are_refused_and_the_key_is_not_echoed(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    key = headers["X-API-Key"]
    async with connect(stack.url) as (reader, writer):
        writer.write(upgrade("", f"Sec-WebSocket-Protocol: ladder.key.{key}"))
        reply = await read_reply(reader)
    assert (reply.status, reply.error_code()) == (400, "invalid_request")
    assert key not in reply.body.decode() and "ladder.v1" in reply.body.decode()
    async with stack.http.ws_connect(
        stack.url + STREAM, protocols=("ladder.v1", f"ladder.key.{key}")
    ) as socket:
        assert socket.protocol == "ladder.v1"
        assert (await next_book(socket))["update_id"] == 1  # a browser's way: the key beside ladder.v1


async def test_key_in_query_for_browsers(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(5))
    async with stack.http.ws_connect(f"{stack.url}{STREAM}&api_key={headers['X-API-Key']}") as socket:
        assert (await next_book(socket))["update_id"] == 5


async def test_a_slow_consumer_gets_the_latest_snapshot_not_a_backlog(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    deep = levels([f"{100_000 - i}.12345678" for i in range(1000)], "123.45678900")
    await stack.publish(ETH, 0, snapshot(1, bids=deep, asks=deep))
    published = 400
    async with stack.http.ws_connect(f"{stack.url}{STREAM}&depth=1000", headers=headers) as socket:
        assert (await next_book(socket))["update_id"] == 1
        for update_id in range(2, published + 1):  # ~65 KB each, 26 MB in all, while the client reads nothing
            stack.writer.put(ETH, 0, snapshot(update_id, bids=deep, asks=deep))
            await stack.writer.drain()
        await asyncio.sleep(0.3)
        (stream,) = streams_of(stack)
        assert stream.conflated > 0
        received: list[int] = []
        while not received or received[-1] != published:
            received.append((await next_book(socket))["update_id"])
        assert received == sorted(received)
        assert len(received) < published / 2, len(received)


async def test_a_tenant_s_streams_beyond_max_streams_are_refused_until_one_ends(stack: Stack) -> None:
    headers = await stack.subscriber(ETH, max_streams=1)
    await stack.publish(ETH, 0, snapshot(1))
    async with stack.http.ws_connect(stack.url + STREAM, headers=headers) as socket:
        await next_book(socket)
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await stack.http.ws_connect(stack.url + STREAM, headers=headers)
        assert refused.value.status == 429 and refused.value.headers is not None
        assert refused.value.headers["Retry-After"] == "5"
        async with stack.http.get(f"{stack.url}/v1/usage", headers=headers) as r:
            usage = await r.json()
        assert (usage["streams"], usage["limits"]["max_streams"]) == (1, 1)
    started = time.monotonic()
    while True:  # the slot is given back as the stream ends (the server sees the close a moment later)
        try:
            async with stack.http.ws_connect(stack.url + STREAM, headers=headers) as socket:
                assert (await next_book(socket))["update_id"] == 1
                break
        except aiohttp.WSServerHandshakeError as exc:
            assert exc.status == 429 and time.monotonic() - started < 3
            await asyncio.sleep(0.1)


async def test_refused_before_the_upgrade(stack: Stack) -> None:
    _, key = await stack.tenant()
    for path, headers, status in [
        (STREAM, {"X-API-Key": key}, 403),
        (STREAM, {}, 401),
        ("/v1/stream?exchange=binance.com&market=NOPE", {"X-API-Key": key}, 404),
        ("/v1/stream?exchange=binance.com", {"X-API-Key": key}, 400),
    ]:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await stack.http.ws_connect(f"{stack.url}{path}", headers=headers)
        assert refused.value.status == status
    async with stack.http.get(f"{stack.url}{STREAM}", headers={"X-API-Key": key}) as r:
        assert r.status == 403  # checks come before the upgrade requirement


async def test_revoked_key_closes_the_stream_with_4401(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    async with stack.http.get(f"{stack.url}/v1/keys", headers=headers) as r:
        key_id = (await r.json())["keys"][0]["id"]
    async with stack.http.ws_connect(f"{stack.url}{STREAM}", headers=headers) as socket:
        await next_book(socket)
        async with stack.http.delete(f"{stack.url}/v1/admin/keys/{key_id}", headers=stack.admin) as r:
            assert r.status == 204
        started = time.monotonic()
        message = await asyncio.wait_for(socket.receive(), 5)
        assert message.type is aiohttp.WSMsgType.CLOSE and socket.close_code == 4401
        assert time.monotonic() - started <= 1.5
