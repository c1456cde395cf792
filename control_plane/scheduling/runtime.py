"""The ``ladder control`` process: the loop that keeps every wanted replica on a live node.

Theory of operation: every ``scheduler_interval_ms`` the loop

1. takes (or extends) the scheduler lease, so that of several control processes exactly one
   plans at a time and the others stand by (the lease outlives a few missed rounds, not more);
2. reads the registered nodes (live = heartbeat within ``node_timeout_ms``), what every
   subscribed book should be (replicas and depth) and the current assignments. The last two are
   thousands of records that rarely change, so the store's *generations* of them are read first
   (one round trip) and each is read again only when its generation moved since the last read,
   or ``REREAD_AFTER_MS`` after it (a writer that does not keep generations, such as a process
   of an older version or a hand edit, is seen within that time). Generations before data: a
   write between the two reads leaves a generation that moves next round, never stale data
   under a current name;
3. computes the next plan with the pure scheduler, in a worker thread (it is CPU work). Which
   replicas are synced matters only for the books the plan leaves *unsettled* (replicas beyond
   their targets: a move or a replacement under way, make-before-break), so the first plan is
   made knowing none, and the snapshots of the unsettled books are read and the plan made again
   until no book it leaves unsettled is unread. A settled fleet costs no snapshot read at all,
   where reading every book's snapshots every round was most of the control plane's CPU.
   Planning is skipped when it cannot come out differently: the previous round's plan changed
   nothing and read no snapshot (the planner is a pure function of its inputs), and this round's
   inputs are the same: the generations of both reads, unchanged from that round, and the live
   nodes' id, capacity, draining and load (heartbeat times count only through which nodes are
   live). A store that cannot tell generations (DynamoDB) is read and planned every round;
4. rewrites the assignment set of each node the plan changes. With the Redis store each write
   also publishes on the node's channel, so ingest nodes react within milliseconds; with
   DynamoDB they poll.

A loop that could not reach the store (it restarted, or this process did) judges no node by a
heartbeat older than its own return: for one ``node_timeout_ms`` after regaining the store every
registered node counts as live, so the nodes' heartbeats, stopped by the same outage, can resume
before anyone's replicas are moved; a node that really died is moved one timeout later.

Nodes silent for ``FORGET_AFTER_TIMEOUTS`` timeouts are removed from the registry (their
replicas were reassigned long before). A store failure skips a round; it never kills the loop.
The loop is ready (``readiness``, what ``/readyz`` reports) while its last round reached the store
within a lease's time, as leader or standby.
Cancellation (SIGTERM handled by the caller cancelling the task) releases the lease so a
standby takes over at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Generic, TypeVar

from book_store.schema import BookKey, ReplicaId
from book_store.unplaced import UnplacedBooks
from control_plane.bootstrap import open_control_store
from control_plane.models import BookWish, ReplicaAssignment
from control_plane.scheduling.replica_status import ReplicaStatusSource
from control_plane.scheduling.scheduler import DEFAULT_MAX_MOVES, Plan, plan_assignments
from control_plane.scheduling.telemetry import ControlTelemetry
from control_plane.settings import ControlSettings
from control_plane.stores.base import ControlStore, Generations
from ladder_process.clock import Clock, now_ms
from ladder_process.errors import StoreError
from ladder_process.health import Check, ReadinessSlot
from ladder_process.telemetry.setup import Telemetry

log = logging.getLogger(__name__)

SCHEDULER_LEASE = "scheduler"
FORGET_AFTER_TIMEOUTS = 20
REREAD_AFTER_MS = 300_000
"""How long a read is kept under an unchanged generation before it is read again anyway: only
writers that keep no generations need it, and at thousands of books each read is a burst of CPU."""

_T = TypeVar("_T")
_Inputs = tuple[Generations, tuple[tuple[str, int, bool, float], ...]]
"""What a plan is made from, but for the keyed pools and max_moves (fixed for a loop): the
generations of the desired books and the assignments, and of each live node what the planner
uses (id, capacity, draining, load)."""


class _Kept(Generic[_T]):
    """One store read, kept with the generation it was read at (see the module docstring)."""

    def __init__(self, read: Callable[[], Awaitable[_T]]) -> None:
        self._read = read
        self._kept: tuple[str, int, _T] | None = None

    async def get(self, generation: str | None, now: int) -> tuple[_T, bool]:
        """The value at ``generation`` (read just before), and whether it was kept from earlier."""
        kept = self._kept
        if kept is not None and kept[0] == generation and now - kept[1] < REREAD_AFTER_MS:
            return kept[2], True
        value = await self._read()
        self._kept = None if generation is None else (generation, now, value)
        return value, False


class ControlLoop:
    """One scheduling round at a time (``step``); ``run_control`` repeats it."""

    def __init__(
        self,
        store: ControlStore,
        status: ReplicaStatusSource,
        *,
        node_timeout_ms: int = 3000,
        lease_ttl_ms: int = 3000,
        max_moves: int = DEFAULT_MAX_MOVES,
        clock: Clock = now_ms,
        owner: str | None = None,
        keyed: dict[str, int] | None = None,
        unplaced: UnplacedBooks | None = None,
    ) -> None:
        """``keyed``: exchanges whose connections each take a venue credential, with their pool sizes;
        ``unplaced``: where to say why books are unplaced, for readers."""
        self._store = store
        self._keyed = keyed or {}
        self._unplaced = unplaced
        self._said: dict[BookKey, str] | None = None
        self._status = status
        self._node_timeout_ms = node_timeout_ms
        self._lease_ttl_ms = lease_ttl_ms
        self._max_moves = max_moves
        self._clock = clock
        self.owner = owner or f"control-{secrets.token_hex(6)}"
        self._store_since: int | None = None
        """Since when every round reached the store (None after one that did not)."""
        self._desired: _Kept[dict[BookKey, BookWish]] = _Kept(store.desired_books)
        self._current: _Kept[list[ReplicaAssignment]] = _Kept(store.list_assignments)
        self._settled: tuple[_Inputs, Plan] | None = None
        """The last round's inputs and plan, when that plan changed nothing and read no snapshot."""
        self._last_round: tuple[int, str] | None = None
        """When the last round ended, and as what: ``leader``, ``standby``, or why it failed."""

    async def step(self) -> Plan | None:
        """Plan and write one round; None while another control process holds the lease."""
        now = self._clock()
        if self._store_since is None:
            self._store_since = now
        try:
            plan = await self._step(now, grace=now - self._store_since <= self._node_timeout_ms)
        except StoreError as exc:
            self._store_since = None
            self._last_round = (self._clock(), f"the store did not answer ({type(exc).__name__})")
            raise
        self._last_round = (self._clock(), "standby" if plan is None else "leader")
        return plan

    def readiness(self) -> list[Check]:
        """Whether the last round reached the store, within a lease's time, and in which role."""
        if self._last_round is None:
            return [Check("store", False, "no scheduling round yet")]
        ended_at, outcome = self._last_round
        ago_s = (self._clock() - ended_at) / 1000
        reached = outcome in ("leader", "standby")
        if not reached:
            store = Check("store", False, f"{outcome} {ago_s:.1f} s ago")
        elif ago_s * 1000 > self._lease_ttl_ms:
            store = Check("store", False, f"no round has ended for {ago_s:.1f} s")
        else:
            store = Check("store", True, f"reached by the last round, {ago_s:.1f} s ago")
        role = {
            "leader": "leader: holds the scheduler lease and plans",
            "standby": "standby: another control process holds the scheduler lease",
        }.get(outcome, "unknown until a round reaches the store")
        return [store, Check("role", store.ok, role)]

    async def _step(self, now: int, *, grace: bool) -> Plan | None:
        if not await self._store.try_lease(SCHEDULER_LEASE, self.owner, now, self._lease_ttl_ms):
            return None
        nodes = await self._store.list_nodes()
        for node in nodes:
            if not grace and now - node.heartbeat_at > FORGET_AFTER_TIMEOUTS * self._node_timeout_ms:
                log.info("forgetting node %s (silent for %d ms)", node.id, now - node.heartbeat_at)
                await self._store.remove_node(node.id)
        live = [n for n in nodes if grace or now - n.heartbeat_at <= self._node_timeout_ms]
        generations = await self._store.generations()
        desired, kept_desired = await self._desired.get(generations.desired, now)
        current, kept_current = await self._current.get(generations.assignments, now)
        inputs: _Inputs = (generations, tuple((n.id, n.capacity, n.draining, n.load) for n in live))
        settled, self._settled = self._settled, None
        if kept_desired and kept_current and settled is not None and settled[0] == inputs:
            self._settled = settled
            return settled[1]
        synced: set[ReplicaId] = set()
        read: set[BookKey] = set()
        while True:
            plan = await asyncio.to_thread(
                plan_assignments, desired, live, current, synced, max_moves=self._max_moves, keyed=self._keyed
            )
            unread = plan.unsettled - read
            if not unread:
                break
            read |= unread
            synced |= await self._status.synced_replicas(
                {(a.book, a.replica) for a in current if a.book in unread}
            )
        await self._tell_unplaced(plan)
        for node_id in sorted(plan.changed_nodes()):
            await self._store.replace_assignments(node_id, plan.for_node(node_id))
        if plan.added or plan.removed or plan.resized:
            log.info(
                "assignments: +%d -%d, %d resized, on %d node(s), %d replica(s) unplaced",
                len(plan.added),
                len(plan.removed),
                len(plan.resized),
                len(plan.changed_nodes()),
                sum(plan.unplaced.values()),
            )
        if not (read or plan.changed_nodes()):
            self._settled = (inputs, plan)
        return plan

    async def _tell_unplaced(self, plan: Plan) -> None:
        """Log each book's reason for unplaced replicas once (again only when it changes), and tell
        readers."""
        if plan.reasons == self._said:
            return
        said = self._said or {}
        for book, reason in plan.reasons.items():
            if said.get(book) != reason:
                log.warning("%s %s: %s", book.exchange, book.market, reason)
        if self._unplaced is not None:
            await self._unplaced.replace({BookKey(b.exchange, b.market): r for b, r in plan.reasons.items()})
        self._said = dict(plan.reasons)

    async def release(self) -> None:
        """Give the lease up (on shutdown) so a standby control process takes over at once."""
        await self._store.release_lease(SCHEDULER_LEASE, self.owner)


