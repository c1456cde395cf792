"""One client session of a chained venue: the upgrade, the read loop, the end (OKX and Bybit alike).

The dialect decides what a text message means (``handle``); everything around it is the same:
protocol pings are answered, any message from the client counts as activity (a venue closes
connections quiet for too long), and the connection's books are dropped when it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from aiohttp import WSMsgType, web

from fake_venue.chained.venue import ChainedConnection, ChainedVenue
from fake_venue.server.connection import next_connection_id

Handler = Callable[[ChainedConnection, str], None]


async def serve_session(venue: ChainedVenue, request: web.Request, handle: Handler) -> web.StreamResponse:
    """Upgrade ``request`` and feed each text message of the session to ``handle``."""
    ws = web.WebSocketResponse(autoping=False, compress=False, timeout=2.0, max_msg_size=1 << 20)
    await ws.prepare(request)
    transport = request.transport
    assert transport is not None
    conn = ChainedConnection(next_connection_id(), venue.name, ws, transport, venue.config.slow_client_bytes)
    venue.register(conn)
    try:
        async for message in ws:
            if conn.closing:
                continue
            conn.active_at = time.monotonic()
            if message.type == WSMsgType.PING:
                conn.pong(message.data)
            elif message.type == WSMsgType.TEXT:
                handle(conn, message.data)
    finally:
        venue.unregister(conn)
    return ws
