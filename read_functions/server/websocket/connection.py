"""A book stream's connection after the upgrade request: the handshake, one stream, the close.

Theory of operation
-------------------
:mod:`read_functions.server.http1` parses the upgrade request and hands the connection over with the
request and the bytes that came after it. The core answers that request as any other
(authentication, limits, ``/v1/stream``'s checks); then the handshake is checked and the stream
admitted (it takes its tenant's slot: a tenant holding its ``max_streams`` gets 429
``too_many_streams``). A refusal is written as an HTTP answer and the connection closed. An
accepted stream gets the 101 answer of :mod:`.handshake`, and a sender task runs the
:class:`~read_functions.app.messages.Stream` the handler made: each message is framed (and, when
agreed, deflated on its own) and written; while the transport's buffer is over its high-water
mark the sender waits and the stream conflates meanwhile, and a buffer that sends nothing for
``write_timeout_s`` aborts the connection. The connection is also the stream's
:class:`~read_functions.app.messages.Outlet`: a stream may send a message at once, framed the same
way, while the buffer is below its high-water mark.

Everything the client sends goes through :class:`.frames.FrameReader` as it arrives: pings are
answered, a text message goes to a stream that reads them (under the stream's own size limit), a
close is answered and ends the connection, and a violation of the protocol or of the
inbound limits closes it with the code that says why. A client not heard from for
:data:`HEARTBEAT_S` is pinged, and dropped if it stays silent as long again. After the server's own
close frame the client's bytes are read only for its close frame, for at most :data:`CLOSE_LINGER_S`,
(and :data:`LINGER_BYTES`), so that the close code is read by the client rather than reset away.

A closed connection lets go of everything at once (the transport, the reader, the stream, the
task), so it is freed by reference counting, not left to the collector.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable

from ladder_process.errors import LadderError
from read_functions.app.errors import close_code, error_response
from read_functions.app.messages import Request, Response, Stream
from read_functions.server.websocket.frames import (
    OP_PING,
    OP_PONG,
    OP_TEXT,
    Close,
    CloseCode,
    FrameReader,
    InboundLimits,
    Ping,
    ProtocolViolation,
    Text,
    close_frame,
    frame,
)
from read_functions.server.websocket.handshake import agree, deflate

log = logging.getLogger(__name__)

Core = Callable[[Request], Awaitable[Response]]
Encode = Callable[[Response, str], bytes]
"""An HTTP/1.1 answer's bytes, with the ``Connection`` header given (the HTTP server's encoder)."""

HEARTBEAT_S = 30.0
CLOSE_LINGER_S = 2.0
LINGER_BYTES = 1024 * 1024
MAX_EARLY_BYTES = 64 * 1024
"""Bytes a client may send before the handshake is answered (it should send none)."""


class StreamServer:
    """The connections that left HTTP/1.1 for a stream, and what they share."""

    def __init__(
        self, core: Core, encode: Encode, *, write_timeout_s: float, limits: InboundLimits | None = None
    ) -> None:
        self.core = core
        self.encode = encode
        self.write_timeout_s = write_timeout_s
        self.limits = limits or InboundLimits()
        self.connections: set[StreamConnection] = set()
        self._drained: asyncio.Event | None = None  # set at shutdown, once no stream is left

    def hand_over(self) -> StreamConnection:
        """A fresh protocol for a connection that upgrades."""
        return StreamConnection(self)

    def tick(self, now: float) -> None:
        """Called once a second (the HTTP server's coarse clock): heartbeats and timeouts."""
        for connection in list(self.connections):
            connection.check(now)

    async def close(self, grace_s: float) -> None:
        """Close every stream with 1001 (going away); abort those still open after ``grace_s``."""
        for connection in list(self.connections):
            connection.close(CloseCode.GOING_AWAY, "the server is shutting down")
        if self.connections:
            self._drained = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained.wait(), grace_s)
        for connection in list(self.connections):
            connection.abort()

    def forget(self, connection: StreamConnection) -> None:
        """A connection closed."""
        self.connections.discard(connection)
        if self._drained is not None and not self.connections:
            self._drained.set()


