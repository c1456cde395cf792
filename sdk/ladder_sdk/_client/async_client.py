"""The asyncio clients: `AsyncLadder` for tenants, `AsyncLadderAdmin` for operators.

The twins of `_client.sync_client` with `await` in the three places where waiting happens: an
`httpx.AsyncClient` to send, `asyncio.sleep` to back off, websockets' asyncio client to stream.
Every method takes the same arguments and gives the same result as its `Ladder` namesake.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterable
from types import TracebackType
from typing import Self, TypeVar, cast

import httpx
import websockets.asyncio.client

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


class _AsyncClient(_BaseClient):
    """Drives the core's flows on the running event loop; owns one connection pool until `aclose()`."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str | None = None,
        timeout: Timeout | float = DEFAULT_TIMEOUT,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        verify: Verify = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(
            api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            retry_policy=retry_policy,
            verify=verify,
        )
        self._http = httpx.AsyncClient(
            transport=transport, verify=self._config.ssl_context, timeout=self._httpx_timeout()
        )

    async def aclose(self) -> None:
        """Close the connection pool; the client cannot be used afterwards."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _run(self, call: Call[T]) -> T:
        flow = self._flow(call)
        attempt = next(flow)
        while True:
            if attempt.wait > 0:
                await asyncio.sleep(attempt.wait)
            outcome: Outcome
            try:
                outcome = await self._http.send(attempt.request)
            except httpx.RequestError as exc:
                outcome = exc
            try:
                attempt = flow.send(outcome)
            except StopIteration as done:
                return cast(T, done.value)

    async def _stream(self, session: StreamSession) -> AsyncGenerator[Book, None]:
        while True:
            try:
                async with websockets.asyncio.client.connect(
                    session.url, **self._connect_options(session)
                ) as connection:
                    async for message in connection:
                        snapshot = session.accept(message)
                        if snapshot is not None:
                            yield snapshot
                delay = session.closed(connection.protocol.close_code, connection.protocol.close_reason or "")
            except STREAM_ERRORS as exc:
                delay = session.failed(exc)
            await asyncio.sleep(delay)

    async def _watch(self, session: WatchSession) -> AsyncGenerator[LocalBook, None]:
        stream = session.stream
        while True:
            try:
                async with websockets.asyncio.client.connect(
                    stream.url, **self._connect_options(stream), **WATCH_OPTIONS
                ) as connection:
                    for opening in session.opening():
                        await connection.send(opening)
                    async for message in connection:
                        book, replies = session.accept(message)
                        for reply in replies:
                            await connection.send(reply)
                        if book is not None:
                            yield book
                delay = stream.closed(connection.protocol.close_code, connection.protocol.close_reason or "")
            except STREAM_ERRORS as exc:
                delay = stream.failed(exc)
            await asyncio.sleep(delay)


class AsyncLadder(_AsyncClient):
    """The asyncio client of the tenant API; arguments and methods as `Ladder`, awaited.

    Use it as `async with AsyncLadder() as ladder:`, or call `await ladder.aclose()`.
    """

    async def book(
        self, exchange: str, market: str, depth: int | None = None, max_age_ms: int | None = None
    ) -> Book:
        """Both sides of a book, best first (see `Ladder.book`)."""
        return await self._run(tenant.book(exchange, market, depth, max_age_ms, side=None))

    async def bids(
        self, exchange: str, market: str, depth: int | None = None, max_age_ms: int | None = None
    ) -> Book:
        """The bid side only (see `Ladder.bids`)."""
        return await self._run(tenant.book(exchange, market, depth, max_age_ms, side="bids"))

    async def asks(
        self, exchange: str, market: str, depth: int | None = None, max_age_ms: int | None = None
    ) -> Book:
        """The ask side only (see `Ladder.asks`)."""
        return await self._run(tenant.book(exchange, market, depth, max_age_ms, side="asks"))

    async def tops(self, exchange: str | None = None) -> list[Top]:
        """The best bid and ask of every book this tenant subscribes to (of one exchange, or all).

        One call however many books: each `Top` is one replica's snapshot with its own `age_ms`;
        a book not synced right now has only its `status`."""
        return await self._run(tenant.tops(exchange))

    async def books(self, exchange: str, markets: Iterable[str], depth: int | None = None) -> list[BookRead]:
        """Up to 100 books of one exchange in one call, in order: each `BookRead` holds what
        `book()` would return, or the error code it would raise (`book_not_synced`, ...)."""
        return await self._run(tenant.books(exchange, list(markets), depth))

    async def consolidated(
        self,
        pair: str,
        venues: Iterable[str] | None = None,
        depth: int | None = None,
        *,
        quotes: Iterable[str] | None = None,
        max_age_ms: int | None = None,
    ) -> ConsolidatedBook:
        """One pair's books on several venues merged into one ladder (see `Ladder.consolidated`)."""
        call = tenant.consolidated(pair, venues, quotes, depth, max_age_ms)
        return await self._run(call)

    async def consolidated_tops(
        self,
        pairs: Iterable[str],
        venues: Iterable[str] | None = None,
        *,
        quotes: Iterable[str] | None = None,
        max_age_ms: int | None = None,
    ) -> list[ConsolidatedTop]:
        """The best bid and ask of each pair across its books (see `Ladder.consolidated_tops`)."""
        call = tenant.consolidated_tops(pairs, venues, quotes, max_age_ms)
        return await self._run(call)

    async def markets(self, exchange: str | None = None) -> list[Market]:
        """What can be subscribed (see `Ladder.markets`)."""
        return await self._run(tenant.markets(exchange))

    async def exchanges(self) -> list[str]:
        """The exchanges this server knows."""
        return await self._run(tenant.exchanges())

    async def subscribe(
        self, exchange: str, market: str, replicas: int | None = None, depth: int | None = None
    ) -> Subscription:
        """Subscribe to a book, or change its replicas and depth (see `Ladder.subscribe`)."""
        return await self._run(tenant.subscribe(exchange, market, replicas, depth))

    async def subscribe_many(
        self, exchange: str, markets: Iterable[str], replicas: int | None = None, depth: int | None = None
    ) -> BulkResult:
        """Subscribe to many markets of one exchange in one call (see `Ladder.subscribe_many`)."""
        return await self._run(tenant.subscribe_many(exchange, list(markets), replicas, depth))

    async def subscribe_all(
        self,
        exchange: str,
        *,
        quote: str | None = None,
        base: str | None = None,
        replicas: int | None = None,
        depth: int | None = None,
    ) -> BulkResult:
        """Subscribe to every trading market that matches (see `Ladder.subscribe_all`)."""
        return await self._run(tenant.subscribe_many(exchange, None, replicas, depth, quote, base))

    async def subscribe_pair(
        self,
        pair: str,
        venues: Iterable[str],
        *,
        quotes: Iterable[str] | None = None,
        replicas: int | None = None,
        depth: int | None = None,
    ) -> PairResult:
        """Subscribe to every spot book of `pair` on `venues` (see `Ladder.subscribe_pair`)."""
        return await self._run(tenant.subscribe_pair(pair, venues, quotes, replicas, depth))

    async def unsubscribe(self, exchange: str, market: str) -> None:
        """Drop a subscription (see `Ladder.unsubscribe`)."""
        await self._run(tenant.unsubscribe(exchange, market))

    async def unsubscribe_many(self, exchange: str, markets: Iterable[str]) -> BulkResult:
        """Drop many subscriptions of one exchange (see `Ladder.unsubscribe_many`)."""
        return await self._run(tenant.unsubscribe_many(exchange, list(markets)))

    async def unsubscribe_all(
        self, exchange: str, *, quote: str | None = None, base: str | None = None
    ) -> BulkResult:
        """Drop every matching subscription of `exchange` (see `Ladder.unsubscribe_all`)."""
        return await self._run(tenant.unsubscribe_many(exchange, None, quote, base))

    async def subscriptions(self) -> list[Subscription]:
        """This tenant's subscriptions with each book's status."""
        return await self._run(tenant.subscriptions())

    async def account(self) -> Account:
        """Whose key this client holds: the operator's or a tenant's (which one)."""
        return await self._run(tenant.account())

    async def usage(self) -> Usage:
        """Request counts (the total and per minute for the last hour) and use against the limits."""
        return await self._run(tenant.usage())

    async def keys(self) -> list[ApiKey]:
        """This tenant's keys (never their secrets)."""
        return await self._run(tenant.keys())

    async def create_key(self, expires_in_s: int | None = None) -> CreatedKey:
        """A new key; its secret (`.key`) is shown this once."""
        return await self._run(tenant.create_key(expires_in_s))

    async def revoke_key(self, key_id: str, grace_s: int | None = None) -> None:
        """Revoke a key (see `Ladder.revoke_key`)."""
        await self._run(tenant.revoke_key(key_id, grace_s))

    def stream(
        self, exchange: str, market: str, depth: int | None = None, *, max_reconnects: int | None = None
    ) -> AsyncGenerator[Book, None]:
        """Every published snapshot of a book, resumed across reconnects (see `Ladder.stream`).

        `await stream.aclose()` hangs up at once; leaving an `async for` early leaves that to
        the garbage collector.
        """
        return self._stream(self._stream_session(exchange, market, depth, max_reconnects))

    def watch(
        self,
        books: Iterable[tuple[str, str]],
        depth: int | None = None,
        *,
        mode: str = "diff",
        max_reconnects: int | None = None,
    ) -> AsyncGenerator[LocalBook, None]:
        """Many books on one WebSocket, each a verified `LocalBook` (see `Ladder.watch`)."""
        return self._watch(self._watch_session(books, depth, mode, max_reconnects))


