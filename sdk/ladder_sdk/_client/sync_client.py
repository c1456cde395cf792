"""The blocking clients: `Ladder` for tenants, `LadderAdmin` for operators.

They add only the wire to the shared core: an `httpx.Client` to send, `time.sleep` to wait and the
websockets sync client to stream. Every rule (URLs, auth, errors, retries, resume) is in the core.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable
from types import TracebackType
from typing import Self, TypeVar, cast

import httpx
import websockets.sync.client

from .._wire import admin_endpoints as admin
from .._wire import endpoints as tenant
from .._wire.book import Book, BookRead, ConsolidatedBook, ConsolidatedTop, Top
from .._wire.call import Call
from .._wire.models import (
    Account,
    ApiKey,
    AuditEntry,
    BulkResult,
    ClusterBook,
    CreatedKey,
    EgressBudget,
    Market,
    Node,
    PairResult,
    Subscription,
    Tenant,
    Usage,
)
from .._wire.retry import RetryPolicy
from .base_client import DEFAULT_TIMEOUT, Outcome, _BaseClient
from .config import ADMIN_KEY_ENV, Timeout, Verify
from .foreign import STREAM_ERRORS
from .local_book import LocalBook
from .stream import StreamSession
from .watch import WATCH_OPTIONS, WatchSession

T = TypeVar("T")


class _SyncClient(_BaseClient):
    """Drives the core's flows over blocking sockets; owns one connection pool until `close()`."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: Timeout | float = DEFAULT_TIMEOUT,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        verify: Verify = True,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(
            api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            retry_policy=retry_policy,
            verify=verify,
        )
        self._http = httpx.Client(
            transport=transport, verify=self._config.ssl_context, timeout=self._httpx_timeout()
        )

    def close(self) -> None:
        """Close the connection pool; the client cannot be used afterwards."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _run(self, call: Call[T]) -> T:
        flow = self._flow(call)
        attempt = next(flow)
        while True:
            if attempt.wait > 0:
                time.sleep(attempt.wait)
            outcome: Outcome
            try:
                outcome = self._http.send(attempt.request)
            except httpx.RequestError as exc:
                outcome = exc
            try:
                attempt = flow.send(outcome)
            except StopIteration as done:
                return cast(T, done.value)

    def _stream(self, session: StreamSession) -> Generator[Book, None, None]:
        while True:
            try:
                with websockets.sync.client.connect(
                    session.url, **self._connect_options(session)
                ) as connection:
                    for message in connection:
                        snapshot = session.accept(message)
                        if snapshot is not None:
                            yield snapshot
                delay = session.closed(connection.protocol.close_code, connection.protocol.close_reason or "")
            except STREAM_ERRORS as exc:
                delay = session.failed(exc)
            time.sleep(delay)

    def _watch(self, session: WatchSession) -> Generator[LocalBook, None, None]:
        stream = session.stream
        while True:
            try:
                with websockets.sync.client.connect(
                    stream.url, **self._connect_options(stream), **WATCH_OPTIONS
                ) as connection:
                    for opening in session.opening():
                        connection.send(opening)
                    for message in connection:
                        book, replies = session.accept(message)
                        for reply in replies:
                            connection.send(reply)
                        if book is not None:
                            yield book
                delay = stream.closed(connection.protocol.close_code, connection.protocol.close_reason or "")
            except STREAM_ERRORS as exc:
                delay = stream.failed(exc)
            time.sleep(delay)


class Ladder(_SyncClient):
    """The blocking client of the tenant API.

    `Ladder()` reads the key from `LADDER_API_KEY` and the server from `LADDER_BASE_URL`
    (default http://127.0.0.1:8080). Use it as a context manager, or call `close()`.

    Args:
        api_key: the tenant's key; overrides `LADDER_API_KEY`.
        base_url: overrides `LADDER_BASE_URL`.
        timeout: a `Timeout`, or seconds for all of its phases.
        max_retries: retries after the first attempt (429, 5xx, dropped connections).
        retry_policy: the full backoff policy; `max_retries` overrides its count.
        verify: True for the system trust store, a CA bundle path, or an `ssl.SSLContext`.
        transport: an httpx transport to send through (tests, proxies); `verify` then does not apply.
    """

    def book(
        self, exchange: str, market: str, depth: int | None = None, max_age_ms: int | None = None
    ) -> Book:
        """Both sides of a book, best first; `max_age_ms` refuses one older than that (BookTooOldError)."""
        return self._run(tenant.book(exchange, market, depth, max_age_ms, side=None))

    def bids(
        self, exchange: str, market: str, depth: int | None = None, max_age_ms: int | None = None
    ) -> Book:
        """The bid side only (`asks` is empty)."""
        return self._run(tenant.book(exchange, market, depth, max_age_ms, side="bids"))

    def asks(
        self, exchange: str, market: str, depth: int | None = None, max_age_ms: int | None = None
    ) -> Book:
        """The ask side only (`bids` is empty)."""
        return self._run(tenant.book(exchange, market, depth, max_age_ms, side="asks"))

    def tops(self, exchange: str | None = None) -> list[Top]:
        """The best bid and ask of every book this tenant subscribes to (of one exchange, or all).

        One call however many books: each `Top` is one replica's snapshot with its own `age_ms`;
        a book not synced right now has only its `status`."""
        return self._run(tenant.tops(exchange))

    def books(self, exchange: str, markets: Iterable[str], depth: int | None = None) -> list[BookRead]:
        """Up to 100 books of one exchange in one call, in order: each `BookRead` holds what
        `book()` would return, or the error code it would raise (`book_not_synced`, ...)."""
        return self._run(tenant.books(exchange, list(markets), depth))

    def consolidated(
        self,
        pair: str,
        venues: Iterable[str] | None = None,
        depth: int | None = None,
        *,
        quotes: Iterable[str] | None = None,
        max_age_ms: int | None = None,
    ) -> ConsolidatedBook:
        """One pair's books (`pair` as `BASE-QUOTE`, e.g. `"BTC-USDT"`) on several venues merged into
        one ladder, each level with every book's part; `venues` None merges every book of the pair
        this tenant subscribes to. Quote currencies are merged only when `quotes` names them (e.g.
        `["USD", "USDT", "USDC"]`, the pair's own among them). A book not served alone right now is
        named in `left_out`, never merged. `cost_to_fill` on the answer prices an order."""
        call = tenant.consolidated(pair, venues, quotes, depth, max_age_ms)
        return self._run(call)

    def consolidated_tops(
        self,
        pairs: Iterable[str],
        venues: Iterable[str] | None = None,
        *,
        quotes: Iterable[str] | None = None,
        max_age_ms: int | None = None,
    ) -> list[ConsolidatedTop]:
        """The best bid and ask of each pair across its books (up to 100 pairs), in order; a pair
        that cannot be answered carries its `error_code` (see `consolidated`)."""
        call = tenant.consolidated_tops(pairs, venues, quotes, max_age_ms)
        return self._run(call)

    def markets(self, exchange: str | None = None) -> list[Market]:
        """What can be subscribed, on one exchange or on all of them."""
        return self._run(tenant.markets(exchange))

    def exchanges(self) -> list[str]:
        """The exchanges this server knows."""
        return self._run(tenant.exchanges())

    def subscribe(
        self, exchange: str, market: str, replicas: int | None = None, depth: int | None = None
    ) -> Subscription:
        """Subscribe to a book, or change the replicas or depth of one held; safe to call again.

        `depth` is how many levels per side the book is kept at. Left out (None), a new
        subscription gets the server's defaults (1 replica, 100 levels) and one held keeps its own;
        the returned `Subscription.changed` says what a call changed, e.g. `{"depth": (500, 100)}`.
        """
        return self._run(tenant.subscribe(exchange, market, replicas, depth))

    def subscribe_many(
        self, exchange: str, markets: Iterable[str], replicas: int | None = None, depth: int | None = None
    ) -> BulkResult:
        """Subscribe to many markets of one exchange in one call (or change their replicas or depth:
        a field left out keeps each held market's own, and each result's `changed` says what changed).

        Each market has its own result: one the exchange does not trade fails alone while the
        others go ahead. The markets that are new count against the tenant's `max_markets`
        together: all of them fit, or `LimitExceededError` and nothing changes.
        """
        return self._run(tenant.subscribe_many(exchange, list(markets), replicas, depth))

    def subscribe_all(
        self,
        exchange: str,
        *,
        quote: str | None = None,
        base: str | None = None,
        replicas: int | None = None,
        depth: int | None = None,
    ) -> BulkResult:
        """Subscribe to every trading market of `exchange`, or those quoted in `quote` and/or of
        base asset `base` (e.g. `subscribe_all("binance.com", quote="USDT")`); see `subscribe_many`."""
        return self._run(tenant.subscribe_many(exchange, None, replicas, depth, quote, base))

    def subscribe_pair(
        self,
        pair: str,
        venues: Iterable[str],
        *,
        quotes: Iterable[str] | None = None,
        replicas: int | None = None,
        depth: int | None = None,
    ) -> PairResult:
        """Subscribe to every spot book of `pair` on `venues` (in `quotes`, the pair's own by
        default) in one call, what `consolidated` needs. Each book counts against `max_markets`,
        all at once; a venue that lists no such market fails alone. `replicas` and `depth` left out
        keep each held book's own (a new one gets the defaults); each result's `changed` says what
        changed."""
        return self._run(tenant.subscribe_pair(pair, venues, quotes, replicas, depth))

    def unsubscribe(self, exchange: str, market: str) -> None:
        """Drop a subscription; the book stops being kept once no tenant wants it."""
        self._run(tenant.unsubscribe(exchange, market))

    def unsubscribe_many(self, exchange: str, markets: Iterable[str]) -> BulkResult:
        """Drop many subscriptions of one exchange; one the tenant does not have fails with `not_found`."""
        return self._run(tenant.unsubscribe_many(exchange, list(markets)))

    def unsubscribe_all(
        self, exchange: str, *, quote: str | None = None, base: str | None = None
    ) -> BulkResult:
        """Drop every subscription of `exchange`, or those that match `quote` and/or `base`."""
        return self._run(tenant.unsubscribe_many(exchange, None, quote, base))

    def subscriptions(self) -> list[Subscription]:
        """This tenant's subscriptions with each book's status."""
        return self._run(tenant.subscriptions())

    def account(self) -> Account:
        """Whose key this client holds: the operator's or a tenant's (which one)."""
        return self._run(tenant.account())

    def usage(self) -> Usage:
        """Request counts (the total and per minute for the last hour) and use against the limits."""
        return self._run(tenant.usage())

    def keys(self) -> list[ApiKey]:
        """This tenant's keys (never their secrets)."""
        return self._run(tenant.keys())

    def create_key(self, expires_in_s: int | None = None) -> CreatedKey:
        """A new key; its secret (`.key`) is shown this once."""
        return self._run(tenant.create_key(expires_in_s))

    def revoke_key(self, key_id: str, grace_s: int | None = None) -> None:
        """Revoke a key, at once or after `grace_s` seconds (to rotate without downtime)."""
        self._run(tenant.revoke_key(key_id, grace_s))

    def stream(
        self, exchange: str, market: str, depth: int | None = None, *, max_reconnects: int | None = None
    ) -> Generator[Book, None, None]:
        """Every published snapshot of a book, as it comes, over a WebSocket.

        Reconnects by itself after a drop (jittered backoff) and never yields a snapshot older
        than, or the same as, one already yielded. `max_reconnects` bounds consecutive failed
        reconnects (None: keep trying); a refused key or subscription is raised at once.
        A slow reader gets the newest snapshots, not a backlog: the server drops the ones in
        between. `close()` the generator (or leave the loop) to hang up.
        """
        return self._stream(self._stream_session(exchange, market, depth, max_reconnects))

    def watch(
        self,
        books: Iterable[tuple[str, str]],
        depth: int | None = None,
        *,
        mode: str = "diff",
        max_reconnects: int | None = None,
    ) -> Generator[LocalBook, None, None]:
        """Many books on one WebSocket, each kept as a `LocalBook`: yields the book each message updated.

        `books` are `(exchange, market)` pairs. In `mode="diff"` (the default) the server sends a
        snapshot, then only the levels that changed, with a checksum of the best 10 levels a side
        after each: a book is yielded in sync (`synced`) only once its checksum matched; one that
        fails it is counted (`LocalBook.mismatches`), yielded void, and subscribed again for a
        fresh snapshot. A book the server stops serving is yielded void (`synced` False) at once.
        `depth` is one of 1, 5, 10, 20, 50, 100 in diff mode (default 100).
        Reconnects by itself and resumes each book where it was; a refused book raises its error.
        """
        return self._watch(self._watch_session(books, depth, mode, max_reconnects))


class LadderAdmin(_SyncClient):
    """The blocking client of the operator API (`/v1/admin/...`).

    Takes the operator key (`api_key=` or `LADDER_ADMIN_KEY`); the other arguments are `Ladder`'s.
    """

    _key_env = ADMIN_KEY_ENV

    def create_tenant(
        self,
        name: str,
        *,
        max_markets: int | None = None,
        max_replicas: int | None = None,
        max_depth: int | None = None,
        rate_limit_rps: float | None = None,
        burst: int | None = None,
        max_streams: int | None = None,
    ) -> Tenant:
        """Create a tenant; limits left out get the server's defaults."""
        return self._run(
            admin.create_tenant(
                name, max_markets, max_replicas, max_depth, rate_limit_rps, burst, max_streams
            )
        )

    def tenants(self) -> list[Tenant]:
        """Every tenant."""
        return self._run(admin.tenants())

    def tenant(self, tenant_id: str) -> Tenant:
        """One tenant."""
        return self._run(admin.tenant(tenant_id))

    def update_tenant(self, tenant_id: str, **fields: object) -> Tenant:
        """Change any of name, max_markets, max_replicas, max_depth, max_streams, rate_limit_rps, burst,
        disabled."""
        return self._run(admin.update_tenant(tenant_id, fields))

    def create_tenant_key(self, tenant_id: str) -> CreatedKey:
        """A new key for a tenant; its secret (`.key`) is shown this once."""
        return self._run(admin.create_tenant_key(tenant_id))

    def tenant_keys(self, tenant_id: str) -> list[ApiKey]:
        """A tenant's keys (never their secrets)."""
        return self._run(admin.tenant_keys(tenant_id))

    def revoke_key(self, key_id: str) -> None:
        """Revoke any tenant's key at once."""
        self._run(admin.revoke_key(key_id))

    def nodes(self) -> list[Node]:
        """The ingest nodes, their heartbeats and assignments."""
        return self._run(admin.nodes())

    def tenant_usage(self, tenant_id: str) -> Usage:
        """A tenant's usage against its limits, as the tenant sees it."""
        return self._run(admin.tenant_usage(tenant_id))

    def books(self) -> list[ClusterBook]:
        """Every book the cluster keeps, replica by replica: node, status, age, resyncs, mismatches."""
        return self._run(admin.books())

    def egress(self) -> list[EgressBudget]:
        """Each egress IP's venue weight pools: weight used this minute against the limit, 429/418 seen."""
        return self._run(admin.egress())

    def audit(self, limit: int | None = None) -> list[AuditEntry]:
        """The audit log, newest first; `limit` caps how many entries (the server has a default)."""
        return self._run(admin.audit(limit))