class StreamConnection(asyncio.Protocol):
    """One upgraded connection (see the module's doc)."""

    def __init__(self, server: StreamServer) -> None:
        self._server = server
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._early = bytearray()  # what came before the handshake was answered
        self._reader: FrameReader | None = None
        self._stream: Stream | None = None
        self._deflate = False
        self._closing_at: float | None = None  # when the server sent its close frame
        self._lingering = LINGER_BYTES  # what a client may still send after it
        self._heard_at = self._loop.time()
        self._pinged_at: float | None = None
        self._drained: asyncio.Future[None] | None = None
        self._written = 0
        self._sent = 0
        self._sent_at = self._heard_at

    # -- from http1 and asyncio --------------------------------------------------------------
    def start(self, request: Request, rest: bytes) -> None:
        """Answer ``request`` (the upgrade), ``rest`` being what the client sent after it."""
        self._server.connections.add(self)
        self._early += rest
        task = self._loop.create_task(self._run(request))
        task.add_done_callback(_retrieved)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        self._heard_at = self._loop.time()
        self._pinged_at = None
        if self._closing_at is not None and self._reader is None:  # after a violation: dropped unread
            self._lingering -= len(data)
            if self._lingering < 0:
                self.abort()
            return
        if self._reader is None:
            self._early += data
            if len(self._early) > MAX_EARLY_BYTES:
                self.abort()
            return
        self._read(data)

    def eof_received(self) -> bool:
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._server.forget(self)
        self._transport = None
        self._reader = None
        self._early = bytearray()
        self._stop_stream()
        self._resume()

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = self._loop.create_future()

    def resume_writing(self) -> None:
        self._resume()

    # -- the handshake and the sender --------------------------------------------------------
    async def _run(self, request: Request) -> None:
        try:
            response = await self._server.core(request)
        except Exception as exc:  # the Dispatcher maps its own errors; any other core still answers
            response = error_response(exc, request.request_id)
        stream, agreed = response.stream, None
        if stream is not None:
            try:
                agreed = agree(request.headers, stream.protocol, client_speaks=bool(stream.max_text))
                await stream.admit()
            except LadderError as exc:  # not a handshake (400), max_streams open (429), no store (503)
                response, agreed = error_response(exc, request.request_id), None
            if agreed is None or self._transport is None:
                stream.stop()  # gives back what admitting it took
        if stream is None or agreed is None or self._transport is None:
            self._write(self._server.encode(response, "close"))
            if self._transport is not None:
                self._transport.close()
            return
        response.headers.update(agreed.headers)
        self._write(self._server.encode(response, "Upgrade"))
        self._deflate = agreed.deflate
        limits = self._server.limits
        if stream.max_text:  # a client that speaks: its text messages are read, up to its own limit
            limits = dataclasses.replace(
                limits, max_message=stream.max_text, read_text=True, inflate=agreed.deflate
            )
        self._reader = FrameReader(limits, self._loop.time())
        self._stream = stream
        stream.outlet = self
        stream.start()
        early, self._early = bytes(self._early), bytearray()
        if early:
            self._read(early)
        await self._send_stream(stream)

    async def _send_stream(self, stream: Stream) -> None:
        try:
            while (message := await stream.next_message()) is not None:
                self.send(message)
                if self._drained is not None:
                    await self._drained
        except LadderError as exc:
            self.close(close_code(exc), str(exc))
        finally:
            self._stop_stream()

    def _stop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.outlet = None
            stream.close()
            stream.stop()

    # -- the stream's outlet (read_functions.app.messages.Outlet) ----------------------------
    def ready(self) -> bool:
        transport = self._transport
        return (
            self._drained is None
            and self._closing_at is None
            and transport is not None
            and not transport.is_closing()
        )

    def send(self, message: bytes) -> None:
        if self._deflate:
            self._write(frame(OP_TEXT, deflate(message), compressed=True))
        else:
            self._write(frame(OP_TEXT, message))

    # -- what the client sends ---------------------------------------------------------------
    def _read(self, data: bytes) -> None:
        reader = self._reader
        if reader is None:
            return
        try:
            events = reader.feed(data, self._loop.time())
        except ProtocolViolation as violation:
            self._reader = None  # its bytes mean nothing now: only the linger reads them
            self.close(violation.code, violation.reason)
            return
        for event in events:
            if isinstance(event, Ping):
                if self._closing_at is None:
                    self._write(frame(OP_PONG, event.payload))
            elif isinstance(event, Text):
                if self._stream is not None and self._closing_at is None:
                    self._stream.receive(event.payload)
            elif isinstance(event, Close):
                self._answer_close(event)
                return

    def _answer_close(self, event: Close) -> None:
        code = CloseCode.NORMAL if event.code == CloseCode.NO_STATUS else event.code
        self._write(close_frame(code))  # unless the server's own went first
        self._stop_stream()
        if self._transport is not None:
            self._transport.close()

    # -- closing and the clock ---------------------------------------------------------------
    def close(self, code: int, reason: str = "") -> None:
        """Send the close frame, then end the sending half: the client reads the frame and its end,
        and the connection closes on its answer (or after the linger)."""
        transport = self._transport
        if self._closing_at is not None or transport is None:
            return
        self._write(close_frame(code, reason))
        self._closing_at = self._loop.time()
        if transport.can_write_eof() and not transport.is_closing():
            transport.write_eof()
        self._stop_stream()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def check(self, now: float) -> None:
        """Once a second: the linger after a close, a client that reads nothing, the heartbeat."""
        transport = self._transport
        if transport is None:
            return
        if self._closing_at is not None and now - self._closing_at > CLOSE_LINGER_S:
            transport.close()
            return
        buffered = transport.get_write_buffer_size()
        sent = self._written - buffered
        if not buffered or sent != self._sent:
            self._sent, self._sent_at = sent, now
        elif now - self._sent_at > self._server.write_timeout_s:
            self.abort()
            return
        if self._reader is None or self._closing_at is not None:
            return
        if self._pinged_at is not None:
            if now - self._pinged_at > HEARTBEAT_S:
                self.abort()  # no answer to the ping: the client is gone
        elif now - self._heard_at > HEARTBEAT_S:
            self._pinged_at = now
            self._write(frame(OP_PING, b""))

    def _write(self, data: bytes) -> None:
        """Write ``data``, unless the close frame has gone (nothing may follow it)."""
        if self._closing_at is None and self._transport is not None and not self._transport.is_closing():
            self._written += len(data)
            self._transport.write(data)

    def _resume(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)


def _retrieved(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("a stream failed", exc_info=task.exception())
