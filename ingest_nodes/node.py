"""The ingest node runtime: register, heartbeat, keep the assigned replicas, drain on SIGTERM.

Theory of operation
-------------------
The control plane decides which book replicas each node keeps; the node only follows. It registers,
heartbeats every ``heartbeat_ms``, and reconciles its running replicas with its assignment set
(starting what is new, stopping what was taken away). A node that stops heartbeating loses its
assignments to other nodes within a few seconds, so a crash costs no reads where a book has a
second replica. On SIGTERM the node asks to be drained: the scheduler moves its replicas away
make-before-break, the node keeps serving them until they are gone (or ``drain_timeout_s``), then
leaves.

The node also keeps the market catalog fresh: it fetches each venue's exchangeInfo (one node per
interval does it, by a short lock in the store) so that nothing downstream trusts a market name.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import aiohttp
import redis.asyncio as redis

from book_store.catalog import MarketCatalog
from book_store.errors import StoreError
from book_store.keys import BookKey
from book_store.writer import BookWriter
from control_plane.assignments import AssignmentClient
from ingest_nodes.budget import WeightBudget
from ingest_nodes.engine import BookEngine
from ingest_nodes.exchanges import ExchangeSpec, Protocol, exchange_specs
from ingest_nodes.feed import ExchangeFeed
from ingest_nodes.publisher import Publisher
from ingest_nodes.replica import BookReplica
from ingest_nodes.rest import VenueRequestError, VenueRestClient
from ingest_nodes.settings import IngestSettings
from ingest_nodes.sync import FuturesSyncMachine, SpotSyncMachine
from ingest_nodes.venues.binance.limits import snapshot_limit
from ingest_nodes.venues.errors import VenuePayloadError

log = logging.getLogger(__name__)

ReplicaId = tuple[BookKey, int]


class IngestNode:
    """One ingest process: the replicas it was assigned, and the connections that feed them."""

    def __init__(self, settings: IngestSettings, client: redis.Redis, session: aiohttp.ClientSession) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self._client = client
        self._assignments = AssignmentClient(client)
        self._specs = {e: s for e, s in exchange_specs(settings).items() if s.protocol is not Protocol.ALPACA}
        self._writer = BookWriter(client)
        self.publisher = Publisher(
            self._writer,
            depth_levels=settings.depth_levels,
            publish_interval_ms=settings.publish_interval_ms,
            keepalive_ms=settings.keepalive_ms,
            stale_after_ms=settings.stale_after_ms,
        )
        self._rest = {e: VenueRestClient(session, s, self._budget(s)) for e, s in self._specs.items()}
        self.feeds = {
            e: ExchangeFeed(s, streams_per_connection=settings.streams_per_connection)
            for e, s in self._specs.items()
        }
        self.replicas: dict[ReplicaId, BookReplica] = {}
        self._emptied = asyncio.Event()

    def _budget(self, spec: ExchangeSpec) -> WeightBudget:
        limit = int(spec.weight_per_minute * self.settings.weight_budget_share)
        host = spec.rest_url.split("://", 1)[-1].split("/", 1)[0]
        return WeightBudget(self._client, egress_id=self.settings.egress_id, venue_host=host, limit=limit)

    # -- lifecycle ------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, drain: Callable[[], bool] = lambda: True) -> None:
        """Serve assignments until ``stop`` is set, then (if ``drain()``) drain, and leave."""
        await self._assignments.register(self.node_id, address="", capacity=self.settings.capacity)
        background = [
            asyncio.create_task(self.publisher.run_keepalive(), name="keepalive"),
            asyncio.create_task(self._catalog_loop(), name="catalog"),
            asyncio.create_task(self._follow_assignments(), name="assignments"),
        ]
        try:
            await stop.wait()
            if drain():
                await self._drain()
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            for key in list(self.replicas):
                await self._stop_replica(key)
            for feed in self.feeds.values():
                await feed.close()
            await self._writer.close()
            with contextlib.suppress(StoreError):
                await self._assignments.deregister(self.node_id)

    async def _drain(self) -> None:
        """Ask the scheduler to move our replicas away, keep serving them until they are gone."""
        if not self.replicas:
            return
        log.info("draining %d replicas", len(self.replicas))
        await self._assignments.set_draining(self.node_id)
        self._emptied.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._emptied.wait(), self.settings.drain_timeout_s)

    # -- assignments ----------------------------------------------------------------------------

    async def _follow_assignments(self) -> None:
        period = self.settings.heartbeat_ms / 1000
        while True:
            try:
                await self._assignments.heartbeat(self.node_id, load=len(self.replicas))
                await self.reconcile()
            except StoreError as exc:
                log.warning("control plane unreachable (%s); keeping current replicas", type(exc).__name__)
            await asyncio.sleep(period)

    async def reconcile(self) -> None:
        """Start what we were assigned and do not run; stop what we run and were not assigned."""
        wanted = {
            (BookKey(a.exchange, a.market), a.replica)
            for a in await self._assignments.assignments(self.node_id)
            if a.exchange in self._specs
        }
        for key in set(self.replicas) - wanted:
            await self._stop_replica(key)
        for key in wanted - set(self.replicas):
            self._start_replica(*key)

    def _start_replica(self, book: BookKey, replica: int) -> None:
        spec = self._specs[book.exchange]
        machine = FuturesSyncMachine() if spec.is_futures else SpotSyncMachine()
        runner = BookReplica(
            book,
            replica,
            BookEngine(machine),
            self._rest[spec.id],
            self.publisher,
            snapshot_limit=snapshot_limit(spec.depth_tiers, self.settings.depth_levels),
        )
        self.replicas[(book, replica)] = runner
        runner.start()
        self.feeds[spec.id].attach(runner)
        log.info("started %s/%s replica %d", book.exchange, book.market, replica)

    async def _stop_replica(self, key: ReplicaId) -> None:
        runner = self.replicas.pop(key)
        if not self.replicas:
            self._emptied.set()
        await self.feeds[key[0].exchange].detach(runner)
        await runner.stop()
        log.info("stopped %s/%s replica %d", key[0].exchange, key[0].market, key[1])

    # -- market catalog -------------------------------------------------------------------------

    async def _catalog_loop(self) -> None:
        catalog = MarketCatalog(self._client)
        while True:
            complete = [await self._refresh_catalog(catalog, spec) for spec in self._specs.values()]
            await asyncio.sleep(self.settings.catalog_refresh_s if all(complete) else 5.0)

    async def _refresh_catalog(self, catalog: MarketCatalog, spec: ExchangeSpec) -> bool:
        """Refresh one exchange's markets unless another node did within the interval.

        Returns False while the exchange still has no catalog at all.
        """
        lock = f"ladder:catalog-lock:{spec.id}"
        ttl = max(1, int(self.settings.catalog_refresh_s))
        taken = await self._client.set(lock, self.node_id, nx=True, ex=ttl)
        if not taken and await catalog.count(spec.id):
            return True
        try:
            await catalog.replace(spec.id, await self._rest[spec.id].markets())
        except (VenueRequestError, VenuePayloadError) as exc:
            log.warning("%s: exchangeInfo failed: %s", spec.id, exc)
            await self._client.delete(lock)
            return bool(await catalog.count(spec.id))
        return True
