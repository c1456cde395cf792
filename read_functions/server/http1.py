"""HTTP/1.1 for the read API: a small asyncio protocol on llhttp; WebSocket streams go to aiohttp.

Theory of operation
-------------------
A cached book read costs the core about as much CPU as aiohttp spends on the HTTP exchange
around it: request and response objects, header multidicts, a handler task and a writer per
request, several times what a bare protocol on the same C parser needs (``ladder bench read`` and
``ladder bench read_cost`` measure both; bench/README.md keeps the history). The read API needs little of
HTTP/1.1, so each connection is parsed here by llhttp (through ``httptools``, the parser Node.js
uses) and a complete request goes straight into the core as a :class:`Request`; its response
leaves as one write. What the protocol does:

- keep-alive (HTTP/1.1, and HTTP/1.0 when asked), pipelined requests answered strictly in order;
  at most :data:`MAX_PIPELINED` wait, then the connection is not read until they are answered;
- request bodies, sized or chunked, up to ``max_body_bytes`` (413 beyond), ``Expect:
  100-continue``; the chunked framing around a body (chunk-size lines, their extensions) may add
  at most ``max_body_bytes`` more (413 beyond), as the body's data alone is what the limit means;
- a request head over :data:`MAX_HEAD_BYTES` gets 431, and so do a head and trailers together
  over it: trailers are counted, then dropped, never merged into the headers (a field sent after
  the body must not authenticate or steer the request it ends);
- HTTP/1.0 and HTTP/1.1 only: another version gets 505, a request line without one (HTTP/0.9) 400;
  every refusal carries the JSON error body of every other error, and the connection is closed
  after it, in stages: half-closed, what the client still sends dropped for at most
  :data:`LINGER_S` (or :data:`LINGER_BYTES`), then closed, so that the refusal is read, not reset;
- a keep-alive connection idle for ``keepalive_timeout_s`` is closed, a request that takes longer
  than ``request_timeout_s`` to arrive gets 408, and a connection whose answers the client stops
  reading (its write buffer sends nothing for ``write_timeout_s``) is aborted, so queued answers
  never keep a connection open; a coarse clock ticking once a second does all three, so no request
  pays for a timer;
- while the transport's write buffer is over its high-water mark no new answer starts and the
  connection is not read, so a client that does not read holds at most that much of our memory;
- HEAD gets the headers of the GET route's answer without its body; repeated request headers are joined
  with ``", "`` (so two different ``X-API-Key`` headers are one invalid key, never a choice);
- a WebSocket upgrade to a route that streams (``Route.websocket``) is handed, its request head
  re-serialised, to aiohttp's own protocol (:class:`read_functions.server.aiohttp_app.AiohttpAdapter`),
  which owns the connection from then on and closes it when the stream ends or is refused. An
  ``Upgrade`` anywhere else is ignored (RFC 9110 section 7.8): the request is answered here, under
  every limit above, and the connection stays in this protocol; one that also declares a body is
  refused, as its body could only be read as the next request.
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
from typing import Any, NamedTuple, cast
from urllib.parse import urlsplit

import httptools
from aiohttp import web

from control_plane.errors import ApiError, InvalidRequestError
from read_functions.app.dispatch import Dispatcher, request_id
from read_functions.app.errors import (
    HeadersTooLargeError,
    HttpVersionNotSupportedError,
    PayloadTooLargeError,
    RequestTimeoutError,
    error_response,
)
from read_functions.app.messages import Request, Response, parse_query
from read_functions.server.aiohttp_app import AiohttpAdapter
from read_functions.settings import ReadSettings

Core = Callable[[Request], Awaitable[Response]]
Upgradable = Callable[[str, str], bool]  # (method, raw path): may this request leave for WebSocket?

MAX_HEAD_BYTES = 32 * 1024
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
_VERSIONS = frozenset({"1.1", "1.0"})
_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() resets and frees the send queue


class _Answer(NamedTuple):
    """One request waiting for its answer, or (``request`` None) a refusal already decided."""

    request: Request | None
    refusal: Response | None
    head: bool
    connection: str | None  # the Connection header the answer carries ("close": then it closes)


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


class Http1Server:
    """Serves one listener (the main API or the compat one) with :class:`Http1Connection`\\ s."""

    def __init__(
        self,
        core: Core,
        *,
        max_body_bytes: int,
        secure: bool,
        upgrades: AiohttpAdapter | None = None,
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
        self._adapter = upgrades
        self._upgradable = upgradable
        self._upgrades: web.Server | None = None
        self._listening: asyncio.Server | None = None
        self._clock: asyncio.Task[None] | None = None
        self._drained: asyncio.Event | None = None  # set at shutdown, once no connection is left

    @classmethod
    def for_api(
        cls, dispatcher: Dispatcher[Any], settings: ReadSettings, *, secure: bool, **timeouts: float
    ) -> Http1Server:
        """The read API's server: the core answers requests, aiohttp runs WebSocket streams."""
        adapter = AiohttpAdapter(
            dispatcher, settings.max_body_bytes, secure=secure, max_head_bytes=MAX_HEAD_BYTES
        )
        configured = {
            "keepalive_timeout_s": settings.keepalive_timeout_s,
            "request_timeout_s": settings.request_timeout_s,
            "write_timeout_s": settings.write_timeout_s,
        }
        limits = {name: value for name, value in configured.items() if value is not None} | timeouts
        return cls(
            dispatcher,
            max_body_bytes=settings.max_body_bytes,
            secure=secure,
            upgrades=adapter,
            upgradable=dispatcher.router.streams,
            **limits,
        )

    async def start(self, sock: socket, tls: ssl.SSLContext | None) -> None:
        loop = asyncio.get_running_loop()
        if self._adapter is not None:
            self._upgrades = self._adapter.server()
        self.tick()
        self._listening = await loop.create_server(
            lambda: Http1Connection(self), sock=sock, ssl=tls, backlog=LISTEN_BACKLOG
        )
        self._clock = loop.create_task(self._run_clock())

    def forget(self, connection: Http1Connection) -> None:
        """A connection closed or went to aiohttp."""
        self.connections.discard(connection)
        if self._drained is not None and not self.connections:
            self._drained.set()

    def takes_upgrade(self, request: Request) -> bool:
        """Whether this request leaves for aiohttp: a WebSocket upgrade to a route that streams."""
        if self._adapter is None or self._upgradable is None or request.method != "GET":
            return False
        protocols = request.headers.get("upgrade", "").lower()
        return "websocket" in protocols and self._upgradable(request.method, request.raw_path)

    def hand_over(self) -> asyncio.Protocol:
        """A fresh aiohttp protocol for a connection that upgrades to WebSocket."""
        assert self._upgrades is not None
        return self._upgrades()

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
        if self._upgrades is not None:
            await self._upgrades.shutdown(grace_s)

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


