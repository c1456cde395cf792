"""HTTP/1.1 for the read API: a small asyncio protocol on llhttp; WebSocket streams leave it.

Theory of operation
-------------------
A cached book read costs the core about as much CPU as aiohttp spends on the HTTP exchange
around it: request and response objects, header multidicts, a handler task and a writer per
request, several times what a bare protocol on the same C parser needs (``ladder bench read`` and
``ladder bench read_cost`` measure both; bench/README.md keeps the history). The read API needs little of
HTTP/1.1, so each connection is parsed here by llhttp (through ``httptools``, the parser Node.js
uses) and a complete request goes straight into the core as a :class:`Request`; its response
leaves as one write. What the protocol does:

The HTTP/1.1 rules (limits, framing, trailers, versions, which upgrades leave) are
:class:`read_functions.server.http1_machine.Http1Machine`, which touches no transport; this module
is the socket around it:

- keep-alive (HTTP/1.1, and HTTP/1.0 when asked), pipelined requests answered strictly in order;
  at most :data:`MAX_PIPELINED` wait, then the connection is not read until they are answered;
- ``Expect: 100-continue`` is answered when nothing is being answered before it;
- every refusal the machine decides carries the JSON error body of every other error, and the
  connection is closed after it, in stages: half-closed, what the client still sends dropped for
  at most :data:`LINGER_S` (or :data:`LINGER_BYTES`), then closed, so that the refusal is read,
  not reset;
- a keep-alive connection idle for ``keepalive_timeout_s`` is closed, a request that takes longer
  than ``request_timeout_s`` to arrive gets 408, and a connection whose answers the client stops
  reading (its write buffer sends nothing for ``write_timeout_s``) is aborted, so queued answers
  never keep a connection open; a coarse clock ticking once a second does all three, so no request
  pays for a timer;
- while the transport's write buffer is over its high-water mark no new answer starts and the
  connection is not read, so a client that does not read holds at most that much of our memory;
- HEAD gets the headers of the GET route's answer without its body;
- a WebSocket upgrade to a route that streams (``Route.websocket``) is handed, with its request and
  the bytes after it, to the stream's protocol (:mod:`read_functions.server.websocket.connection`),
  which owns the connection from then on and closes it when the stream ends or is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import struct
from collections import deque
from collections.abc import Awaitable, Callable
from email.utils import formatdate
from http import HTTPStatus
from socket import SO_LINGER, SOL_SOCKET, socket
from typing import Any, cast

from control_plane.errors import InvalidRequestError
from read_functions.app.dispatch import Dispatcher, request_id
from read_functions.app.errors import error_response
from read_functions.app.messages import Request, Response
from read_functions.server.http1_machine import CONTINUE, Answer, Http1Machine, Upgrade
from read_functions.server.websocket.connection import StreamConnection, StreamServer
from read_functions.settings import ReadSettings

Core = Callable[[Request], Awaitable[Response]]
Upgradable = Callable[[str, str], bool]  # (method, raw path): may this request leave for WebSocket?

MAX_PIPELINED = 16
LISTEN_BACKLOG = 1024
KEEPALIVE_TIMEOUT_S = 75.0
REQUEST_TIMEOUT_S = 30.0
WRITE_TIMEOUT_S = 30.0
SHUTDOWN_GRACE_S = 5.0
LINGER_S = 2.0
LINGER_BYTES = 8 * 1024 * 1024

_STATUS_LINES = {status.value: f"HTTP/1.1 {status.value} {status.phrase}\r\n" for status in HTTPStatus}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() resets and frees the send queue


def encode_response(response: Response, date: str, *, head: bool, connection: str | None) -> bytes:
    """The bytes of one response; header values with a line break are refused, never sent."""
    status = response.status
    lines = [_STATUS_LINES.get(status) or f"HTTP/1.1 {status} Unknown\r\n", f"Date: {date}\r\n"]
    headers = response.headers
    fields = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    if fields.count("\n") != len(headers) or fields.count("\r") != len(headers):
        raise ValueError("a response header value contains a line break")
    lines.append(fields)
    body = response.body
    if status >= 200 and status not in (204, 304):
        lines.append(f"Content-Length: {len(body)}\r\n")
        if response.content_type is not None:
            lines.append(f"Content-Type: {response.content_type}\r\n")
    else:
        body = b""
    if connection is not None:
        lines.append(f"Connection: {connection}\r\n")
    lines.append("\r\n")
    encoded = "".join(lines).encode()
    return encoded if head or not body else encoded + body


def _encode_closing(response: Response, connection: str) -> bytes:
    """An answer that ends HTTP/1.1 on its connection: a stream's 101, or its refusal."""
    return encode_response(response, formatdate(usegmt=True), head=False, connection=connection)


