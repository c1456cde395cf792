"""Everything a handler may use, built once per process and shared by every request.

``Deps.open`` creates the store client, the caches and the control service; in a Lambda sandbox
it runs once, on the first event, and the result serves every warm invocation. One housekeeping
task flushes usage counts, keys' ``last_used_at`` and the stream slots given back every second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from redis.exceptions import RedisError

from book_store.connect import StoreClient, opened, store_client
from control_plane.bootstrap import open_control_store, resolve_pepper
from control_plane.service import ControlService
from ladder_process.errors import StoreError
from ladder_process.telemetry.metrics import Kind, Metric, value
from read_functions.app.load_shedding import Load
from read_functions.books.cache import BookCache
from read_functions.books.consolidated import ConsolidatedViews
from read_functions.books.diffs.diff_feed import BookFeeds
from read_functions.books.read_memo import ReadMemos
from read_functions.books.readiness import StoreReadiness
from read_functions.settings import ReadSettings
from read_functions.telemetry import ReadTelemetry
from read_functions.tenancy.access import CHANGES, Access
from read_functions.tenancy.catalog_cache import CatalogCache
from read_functions.tenancy.pairs import PairMarkets
from read_functions.tenancy.rate_limit import RateLimiter
from read_functions.tenancy.stream_slots import StreamSlots
from read_functions.tenancy.usage import UsageCounter

log = logging.getLogger(__name__)

_HOUSEKEEPING_S = 1.0


@dataclass
class Deps:
    settings: ReadSettings
    redis: StoreClient
    books: BookCache
    diffs: BookFeeds
    refs: ReadMemos
    catalog: CatalogCache
    pair_markets: PairMarkets
    access: Access
    control: ControlService
    limiter: RateLimiter
    streams: StreamSlots
    usage: UsageCounter
    telemetry: ReadTelemetry
    readiness: StoreReadiness
    load: Load
    consolidated: ConsolidatedViews
    _stack: AsyncExitStack = field(repr=False)
    _housekeeping: asyncio.Task[None] | None = field(default=None, repr=False)
    _flushed_at: float = field(default=0.0, repr=False)
    _closing: bool = field(default=False, repr=False)

    @classmethod
    async def open(cls, settings: ReadSettings, *, follow_changes: bool = True) -> Deps:
        """Build everything; ``follow_changes=False`` (Lambda) reads books without a change feed."""
        stack = AsyncExitStack()
        try:
            client = store_client(settings.redis_url, settings.redis_password, cluster=settings.redis_cluster,
                                  max_connections=settings.store_connections,
                                  pool_wait_s=settings.store_wait_ms / 1000)  # fmt: skip
            stack.push_async_callback(client.aclose)
            await opened(client)
            control_client = client  # a control store kept apart (ladder up) gets its own bounded pool
            if settings.control_redis_url and settings.control_store == "redis":
                control_client = store_client(settings.control_redis_url, settings.redis_password,
                                              cluster=None, max_connections=settings.store_connections,
                                              pool_wait_s=settings.store_wait_ms / 1000)  # fmt: skip
                stack.push_async_callback(control_client.aclose)
                await opened(control_client)
            store = await stack.enter_async_context(
                open_control_store(settings.control_settings(), control_client)
            )
            catalog = CatalogCache(client, refresh_s=settings.catalog_refresh_s)
            pepper = await resolve_pepper(settings.control_settings(), store)
            admin_key = settings.admin_key.get_secret_value() if settings.admin_key else None
            # The control service must not cache: Access bounds staleness on its own (see access.py).
            control = ControlService(store, pepper, admin_key, catalog, cache_ttl_ms=0)
            # Without a change feed no announcement arrives: entitlements get the keys' 1 s bound.
            entitlements_ms = settings.entitlements_max_age_ms if follow_changes else settings.auth_max_age_ms
            access = Access(
                control,
                max_age_s=settings.auth_max_age_ms / 1000,
                entitlements_max_age_s=entitlements_ms / 1000,
            )
            access.start()
            stack.push_async_callback(access.close)
            feed_url = settings.redis_url if follow_changes else None
            books = BookCache(
                client,
                feed_url,
                idle_s=settings.book_idle_s,
                standing={CHANGES: access.apply},
                on_reset=access.missed_changes,
            )
            await books.start()
            stack.push_async_callback(books.close)
            diffs = BookFeeds(books, settings.max_silence_ms)
            stack.push_async_callback(diffs.close)
            readiness = StoreReadiness(client, also=catalog.refresh_states)
            await readiness.start()
            stack.push_async_callback(readiness.close)
            deps = cls(
                settings=settings,
                redis=client,
                books=books,
                diffs=diffs,
                refs=ReadMemos(),
                catalog=catalog,
                pair_markets=PairMarkets(catalog),
                access=access,
                control=control,
                limiter=RateLimiter(client, lease_window_s=settings.rate_lease_ms / 1000),
                streams=StreamSlots(client),
                usage=UsageCounter(client),
                telemetry=ReadTelemetry(),
                readiness=readiness,
                load=Load(settings.max_in_flight, settings.max_queue_ms / 1000),
                consolidated=ConsolidatedViews(),
                _stack=stack,
            )
        except BaseException:
            await stack.aclose()
            raise
        deps.telemetry.pipeline.observe(WORKER_METRICS, deps)
        deps._housekeeping = asyncio.get_running_loop().create_task(deps._housekeep())
        return deps

    async def close(self) -> None:
        self._closing = True
        if self._housekeeping is not None:
            self._housekeeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._housekeeping
        with contextlib.suppress(StoreError):
            await self._flush()
        await self._stack.aclose()

    async def announce(self, change: bytes) -> None:
        """Apply a change of keys, tenants or subscriptions here, and tell every other worker."""
        self.access.apply(change)
        try:
            await self.redis.publish(CHANGES, change)
        except (RedisError, OSError) as exc:
            log.warning("could not announce a change (%s); other workers see it within 1 s", exc)

    async def flush_if_due(self) -> None:
        """Flush usage and keys' last use if the last flush is a second old (Lambda calls this)."""
        if time.monotonic() - self._flushed_at >= _HOUSEKEEPING_S:
            try:
                await self._flush()
            except StoreError as exc:
                log.warning("usage flush failed (%s); keeping the counts for the next one", exc)

    async def _housekeep(self) -> None:
        # The flag ends the loop too: a flush's store error can be the cancellation itself (see
        # read_functions/books/readiness.py), and this task would never end.
        while not self._closing:
            await asyncio.sleep(_HOUSEKEEPING_S)
            await self.flush_if_due()

    async def _flush(self) -> None:
        self._flushed_at = time.monotonic()
        await self.usage.flush()
        await self.control.auth.flush_last_used()
        await self.streams.flush()


