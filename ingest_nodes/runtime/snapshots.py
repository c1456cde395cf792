"""The snapshot scheduler: every REST depth snapshot one exchange's books need on this node.

Theory of operation
-------------------
Thousands of books may want a snapshot at once (a node starting, a reconnect), and the venue
allows only so much request weight per minute per IP, shared by every node behind that IP. Books
ask with ``request``; one dispatcher per exchange fetches them, at most ``concurrency`` at a time,
paying each from a small pool of *tickets*: weight charged to the shared budget in advance, for as
many queued requests of the head's weight as there are slots, in one store round trip. A slot that
frees up starts the next request at once, without waiting for the store, so the node spends each
window's weight as fast as the venue answers. Tickets are only good in the window they were charged
in, and not in its last ``margin_ms`` (a request must reach the venue inside the window that paid
for it); a stale ticket is dropped. Tickets are kept per weight, so books of different depths
(different snapshot limits) never waste each other's.

Requests come in four priorities: ``URGENT`` (books that were serving and lost sync), ``FRESH``
(books starting for the first time), ``CHECK`` (the smallest snapshot of a book whose silence is
suspect, see ``stall_checks``) and ``BACKGROUND`` (a served book's refresh or audit, which replaces
nothing until it is in). Checks and background requests only start when nothing more urgent waits.
Background requests only while the window's budget is used less than ``background_share`` of it,
so a resync that arrives meanwhile still finds weight left in the window; checks may spend at most
``check_share`` of each window's budget (counted by this scheduler, whatever the syncs spent), so
a node busy syncing still notices a stalled book, and checks never crowd syncs out.

Checks and background requests are also *paced*: each kind draws from a bucket that fills at its
share of the budget's rate and holds ``pace_burst_s`` of it, so a backlog of them (thousands of
quiet books whose checks wait for the next window, hourly audits) drains evenly through the minute.
Spent as fast as the venue answers the moment a window opened, they made every node and the venue
busy for a moment each minute, which the readers of the busiest books saw as latency.

A grant first asks the requester whether it still wants the snapshot (``snapshot_granted``): a book
that waits for its first snapshot only starts buffering its stream at that moment (see
``lane.Lane``), so a thousand waiting books cost a thousand held events, not minutes of buffers.
The requester decides what a failure means (``snapshot_failed``); asking again is just ``request``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from enum import IntEnum
from typing import Protocol

from opentelemetry.trace import get_current_span
from redis.exceptions import RedisError

from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthSnapshot
from ingest_nodes.ops.stats import SnapshotStats
from ingest_nodes.venues.budget import DEFAULT_MARGIN_MS, WINDOW_MS, WeightBudget
from ingest_nodes.venues.rest import VenueRequestError, VenueRest
from ladder_process.clock import now_ms

log = logging.getLogger(__name__)

SnapshotError = VenueRequestError | VenuePayloadError
STORE_RETRY_S = 1.0


class Priority(IntEnum):
    """Which requests go first (lower first)."""

    URGENT = 0
    """A book that was serving and lost sync."""
    FRESH = 1
    """A book syncing for the first time."""
    CHECK = 2
    """The smallest snapshot of a served book whose silence is suspect: is the venue still there?"""
    BACKGROUND = 3
    """A served book's refresh or audit: the book keeps serving meanwhile."""


class SnapshotRequester(Protocol):
    """Who asks for snapshots: a replica for one of its engines (see ``lane.Lane``), an audit, a
    stall check."""

    @property
    def symbol(self) -> str: ...

    @property
    def snapshot_limit(self) -> int: ...

    @property
    def priority(self) -> Priority:
        """Where the request queues (books that were serving go ahead of books starting up)."""

    def snapshot_granted(self) -> bool:
        """The weight is paid: return False if the snapshot is no longer wanted (nothing is fetched)."""

    def fetching(self) -> AbstractContextManager[None]:
        """Wraps the request (tracing); an exception inside means the fetch failed."""

    def snapshot_arrived(self, snapshot: DepthSnapshot) -> None: ...

    def snapshot_failed(self, error: SnapshotError) -> None: ...


