"""One client WebSocket: batched output of pre-framed bytes, liveness, and the ways it can end.

Theory of operation. Events are framed once per venue event (``ws_frames``) and the same bytes are
queued on every subscribed connection. The queue is written with one ``writelines`` per event-loop
turn, straight to the transport, bypassing aiohttp's per-message send path (which is safe: an
unmasked, uncompressed aiohttp frame is also written in one synchronous call, so frames never
interleave). A client that stops reading lets the transport buffer grow; past
``slow_client_bytes`` the connection is ended the way its venue ends slow clients.

Liveness mirrors the venues: the server pings on a fixed interval and drops a connection that has
left a ping unanswered for longer than the pong timeout; incoming messages (pings and pongs
included) are counted over a sliding second. A connection ends with ``close`` (a close frame,
then TCP FIN) or ``drop`` (TCP reset, no close frame), whichever the venue's rule calls for.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import struct
import time
from collections import deque
from typing import Any

from aiohttp import web

from fake_venue.server import ws_frames

_ids = itertools.count(1)


def next_connection_id() -> int:
    """Connection ids are unique across the venues of a process, so control can name any one."""
    return next(_ids)


class Connection:
    """State shared by every dialect's connections."""

    def __init__(
        self,
        conn_id: int,
        venue: str,
        ws: web.WebSocketResponse,
        transport: asyncio.Transport,
        slow_client_bytes: int,
    ) -> None:
        self.id = conn_id
        self.venue = venue
        self.ws = ws
        self.transport = transport
        self.slow_client_bytes = slow_client_bytes
        self.opened_at = time.monotonic()
        self.closing = False
        self.frames_sent = 0
        self.last_ping_at = self.opened_at
        self.unanswered_since: float | None = None
        """When the oldest ping still waiting for a pong was sent (monotonic)."""
        self.skip: dict[str, int] = {}
        """Per symbol, events this connection will silently miss (the per-connection gap fault)."""
        self._incoming: deque[float] = deque()
        self._outbox: list[bytes] = []
        self._flush_scheduled = False
        self._tasks: set[asyncio.Task[Any]] = set()

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "venue": self.venue,
            "age_s": round(time.monotonic() - self.opened_at, 3),
            "frames_sent": self.frames_sent,
        }

    def send(self, frame: bytes) -> None:
        """Queue one framed message; the queue is written once this loop turn ends."""
        if self.closing:
            return
        self._outbox.append(frame)
        self.frames_sent += 1
        self.schedule_flush()

    def schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        """Write everything queued in one call (or end the connection if the client stopped reading)."""
        self._flush_scheduled = False
        outbox, self._outbox = self._outbox, []
        if self.closing or self.transport.is_closing() or not outbox:
            return
        if self.transport.get_write_buffer_size() > self.slow_client_bytes:
            self.on_slow_client()
            return
        self.transport.writelines(outbox)

    def take_skip(self, symbol: str) -> bool:
        """Whether to withhold this event of ``symbol`` from this connection (and count it)."""
        left = self.skip.get(symbol, 0)
        if left <= 0:
            return False
        if left == 1:
            del self.skip[symbol]
        else:
            self.skip[symbol] = left - 1
        return True

    def note_incoming(self, now: float, per_second: int) -> bool:
        """Count one message from the client; False once more than ``per_second`` came in a second."""
        window = self._incoming
        window.append(now)
        while window and window[0] <= now - 1.0:
            window.popleft()
        return len(window) <= per_second

    def ping(self, now: float) -> None:
        self.last_ping_at = now
        if self.unanswered_since is None:
            self.unanswered_since = now
        self._write_control(ws_frames.PING, str(int(time.time() * 1000)).encode())

    def pong(self, payload: bytes) -> None:
        self._write_control(ws_frames.PONG, payload)

    def pong_received(self) -> None:
        self.unanswered_since = None

    def received(self) -> None:
        """The client sent a frame (any kind); a venue that closes quiet connections notes it."""

    def tend(self, now: float, ping_interval_s: float, pong_timeout_s: float, max_age_s: float) -> None:
        """The periodic duties: ping when due, drop if a ping went unanswered, close at max age."""
        if self.closing:
            return
        if now - self.opened_at > max_age_s:
            self.close(1000, "connection reached its maximum age")
        elif self.unanswered_since is not None and now - self.unanswered_since > pong_timeout_s:
            self.drop()
        elif ping_interval_s > 0 and now - self.last_ping_at >= ping_interval_s:
            self.ping(now)

    def close(self, code: int = 1000, reason: str = "", send_queued: bool = True) -> asyncio.Task[Any] | None:
        """Send what is queued (unless told not to), then a close frame, then end the TCP connection.

        Returns the closing handshake's task (None if the connection was already ending).
        """
        if self.closing:
            return None
        if send_queued:
            self.flush()
            if self.closing:
                return None  # the flush found a slow client and already ended the connection
        self.closing = True
        self._outbox.clear()
        task = asyncio.get_running_loop().create_task(self.ws.close(code=code, message=reason.encode()))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def drop(self) -> None:
        """End the TCP connection with a reset: no close frame, nothing queued is sent."""
        if self.transport.is_closing():
            return
        self.closing = True
        self._outbox.clear()
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    def on_slow_client(self) -> None:
        """Binance gives no notice: the connection just goes away."""
        self.drop()

    def _write_control(self, opcode: int, payload: bytes) -> None:
        if not self.closing and not self.transport.is_closing():
            self.flush()
            self.transport.write(ws_frames.frame(opcode, payload))
