"""The request and response value types of the core: no server framework's types cross this line.

Adapters (aiohttp, Lambda) translate into :class:`Request` and out of :class:`Response`; every
handler is ``async def handler(request, deps) -> Response``. ``headers`` and ``query`` are plain
mappings; header names are looked up in lower case, so an adapter passes either a
case-insensitive mapping (aiohttp's) or a dict with lower-cased keys (API Gateway's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol
from urllib.parse import parse_qsl

import orjson

if TYPE_CHECKING:
    from control_plane.models import Principal

JSON = "application/json"


@dataclass(slots=True)
class Request:
    """One HTTP request as the core sees it.

    ``raw_path`` keeps percent-escapes so that a market such as ``BTC%2FUSD`` stays one path
    segment; the router decodes each segment. ``peer`` is the client's IP address as the adapter
    saw it (empty when unknown), for limits per source. ``origin`` (``https://host``) and ``query_string``
    are kept only to rebuild :attr:`url` when a route echoes it. ``path_params`` and
    ``principal`` are filled in by the dispatcher once the route is known and the caller
    authenticated.
    """

    method: str
    raw_path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    request_id: str
    origin: str = ""
    query_string: str = ""
    peer: str = ""
    path_params: Mapping[str, str] = field(default_factory=dict)
    principal: Principal | None = None

    @property
    def url(self) -> str:
        """The URL as the caller sent it (built on demand: the read path never needs it)."""
        query = f"?{self.query_string}" if self.query_string else ""
        return f"{self.origin}{self.raw_path}{query}"


@dataclass(slots=True)
class Response:
    """Status, headers and body bytes; ``content_type`` is kept apart because every adapter needs it.

    ``stream`` is set only on an accepted ``/v1/stream`` request: an adapter that speaks
    WebSocket upgrades the connection and runs the stream; others refuse it.
    """

    status: int
    body: bytes = b""
    content_type: str | None = JSON
    headers: dict[str, str] = field(default_factory=dict)
    stream: Stream | None = None


NO_QUERY: Mapping[str, str] = MappingProxyType({})

_QUERY_CACHE_MAX = 1024
_QUERY_CACHEABLE_LENGTH = 64
_parsed_queries: dict[str, Mapping[str, str]] = {}


def parse_query(query_string: str) -> Mapping[str, str]:
    """The parameters of a query string, read-only; the first of repeated names wins.

    Readers send the same few short query strings (``depth=100``) over and over, so short ones
    are parsed once and shared. Long ones, and any that may carry a key (``api_key=``), are
    parsed every time and never kept.
    """
    if not query_string:
        return NO_QUERY
    parsed = _parsed_queries.get(query_string)
    if parsed is not None:
        return parsed
    params: dict[str, str] = {}
    for name, value in parse_qsl(query_string, keep_blank_values=True):
        params.setdefault(name, value)
    parsed = MappingProxyType(params)
    if len(query_string) <= _QUERY_CACHEABLE_LENGTH and "key" not in query_string:
        if len(_parsed_queries) >= _QUERY_CACHE_MAX:
            _parsed_queries.clear()
        _parsed_queries[query_string] = parsed
    return parsed


def json_response(payload: object, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """A JSON response from plain data (the control-plane routes; books use pre-encoded bytes)."""
    return Response(status, orjson.dumps(payload), JSON, headers if headers is not None else {})


def empty_response(status: int = 204) -> Response:
    return Response(status, b"", None, {})


class Outlet(Protocol):
    """A stream's way to send a message at once, from the callback that made it (a WebSocket
    connection is one). A message returned by ``next_message`` goes out when the stream's sender
    task next runs: after the rest of the event loop's turn, every other callback and request
    ready in it."""

    def ready(self) -> bool:
        """Whether a message sent now goes straight out: the connection is open and its buffer is
        below its high-water mark (a stream that is not sent at once conflates, as ever)."""
        ...

    def send(self, message: bytes) -> None:
        """Frame and write ``message`` now (call it only when :meth:`ready`)."""
        ...


class Stream(Protocol):
    r"""A stream a handler accepted, for an adapter that speaks WebSocket to run: it ``admit``\ s it
        before it upgrades the connection (a LadderError refuses it), starts it once the connection
        is upgraded, hands it each text message the client sends (when it reads them), sends each
    message until ``next_message`` returns None, ``close``\ s it when the
        client goes away and ``stop``\ s it at the end (or when it was admitted but never started)."""

    protocol: str
    """The WebSocket subprotocol the stream speaks (the handshake's answer names it when offered)."""
    max_text: int
    """Bytes of a text message the client may send, each handed to :meth:`receive` (0: the client
    has nothing to say, and its small messages are skipped unread)."""
    outlet: Outlet | None
    """Set by an adapter that can send at once, from before :meth:`start` until :meth:`stop`: the
    stream may send a message through it instead of returning it from ``next_message``."""

    async def admit(self) -> None: ...

    def start(self) -> None: ...

    def receive(self, text: bytes) -> None: ...

    async def next_message(self) -> bytes | None: ...

    def close(self) -> None: ...

    def stop(self) -> None: ...
