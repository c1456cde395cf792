"""A stream's client as an attacker writes it: frames by hand on a raw socket.

A stream's client has nothing to send but control frames. What it sends anyway is refused on the
frame header that shows it, with the close code that says why, before the server does the work
the frame asks for: an unmasked frame 1002 (RFC 6455 5.1), a compressed message 1008 (never
inflated), a message over the size limit 1009, more frames than the rate allows 1008.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib

import orjson

from tests.read_functions.hostile.attacks import MIB, Target
from tests.read_functions.hostile.raw_ws import (
    BINARY,
    CLOSE,
    DEFLATE,
    PING,
    PONG,
    TEXT,
    client_frame,
    compressed,
    raw_stream,
    read_close,
    read_frame,
)
from tests.read_functions.wire import assert_closed, connect, get, read_reply


async def test_a_well_behaved_client_gets_books_pongs_and_a_clean_close(target: Target) -> None:
    async with raw_stream(target) as ((reader, writer), reply):
        assert reply.headers["upgrade"] == "websocket" and "sec-websocket-extensions" not in reply.headers
        book = await read_frame(reader)
        assert book.opcode == TEXT and b'"market":"ETHBTC"' in book.payload
        writer.write(client_frame(TEXT, b"keepalive"))  # a small text is ignored
        writer.write(client_frame(PING, b"are you there"))
        assert await read_frame(reader) == type(book)(PONG, b"are you there", False)
        writer.write(client_frame(CLOSE, b"\x03\xe8bye"))
        assert await read_close(reader) == 1000
        await assert_closed(reader)


async def test_agreed_compression_sends_deflated_books(target: Target) -> None:
    async with raw_stream(target, DEFLATE) as ((reader, writer), reply):
        assert reply.headers["sec-websocket-extensions"] == "permessage-deflate; server_no_context_takeover"
        book = await read_frame(reader)
        assert book.opcode == TEXT and book.rsv1
        inflated = zlib.decompressobj(-15).decompress(book.payload + b"\x00\x00\xff\xff")
        assert orjson.loads(inflated)["market"] == "ETHBTC"
        writer.write(client_frame(CLOSE, b"\x03\xe8"))
        assert await read_close(reader) == 1000


async def test_unmasked_frames_close_with_1002(target: Target) -> None:
    for opcode in (TEXT, BINARY, PING):
        async with raw_stream(target) as ((reader, writer), _):
            writer.write(client_frame(opcode, b"not masked", mask=False))
            assert await read_close(reader) == 1002
            await assert_closed(reader)


async def test_a_message_over_the_limit_closes_with_1009_on_its_header(target: Target) -> None:
    async with raw_stream(target) as ((reader, writer), _):
        writer.write(client_frame(BINARY, b"x" * (64 * 1024))[:16])  # the header and a few bytes only
        assert await read_close(reader) == 1009


async def test_a_ping_flood_closes_with_1008(target: Target) -> None:
    async with raw_stream(target) as ((reader, writer), _):
        writer.write(b"".join(client_frame(PING, b"") for _ in range(1000)))
        assert await read_close(reader) == 1008
        await assert_closed(reader)


async def test_compressed_messages_are_refused_not_inflated(target: Target) -> None:
    """24 clients that agreed permessage-deflate pour small messages that each inflate to 4 MiB:
    each is closed with 1008 on its first, the worker stays quick and its memory flat."""
    bomb = client_frame(TEXT, compressed(b"\0" * 4 * MIB), rsv1=True)
    assert len(bomb) < 8 * 1024
    before = target.rss_bytes()
    codes: list[int] = []

    async def attacker() -> None:
        async with raw_stream(target, DEFLATE) as ((reader, writer), reply):
            assert "server_no_context_takeover" in reply.headers["sec-websocket-extensions"]
            await read_frame(reader)  # the book

            async def pour() -> None:
                with contextlib.suppress(ConnectionError):
                    for _ in range(256 * 1024 // len(bomb)):
                        writer.write(bomb)
                        await writer.drain()

            pouring = asyncio.create_task(pour())
            try:
                codes.append(await read_close(reader))
            finally:
                pouring.cancel()

    async def health() -> float:
        async with connect(target.url) as (reader, writer):
            began = time.monotonic()
            writer.write(get("/healthz", "h"))
            assert (await read_reply(reader)).status == 200
            return time.monotonic() - began

    attackers = [asyncio.create_task(attacker()) for _ in range(24)]
    await asyncio.sleep(0.05)
    slowest = max(await asyncio.gather(*(health() for _ in range(5))))
    await asyncio.gather(*attackers)
    growth = target.rss_bytes() - before
    print(f"deflate bombs x24: /healthz at most {slowest * 1000:.0f} ms; RSS {growth / MIB:+.1f} MiB")
    assert codes == [1008] * 24
    assert slowest < 0.5
    assert growth < 50 * MIB