class Http1Connection(asyncio.Protocol):
    """One client connection: requests parsed as bytes arrive, answered one at a time, in order."""

    def __init__(self, server: Http1Server) -> None:
        self._server = server
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._queue: deque[_Answer] = deque()
        self._answering = False
        self._reading_paused = False
        self._writing_paused = False
        self._refused = False  # a refusal is queued: nothing more is read, the connection then closes
        self._eof = False
        self._closed = False
        self._lost = False
        self._lingering: int | None = None  # after a refusal: the bytes still to drop before a reset
        self._upgrade: bytes | None = None  # a WebSocket upgrade waiting for earlier answers
        self._upgrading: _Answer | None = None  # a request with Upgrade, until the parser stops
        self._last_active = server.now
        self._written = 0  # bytes handed to the transport, for the write timeout
        self._sent = 0  # of those, the bytes the transport had sent at the last tick
        self._sent_at = server.now  # when the transport last sent something (or had nothing to)
        self._peer = ""  # the client's IP address
        # The request being parsed:
        self._requests = 0  # requests begun on this connection: which one a read belonged to
        self._started: float | None = None  # coarse time its first byte came; None between requests
        self._in_head = False
        self._in_body = False  # its head is complete, its message is not
        self._head_bytes = 0  # the size of its URL, complete headers and complete trailers
        self._unparsed = 0  # bytes read since the parser last completed a part of its head
        self._body_bytes = 0  # its body's data, and its trailers: what its framing is measured against
        self._framing = 0  # bytes of its body read beyond those (chunk-size lines, extensions)
        self._url: list[bytes] = []
        self._headers: dict[str, str] = {}
        self._body: bytearray | None = None

    # -- asyncio.Protocol --------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        peername = transport.get_extra_info("peername")
        if isinstance(peername, tuple):
            self._peer = str(peername[0])
        self._server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = self._lost = True
        self._server.forget(self)
        # The parser holds this connection: without it, nothing is a cycle and the closed connection
        # is freed by reference counting, which a worker's frozen heap needs (ladder_process.heap).
        # Nothing is parsed once the connection is closed.
        del self._parser

    def data_received(self, data: bytes) -> None:
        if self._lingering is not None:  # refused: what still comes is dropped unread, up to a point
            self._lingering -= len(data)
            if self._lingering < 0:
                self.abort()
            return
        while data:
            data = self._feed(data)

    def _feed(self, data: bytes) -> bytes:
        """Parse what came; the bytes after a request whose ``Upgrade`` was ignored are returned."""
        if self._upgrade is not None:
            self._upgrade += data  # for aiohttp, once the earlier answers are out
            return b""
        if self._closed or self._refused or self._transport is None or self._transport.is_closing():
            return b""
        request, in_body, body_bytes = self._requests, self._in_body, self._body_bytes
        if self._in_head:
            self._unparsed += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            return self._upgrade_or_not(data[upgrade.args[0] :])
        except httptools.HttpParserError as exc:
            cause = exc.__context__
            if not isinstance(cause, ApiError):
                cause = InvalidRequestError(f"malformed HTTP: {exc}")
            self._refuse(cause)
            return b""
        # httptools holds a header back until it ends: one that never ends is refused here
        if self._in_head and self._head_bytes + self._unparsed > MAX_HEAD_BYTES:
            self._refuse(_head_too_large())
        elif in_body and self._in_body and request == self._requests:  # all of it one body's bytes
            self._framing += len(data) - (self._body_bytes - body_bytes)
            if self._framing > self._server.max_body:
                self._refuse(PayloadTooLargeError(_framing_too_large(self._server.max_body)))
        return b""

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

    # -- httptools callbacks -----------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._requests += 1
        self._started = self._server.now
        self._in_head = True
        self._head_bytes = self._unparsed = self._body_bytes = self._framing = 0
        self._url = []
        self._headers = {}
        self._body = None

    def on_url(self, url: bytes) -> None:
        self._url.append(url)
        self._head_bytes += len(url)
        self._unparsed = 0

    def on_header(self, name: bytes, value: bytes) -> None:
        size = len(name) + len(value) + 4  # ": " and CRLF
        self._head_bytes += size
        if self._in_body:  # a trailer: it counts against the head's limit, and is dropped
            self._body_bytes += size
            if self._head_bytes > MAX_HEAD_BYTES:
                raise _head_too_large()
            return
        self._unparsed = 0
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers = self._headers
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._in_body = True
        if self._head_bytes > MAX_HEAD_BYTES:
            raise _head_too_large()
        version = self._parser.get_http_version()
        if version not in _VERSIONS:
            raise _unsupported(version)
        if self._parser.should_upgrade():
            return
        length = self._headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self._server.max_body:
            raise PayloadTooLargeError.over(self._server.max_body)
        expect = self._headers.get("expect")
        if expect is not None and expect.lower() == "100-continue" and self._idle():
            self._write(_CONTINUE)

    def on_body(self, chunk: bytes) -> None:
        if self._body is None:
            self._body = bytearray()
        self._body += chunk
        self._body_bytes += len(chunk)
        if len(self._body) > self._server.max_body:
            raise PayloadTooLargeError.over(self._server.max_body)

    def on_message_complete(self) -> None:
        self._started = None
        self._in_body = False
        parser = self._parser
        url = b"".join(self._url).decode("latin-1")
        if not url.startswith("/"):
            url = _origin_form(url)
        path, _, query_string = url.partition("?")
        headers = self._headers
        method = parser.get_method().decode("latin-1")
        request = Request(
            method=method,
            raw_path=path,
            query=parse_query(query_string),
            headers=headers,
            body=bytes(self._body) if self._body else b"",
            request_id=request_id(headers.get("x-request-id")),
            origin=self._server.scheme + headers.get("host", ""),
            query_string=query_string,
            peer=self._peer,
        )
        connection = None
        if not parser.should_keep_alive():
            connection = "close"
        elif parser.get_http_version() == "1.0":
            connection = "keep-alive"
        answer = _Answer(request, None, method == "HEAD", connection)
        if parser.should_upgrade():
            self._upgrading = answer  # the parser stops after it: data_received decides
            return
        self._enqueue(answer)

    # -- answering ---------------------------------------------------------------------------
    def _enqueue(self, answer: _Answer) -> None:
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

    async def _answer(self, answer: _Answer, request: Request) -> None:
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

    def _send(self, answer: _Answer, response: Response) -> None:
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

    def _refuse(self, exc: ApiError) -> None:
        """Answer a request the protocol itself turns down, after the ones before it, then close."""
        rid = request_id(self._headers.get("x-request-id"))
        response = error_response(exc, rid)
        response.headers["X-Request-ID"] = rid
        self._started = None
        self._in_head = self._in_body = False
        self._refused = True
        self._queue.append(_Answer(None, response, False, "close"))
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
    def _upgrade_or_not(self, rest: bytes) -> bytes:
        """The parser stopped after a request with ``Upgrade``: hand it over, or answer it here.

        Returns the bytes still to parse as HTTP/1.1 (none once the connection is handed over).
        """
        answer, self._upgrading = self._upgrading, None
        assert answer is not None and answer.request is not None
        request = answer.request
        if "content-length" in request.headers or "transfer-encoding" in request.headers:
            self._refuse(InvalidRequestError("a request with Upgrade may not have a body"))
            return b""
        if self._server.takes_upgrade(request):
            self._upgrade = self._request_head() + rest
            self._pause_reading()
            self._answer_next()
            return b""
        # Every other Upgrade is ignored: the request is answered here, the rest read as HTTP/1.1.
        self._parser = httptools.HttpRequestParser(self)
        self._enqueue(answer)
        return rest

    def _request_head(self) -> bytes:
        """The upgrade request's head as it came, but for the case of header names."""
        method = self._parser.get_method().decode("latin-1")
        version = self._parser.get_http_version()
        lines = [f"{method} {b''.join(self._url).decode('latin-1')} HTTP/{version}\r\n"]
        lines.extend(f"{name}: {value}\r\n" for name, value in self._headers.items())
        lines.append("\r\n")
        return "".join(lines).encode("latin-1")

    def _hand_over(self) -> None:
        """Give the connection, and the bytes read for it, to aiohttp for the rest of its life."""
        transport, data = self._transport, self._upgrade
        assert transport is not None and data is not None
        protocol = self._server.hand_over()
        self._closed = True
        self._server.forget(self)
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        protocol.data_received(data)
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
        if self._closed:
            return
        limit = self._server.request_timeout_s
        if self._started is not None:
            if now - self._started > limit:
                self._refuse(RequestTimeoutError(f"the request did not arrive within {limit:g} s"))
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


def _head_too_large() -> HeadersTooLargeError:
    return HeadersTooLargeError(f"the request head and trailers may be at most {MAX_HEAD_BYTES} bytes")


def _framing_too_large(limit: int) -> str:
    return f"the chunked framing of a body (chunk sizes, extensions) may be at most {limit} bytes"


def _unsupported(version: str) -> ApiError:
    if version == "0.9":
        return InvalidRequestError("the request line has no HTTP version (HTTP/1.1 or HTTP/1.0)")
    return HttpVersionNotSupportedError("this server speaks HTTP/1.1 and HTTP/1.0")


def _origin_form(url: str) -> str:
    """The path and query of an absolute-form request target (``GET http://host/path``)."""
    parts = urlsplit(url)
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path
