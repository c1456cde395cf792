"""The ingest node runtime: register, heartbeat, keep the assigned replicas, drain on SIGTERM.

Theory of operation
-------------------
The control plane decides which book replicas each node keeps; the node only follows. It registers,
heartbeats every ``heartbeat_ms`` (from a thread of its own,
``control_plane.scheduling.heartbeat``, so a node whose event loop is busy past what its machine
holds is not judged dead), and reconciles its running replicas with its assignment set whenever
that set changes (starting what is new, stopping what was taken away). A node that stops
heartbeating (its process or its loop stuck) loses its assignments to other nodes within a few
seconds, so a crash costs no reads where a book has a second replica. A node that cannot reach the
control store when it starts tries to register again until it can. A node cut off from the control
store for half a node timeout (it may be declared dead and its replicas moved) fences its book
writer: it keeps its books but publishes nothing until a heartbeat gets through and it has re-read
its assignments, so a node that comes back never republishes a replica that was taken from it. On
SIGTERM the node asks to be drained: the scheduler moves its replicas away make-before-break, the
node keeps serving them until they are gone (or ``drain_timeout_s``, or at once when no control
process runs to move them), then leaves within ``SHUTDOWN_S``, whatever of its stores, control
plane and venues still answers: what cannot be written or deregistered by then ages out.

Per exchange the node runs one snapshot scheduler (every snapshot inside the weight budget shared
through the store) and one feed (the venue connections and their rollovers). Alongside: the
keepalive that republishes quiet books and marks silent ones stale, the market catalog refresh
(one node per interval fetches each venue's exchangeInfo, by a short lock in the store), the
replica cross-check, the optional periodic re-snapshot, and the counters written to the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any

import aiohttp
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError

from book_store.codec import BookStatus
from book_store.connect import StoreClient, store_client
from book_store.liveness import prune_heartbeats
from book_store.schema import BookKey, ReplicaId
from book_store.writer import BookWriter
from control_plane.models import ReplicaAssignment
from control_plane.scheduling.assignments import AssignmentClient
from control_plane.scheduling.heartbeat import HeartbeatThread
from ingest_nodes.core.engine import BookEngine
from ingest_nodes.ops.checkpoints import CheckpointLog, ReplicaChecker
from ingest_nodes.ops.reporting import StatsReporter, process_usage
from ingest_nodes.ops.stats import NodeTally, ReplicaStats
from ingest_nodes.ops.telemetry import IngestTelemetry
from ingest_nodes.runtime.credential_leases import CredentialLeases
from ingest_nodes.runtime.exchange import ExchangeRuntime, build_exchange
from ingest_nodes.runtime.publisher import Publisher
from ingest_nodes.runtime.replica import BookReplica
from ingest_nodes.settings import IngestSettings
from ingest_nodes.venues.catalog import CatalogAliases, CatalogRefresher
from ingest_nodes.venues.registry import exchange_specs
from ladder_process.clock import now_ms
from ladder_process.errors import StoreError
from ladder_process.health import Check
from ladder_process.sweeps import in_slices
from ladder_process.tasks import cancel_and_wait
from ladder_process.telemetry.setup import Telemetry

log = logging.getLogger(__name__)

SHUTDOWN_S = 5.0
"""What leaving may take at most, the drain aside: background work stopped, venue connections
closed, the last writes, the heartbeat removed, the node deregistered. What has not answered by
then (a store gone or cut off) is left behind, to age out: an orchestrator kills a node that
outlives its stop timeout, and nothing is gained by waiting for a dependency that is gone."""
DRAIN_CHECK_S = 1.0
"""While draining, how often the node looks whether a control process still runs to move its
replicas; it gives up after two looks find none (one that stops hands its lease over within a
scheduling interval)."""
HEARTBEATS_KEPT_MS = 3_600_000
"""A starting node removes heartbeats older than this (of nodes that crashed: ids are per process)."""
CATALOG_CHECK_S = 5.0
REGISTER_RETRY_S = 1.0
"""A node whose control store does not answer at start tries to register again this often."""
NO_KEYS = (
    "no Alpaca key is configured (LADDER_ALPACA_KEY_ID and LADDER_ALPACA_SECRET_KEY, "
    "or LADDER_ALPACA_CREDENTIALS)"
)
STALLED_AFTER_TIMEOUTS = 10
"""A main loop with no progress for this many node timeouts stops the heartbeats (it is stuck, not busy)."""
RESNAPSHOT_SPREAD = (0.9, 0.2)
"""A replica is re-snapshotted between 0.9 and 1.1 of ``resnapshot_interval_s`` after it synced."""


def _count(tally: NodeTally, replicas: Iterable[tuple[ReplicaId, BookReplica]], now: int) -> None:
    for (book, _index), replica in replicas:
        engine, stats = replica.engine, replica.stats
        stats.checksum, stats.checksum_matched = engine.checksum, engine.checksum_matched
        tally.count(book.exchange, stats, engine.synced, replica.status(now).label)


class IngestNode:
    """One ingest process: the replicas it was assigned, and the connections that feed them."""

    def __init__(
        self,
        settings: IngestSettings,
        client: StoreClient,
        session: aiohttp.ClientSession,
        *,
        control_client: StoreClient | None = None,
        telemetry: IngestTelemetry | None = None,
    ) -> None:
        """``client`` is the book store; ``control_client`` the control store, if kept apart (both
        reached at the settings' URLs: the heartbeat thread connects there itself); ``telemetry``
        what the node's spans and metrics go to (a disabled one if None)."""
        self.settings = settings
        self.node_id = settings.node_id
        self._client = client
        self._assignments = AssignmentClient(control_client or client)
        self._control_cluster = isinstance(control_client or client, RedisCluster)
        self._heartbeats: HeartbeatThread | None = None
        self._registered_at = 0.0
        """When the node registered (``time.monotonic``), before any heartbeat got through."""
        self._unregistered = "not registered with the control store yet"
        """Why the node is not registered (empty once it is)."""
        self._assignments_read = False
        self.telemetry = telemetry or IngestTelemetry(Telemetry.disabled("ladder-ingest"))
        self._heartbeat_stored = False
        self.node_tag = secrets.randbits(63) | 1
        """This process's tag in its snapshots and heartbeats (new with every start, never 0)."""
        self._writer = BookWriter(
            client,
            node_id=self.node_id,
            node=self.node_tag,
            on_flush=self.telemetry.flushed,
        )
        self.publisher = Publisher.from_settings(
            self._writer, telemetry=self.telemetry, settings=settings, node=self.node_tag
        )
        self._shedding = False
        specs = exchange_specs(settings)
        keyed = any(spec.needs_credentials for spec in specs.values())
        alpaca_keys = settings.alpaca_keys if keyed else []
        if keyed and not alpaca_keys:
            log.error("alpaca-crypto is served but %s: its books stay unserved", NO_KEYS)
        self._has_keys = bool(alpaca_keys)
        self.exchanges: dict[str, ExchangeRuntime] = {
            exchange: build_exchange(spec, settings, client, session, alpaca_keys)
            for exchange, spec in specs.items()
        }
        self._leases = {
            exchange: CredentialLeases(client, exchange, self.node_id, alpaca_keys)
            for exchange, spec in specs.items()
            if spec.needs_credentials
        }
        for exchange in self._leases:
            self.exchanges[exchange].feed.set_credentials([])  # only what this node leases
        self._keys_needed: Counter[str] = Counter()
        self._keys_short: dict[str, tuple[int, int]] = {}
        every, levels = settings.checkpoint_every, settings.checkpoint_levels
        self.checkpoints = CheckpointLog(client, every=every, levels=levels) if every else None
        self.checker = ReplicaChecker(client, resync=settings.resync_on_mismatch)
        stats_ttl_s = max(30, int(10 * settings.stats_interval_s))
        self._reporter = StatsReporter(client, self.node_id, ttl_s=stats_ttl_s)
        self.replicas: dict[ReplicaId, BookReplica] = {}
        self._aliases = CatalogAliases(client)
        self._changing = asyncio.Lock()
        """Held while the running replicas change (assignments applied, aliases followed)."""
        self.retired: dict[str, ReplicaStats] = {}
        """Per exchange, the summed stats of the replicas that stopped here (telemetry's counters)."""
        self._emptied = asyncio.Event()
        self._closing = asyncio.Event()
        self.telemetry.watch(self)

    # -- lifecycle ------------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, drain: Callable[[], bool] = lambda: True) -> None:
        """Serve assignments until ``stop`` is set, then (if ``drain()``) drain, and leave."""
        if not await self._register(stop):
            return
        with contextlib.suppress(RedisError, StoreError):
            await prune_heartbeats(self._client, now_ms() - HEARTBEATS_KEPT_MS)
        loops: dict[str, Coroutine[Any, Any, None]] = {
            "keepalive": self.publisher.run_keepalive(),
            "store-lost": self._republish_when_lost(),
            "catalog": self._catalog_loop(),
            "heartbeat": self._heartbeat(),
            "lag": self._watch_lag(),
            "assignments": self._follow_assignments(),
            "checks": self._every(self.settings.replica_check_interval_s, self._check_replicas),
            "stats": self._every(self.settings.stats_interval_s, self.report),
            **{f"snapshots-{e}": x.scheduler.run() for e, x in self.exchanges.items()},
            **{f"stall-checks-{e}": x.stall_checker.run() for e, x in self.exchanges.items()},
        }
        if self.settings.resnapshot_interval_s:
            loops["resnapshot"] = self._every(1.0, self._resnapshot_due)
        background = [asyncio.create_task(coro, name=name) for name, coro in loops.items()]
        try:
            await stop.wait()
            if drain():
                await self._drain()
        finally:
            await self._shut_down(background)

    async def _register(self, stop: asyncio.Event) -> bool:
        """Register with the control store, again every ``REGISTER_RETRY_S`` while it does not
        answer; False when ``stop`` comes first (nothing was started, so nothing is left to undo)."""
        while not stop.is_set():
            register = self._assignments.register(self.node_id, address="", capacity=self.settings.capacity)
            try:
                await asyncio.wait_for(register, self.settings.node_timeout_ms / 1000)
            except (StoreError, TimeoutError) as exc:
                self._unregistered = f"the control store does not answer ({type(exc).__name__})"
                log.warning("not registered: %s; trying again", self._unregistered)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), REGISTER_RETRY_S)
            else:
                self._unregistered = ""
                self._registered_at = time.monotonic()  # before the first heartbeat
                return True
        return False

    async def _shut_down(self, background: list[asyncio.Task[None]]) -> None:
        """Stop everything within ``SHUTDOWN_S`` in all, whatever does not answer: each step gets
        what is left of it, and fails at once against a store that refuses connections (nothing
        is retried now). The background tasks are cancelled until they end (:mod:`ladder_process.tasks`:
        a cancellation that meets a completing store call can be lost), so that a lost one costs the
        steps after it a tenth of a second, not the whole deadline."""
        self._closing.set()
        deadline = time.monotonic() + SHUTDOWN_S

        def left() -> float:
            return max(0.0, deadline - time.monotonic())

        async def step(work: Awaitable[object]) -> None:
            with contextlib.suppress(TimeoutError, RedisError, StoreError):
                await asyncio.wait_for(work, left())

        await cancel_and_wait(background, left())
        await step(asyncio.gather(*(exchange.feed.close() for exchange in self.exchanges.values())))
        await step(self._stop_replicas())
        for leases in self._leases.values():
            await step(leases.release())
        await step(self._writer.close())
        await step(self._writer.forget_node())
        if self.checkpoints is not None:
            await step(self.checkpoints.drain())
        await step(self._assignments.deregister(self.node_id))

    async def _drain(self) -> None:
        """Ask the scheduler to move our replicas away and keep serving them until they are gone,
        for ``drain_timeout_s`` at most, and only while a control process runs to move them: with
        none (or the control store out of reach) nothing would, so the node leaves at once and its
        replicas are placed again when one runs."""
        if not self.replicas or self.settings.drain_timeout_s <= 0:
            return
        log.info("draining %d replicas", len(self.replicas))
        deadline = time.monotonic() + self.settings.drain_timeout_s

        def bound(most_s: float) -> float:
            return max(0.0, min(most_s, deadline - time.monotonic()))

        call_s = self.settings.node_timeout_ms / 1000
        try:
            await asyncio.wait_for(self._assignments.set_draining(self.node_id), bound(call_s))
            self._emptied.clear()
            missed = 0
            while self.replicas and bound(DRAIN_CHECK_S) > 0:
                running = await asyncio.wait_for(self._assignments.scheduler_running(), bound(call_s))
                missed = 0 if running else missed + 1
                if missed == 2:
                    log.warning("no control process runs to move %d replicas: leaving undrained",
                                len(self.replicas))  # fmt: skip
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._emptied.wait(), bound(DRAIN_CHECK_S))
        except (StoreError, TimeoutError) as exc:
            log.warning("the control store does not answer (%s): leaving with %d replicas undrained",
                        type(exc).__name__, len(self.replicas))  # fmt: skip

    async def _pause(self, period_s: float) -> bool:
        """Sleep ``period_s``; False once the node is shutting down (loops then end by themselves)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), period_s)
        return not self._closing.is_set()

    async def _every(self, period_s: float, job: Callable[[], Coroutine[Any, Any, None]]) -> None:
        while await self._pause(period_s):
            try:
                await job()
            except (RedisError, StoreError, OSError) as exc:
                log.warning("%s skipped: store unreachable (%s)", job.__name__, type(exc).__name__)

    async def _republish_when_lost(self) -> None:
        """Each time the book store did not hold this node's heartbeat (the writer's ``store_lost``):
        it lost what the node wrote (or, the first time, the node had written none yet)."""
        lost = self._writer.store_lost
        while True:
            await lost.wait()
            lost.clear()
            if self._heartbeat_stored:
                log.warning(
                    "the book store lost this node's heartbeat: republishing %d replicas", len(self.replicas)
                )
            self._heartbeat_stored = True
            self.publisher.republish_all()

    # -- assignments ----------------------------------------------------------------------------

    @property
    def _reached_at(self) -> float:
        """When the last heartbeat that got through was sent (``time.monotonic``)."""
        beats = self._heartbeats
        return self._registered_at if beats is None else max(beats.reached_at, self._registered_at)

    async def _heartbeat(self) -> None:
        """Heartbeat from the thread; here, on the node's loop, what follows a heartbeat that got
        through (the venue credential leases renewed, assignments confirmed after a fence), and
        the writer fenced while none does."""
        settings = self.settings
        period = settings.heartbeat_ms / 1000
        fence_after = settings.node_timeout_ms / 2000
        beats = self._heartbeats = HeartbeatThread(
            self._control_store,
            self.node_id,
            self._assignments.registrations,
            period_s=period,
            timeout_s=fence_after,
            stall_limit_s=STALLED_AFTER_TIMEOUTS * settings.node_timeout_ms / 1000,
            load=lambda: len(self.replicas),
        )
        beats.start()
        seen = 0
        try:
            while await self._pause(min(period, fence_after / 4)):
                silent = time.monotonic() - self._reached_at
                if silent > fence_after and not self._writer.fenced:
                    log.warning("control plane unreachable for %.1f s: publishing nothing until "
                                "assignments are re-read", silent)  # fmt: skip
                    self._writer.fence()
                if beats.sent != seen:
                    seen = beats.sent
                    await self._hold_credentials()  # renew the venue credential leases with the heartbeat
                    if self._writer.fenced:
                        await self._confirm_assignments()
        finally:
            await asyncio.to_thread(beats.stop)

    def _control_store(self) -> StoreClient:
        """A new client to the control store (the heartbeat thread's own), as ``ladder ingest`` opens it."""
        settings = self.settings
        url = settings.control_redis_url or settings.redis_url
        return store_client(url, settings.redis_password, cluster=self._control_cluster)

    async def _confirm_assignments(self) -> None:
        """Back from a fence: apply the assignment set as it is now, then publish again."""
        try:
            await asyncio.wait_for(self.reconcile(), self.settings.node_timeout_ms / 1000)
        except (StoreError, TimeoutError) as exc:
            log.warning("assignments not re-read yet (%s); still fenced", type(exc).__name__)
            return
        self._writer.unfence()
        log.info("control plane reached again and assignments re-read: publishing again")

    async def _follow_assignments(self) -> None:
        """Apply the assignment set whenever it changes (notified, and re-read every few seconds).

        Re-reading thousands of assignments on every heartbeat would cost more than the books do.
        """
        while True:
            try:
                async for assigned in self._assignments.watch(self.node_id):
                    await self._apply(assigned)
            except StoreError as exc:
                log.warning("assignments unreachable (%s); keeping current replicas", type(exc).__name__)
                await asyncio.sleep(1.0)

    async def reconcile(self) -> None:
        """Read the assignment set now and apply it."""
        await self._apply(await self._assignments.assignments(self.node_id))

    async def _apply(self, assigned: list[ReplicaAssignment]) -> None:
        """Start what we were assigned and do not run; stop what we run and were not assigned."""
        async with self._changing:  # the catalogue's aliases restart replicas too
            wanted = {
                (BookKey(a.exchange, a.market), a.replica): a.depth
                for a in assigned
                if a.exchange in self.exchanges
            }
            for key in self.replicas.keys() - wanted.keys():
                await self._stop_replica(key)
            for exchange in self._leases:
                # One key per connection, and two replicas of a book never share one.
                per_book = Counter(book.market for book, _replica in wanted if book.exchange == exchange)
                self._keys_needed[exchange] = max(per_book.values(), default=0)
            await self._hold_credentials()
            for key, runner in self.replicas.items():
                runner.set_depth(wanted[key])
            new = wanted.keys() - self.replicas.keys()
            await self._follow_aliases({book.exchange for book, _replica in new})  # before they subscribe
            for key in sorted(new, key=lambda k: (k[0].exchange, k[0].market, k[1])):
                self._start_replica(*key, depth=wanted[key])
            self._assignments_read = True

    async def _hold_credentials(self) -> None:
        """Lease (and renew) the venue credentials the assigned replicas need; hand them to the feeds."""
        for exchange, leases in self._leases.items():
            needed = self._keys_needed[exchange]
            before = len(leases.held)
            try:
                held = await leases.hold(needed)
            except RedisError as exc:
                log.warning("%s: venue credential leases not renewed (%s)", exchange, type(exc).__name__)
                continue
            if len(held) != before or len(held) < needed:
                self.exchanges[exchange].feed.set_credentials(held)
            short = (len(held), needed) if len(held) < needed else None
            if short is not None and self._keys_short.get(exchange) != short:
                log.error(
                    "%s: %d venue credential(s) needed, %d free in the pool: books wait",
                    exchange,
                    needed,
                    len(held),
                )
            if short is None:
                self._keys_short.pop(exchange, None)
            else:
                self._keys_short[exchange] = short

    def _start_replica(self, book: BookKey, replica: int, *, depth: int) -> None:
        exchange = self.exchanges[book.exchange]
        spec, max_buffer = exchange.spec, self.settings.max_buffer
        runner = BookReplica(
            book,
            replica,
            lambda: BookEngine(spec.new_machine(max_buffer)),
            exchange.scheduler,
            self.publisher,
            depth=depth,
            depth_tiers=spec.depth_tiers,
            # Checkpoints compare replicas at equal venue update ids; Alpaca has none.
            checkpoints=self.checkpoints if spec.ids_comparable else None,
            stall_policy=spec.stall_policy(self.settings.stall_policy),
            resets_on_stream=spec.resets_on_stream,
            silence_checked=spec.ids_comparable,
            rest_audits=spec.resets_on_stream and spec.checks_by_rest,
            telemetry=self.telemetry,
        )
        self.replicas[(book, replica)] = runner
        runner.start()
        exchange.feed.attach(runner)
        if spec.ids_comparable:  # a REST id or the venue's heartbeat can judge a silence; Alpaca's none
            exchange.stall_checker.watch(runner)
        log.debug("started %s/%s replica %d", book.exchange, book.market, replica)

    async def _stop_replicas(self) -> None:
        for key in list(self.replicas):
            await self._stop_replica(key)

    async def _stop_replica(self, key: ReplicaId) -> None:
        runner = self.replicas.pop(key)
        if not self.replicas:
            self._emptied.set()
        exchange = self.exchanges[key[0].exchange]
        exchange.stall_checker.forget(runner)
        await exchange.feed.detach(runner)
        await runner.stop()
        self.retired.setdefault(key[0].exchange, ReplicaStats()).add(runner.stats)
        log.debug("stopped %s/%s replica %d", key[0].exchange, key[0].market, key[1])

    # -- trust ----------------------------------------------------------------------------------

    async def _check_replicas(self) -> None:
        now, wait_ms = now_ms(), self.settings.stream_snapshot_wait_ms
        for replica in self.replicas.values():
            replica.retry_snapshot(now, wait_ms)
        synced = [r for r in self.replicas.values() if r.engine.synced]
        await self.checker.check(synced)

    async def _watch_lag(self) -> None:
        """Every second, tell the lag watch how far behind the venue the books that moved ran
        (``ingest_nodes/core/lag.py``), and say when the node starts or stops shedding work."""
        lag = self.publisher.lag
        while await self._pause(1.0):
            since = now_ms() - 1000
            lag.second(r.stats.lag_ms for r in list(self.replicas.values()) if r.last_event_ms >= since)
            if lag.shedding is not self._shedding:
                self._shedding = lag.shedding
                if lag.shedding:
                    log.warning("books run %d ms behind the venue: shedding work (books published at most "
                                "every %d ms, refreshes and audits deferred)", lag.backlog_ms,
                                self.settings.shed_publish_ms)  # fmt: skip
                else:
                    log.info("books back within %d ms of the venue: no longer shedding", lag.backlog_ms)

    async def _resnapshot_due(self) -> None:
        """Start a re-snapshot of each book synced for about ``resnapshot_interval_s`` (spread out;
        none while the node sheds work)."""
        if self.publisher.lag.shedding:
            return
        now = asyncio.get_running_loop().time()
        interval = self.settings.resnapshot_interval_s
        for (book, index), replica in self.replicas.items():
            since = replica.synced_since
            if since is None or now - since < interval * RESNAPSHOT_SPREAD[0]:
                continue  # most replicas, every second: no spread to work out
            low, width = RESNAPSHOT_SPREAD
            spread = low + width * (zlib.crc32(f"{book.tag}{index}".encode()) % 1000) / 1000
            if now - since >= interval * spread:
                replica.resnapshot()

    # -- readiness ------------------------------------------------------------------------------

    def readiness(self) -> list[Check]:
        """Registered (and not cut off from the control store), assignments read, venue connections
        up (``ladder_process.health``; read from memory, so a probe costs the stores nothing)."""
        return [self._registration(), self._assignments_check(), *map(self._venue_check, self.exchanges)]

    def _registration(self) -> Check:
        if self._unregistered:
            return Check("registered", False, self._unregistered)
        silent = time.monotonic() - self._reached_at
        if self._writer.fenced:
            return Check("registered", False, f"the control store not reached for {silent:.1f} s")
        return Check("registered", True, f"heartbeat reached the control store {silent:.1f} s ago")

    def _assignments_check(self) -> Check:
        if not self._assignments_read:
            return Check("assignments", False, "assignments not read yet")
        return Check("assignments", True, f"{len(self.replicas)} replicas assigned")

    def _venue_check(self, exchange_id: str) -> Check:
        connections = [c for c in self.exchanges[exchange_id].feed.connections if not c.retiring]
        down = sum(1 for c in connections if not c.connected)
        name = f"venue:{exchange_id}"
        if not connections:
            return Check(name, True, "no books, no connections")
        return Check(name, not down, f"{len(connections) - down} of {len(connections)} connections up")

    # -- counters -------------------------------------------------------------------------------

    def statuses(self, now_ms: int) -> list[tuple[BookReplica, BookStatus]]:
        """Every replica with the status it is published with at ``now_ms`` (for the gauges)."""
        return [(r, r.status(now_ms)) for r in list(self.replicas.values())]

    def stats(self) -> dict[str, object]:
        """Every counter of this node, summed over its replicas, connections and exchanges."""
        tally = NodeTally()
        _count(tally, self.replicas.items(), now_ms())
        return self._document(tally)

    async def report(self) -> None:
        """Write the counters to the store (the node's document and changed replica entries),
        summing thousands of replicas in turns of the event loop (``ladder_process.sweeps``)."""
        replicas = list(self.replicas.items())
        tally = NodeTally()
        async for part in in_slices(replicas):
            _count(tally, part, now_ms())
        await self._reporter.report(self._document(tally), {key: r.stats for key, r in replicas})

    def _resyncs_total(self, tally: NodeTally) -> Counter[str]:
        """Resyncs by reason since this node started: of the replicas it keeps and those it stopped."""
        total = Counter(tally.totals.resyncs)
        for retired in self.retired.values():
            total.update(retired.resyncs)
        return total

    def _document(self, tally: NodeTally) -> dict[str, object]:
        exchanges = {
            exchange_id: {
                "replicas": tally.kept[exchange_id],
                "synced": tally.synced[exchange_id],
                "connections_open": len(exchange.feed.connections),
                "connections": exchange.feed.connection_totals().to_json(),
                "snapshots": exchange.stats.to_json(),
                "snapshots_pending": exchange.scheduler.pending,
                "weight_pool": exchange.spec.weight_pool,
                "weight_limit": exchange.budget.limit,
            }
            for exchange_id, exchange in self.exchanges.items()
        }
        return {
            "node_id": self.node_id,
            "egress_id": self.settings.egress_id,
            "process": process_usage(),
            "publish_latency_ms": self.telemetry.publish_latency(time.time()),
            "replicas": sum(tally.kept.values()),
            "synced": sum(tally.synced.values()),
            "replica_totals": tally.totals.to_json(),
            "statuses": dict(tally.statuses),
            "resyncs_total": dict(self._resyncs_total(tally)),
            "checkpoints_recorded": 0 if self.checkpoints is None else self.checkpoints.recorded,
            "replica_checks": self.checker.compared,
            "replica_mismatches": self.checker.mismatches,
            "lag": {
                "baseline_ms": self.publisher.lag.baseline_ms,
                "backlog_ms": self.publisher.lag.backlog_ms,
                "shedding": self.publisher.lag.shedding,
                "lagging": sum(1 for r in self.replicas.values() if r.lagging),
            },
            "exchanges": exchanges,
        }

    # -- market catalog -------------------------------------------------------------------------

    async def _follow_aliases(self, exchanges: Iterable[str]) -> None:
        """Give each feed its catalogue's aliases (a market subscribed under the name of the venue
        book it is, ``feed.py``); a running replica whose venue book name changed starts over.
        A store out of reach keeps the aliases as they were."""
        for exchange_id in exchanges:
            try:
                aliases = await self._aliases.changed(exchange_id)
            except (RedisError, StoreError, OSError) as exc:
                log.warning("%s: aliases not read: store unreachable (%s)", exchange_id, type(exc).__name__)
                continue
            feed = self.exchanges[exchange_id].feed
            if aliases is None or aliases == feed.aliases:
                continue
            before, feed.aliases = feed.aliases, aliases
            renamed = [
                key
                for key in self.replicas
                if key[0].exchange == exchange_id and before.get(key[0].market) != aliases.get(key[0].market)
            ]
            for key in renamed:
                depth = self.replicas[key].depth
                await self._stop_replica(key)
                self._start_replica(*key, depth=depth)
            if renamed:
                log.info("%s: %d replicas start over under a new venue book name", exchange_id, len(renamed))

    async def _catalog_loop(self) -> None:
        refresher = CatalogRefresher(self._client, self.node_id, refresh_s=self.settings.catalog_refresh_s)
        while True:
            try:
                for exchange_id, exchange in self.exchanges.items():
                    if exchange.spec.needs_credentials and not self._has_keys:
                        await refresher.unavailable(exchange_id, NO_KEYS)
                    else:
                        await refresher.refresh(exchange_id, exchange.rest.markets)
            except (RedisError, OSError) as exc:
                log.warning("market catalog not refreshed: store unreachable (%s)", type(exc).__name__)
            async with self._changing:
                await self._follow_aliases(self.exchanges)
            # A catalog another node refreshed within the interval costs one SET NX to skip, and a
            # book store that restarted empty gets its catalog back within seconds, not an interval.
            await asyncio.sleep(min(self.settings.catalog_refresh_s, CATALOG_CHECK_S))
