"""One replica of one book: venue events in, snapshot requests out, publishes marked.

The replica is the async driver around the pure :class:`~ingest_nodes.engine.BookEngine`: it feeds
it what the connection delivers, fetches a snapshot whenever the engine asks for one (retrying with
backoff, never two at once), and tells the publisher when the served book changed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

import aiohttp

from book_store.keys import BookKey
from ingest_nodes.backoff import Backoff
from ingest_nodes.engine import BookEngine, EngineResult
from ingest_nodes.events import DepthSnapshot, DepthUpdate
from ingest_nodes.publisher import Publisher
from ingest_nodes.rest import VenueRequestError, now_ms
from ingest_nodes.venues.errors import VenuePayloadError

log = logging.getLogger(__name__)

# After a snapshot that turned out too old, wait this long before the next one: the stream has to
# move past it, and hammering the venue costs weight for nothing.
MIN_REFETCH_S = 0.25


class SnapshotSource(Protocol):
    async def snapshot(self, symbol: str, limit: int) -> DepthSnapshot: ...


class BookReplica:
    """Keeps one replica of one book in sync and published."""

    def __init__(
        self,
        book: BookKey,
        replica: int,
        engine: BookEngine,
        snapshots: SnapshotSource,
        publisher: Publisher,
        *,
        snapshot_limit: int,
        backoff: Backoff | None = None,
    ) -> None:
        self.book = book
        self.replica = replica
        self.engine = engine
        self.snapshot_limit = snapshot_limit
        self.last_event_ms = now_ms()
        self.last_publish_ms = 0
        self.resyncs = 0
        self.last_resync_reason: str | None = None
        self._snapshots = snapshots
        self._publisher = publisher
        self._backoff = backoff or Backoff()
        self._fetch: asyncio.Task[None] | None = None
        self._fetched_at = 0.0

    @property
    def symbol(self) -> str:
        return self.book.market

    def start(self) -> None:
        self._publisher.track(self)

    async def stop(self) -> None:
        if self._fetch is not None:
            self._fetch.cancel()
            await asyncio.gather(self._fetch, return_exceptions=True)
        self._publisher.untrack(self)

    # -- what the connection delivers ----------------------------------------------------------

    def on_update(self, update: DepthUpdate) -> None:
        self.last_event_ms = update.ingest_time
        self._handle(self.engine.on_update(update))

    def on_disconnect(self) -> None:
        self._handle(self.engine.on_disconnect())

    def invalidate(self, reason: str) -> None:
        self._handle(self.engine.invalidate(reason))

    # -- reacting to the engine ----------------------------------------------------------------

    def _handle(self, result: EngineResult) -> None:
        if result.resync_reason is not None:
            self.resyncs += 1
            self.last_resync_reason = result.resync_reason
            log.info(
                "%s/%s r%d: resync (%s)", self.book.exchange, self.symbol, self.replica, result.resync_reason
            )
        if result.need_snapshot and (self._fetch is None or self._fetch.done()):
            self._fetch = asyncio.get_running_loop().create_task(self._fetch_snapshot())
        if result.changed or result.resync_reason is not None:
            self._publisher.mark(self)

    async def _fetch_snapshot(self) -> None:
        loop = asyncio.get_running_loop()
        wait = self._fetched_at + MIN_REFETCH_S - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        attempt = 0
        while True:
            try:
                snapshot = await self._snapshots.snapshot(self.symbol, self.snapshot_limit)
                break
            except (VenueRequestError, VenuePayloadError, aiohttp.ClientError, TimeoutError) as exc:
                retry_after = getattr(exc, "retry_after_s", None)
                log.warning("%s/%s: snapshot failed: %s", self.book.exchange, self.symbol, exc)
                await asyncio.sleep(self._backoff.compute(attempt, retry_after))
                attempt += 1
        self._fetched_at = loop.time()
        self._fetch = None  # this task is ending: a follow-up request must start a new one
        self._handle(self.engine.on_snapshot(snapshot))
