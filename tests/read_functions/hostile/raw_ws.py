"""WebSocket by hand over a raw socket: frames written byte by byte, as a hostile client would.

No WebSocket client library stands between the test and the server, so a test can send what no
well-behaved client sends (an unmasked frame, a compressed message, a flood of pings) and read
exactly what comes back.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import struct
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from tests.read_functions.hostile.attacks import Target
from tests.read_functions.wire import Connection, Reply, connect, get, read_reply

STREAM = "/v1/stream?exchange=binance.com&market=ETHBTC"
DEFLATE = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits"
TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA


def upgrade(key: str, *headers: str, path: str = STREAM) -> bytes:
    """An opening handshake for ``path`` with ``key`` in ``X-API-Key`` (none when empty)."""
    nonce = base64.b64encode(os.urandom(16)).decode()
    auth = (f"X-API-Key: {key}",) if key else ()
    return get(
        path, "ws", "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
        f"Sec-WebSocket-Key: {nonce}", *auth, *headers,
    )  # fmt: skip


def client_frame(
    opcode: int, payload: bytes, *, mask: bool = True, fin: bool = True, rsv1: bool = False
) -> bytes:
    """One frame as a client sends it (masked unless told otherwise)."""
    first = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", first, (0x80 if mask else 0) | length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", first, (0x80 if mask else 0) | 126, length)
    else:
        header = struct.pack("!BBQ", first, (0x80 if mask else 0) | 127, length)
    if not mask:
        return header + payload
    key = os.urandom(4)
    return header + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def compressed(message: bytes) -> bytes:
    """``message`` as a permessage-deflate payload (what RSV1 announces)."""
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    return (deflater.compress(message) + deflater.flush(zlib.Z_SYNC_FLUSH))[:-4]


@dataclass(frozen=True)
class Frame:
    opcode: int
    payload: bytes
    rsv1: bool

    @property
    def close_code(self) -> int:
        assert self.opcode == CLOSE and len(self.payload) >= 2, self
        return int(struct.unpack_from("!H", self.payload)[0])


async def read_frame(reader: asyncio.StreamReader, within_s: float = 5.0) -> Frame:
    """One frame from the server (which never masks)."""
    first, second = await asyncio.wait_for(reader.readexactly(2), within_s)
    assert not second & 0x80, "a server frame is never masked"
    length = second & 0x7F
    if length == 126:
        length = struct.unpack("!H", await reader.readexactly(2))[0]
    elif length == 127:
        length = struct.unpack("!Q", await reader.readexactly(8))[0]
    payload = await asyncio.wait_for(reader.readexactly(length), within_s)
    return Frame(first & 0x0F, payload, bool(first & 0x40))


async def read_close(reader: asyncio.StreamReader, within_s: float = 5.0) -> int:
    """The code of the server's close frame, skipping the books before it."""
    while (frame := await read_frame(reader, within_s)).opcode != CLOSE:
        pass
    return frame.close_code


@contextlib.asynccontextmanager
async def raw_stream(target: Target, *headers: str) -> AsyncIterator[tuple[Connection, Reply]]:
    """A stream of ETHBTC opened by hand with the target's key; its 101 reply."""
    async with connect(target.url) as (reader, writer):
        writer.write(upgrade(target.key, *headers))
        reply = await read_reply(reader)
        assert reply.status == 101, reply
        yield (reader, writer), reply
