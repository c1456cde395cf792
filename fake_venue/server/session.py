"""One client's WebSocket session: the upgrade, the read loop, the end (every dialect but Binance's).

A dialect says how its connection is made (``new_connection``), what it sends first (``opened``),
what a text message means (``handle``) and what a binary one gets (``binary``; nothing by
default); its venue registers the connection for the session's length. The rest is the same everywhere:
protocol pings are answered, pongs noted, every frame from the client is ``received`` (a venue that
closes quiet connections counts it), and a connection that is closing reads nothing more. Binance
keeps its own loop: it counts every incoming frame against a rate limit first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol, TypeVar

from aiohttp import WSMsgType, web

from fake_venue.server.connection import Connection

ConnT = TypeVar("ConnT", bound=Connection)
ConnT_contra = TypeVar("ConnT_contra", bound=Connection, contravariant=True)


class Registry(Protocol[ConnT_contra]):
    """A venue's open connections."""

    def register(self, conn: ConnT_contra) -> None: ...

    def unregister(self, conn: ConnT_contra) -> None: ...


async def serve_session(
    request: web.Request,
    venue: Registry[ConnT],
    new_connection: Callable[[web.WebSocketResponse, asyncio.Transport], ConnT],
    handle: Callable[[ConnT, str], None],
    *,
    opened: Callable[[ConnT], None] | None = None,
    binary: Callable[[ConnT], None] | None = None,
) -> web.StreamResponse:
    """Upgrade ``request`` and run the session until either side ends it."""
    ws = web.WebSocketResponse(autoping=False, compress=False, timeout=2.0, max_msg_size=1 << 20)
    await ws.prepare(request)
    transport = request.transport
    assert transport is not None
    conn = new_connection(ws, transport)
    venue.register(conn)
    try:
        if opened is not None:
            opened(conn)
        async for message in ws:
            if conn.closing:
                continue
            conn.received()
            if message.type == WSMsgType.PING:
                conn.pong(message.data)
            elif message.type == WSMsgType.PONG:
                conn.pong_received()
            elif message.type == WSMsgType.TEXT:
                handle(conn, message.data)
            elif binary is not None:
                binary(conn)
    finally:
        venue.unregister(conn)
    return ws
