"""``Upgrade`` as an escape hatch (finding 5): only the stream route may leave the read API's protocol.

Before, ``Connection: upgrade`` + ``Upgrade: websocket`` on any route handed the connection to
aiohttp's defaults for the rest of its life: no 32 KiB head limit, no 408 timer, text errors.
"""

from __future__ import annotations

import asyncio
import base64
import time

from read_functions.server.http1_machine import Answer, Upgrade
from tests.read_functions.hostile.attacks import MIB, Target
from tests.read_functions.hostile.conftest import TIMEOUT_S
from tests.read_functions.hostile.script import feed, machine
from tests.read_functions.wire import assert_closed, assert_open, assert_refused, connect, get, read_reply

STREAM = "/v1/stream?exchange=binance.com&market=ETHBTC"
UPGRADE = ("Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13")
NONCE = f"Sec-WebSocket-Key: {base64.b64encode(b'0123456789abcdef').decode()}"


async def test_an_upgrade_elsewhere_is_answered_here_and_the_connection_stays_ours(target: Target) -> None:
    async with connect(target.url) as (reader, writer):
        writer.write(get("/healthz", "up", *UPGRADE, NONCE))
        reply = await read_reply(reader)
        assert (reply.status, reply.headers["x-request-id"]) == (200, "up") and "upgrade" not in reply.headers
        await assert_open(reader)
        writer.write(get("/healthz", "big", *(f"X-Pad-{i}: {'a' * 1000}" for i in range(MIB // 1000))))
        assert_refused(await read_reply(reader), 431, "headers_too_large")  # this protocol's limit
        await assert_closed(reader)


async def test_a_slow_head_after_an_upgrade_elsewhere_gets_408(target: Target) -> None:
    async with connect(target.url) as (reader, writer):
        writer.write(get("/healthz", "up", *UPGRADE, NONCE))
        assert (await read_reply(reader)).status == 200
        writer.write(b"GET /healthz HTTP/1.1\r\nX-Request-ID: slow\r\nX-Drip: ")
        began = time.monotonic()

        async def drip() -> None:
            while True:
                await asyncio.sleep(0.5)
                writer.write(b"a")

        dripping = asyncio.create_task(drip())
        try:
            reply = await read_reply(reader, within_s=TIMEOUT_S + 5)
        finally:
            dripping.cancel()
        assert_refused(reply, 408, "request_timeout")
        assert time.monotonic() - began < TIMEOUT_S + 2


async def test_a_stream_refused_before_the_handshake_closes_with_json(target: Target) -> None:
    async with connect(target.url) as (reader, writer):
        writer.write(get(STREAM, "nokey", *UPGRADE, NONCE, "X-API-Key: ldr_not_a_key"))
        reply = await read_reply(reader)
        assert (reply.status, reply.error_code()) == (401, "unauthorized")
        assert reply.headers["content-type"] == "application/json"
        await assert_closed(reader)  # never a second request under aiohttp's defaults


async def test_a_broken_handshake_on_the_stream_route_gets_json_400(target: Target) -> None:
    async with connect(target.url) as (reader, writer):
        writer.write(get(STREAM, "nonce", *UPGRADE, f"X-API-Key: {target.key}"))  # no Sec-WebSocket-Key
        reply = await read_reply(reader)
        assert (reply.status, reply.error_code()) == (400, "invalid_request")
        await assert_closed(reader)


def test_an_upgrade_with_a_body_is_refused() -> None:
    """Its body would otherwise be read as the next request (the rules, in memory)."""
    smuggled = get("/healthz", "smuggled")
    fed = feed(machine(), get("/healthz", "up", *UPGRADE, f"Content-Length: {len(smuggled)}") + smuggled)
    assert fed.refusal() == (400, "invalid_request") and fed.requests() == []


def test_only_the_stream_route_leaves_and_its_request_goes_with_it() -> None:
    """In memory: an upgrade elsewhere is answered here and the next request parsed here; the
    stream route's upgrade leaves with its request, parsed, and every byte after it."""
    fed = feed(
        machine(), get("/healthz", "up", *UPGRADE, NONCE) + get(STREAM, "ws", *UPGRADE, NONCE) + b"\x81"
    )
    up, leaving = fed.events
    assert isinstance(up, Answer) and up.request is not None and up.request.request_id == "up"
    assert isinstance(leaving, Upgrade) and leaving.request.request_id == "ws"
    assert leaving.request.raw_path + "?" + leaving.request.query_string == STREAM and leaving.data == b"\x81"


async def test_the_stream_route_still_upgrades(target: Target) -> None:
    async with connect(target.url) as (reader, writer):
        writer.write(get(STREAM, "ws", *UPGRADE, NONCE, f"X-API-Key: {target.key}"))
        reply = await read_reply(reader)
        assert reply.status == 101 and reply.headers["upgrade"].lower() == "websocket"
        first = await asyncio.wait_for(reader.readexactly(1), 5)
        assert first == b"\x81"  # a text frame: the book