WORKER_METRICS: tuple[Metric[Deps], ...] = (
    Metric(
        "ladder_read_cached_books",
        Kind.GAUGE,
        "Books held in this worker's cache.",
        read=lambda d: value(len(d.books)),
    ),
    Metric(
        "ladder_read_book_cache_hit_ratio",
        Kind.GAUGE,
        "Book reads served from the cache, of all book reads.",
        read=lambda d: value(d.books.hits / max(1, d.books.hits + d.books.misses)),
    ),
    Metric(
        "ladder_read_book_cache_hits_total",
        Kind.COUNTER,
        "Book reads served from the cache.",
        read=lambda d: value(d.books.hits),
    ),
    Metric(
        "ladder_read_book_cache_misses_total",
        Kind.COUNTER,
        "Book reads that loaded from the store.",
        read=lambda d: value(d.books.misses),
    ),
    Metric(
        "ladder_read_change_messages_total",
        Kind.COUNTER,
        "Change messages applied to cached books.",
        read=lambda d: value(d.books.messages),
    ),
    Metric(
        "ladder_read_consolidated_merges_total",
        Kind.COUNTER,
        "Consolidated answers merged anew (one of their books had changed; the others reused a merge).",
        read=lambda d: value(d.consolidated.merges),
    ),
    Metric(
        "ladder_read_in_flight",
        Kind.GAUGE,
        "Requests this worker holds (waiting for the store).",
        read=lambda d: value(d.load.in_flight),
    ),
    Metric(
        "ladder_read_shed_total",
        Kind.COUNTER,
        "Requests refused 503 overloaded: too many held.",
        read=lambda d: value(d.load.shed),
    ),
    Metric(
        "ladder_read_open_streams",
        Kind.GAUGE,
        "Streams open on this worker.",
        read=lambda d: value(d.streams.held),
    ),
    Metric(
        "ladder_read_cached_keys",
        Kind.GAUGE,
        "API keys this worker holds an answer for.",
        read=lambda d: value(d.access.cached_keys),
    ),
    Metric(
        "ladder_read_failed_auth_sources",
        Kind.GAUGE,
        "Source addresses with failed authentications counted.",
        read=lambda d: value(len(d.access.failures)),
    ),
    Metric(
        "ladder_read_feed_resets_total",
        Kind.COUNTER,
        "Times the change feed dropped and the cache was cleared.",
        read=lambda d: value(d.books.resets),
    ),
)
"""A read worker's caches, load and change feed, read from its ``Deps`` at collection."""
