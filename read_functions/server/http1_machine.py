"""The HTTP/1.1 rules of the read API, with no transport: bytes in; requests, refusals and their
statuses out.

:class:`Http1Machine` is one connection's request side, in the shape of h11: the protocol class
(:mod:`read_functions.server.http1`) hands it each read's bytes with the coarse time, and gets back
what they completed, in order: an :class:`Answer` to queue (a request for the core, or a refusal
the rules decided), :data:`CONTINUE` (the client waits for ``100 Continue``), or an
:class:`Upgrade` (the connection leaves for WebSocket). It never writes, reads, sleeps or closes;
the tests feed it scripted byte sequences in memory. The rules:

- requests are parsed by llhttp (through ``httptools``, the parser Node.js uses); HTTP/1.0 and
  HTTP/1.1 only: another version gets 505, a request line without one (HTTP/0.9) 400;
- a request head over :data:`MAX_HEAD_BYTES` gets 431, and so do a head and trailers together
  over it: trailers are counted, then dropped, never merged into the headers (a field sent after
  the body must not authenticate or steer the request it ends); a header that never ends is
  refused as soon as the bytes held for it pass the limit;
- request bodies, sized or chunked, up to ``max_body`` (413 beyond); the chunked framing around a
  body (chunk-size lines, their extensions) may add at most ``max_body`` more (413 beyond), as
  the body's data alone is what the limit means;
- repeated request headers are joined with ``", "`` (so two different ``X-API-Key`` headers are
  one invalid key, never a choice); an absolute-form target is reduced to its path and query;
- a WebSocket upgrade that ``takes_upgrade`` accepts leaves with its request; any other
  ``Upgrade`` is ignored (RFC 9110 section 7.8) and the request answered as usual, and one that
  also declares a body is refused, as its body could only be read as the next request;
- a request whose bytes take longer than the protocol's request timeout to arrive gets 408
  (:meth:`Http1Machine.expire`);
- after a refusal nothing more is parsed: the connection closes once the refusal is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import urlsplit

import httptools

from control_plane.errors import ApiError, InvalidRequestError
from read_functions.app.dispatch import request_id
from read_functions.app.errors import (
    HeadersTooLargeError,
    HttpVersionNotSupportedError,
    PayloadTooLargeError,
    RequestTimeoutError,
    error_response,
)
from read_functions.app.messages import Request, Response, parse_query

MAX_HEAD_BYTES = 32 * 1024

_VERSIONS = frozenset({"1.1", "1.0"})


class Answer(NamedTuple):
    """One request waiting for its answer, or (``request`` None) a refusal already decided."""

    request: Request | None
    refusal: Response | None
    head: bool
    connection: str | None  # the Connection header the answer carries ("close": then it closes)


class Upgrade(NamedTuple):
    """The connection leaves for WebSocket: the upgrade request and every byte after it."""

    request: Request
    data: bytes


class Continue:
    """The client sent ``Expect: 100-continue`` and waits for it before it sends the body."""


CONTINUE = Continue()

Event = Answer | Upgrade | Continue


class Http1Machine:
    """The request side of one connection: bytes in, events out, no I/O."""

    def __init__(
        self, *, max_body: int, scheme: str, peer: str, takes_upgrade: Callable[[Request], bool]
    ) -> None:
        self.max_body = max_body
        self._origin = scheme
        self._peer = peer
        self._takes_upgrade = takes_upgrade
        self._parser = httptools.HttpRequestParser(self)
        self._events: list[Event] = []
        self._now = 0.0
        self.refused = False  # a refusal was decided: nothing more is parsed
        self.upgraded = False  # the connection left for WebSocket: nothing more is parsed
        self._upgrading: Answer | None = None  # a request with Upgrade, until the parser stops
        # The request being parsed:
        self._requests = 0  # requests begun on this connection: which one a read belonged to
        self.started: float | None = None  # coarse time its first byte came; None between requests
        self._in_head = False
        self._in_body = False  # its head is complete, its message is not
        self._head_bytes = 0  # the size of its URL, complete headers and complete trailers
        self._unparsed = 0  # bytes read since the parser last completed a part of its head
        self._body_bytes = 0  # its body's data, and its trailers: what its framing is measured against
        self._framing = 0  # bytes of its body read beyond those (chunk-size lines, extensions)
        self._url: list[bytes] = []
        self._headers: dict[str, str] = {}
        self._body: bytearray | None = None

    def receive(self, data: bytes, now: float) -> list[Event]:
        """What ``data`` (read at coarse time ``now``) completes, in order."""
        events = self._events = []
        self._now = now
        while data and not self.refused and not self.upgraded:
            data = self._feed(data)
        return events

    def expire(self, now: float, limit_s: float) -> Answer | None:
        """408 for a request whose bytes have taken longer than ``limit_s`` to arrive."""
        if self.refused or self.started is None or now - self.started <= limit_s:
            return None
        self._events = []
        self._refuse(RequestTimeoutError(f"the request did not arrive within {limit_s:g} s"))
        (refusal,) = self._events
        assert isinstance(refusal, Answer)
        return refusal

    def release(self) -> None:
        """The connection is gone: drop the parser, which points back here, so that nothing of
        the connection is a reference cycle (a worker's frozen heap needs that,
        :mod:`ladder_process.heap`)."""
        del self._parser

    def _feed(self, data: bytes) -> bytes:
        """Parse what came; the bytes after a request whose ``Upgrade`` was ignored are returned."""
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
            if self._framing > self.max_body:
                self._refuse(PayloadTooLargeError(_framing_too_large(self.max_body)))
        return b""

    # -- httptools callbacks -----------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._requests += 1
        self.started = self._now
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
        if length is not None and length.isdigit() and int(length) > self.max_body:
            raise PayloadTooLargeError.over(self.max_body)
        expect = self._headers.get("expect")
        if expect is not None and expect.lower() == "100-continue":
            self._events.append(CONTINUE)

    def on_body(self, chunk: bytes) -> None:
        if self._body is None:
            self._body = bytearray()
        self._body += chunk
        self._body_bytes += len(chunk)
        if len(self._body) > self.max_body:
            raise PayloadTooLargeError.over(self.max_body)

    def on_message_complete(self) -> None:
        self.started = None
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
            origin=self._origin + headers.get("host", ""),
            query_string=query_string,
            peer=self._peer,
        )
        connection = None
        if not parser.should_keep_alive():
            connection = "close"
        elif parser.get_http_version() == "1.0":
            connection = "keep-alive"
        answer = Answer(request, None, method == "HEAD", connection)
        if parser.should_upgrade():
            self._upgrading = answer  # the parser stops after it: _upgrade_or_not decides
            return
        self._events.append(answer)

    # -- refusals and upgrades ---------------------------------------------------------------
    def _refuse(self, exc: ApiError) -> None:
        """A request the rules turn down: answered after the ones before it, then the connection closes."""
        rid = request_id(self._headers.get("x-request-id"))
        response = error_response(exc, rid)
        response.headers["X-Request-ID"] = rid
        self.started = None
        self._in_head = self._in_body = False
        self.refused = True
        self._events.append(Answer(None, response, False, "close"))

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
        if self._takes_upgrade(request):
            self.upgraded = True
            self._events.append(Upgrade(request, rest))
            return b""
        # Every other Upgrade is ignored: the request is answered here, the rest read as HTTP/1.1.
        self._parser = httptools.HttpRequestParser(self)
        self._events.append(answer)
        return rest


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