async def run_control(
    settings: ControlSettings,
    status: ReplicaStatusSource,
    *,
    store: ControlStore | None = None,
    unplaced: UnplacedBooks | None = None,
    telemetry: ControlTelemetry | None = None,
    ready: ReadinessSlot | None = None,
) -> None:
    """Run scheduling rounds until cancelled. ``store`` defaults to the one settings describe;
    ``telemetry`` (a disabled one if None) is told what each round did; ``ready`` is filled with
    the loop, for ``/readyz``."""
    rounds = telemetry or ControlTelemetry(Telemetry.disabled("ladder-control"))
    interval_s = settings.scheduler_interval_ms / 1000
    async with AsyncExitStack() as stack:
        if store is None:
            store = await stack.enter_async_context(open_control_store(settings))
        loop = ControlLoop(
            store,
            status,
            node_timeout_ms=settings.node_timeout_ms,
            lease_ttl_ms=max(settings.node_timeout_ms, 5 * settings.scheduler_interval_ms),
            max_moves=settings.scheduler_max_moves,
            keyed=settings.keyed_exchanges,
            unplaced=unplaced,
        )
        if ready is not None:
            ready.fill(loop)
        log.info("control loop %s running every %d ms", loop.owner, settings.scheduler_interval_ms)
        try:
            while True:
                try:
                    with rounds.round() as observe:
                        observe(await loop.step())
                except StoreError as exc:
                    log.warning("scheduling round skipped: %s", exc)
                await asyncio.sleep(interval_s)
        finally:
            with contextlib.suppress(StoreError, TimeoutError):
                await asyncio.wait_for(loop.release(), timeout=1.0)
