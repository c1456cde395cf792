"""The one boundary where exceptions of httpx, websockets and ssl become the SDK's own.

Each translation also says whether the failed request may have reached the server: a refused
connection or a TLS handshake that never finished provably did nothing, so even a call that
creates something may be sent again; a reset after sending may have done its work already.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import httpx
import websockets.exceptions

from .._wire.errors import APIConnectionError, APIResponseError, APITimeoutError, LadderError, redact

# (foreign class, our class, may the request have reached the server), first match wins.
HTTPX_ERRORS: tuple[tuple[type[httpx.RequestError], type[LadderError], bool], ...] = (
    (httpx.ConnectTimeout, APITimeoutError, False),
    (httpx.PoolTimeout, APITimeoutError, False),
    (httpx.ConnectError, APIConnectionError, False),
    (httpx.TimeoutException, APITimeoutError, True),
    (httpx.DecodingError, APIResponseError, True),
    (httpx.RequestError, APIConnectionError, True),
)

# What a WebSocket connection can fail with, short of an HTTP answer (see `_client.stream`).
STREAM_ERRORS: tuple[type[Exception], ...] = (websockets.exceptions.WebSocketException, OSError)


@dataclass(frozen=True)
class Translated:
    """A foreign failure in the SDK's terms."""

    error: LadderError
    may_have_arrived: bool
    tls_rejected: bool


def from_httpx(exc: httpx.RequestError, *secrets: str) -> Translated:
    """Translate an httpx failure through `HTTPX_ERRORS`; the message names the request it failed."""
    # the last row is httpx.RequestError itself, so a row always matches
    ours, may_have_arrived = next((row[1], row[2]) for row in HTTPX_ERRORS if isinstance(exc, row[0]))
    try:
        request = exc.request
        tried = f" ({request.method} {shown_url(str(request.url))})"
    except RuntimeError:  # an httpx error raised outside a request names none
        tried = ""
    error = ours(redact(f"{type(exc).__name__}: {exc}{tried}", *secrets))
    return Translated(error, may_have_arrived, tls_rejected(exc))


def from_stream(exc: Exception, url: str, *secrets: str) -> Translated:
    """Translate a WebSocket failure that carries no HTTP status (see `STREAM_ERRORS`)."""
    kind = APITimeoutError if isinstance(exc, TimeoutError) else APIConnectionError
    error = kind(redact(f"stream {shown_url(url)}: {type(exc).__name__}: {exc}", *secrets))
    return Translated(error, may_have_arrived=True, tls_rejected=tls_rejected(exc))


def shown_url(url: str) -> str:
    """``url`` as an error may show it: without a user or password, and without its query (which
    says nothing about why a connection failed); the SDK never puts its key in a URL."""
    parsed = httpx.URL(url)
    return str(parsed.copy_with(username=None, password=None, query=None, fragment=None))


def tls_rejected(exc: BaseException) -> bool:
    """True when the server's certificate was refused somewhere down the exception chain.

    Retrying cannot fix that, so the clients raise it at once instead of backing off.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLCertVerificationError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