class _Tickets:
    """Weight already charged to the budget, per request weight, usable until its window is about
    to close."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[int, tuple[int, int]] = {}  # weight -> (count, window)

    def take(self, weight: int, now_s: float) -> bool:
        """Spend one ticket of ``weight`` if a usable one is held."""
        count, window = self._held.get(weight, (0, -1))
        now_window, into_ms = divmod(int(now_s * 1000), WINDOW_MS)
        if count <= 0 or window != now_window or WINDOW_MS - into_ms <= DEFAULT_MARGIN_MS:
            self._held.pop(weight, None)  # stale: its window is over
            return False
        self._held[weight] = (count - 1, window)
        return True

    def give_back(self, weight: int) -> None:
        """A ticket taken but not spent (the requester no longer wanted its snapshot)."""
        count, window = self._held.get(weight, (0, -1))
        self._held[weight] = (count + 1, window)

    def fill(self, weight: int, count: int, now_s: float) -> None:
        self._held[weight] = (count, int(now_s * 1000) // WINDOW_MS)


class _Pace:
    """Weight that fills at ``rate`` per second, holding ``burst_s`` of it (at least one request)."""

    __slots__ = ("_at", "_burst_s", "_held", "_rate")

    def __init__(self, rate: float, burst_s: float) -> None:
        self._rate = rate
        self._burst_s = burst_s
        self._held = rate * burst_s
        self._at = time.monotonic()

    def allows(self, weight: int) -> int:
        """How many requests of ``weight`` the pace allows now."""
        now = time.monotonic()
        cap = max(self._rate * self._burst_s, weight)
        self._held = min(cap, self._held + (now - self._at) * self._rate)
        self._at = now
        return int(self._held // weight)

    def wait_s(self, weight: int) -> float:
        """Seconds until one request of ``weight`` is allowed."""
        return max(0.0, (weight - self._held) / self._rate) if self._rate > 0 else WINDOW_MS / 1000

    def spend(self, weight: int) -> None:
        self._held -= weight


class SnapshotScheduler:
    """Queues snapshot requests of one exchange and fetches them as the weight budget allows."""

    def __init__(
        self,
        rest: VenueRest,
        budget: WeightBudget,
        *,
        weight_of: Callable[[int], int],
        concurrency: int,
        background_share: float = 0.5,
        check_share: float = 0.1,
        pace_burst_s: float | None = 2.0,
        stats: SnapshotStats | None = None,
        exchange: str = "",
    ) -> None:
        """``weight_of(limit)`` prices one snapshot of that depth; ``exchange`` names it in metrics;
        ``pace_burst_s`` None: checks and background requests are not paced, only capped."""
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self._rest = rest
        self._budget = budget
        self._weight_of = weight_of
        self._concurrency = concurrency
        self._background_share = background_share
        self._check_share = check_share
        self._checks_spent = (-1, 0)
        """(window, weight) the checks spent in it."""
        per_s = budget.limit / (WINDOW_MS / 1000)
        self._paces = (
            {}
            if pace_burst_s is None
            else {
                Priority.CHECK: _Pace(per_s * check_share, pace_burst_s),
                Priority.BACKGROUND: _Pace(per_s * background_share, pace_burst_s),
            }
        )
        self._exchange = exchange
        self.stats = stats or SnapshotStats()
        self._queues: tuple[deque[SnapshotRequester], ...] = tuple(deque() for _ in Priority)
        self._queued: set[SnapshotRequester] = set()
        self._delayed: dict[SnapshotRequester, asyncio.TimerHandle] = {}
        self._tickets = _Tickets()
        self._in_flight = 0
        self._wake = asyncio.Event()
        self._fetches: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> int:
        """Requests waiting for their turn (delayed ones included)."""
        return len(self._queued) + len(self._delayed)

    @property
    def pending_background(self) -> int:
        """Of those, the queued background ones (refreshes and audits)."""
        return sum(who in self._queued for who in self._queues[Priority.BACKGROUND])

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def request(self, who: SnapshotRequester, *, delay_s: float = 0.0) -> None:
        """Queue ``who`` for one snapshot (no-op when it is already queued or waiting its delay)."""
        if who in self._queued or who in self._delayed:
            return
        if delay_s > 0:
            self._delayed[who] = asyncio.get_running_loop().call_later(delay_s, self._enqueue, who)
        else:
            self._enqueue(who)

    def cancel(self, who: SnapshotRequester) -> None:
        """Forget a queued request (a fetch already in flight still answers; requesters ignore it)."""
        self._queued.discard(who)
        handle = self._delayed.pop(who, None)
        if handle is not None:
            handle.cancel()

    async def run(self) -> None:
        """Fetch queued requests, paid with tickets, until cancelled."""
        try:
            while True:
                head, priority = await self._next()
                weight = self._weight_of(head.snapshot_limit)
                if self._tickets.take(weight, time.time()):
                    self._queues[priority].popleft()
                    self._queued.discard(head)
                    self._start(head, weight)
                else:
                    await self._buy_tickets(weight, priority)
        finally:
            for task in list(self._fetches):
                task.cancel()

    # -- queue -----------------------------------------------------------------------------------

    def _enqueue(self, who: SnapshotRequester) -> None:
        self._delayed.pop(who, None)
        if who in self._queued:
            return
        self._queued.add(who)
        self._queues[who.priority].append(who)
        self.stats.requested += 1
        self._wake.set()

    def _head(self) -> tuple[SnapshotRequester, Priority] | None:
        """The next request (urgent ones first), dropping cancelled ones on the way."""
        for priority, queue in zip(Priority, self._queues, strict=True):
            while queue:
                if queue[0] in self._queued:
                    return queue[0], priority
                queue.popleft()
        return None

    async def _next(self) -> tuple[SnapshotRequester, Priority]:
        """Wait for a queued request and a free slot."""
        while True:
            head = self._head()
            if head is not None and self._in_flight < self._concurrency:
                return head
            self._wake.clear()
            await self._wake.wait()

    def _alike(self, queue: deque[SnapshotRequester], weight: int) -> int:
        """Queued requests at the front of ``queue`` that cost ``weight`` (at most one per slot)."""
        count = 0
        for who in queue:
            if count >= self._concurrency:
                break
            if who in self._queued and self._weight_of(who.snapshot_limit) == weight:
                count += 1
        return max(count, 1)

    async def _buy_tickets(self, weight: int, priority: Priority) -> None:
        """Charge the budget for the queued requests a free slot could start; wait if it says so."""
        wanted = self._alike(self._queues[priority], weight)
        pace = self._paces.get(priority)
        if pace is not None:
            wanted = min(wanted, pace.allows(weight))
            if wanted <= 0:
                await self._wait_for_work(pace.wait_s(weight))
                return
        share = self._background_share if priority is Priority.BACKGROUND else 1.0
        if priority is Priority.CHECK:
            window, into_ms = divmod(now_ms(), WINDOW_MS)
            spent = self._checks_spent[1] if self._checks_spent[0] == window else 0
            wanted = min(wanted, (int(self._budget.limit * self._check_share) - spent) // weight)
            if wanted <= 0:
                await self._wait_for_work((WINDOW_MS - into_ms) / 1000)  # the share of this window is spent
                return
        try:
            granted, wait_s = await self._budget.take(weight, wanted, share=share)
        except (RedisError, OSError) as exc:
            log.warning("weight budget unreachable (%s); snapshots wait", type(exc).__name__)
            granted, wait_s = 0, STORE_RETRY_S
        if granted:
            self._tickets.fill(weight, granted, time.time())
            self.stats.weight_spent += granted * weight
            if pace is not None:
                pace.spend(granted * weight)
            if priority is Priority.CHECK:
                self.stats.check_weight += granted * weight
                window = now_ms() // WINDOW_MS
                spent = self._checks_spent[1] if self._checks_spent[0] == window else 0
                self._checks_spent = (window, spent + granted * weight)
        elif priority is Priority.BACKGROUND:
            # Only the background share is used up: a sync request that arrives meanwhile may still
            # find weight in this window.
            await self._wait_for_work(wait_s)
        else:
            self.stats.waits += 1
            await asyncio.sleep(wait_s)

    async def _wait_for_work(self, wait_s: float) -> None:
        """Wait ``wait_s``, or less if a request arrives meanwhile (it may be a sync)."""
        self.stats.waits += 1
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), wait_s)

    # -- fetching --------------------------------------------------------------------------------

    def _start(self, who: SnapshotRequester, weight: int) -> None:
        if not who.snapshot_granted():
            self._tickets.give_back(weight)  # not spent: the next request of its weight uses it
            return
        self._in_flight += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self._in_flight)
        task = asyncio.get_running_loop().create_task(self._fetch(who, weight))
        self._fetches.add(task)
        task.add_done_callback(self._fetches.discard)

    async def _fetch(self, who: SnapshotRequester, weight: int) -> None:
        started = time.monotonic()
        try:
            with who.fetching():
                get_current_span().set_attribute("ladder.weight", weight)  # a no-op unless traced
                snapshot = await self._rest.snapshot(who.symbol, who.snapshot_limit)
        except (VenueRequestError, VenuePayloadError) as exc:
            self.stats.failed += 1
            log.warning("%s: snapshot failed: %s", who.symbol, exc)
            self._done(started)
            who.snapshot_failed(exc)
        else:
            self.stats.fetched += 1
            self._done(started)
            who.snapshot_arrived(snapshot)

    def _done(self, started: float) -> None:
        self.stats.fetch_seconds += time.monotonic() - started
        self._in_flight -= 1
        self._wake.set()
