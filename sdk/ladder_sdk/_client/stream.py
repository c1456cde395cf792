"""The reconnect-and-resume rules of `stream()`, as a state object with no I/O.

Theory of operation: the server sends one JSON book per published snapshot on `/v1/stream`. A
client loop (sync or async, in `_client.sync_client` / `_client.async_client`) opens the WebSocket with
`url`/`headers()`, hands every message to `accept`, and when the connection ends hands the
failure to `failed` (an exception) or `closed` (a close frame). Those return how long to wait
before reconnecting, or raise when reconnecting cannot help.

- Resume: `accept` remembers the highest `update_id` handed out and drops any snapshot at or
  below it, so after a reconnect (possibly to another replica) the caller never sees the book
  go back in time or the same snapshot twice.
- Backoff: consecutive failures back off through the client's RetryPolicy (jittered, honouring a
  `Retry-After` on a refused handshake); the count resets once a snapshot arrives.
- Permanent failures are raised, not retried: a refused handshake with 401/403/404 and the like,
  a refused certificate, a close code 4000 + HTTP status (4401, 4403, ...) that is not retryable,
  and `max_reconnects` consecutive failures when a limit was set.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from urllib.parse import urlencode

import websockets.exceptions

from .._wire.answer import status_error
from .._wire.book import Book
from .._wire.errors import APIConnectionError, APIStatusError, LadderError, redact, status_error_class
from .._wire.parse import book, decode_json
from .._wire.retry import RetryPolicy, may_retry
from .foreign import from_stream

# Close codes 4000-4999 are the application's; the stream endpoint sends 4000 + an HTTP status.
APP_CLOSE_BASE = 4000
ABNORMAL_CLOSE = 1006


def stream_url(base_url: str, exchange: str, market: str, depth: int | None) -> str:
    """The ws:// or wss:// URL of the stream endpoint under the client's base URL."""
    scheme, rest = base_url.split("://", 1)
    query = {"exchange": exchange, "market": market} | ({} if depth is None else {"depth": str(depth)})
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/v1/stream?{urlencode(query)}"


class StreamSession:
    """The state of one `stream()` call across all of its connections."""

    def __init__(
        self,
        url: str,
        headers: Callable[[], dict[str, str]],
        policy: RetryPolicy,
        max_reconnects: int | None,
        secret: str,
        ssl_context: ssl.SSLContext,
    ) -> None:
        self.url = url
        self.headers = headers
        self.ssl_context = ssl_context if url.startswith("wss://") else None
        self.last_update_id: int | None = None
        self.failures = 0
        self._policy = policy
        self._max_reconnects = max_reconnects
        self._secret = secret

    def accept(self, message: str | bytes) -> Book | None:
        """The book in a message, or None when it is not newer than one already handed out."""
        snapshot = book(decode_json(message))
        self.failures = 0
        if self.last_update_id is not None and snapshot.update_id <= self.last_update_id:
            return None
        self.last_update_id = snapshot.update_id
        return snapshot

    def failed(self, exc: Exception) -> float:
        """Seconds to wait after the connection failed with `exc` (one of `STREAM_ERRORS`)."""
        if isinstance(exc, websockets.exceptions.InvalidStatus):
            answer = exc.response
            refused = status_error(
                answer.status_code, answer.headers, bytes(answer.body or b""), self._secret
            )
            return self._backoff(refused, tls_rejected=False)
        if isinstance(exc, websockets.exceptions.ConnectionClosed):
            frame = exc.rcvd
            return self.closed(frame.code if frame else ABNORMAL_CLOSE, frame.reason if frame else "")
        translated = from_stream(exc, self.url, self._secret)
        return self._backoff(translated.error, translated.tls_rejected, cause=exc)

    def closed(self, code: int | None, reason: str) -> float:
        """Seconds to wait after the server closed the connection with `code`."""
        if code is not None and APP_CLOSE_BASE <= code < APP_CLOSE_BASE + 1000:
            status = code - APP_CLOSE_BASE
            message = redact(reason, self._secret) or f"closed with {code}"
            error: LadderError = status_error_class(status, None)(status, None, message)
        else:
            error = APIConnectionError(
                f"stream closed with code {code or ABNORMAL_CLOSE}: {redact(reason, self._secret)}"
            )
        return self._backoff(error, tls_rejected=False)

    def _backoff(self, error: LadderError, tls_rejected: bool, cause: Exception | None = None) -> float:
        retryable = may_retry(error, retry_safe=True, may_have_arrived=True, tls_rejected=tls_rejected)
        spent = self._max_reconnects is not None and self.failures >= self._max_reconnects
        retry_after = error.retry_after if isinstance(error, APIStatusError) else None
        if not retryable or spent:
            raise error from cause
        self.failures += 1
        return self._policy.compute(self.failures - 1, retry_after)
