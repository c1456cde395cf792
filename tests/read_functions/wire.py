"""Raw HTTP/1.1 over real sockets: exact request bytes out, answers parsed by hand.

What these check is what goes over the wire (order, framing, ``Connection``, refusals), so no
HTTP client library stands between the test and the server.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import orjson
import pytest

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@dataclass
class Reply:
    status: int
    headers: dict[str, str]  # names in lower case
    body: bytes

    def error_code(self) -> str:
        return str(orjson.loads(self.body)["error"]["code"])


def raw(*lines: str, body: bytes = b"") -> bytes:
    """A request from its request line and header lines, exactly as written."""
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def get(path: str, rid: str, *headers: str, method: str = "GET", version: str = "1.1") -> bytes:
    return raw(f"{method} {path} HTTP/{version}", "Host: test", f"X-Request-ID: {rid}", *headers)


def chunked(body: bytes, size: int) -> bytes:
    """``body`` in the chunked transfer coding, ``size`` bytes a chunk, with the last chunk."""
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


async def read_reply(reader: asyncio.StreamReader, *, head: bool = False, within_s: float = 5.0) -> Reply:
    """One response: its head, then as many body bytes as Content-Length says (none for HEAD/1xx)."""
    raw_head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), within_s)
    lines = raw_head.decode("latin-1").split("\r\n")
    version, status, _ = lines[0].split(" ", 2)
    assert version == "HTTP/1.1", lines[0]
    headers: dict[str, str] = {}
    for line in lines[1:-2]:
        name, _, value = line.partition(":")
        assert name.lower() not in headers, f"repeated header {name}"
        headers[name.lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = b"" if head or int(status) < 200 else await asyncio.wait_for(reader.readexactly(length), 5)
    return Reply(int(status), headers, body)


def assert_refused(reply: Reply, status: int, code: str) -> None:
    """A refusal: the JSON error body of every other error, and the connection closed after it."""
    assert (reply.status, reply.error_code(), reply.headers["connection"]) == (status, code, "close")
    assert reply.headers["content-type"] == "application/json" and reply.headers["x-request-id"]


async def assert_closed(reader: asyncio.StreamReader, within_s: float = 5.0) -> None:
    """The server closed the connection and sent nothing more (a reset counts as closed)."""
    with contextlib.suppress(ConnectionResetError):
        assert await asyncio.wait_for(reader.read(), within_s) == b""


async def assert_open(reader: asyncio.StreamReader) -> None:
    assert not reader.at_eof()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(reader.read(1), 0.05)


@contextlib.asynccontextmanager
async def connect(url: str) -> AsyncIterator[Connection]:
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
