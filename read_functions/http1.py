"""HTTP/1.1 for the read API: a small asyncio protocol on llhttp; WebSocket upgrades go to aiohttp.

Theory of operation
-------------------
A cached book read costs the core about as much CPU as aiohttp spends on the HTTP exchange
around it: request and response objects, header multidicts, a handler task and a writer per
request, about 85 µs per static answer on a 2-core machine, where a bare protocol on the same C
parser needs about 20 µs (``ladder bench read`` measures both). The read API needs little of
HTTP/1.1, so each connection is parsed here by llhttp (through ``httptools``, the parser Node.js
uses) and a complete request goes straight into the core as a :class:`Request`; its response
leaves as one write. What the protocol does:

- keep-alive (HTTP/1.1, and HTTP/1.0 when asked), pipelined requests answered strictly in order;
  at most :data:`MAX_PIPELINED` wait, then the connection is not read until they are answered;
- request bodies, sized or chunked, up to ``max_body_bytes`` (413 beyond), ``Expect:
  100-continue``; a request head over :data:`MAX_HEAD_BYTES` gets 431, malformed HTTP 400, both
  with the JSON error body of every other error, and the connection is closed after them;
- a keep-alive connection idle for :data:`KEEPALIVE_TIMEOUT_S` is closed, and a request that takes
  longer than :data:`REQUEST_TIMEOUT_S` to arrive gets 408 (both can be set per server; a coarse
  clock ticking once a second does both, so no request pays for a timer);
- no new answer starts while the transport's write buffer is over its high-water mark;
- HEAD gets the headers of the answer without its body; repeated request headers are joined
  with ``", "`` (so two different ``X-API-Key`` headers are one invalid key, never a choice);
- a WebSocket upgrade is handed, with its request head re-serialised, to aiohttp's own protocol
  (:class:`read_functions.aiohttp_app.AiohttpAdapter`), which owns the connection from then on.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque
from collections.abc import Awaitable, Callable
from email.utils import formatdate
from http import HTTPStatus
from socket import socket
from typing import NamedTuple, cast
from urllib.parse import urlsplit

import httptools
from aiohttp import web

from control_plane.errors import ApiError, InvalidRequestError
from read_functions.aiohttp_app import AiohttpAdapter
from read_functions.deps import Deps
from read_functions.dispatch import Dispatcher, request_id
from read_functions.errors import (
    HeadersTooLargeError,
    PayloadTooLargeError,
    RequestTimeoutError,
    error_response,
)
from read_functions.messages import Request, Response, parse_query

Core = Callable[[Request], Awaitable[Response]]

MAX_HEAD_BYTES = 32 * 1024
MAX_PIPELINED = 16
KEEPALIVE_TIMEOUT_S = 75.0
REQUEST_TIMEOUT_S = 30.0
SHUTDOWN_GRACE_S = 5.0

_STATUS_LINES = {status.value: f"HTTP/1.1 {status.value} {status.phrase}\r\n" for status in HTTPStatus}
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


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
        keepalive_timeout_s: float = KEEPALIVE_TIMEOUT_S,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self.core = core
        self.max_body = max_body_bytes
        self.scheme = "https://" if secure else "http://"
        self.keepalive_timeout_s = keepalive_timeout_s
        self.request_timeout_s = request_timeout_s
        self.connections: set[Http1Connection] = set()
        self.now = 0.0  # the coarse clock: loop time, advanced once a second
        self.date = ""
        self._adapter = upgrades
        self._upgrades: web.Server | None = None
        self._listening: asyncio.Server | None = None
        self._clock: asyncio.Task[None] | None = None
        self._drained: asyncio.Event | None = None  # set at shutdown, once no connection is left

    @classmethod
    def for_api(cls, dispatcher: Dispatcher, deps: Deps, *, secure: bool, **timeouts: float) -> Http1Server:
        """The read API's server: the core answers requests, aiohttp runs WebSocket streams."""
        adapter = AiohttpAdapter(dispatcher, deps, secure=secure)
        max_body = deps.settings.max_body_bytes
        return cls(dispatcher, max_body_bytes=max_body, secure=secure, upgrades=adapter, **timeouts)

    async def start(self, sock: socket, tls: ssl.SSLContext | None) -> None:
        loop = asyncio.get_running_loop()
        if self._adapter is not None:
            self._upgrades = self._adapter.server()
        self.tick()
        self._listening = await loop.create_server(lambda: Http1Connection(self), sock=sock, ssl=tls)
        self._clock = loop.create_task(self._run_clock())

    def forget(self, connection: Http1Connection) -> None:
        """A connection closed or went to aiohttp."""
        self.connections.discard(connection)
        if self._drained is not None and not self.connections:
            self._drained.set()

    @property
    def can_upgrade(self) -> bool:
        return self._adapter is not None

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
        self._eof = False
        self._closed = False
        self._upgrade: bytes | None = None  # a WebSocket upgrade waiting for earlier answers
        self._last_active = server.now
        self._peer = ""  # the client's IP address
        # The request being parsed:
        self._started: float | None = None  # coarse time its first byte came; None between requests
        self._in_head = False
        self._head_bytes = 0  # the size of its URL and complete headers
        self._unparsed = 0  # bytes read since the parser last completed a part of its head
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
        self._closed = True
        self._server.forget(self)

    def data_received(self, data: bytes) -> None:
        if self._upgrade is not None:
            self._upgrade += data  # for aiohttp, once the earlier answers are out
            return
        if self._closed or self._transport is None or self._transport.is_closing():
            return
        if self._in_head:
            self._unparsed += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            if not self._server.can_upgrade:
                self._refuse(InvalidRequestError("this server does not upgrade connections"))
                return
            self._upgrade = self._request_head() + data[upgrade.args[0] :]
            self._pause_reading()
            self._answer_next()
        except httptools.HttpParserError as exc:
            cause = exc.__context__
            if not isinstance(cause, ApiError):
                cause = InvalidRequestError(f"malformed HTTP: {exc}")
            self._refuse(cause)
        else:
            # httptools holds a header back until it ends: one that never ends is refused here
            if self._in_head and self._head_bytes + self._unparsed > MAX_HEAD_BYTES:
                self._refuse(_head_too_large())

    def eof_received(self) -> bool:
        """The client will send no more; answer what it sent, then close."""
        self._eof = True
        return self._answering or bool(self._queue)

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._answer_next()

    # -- httptools callbacks -----------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._started = self._server.now
        self._in_head = True
        self._head_bytes = self._unparsed = 0
        self._url = []
        self._headers = {}
        self._body = None

    def on_url(self, url: bytes) -> None:
        self._url.append(url)
        self._head_bytes += len(url)
        self._unparsed = 0

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value) + 4  # ": " and CRLF
        self._unparsed = 0
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers = self._headers
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self._head_bytes > MAX_HEAD_BYTES:
            raise _head_too_large()
        if self._parser.should_upgrade():
            return
        length = self._headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self._server.max_body:
            raise PayloadTooLargeError.over(self._server.max_body)
        expect = self._headers.get("expect")
        if expect is not None and expect.lower() == "100-continue" and self._idle():
            assert self._transport is not None
            self._transport.write(_CONTINUE)

    def on_body(self, chunk: bytes) -> None:
        if self._body is None:
            self._body = bytearray()
        self._body += chunk
        if len(self._body) > self._server.max_body:
            raise PayloadTooLargeError.over(self._server.max_body)

    def on_message_complete(self) -> None:
        self._started = None
        parser = self._parser
        if parser.should_upgrade():
            return  # data_received hands the connection over
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
        self._queue.append(_Answer(request, None, method == "HEAD", connection))
        if len(self._queue) >= MAX_PIPELINED:
            self._pause_reading()
        self._answer_next()

    # -- answering ---------------------------------------------------------------------------
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
        if self._reading_paused and len(self._queue) < MAX_PIPELINED // 2 and self._upgrade is None:
            self._reading_paused = False
            if self._transport is not None and not self._closed:
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
        transport.write(data)
        self._last_active = self._server.now
        if connection == "close":
            self._closed = True
            transport.close()

    def _refuse(self, exc: ApiError) -> None:
        """Answer a request the protocol itself turns down, after the ones before it, then close."""
        rid = request_id(self._headers.get("x-request-id"))
        response = error_response(exc, rid)
        response.headers["X-Request-ID"] = rid
        self._started = None
        self._in_head = False
        self._queue.append(_Answer(None, response, False, "close"))
        self._pause_reading()
        self._answer_next()

    def _idle(self) -> bool:
        return not self._answering and not self._queue

    def _pause_reading(self) -> None:
        if not self._reading_paused and self._transport is not None and not self._closed:
            self._reading_paused = True
            self._transport.pause_reading()

    # -- WebSocket upgrades ------------------------------------------------------------------
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
        """Called once a second: close an idle keep-alive connection, refuse a stalled request."""
        if self._closed or self._upgrade is not None:
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
        """Shutdown, past its grace: drop the connection, even with answers still unsent."""
        self._closed = True
        if self._transport is not None:
            self._transport.abort()
        self._server.forget(self)


def _head_too_large() -> HeadersTooLargeError:
    return HeadersTooLargeError(f"the request head may be at most {MAX_HEAD_BYTES} bytes")


def _origin_form(url: str) -> str:
    """The path and query of an absolute-form request target (``GET http://host/path``)."""
    parts = urlsplit(url)
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path
