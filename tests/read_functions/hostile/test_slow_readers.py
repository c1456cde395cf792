"""A client that never reads its answers (finding 4): the connection is aborted, the worker stays small.

Before, queued answers exempted a connection from every timeout: one that pipelined requests
and read nothing stayed open indefinitely (95 s and counting, 2.8 MB queued).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from urllib.parse import urlsplit

from tests.read_functions.hostile.attacks import MIB, Target
from tests.read_functions.hostile.conftest import TIMEOUT_S
from tests.read_functions.wire import connect, get, read_reply

_TCP_CLOSED = frozenset({7, 8})  # TCP_CLOSE (a reset came), TCP_CLOSE_WAIT (a FIN came)


def tcp_state(sock: socket.socket) -> int:
    """The kernel's state of this end (``struct tcp_info``'s first byte)."""
    state: int = struct.unpack("B", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1))[0]
    return state


async def test_a_client_that_never_reads_is_dropped_after_the_write_timeout(target: Target) -> None:
    parts = urlsplit(target.url)
    before = target.rss_bytes()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the client's window stays tiny
    try:
        sock.connect((parts.hostname, parts.port))
        sock.sendall(b"".join(get("/openapi.json", f"r{i}") for i in range(2000)))  # tens of MB of answers
        began = time.monotonic()
        while tcp_state(sock) not in _TCP_CLOSED:
            assert time.monotonic() - began < TIMEOUT_S + 10, "the server kept the connection"
            await asyncio.sleep(0.1)
        waited = time.monotonic() - began
    finally:
        sock.close()
    # Its kernel buffers fill first; then the write buffer stalls for TIMEOUT_S, noticed within 1 s.
    assert TIMEOUT_S - 0.5 < waited < TIMEOUT_S + 4, waited
    assert target.rss_bytes() - before < 16 * MIB


async def test_a_client_that_reads_slowly_is_served_everything(target: Target) -> None:
    """Progress, however slow, is not a stall: only a write buffer that sends nothing is."""
    count = 40
    async with connect(target.url) as (reader, writer):
        writer.write(b"".join(get("/openapi.json", f"s{i}") for i in range(count)))
        for i in range(count):
            if i % 10 == 0:
                await asyncio.sleep(TIMEOUT_S * 0.6)  # pauses each under the write timeout
            reply = await read_reply(reader)
            assert (reply.status, reply.headers["x-request-id"]) == (200, f"s{i}")