class Http1Server:
    """Serves one listener (the main API or the compat one) with :class:`Http1Connection`\\ s."""

    def __init__(
        self,
        core: Core,
        *,
        max_body_bytes: int,
        secure: bool,
        upgrades: StreamServer | None = None,
        upgradable: Upgradable | None = None,
        keepalive_timeout_s: float = KEEPALIVE_TIMEOUT_S,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        write_timeout_s: float = WRITE_TIMEOUT_S,
    ) -> None:
        self.core = core
        self.max_body = max_body_bytes
        self.scheme = "https://" if secure else "http://"
        self.keepalive_timeout_s = keepalive_timeout_s
        self.request_timeout_s = request_timeout_s
        self.write_timeout_s = write_timeout_s
        self.connections: set[Http1Connection] = set()
        self.now = 0.0  # the coarse clock: loop time, advanced once a second
        self.date = ""
        self._streams = upgrades
        self._upgradable = upgradable
        self._listening: asyncio.Server | None = None
        self._clock: asyncio.Task[None] | None = None
        self._drained: asyncio.Event | None = None  # set at shutdown, once no connection is left

    @classmethod
    def for_api(
        cls, dispatcher: Dispatcher[Any], settings: ReadSettings, *, secure: bool, **timeouts: float
    ) -> Http1Server:
        """The read API's server: the core answers requests and accepts WebSocket streams."""
        configured = {
            "keepalive_timeout_s": settings.keepalive_timeout_s,
            "request_timeout_s": settings.request_timeout_s,
            "write_timeout_s": settings.write_timeout_s,
        }
        limits = {name: value for name, value in configured.items() if value is not None} | timeouts
        write_timeout_s = limits.get("write_timeout_s", WRITE_TIMEOUT_S)
        return cls(
            dispatcher,
            max_body_bytes=settings.max_body_bytes,
            secure=secure,
            upgrades=StreamServer(dispatcher, _encode_closing, write_timeout_s=write_timeout_s),
            upgradable=dispatcher.router.streams,
            **limits,
        )

    async def start(self, sock: socket, tls: ssl.SSLContext | None) -> None:
        loop = asyncio.get_running_loop()
        self.tick()
        self._listening = await loop.create_server(
            lambda: Http1Connection(self), sock=sock, ssl=tls, backlog=LISTEN_BACKLOG
        )
        self._clock = loop.create_task(self._run_clock())

    def forget(self, connection: Http1Connection) -> None:
        """A connection closed or went to a stream."""
        self.connections.discard(connection)
        if self._drained is not None and not self.connections:
            self._drained.set()

    def takes_upgrade(self, request: Request) -> bool:
        """Whether this request leaves for a stream: a WebSocket upgrade to a route that streams."""
        if self._streams is None or self._upgradable is None or request.method != "GET":
            return False
        protocols = request.headers.get("upgrade", "").lower()
        return "websocket" in protocols and self._upgradable(request.method, request.raw_path)

    def hand_over(self) -> StreamConnection:
        """A fresh protocol for a connection that upgrades to WebSocket."""
        assert self._streams is not None
        return self._streams.hand_over()

    async def close(self, grace_s: float = SHUTDOWN_GRACE_S) -> None:
        """Stop accepting, let answers in progress finish (at most ``grace_s``), close the rest."""
        if self._listening is not None:
            self._listening.close()
        if self._clock is not None:
            self._clock.cancel()
        for connection in list(self.connections):
            connection.close_when_idle()
        if self.connections:
            self._drained = asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._drained.wait(), grace_s)
        for connection in list(self.connections):
            connection.abort()
        if self._streams is not None:
            await self._streams.close(grace_s)

    def tick(self) -> None:
        """Advance the coarse clock and the Date header (``start`` does it, then once a second)."""
        self.now = asyncio.get_running_loop().time()
        self.date = formatdate(usegmt=True)

    async def _run_clock(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.tick()
            for connection in list(self.connections):
                connection.check_timeouts(self.now)
            if self._streams is not None:
                self._streams.tick(self.now)


class Http1Connection(asyncio.Protocol):
    """One client connection: its socket, the answer queue, back-pressure, linger, upgrade and
    timeouts around the :class:`Http1Machine` that reads its requests."""

    def __init__(self, server: Http1Server) -> None:
        self._server = server
        self._machine: Http1Machine | None = None  # made when the connection is
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._queue: deque[Answer] = deque()
        self._answering = False
        self._reading_paused = False
        self._writing_paused = False
        self._refused = False  # a refusal is queued: nothing more is read, the connection then closes
        self._eof = False
        self._closed = False
        self._lost = False
        self._lingering: int | None = None  # after a refusal: the bytes still to drop before a reset
        self._upgrade: Upgrade | None = None  # a WebSocket upgrade waiting for earlier answers
        self._last_active = server.now
        self._written = 0  # bytes handed to the transport, for the write timeout
        self._sent = 0  # of those, the bytes the transport had sent at the last tick
        self._sent_at = server.now  # when the transport last sent something (or had nothing to)

    # -- asyncio.Protocol --------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        peername = transport.get_extra_info("peername")
        server = self._server
        self._machine = Http1Machine(
            max_body=server.max_body,
            scheme=server.scheme,
            peer=str(peername[0]) if isinstance(peername, tuple) else "",
            takes_upgrade=server.takes_upgrade,
        )
        server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = self._lost = True
        self._server.forget(self)
        # Nothing is parsed once the connection is closed; the machine lets go of its parser.
        if self._machine is not None:
            self._machine.release()

    def data_received(self, data: bytes) -> None:
        if self._lingering is not None:  # refused: what still comes is dropped unread, up to a point
            self._lingering -= len(data)
            if self._lingering < 0:
                self.abort()
            return
        if self._upgrade is not None:  # for the stream, once the earlier answers are out
            self._upgrade = self._upgrade._replace(data=self._upgrade.data + data)
            return
        machine, transport = self._machine, self._transport
        if self._closed or machine is None or transport is None or transport.is_closing():
            return
        for event in machine.receive(data, self._server.now):
            if type(event) is Answer:
                if event.request is None:
                    self._refuse(event)
                else:
                    self._enqueue(event)
            elif event is CONTINUE:
                if self._idle():
                    self._write(_CONTINUE)
            else:  # the connection leaves for the stream once the answers before it are out
                assert isinstance(event, Upgrade)
                self._upgrade = event
                self._pause_reading()
                self._answer_next()

    def eof_received(self) -> bool:
        """The client will send no more; answer what it sent, then close."""
        self._eof = True
        return self._answering or bool(self._queue)

    def pause_writing(self) -> None:
        """The client reads slower than we answer: hold answers and stop reading until it catches up."""
        self._writing_paused = True
        self._pause_reading()

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._answer_next()

    # -- answering ---------------------------------------------------------------------------
    def _enqueue(self, answer: Answer) -> None:
        self._queue.append(answer)
        if len(self._queue) >= MAX_PIPELINED:
            self._pause_reading()
        self._answer_next()

    def _answer_next(self) -> None:
        """Start on the oldest waiting request, unless one is in progress or writes are held."""
        while self._queue and not self._answering and not self._writing_paused and not self._closed:
            answer = self._queue.popleft()
            if answer.request is None:
                assert answer.refusal is not None
                self._send(answer, answer.refusal)
            else:
                self._answering = True
                self._loop.create_task(self._answer(answer, answer.request))
        if self._idle():
            if self._upgrade is not None:
                self._hand_over()
            elif self._eof and self._transport is not None:
                self._transport.close()
        if self._reading_paused and self._may_read() and len(self._queue) < MAX_PIPELINED // 2:
            self._reading_paused = False
            if self._transport is not None:
                self._transport.resume_reading()

    async def _answer(self, answer: Answer, request: Request) -> None:
        try:
            response = await self._server.core(request)
            if response.stream is not None:
                response = error_response(
                    InvalidRequestError("a stream needs a WebSocket upgrade (Connection: Upgrade)"),
                    request.request_id,
                )
        except Exception as exc:  # the Dispatcher maps its own errors; any other core still answers
            response = error_response(exc, request.request_id)
        finally:
            self._answering = False
        self._send(answer, response)
        self._answer_next()

    def _send(self, answer: Answer, response: Response) -> None:
        transport = self._transport
        if transport is None or self._closed or transport.is_closing():
            return
        connection, date = answer.connection, self._server.date
        try:
            data = encode_response(response, date, head=answer.head, connection=connection)
        except ValueError as exc:
            rid = answer.request.request_id if answer.request is not None else request_id(None)
            connection = "close"
            data = encode_response(error_response(exc, rid), date, head=answer.head, connection=connection)
        self._write(data)
        self._last_active = self._server.now
        if connection == "close":
            self._closed = True
            if answer.request is None:
                self._linger(transport)
            else:
                transport.close()

    def _linger(self, transport: asyncio.Transport) -> None:
        """After a refusal: stop sending, drop what the client still sends for a moment, then close.

        Closed at once with its input unread, the connection would be reset, and a reset can
        destroy the refusal in the client's buffers before it is read (RFC 9112 section 9.6).
        """
        self._lingering = LINGER_BYTES
        if transport.can_write_eof():
            transport.write_eof()
        self._loop.call_later(LINGER_S, transport.close)
        if self._reading_paused:
            self._reading_paused = False
            transport.resume_reading()

    def _write(self, data: bytes) -> None:
        assert self._transport is not None
        if not self._transport.get_write_buffer_size():
            self._sent_at = self._server.now  # the clock of the write timeout starts with this write
        self._transport.write(data)
        self._written += len(data)

    def _refuse(self, refusal: Answer) -> None:
        """Answer a refusal the machine decided, after the answers before it, then close."""
        self._refused = True
        self._queue.append(refusal)
        self._pause_reading()
        self._answer_next()

    def _idle(self) -> bool:
        return not self._answering and not self._queue

    def _may_read(self) -> bool:
        """Whether reading may resume, the pipeline aside (a refusal, shutdown, a slow reader hold it)."""
        held = self._writing_paused or self._refused or self._eof or self._closed
        return not held and self._upgrade is None

    def _pause_reading(self) -> None:
        if not self._reading_paused and self._transport is not None and not self._closed:
            self._reading_paused = True
            self._transport.pause_reading()

    # -- upgrades ----------------------------------------------------------------------------
    def _hand_over(self) -> None:
        """Give the connection, its upgrade request and the bytes read after it, to the stream."""
        transport, upgrade = self._transport, self._upgrade
        assert transport is not None and upgrade is not None
        protocol = self._server.hand_over()
        self._closed = self._lost = True
        self._server.forget(self)
        self._transport = self._upgrade = None
        if self._machine is not None:
            self._machine.release()  # as when a connection is lost: nothing of it is a cycle
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        protocol.start(upgrade.request, upgrade.data)
        if self._reading_paused:
            transport.resume_reading()

    # -- timeouts and shutdown ---------------------------------------------------------------
    def check_timeouts(self, now: float) -> None:
        """Called once a second: abort a stalled writer, close an idle connection, refuse a slow request."""
        if self._lost or self._upgrade is not None or self._transport is None:
            return
        buffered = self._transport.get_write_buffer_size()
        sent = self._written - buffered
        if not buffered or sent != self._sent:
            self._sent, self._sent_at = sent, now
        elif now - self._sent_at > self._server.write_timeout_s:
            self.abort()  # close() would wait for a buffer the client never reads
            return
        if self._closed or self._machine is None:
            return
        if self._machine.started is not None:
            refusal = self._machine.expire(now, self._server.request_timeout_s)
            if refusal is not None:
                self._refuse(refusal)
        elif self._idle() and now - self._last_active > self._server.keepalive_timeout_s:
            self.close_when_idle()

    def close_when_idle(self) -> None:
        """Close now if nothing is being answered, else after the answers in hand (shutdown, idle)."""
        self._eof = True
        self._pause_reading()
        if self._idle() and self._transport is not None:
            self._closed = True
            self._transport.close()

    def abort(self) -> None:
        """Drop the connection, even with answers still unsent (shutdown past its grace, a stalled writer).

        A reset, not a close: closed, the kernel would keep the unsent bytes and keep offering
        them to a client that reads nothing, for minutes.
        """
        self._closed = True
        if self._transport is not None:
            sock = self._transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(SOL_SOCKET, SO_LINGER, _RESET)
            self._transport.abort()
        self._server.forget(self)
