"""The multiplexed stream's client as an attacker writes it: raw frames on a raw socket.

Its client speaks (subscribe, unsubscribe), so what it says is read, but only under limits: a bad op
gets an ``error`` message and the socket goes on; a message over 16 KiB closes with 1009 on its
header, before its payload is read; a flood of ops (10,000 subscribes) closes with 1008 once the
frame rate's burst is spent, or 4429 when the ops wait unanswered; a binary message 1003, bad
UTF-8 1007. The worker stays quick and its memory flat throughout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson

from tests.read_functions.hostile.attacks import MIB, Target
from tests.read_functions.hostile.raw_ws import BINARY, TEXT, client_frame, read_close, read_frame, upgrade
from tests.read_functions.wire import Connection, connect, get, read_reply

V2 = "Sec-WebSocket-Protocol: ladder.v2"
ETH = {"exchange": "binance.com", "market": "ETHBTC"}


@contextlib.asynccontextmanager
async def multiplexed(target: Target) -> AsyncIterator[Connection]:
    async with connect(target.url) as (reader, writer):
        writer.write(upgrade(target.key, V2, path="/v1/stream"))
        reply = await read_reply(reader)
        assert reply.status == 101 and reply.headers["sec-websocket-protocol"] == "ladder.v2", reply
        yield reader, writer


async def answer(reader: asyncio.StreamReader) -> Any:
    frame = await read_frame(reader)
    assert frame.opcode == TEXT, frame
    return orjson.loads(frame.payload)


async def test_bad_ops_get_clear_errors_and_the_socket_goes_on(target: Target) -> None:
    async with multiplexed(target) as (reader, writer):
        bad = [
            b"not json",
            b"[]",
            b'{"op": "subscribe"}',
            b'{"op": "explode", "id": 1}',
            b'{"op": "subscribe", "id": {"nested": true}, "books": [{}]}',
            orjson.dumps({"op": "subscribe", "id": 2, "books": [ETH] * 101}),
        ]
        for message in bad:
            writer.write(client_frame(TEXT, message))
            reply = await answer(reader)
            assert reply["type"] == "error", reply
            assert reply["error"]["code"] == "invalid_request", reply
        books = [{**ETH, "mode": "diff", "depth": "deep"}, {"exchange": "x" * 100, "market": "y"}, 7]
        writer.write(client_frame(TEXT, orjson.dumps({"op": "subscribe", "id": 3, "books": books})))
        reply = await answer(reader)
        assert [r["error"]["code"] for r in reply["results"]] == ["invalid_request"] * 3
        writer.write(
            client_frame(TEXT, orjson.dumps({"op": "subscribe", "id": 4, "books": [{**ETH, "mode": "diff"}]}))
        )
        assert (await answer(reader))["results"][0]["result"] == "subscribed"
        snapshot = await answer(reader)
        assert snapshot["type"] == "snapshot" and isinstance(snapshot["checksum"], int)


async def test_a_huge_message_closes_with_1009_on_its_header(target: Target) -> None:
    async with multiplexed(target) as (reader, writer):
        huge = orjson.dumps({"op": "subscribe", "id": 1, "books": [ETH] * 20_000})  # 10,000s of subscribes
        assert len(huge) > MIB / 2
        writer.write(client_frame(TEXT, huge)[:32])  # the header and a few bytes only
        assert await read_close(reader) == 1009


async def test_ten_thousand_subscribe_messages_cost_a_burst_then_a_close(target: Target) -> None:
    before = target.rss_bytes()
    async with multiplexed(target) as (reader, writer):
        message = client_frame(
            TEXT, orjson.dumps({"op": "subscribe", "id": 1, "books": [{**ETH, "mode": "diff"}]})
        )
        began = time.monotonic()
        with contextlib.suppress(ConnectionError):
            writer.write(message * 10_000)
            await writer.drain()
        assert await read_close(reader, within_s=10) in (1008, 4429)
        closed_after = time.monotonic() - began
    async with connect(target.url) as (reader, writer):
        began = time.monotonic()
        writer.write(get("/healthz", "h"))
        assert (await read_reply(reader)).status == 200
        health = time.monotonic() - began
    growth = target.rss_bytes() - before
    print(
        f"10,000 subscribes: closed after {closed_after * 1000:.0f} ms, "
        f"/healthz {health * 1000:.0f} ms, RSS {growth / MIB:+.1f} MiB"
    )
    assert health < 0.5 and growth < 20 * MIB


async def test_binary_and_bad_utf8_are_refused(target: Target) -> None:
    async with multiplexed(target) as (reader, writer):
        writer.write(client_frame(BINARY, b'{"op": "subscribe"}'))
        assert await read_close(reader) == 1003
    async with multiplexed(target) as (reader, writer):
        writer.write(client_frame(TEXT, b'{"op": "\xff\xfe"}'))
        assert await read_close(reader) == 1007


async def test_a_fragmented_op_is_read_whole(target: Target) -> None:
    async with multiplexed(target) as (reader, writer):
        message = orjson.dumps({"op": "subscribe", "id": 9, "books": [{**ETH, "mode": "diff", "depth": 5}]})
        writer.write(client_frame(TEXT, message[:10], fin=False) + client_frame(0x0, message[10:]))
        reply = await answer(reader)
        assert reply["id"] == 9 and reply["results"][0]["result"] == "subscribed"