class AsyncLadderAdmin(_AsyncClient):
    """The asyncio client of the operator API; arguments and methods as `LadderAdmin`, awaited."""

    _key_env = ADMIN_KEY_ENV

    async def create_tenant(
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
        return await self._run(
            admin.create_tenant(
                name, max_markets, max_replicas, max_depth, rate_limit_rps, burst, max_streams
            )
        )

    async def tenants(self) -> list[Tenant]:
        """Every tenant."""
        return await self._run(admin.tenants())

    async def tenant(self, tenant_id: str) -> Tenant:
        """One tenant."""
        return await self._run(admin.tenant(tenant_id))

    async def update_tenant(self, tenant_id: str, **fields: object) -> Tenant:
        """Change any of name, max_markets, max_replicas, max_depth, max_streams, rate_limit_rps, burst,
        disabled."""
        return await self._run(admin.update_tenant(tenant_id, fields))

    async def create_tenant_key(self, tenant_id: str) -> CreatedKey:
        """A new key for a tenant; its secret (`.key`) is shown this once."""
        return await self._run(admin.create_tenant_key(tenant_id))

    async def tenant_keys(self, tenant_id: str) -> list[ApiKey]:
        """A tenant's keys (never their secrets)."""
        return await self._run(admin.tenant_keys(tenant_id))

    async def revoke_key(self, key_id: str) -> None:
        """Revoke any tenant's key at once."""
        await self._run(admin.revoke_key(key_id))

    async def nodes(self) -> list[Node]:
        """The ingest nodes, their heartbeats and assignments."""
        return await self._run(admin.nodes())

    async def tenant_usage(self, tenant_id: str) -> Usage:
        """A tenant's usage against its limits, as the tenant sees it."""
        return await self._run(admin.tenant_usage(tenant_id))

    async def books(self) -> list[ClusterBook]:
        """Every book the cluster keeps, replica by replica: node, status, age, resyncs, mismatches."""
        return await self._run(admin.books())

    async def egress(self) -> list[EgressBudget]:
        """Each egress IP's venue weight pools: weight used this minute against the limit, 429/418 seen."""
        return await self._run(admin.egress())

    async def audit(self, limit: int | None = None) -> list[AuditEntry]:
        """The audit log, newest first; `limit` caps how many entries (the server has a default)."""
        return await self._run(admin.audit(limit))
