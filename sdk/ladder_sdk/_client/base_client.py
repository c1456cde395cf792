"""The I/O-free core that the sync and the async clients share.

Theory of operation: an endpoint function (`_wire.endpoints`, `_wire.admin_endpoints`) describes a call as
a `Call`. `_BaseClient._flow(call)` is a generator that yields `Attempt`s ("wait this long, then
send this request") and is sent back what happened: the `httpx.Response`, or the
`httpx.RequestError` that sending raised. It reads the answer, decides with the RetryPolicy
whether to try again, and finally returns the parsed model (as StopIteration's value) or raises
the SDK's exception. The sync client drives it with `time.sleep` + `httpx.Client.send`, the async
client with `asyncio.sleep` + `httpx.AsyncClient.send`; neither knows an endpoint, a status code
or a retry rule. `stream()` works the same way through `_stream.StreamSession`.

Every attempt gets its own `X-Request-ID` (`<call id>-<attempt>`): unique per request, yet the
retries of one call share a prefix in the server's logs.
"""

from __future__ import annotations

import json
import platform
import uuid
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import httpx

from .._version import VERSION
from .._wire.answer import status_error
from .._wire.call import Call
from .._wire.errors import APIStatusError, LadderError
from .._wire.parse import decode_json
from .._wire.retry import RetryPolicy, may_retry
from .config import API_KEY_ENV, ClientConfig, Timeout, Verify, resolve_config
from .foreign import from_httpx
from .logging import STREAM_LOGGER
from .stream import StreamSession, stream_url
from .tracing import trace_headers
from .watch import WatchSession, watch_url

T = TypeVar("T")

DEFAULT_TIMEOUT = Timeout()


@dataclass(frozen=True)
class Attempt:
    """Wait `wait` seconds, then send `request`."""

    request: httpx.Request
    wait: float


Outcome = httpx.Response | httpx.RequestError


class _BaseClient:
    """Settings, request building, answer reading and the retry flow; no sockets, no sleeping."""

    _key_env: ClassVar[str] = API_KEY_ENV

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: Timeout | float = DEFAULT_TIMEOUT,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        verify: Verify = True,
    ) -> None:
        self._config: ClientConfig = resolve_config(
            api_key=api_key,
            key_env=self._key_env,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            retry_policy=retry_policy,
            verify=verify,
        )
        self._user_agent = (
            f"ladder-sdk/{VERSION} python/{platform.python_version()} httpx/{httpx.__version__}"
        )

    @property
    def base_url(self) -> str:
        """The server this client talks to, without a trailing slash."""
        return self._config.base_url

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._config.base_url!r})"

    def _auth_headers(self, request_id: str) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self._config.api_key}",
            "X-Request-ID": request_id,
            **trace_headers(),
        }

    def _httpx_timeout(self) -> httpx.Timeout:
        t = self._config.timeout
        return httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.pool)

    def _build_request(self, call: Call[T], request_id: str) -> httpx.Request:
        headers = self._auth_headers(request_id) | {
            "User-Agent": self._user_agent,
            "Accept": "application/json",
            "Accept-Encoding": "gzip",
        }
        content = None
        if call.body is not None:
            content = json.dumps(call.body).encode()
            headers["Content-Type"] = "application/json"
        return httpx.Request(
            call.method,
            self._config.base_url + call.path,
            params=dict(call.params),
            content=content,
            headers=headers,
            extensions={"timeout": self._httpx_timeout().as_dict()},
        )

    def _read(self, call: Call[T], response: httpx.Response) -> T:
        if response.status_code == 204 or not response.content:
            return call.parse(None)
        return call.parse(decode_json(response.content))

    def _flow(self, call: Call[T]) -> Generator[Attempt, Outcome, T]:
        call_id = uuid.uuid4().hex
        policy = self._config.retry
        attempt, wait = 0, 0.0
        while True:
            outcome = yield Attempt(self._build_request(call, f"{call_id}-{attempt}"), wait)
            cause: Exception | None = None
            error: LadderError
            if isinstance(outcome, httpx.Response):
                if outcome.is_success:
                    return self._read(call, outcome)
                error = status_error(
                    outcome.status_code, outcome.headers, outcome.content, self._config.api_key
                )
                retryable = may_retry(
                    error, retry_safe=call.retry_safe, may_have_arrived=True, tls_rejected=False
                )
            else:
                translated = from_httpx(outcome, self._config.api_key)
                error, cause = translated.error, outcome
                retryable = may_retry(
                    error,
                    retry_safe=call.retry_safe,
                    may_have_arrived=translated.may_have_arrived,
                    tls_rejected=translated.tls_rejected,
                )
            retry_after = error.retry_after if isinstance(error, APIStatusError) else None
            if not retryable or policy.gives_up_on(attempt, retry_after):
                raise error from cause
            wait = policy.compute(attempt, retry_after)
            attempt += 1

    def _stream_session(
        self, exchange: str, market: str, depth: int | None, max_reconnects: int | None
    ) -> StreamSession:
        return StreamSession(
            url=stream_url(self._config.base_url, exchange, market, depth),
            headers=lambda: self._auth_headers(uuid.uuid4().hex),
            policy=self._config.retry,
            max_reconnects=max_reconnects,
            secret=self._config.api_key,
            ssl_context=self._config.ssl_context,
        )

    def _connect_options(self, stream: StreamSession) -> dict[str, Any]:
        """What every WebSocket connection of a stream or a watch is opened with (sync or async)."""
        return {
            "additional_headers": stream.headers(),
            "user_agent_header": self._user_agent,
            "ssl": stream.ssl_context,
            "open_timeout": self._config.timeout.connect,
            "logger": STREAM_LOGGER,
        }

    def _watch_session(
        self, books: Iterable[tuple[str, str]], depth: int | None, mode: str, max_reconnects: int | None
    ) -> WatchSession:
        stream = StreamSession(
            url=watch_url(self._config.base_url),
            headers=lambda: self._auth_headers(uuid.uuid4().hex),
            policy=self._config.retry,
            max_reconnects=max_reconnects,
            secret=self._config.api_key,
            ssl_context=self._config.ssl_context,
        )
        return WatchSession(stream, books, depth, mode)
