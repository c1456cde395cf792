"""Checking suspect silences of one exchange's books against the venue, from the shared budget.

Theory of operation
-------------------
Every ``scan_s`` the checker looks at the synced replicas it watches. A replica whose silence has
become suspect (:meth:`~ingest_nodes.core.stall_watch.Rhythm.suspect_at`) gets one *check*: a request
for the venue's smallest REST snapshot (limit 5: weight 5 on spot, 2 on USD-M futures), queued in
the exchange's :class:`~ingest_nodes.runtime.snapshots.SnapshotScheduler` at ``CHECK`` priority, so it
yields to every sync and never takes more than the scheduler's check share of a window. Only the
snapshot's ``lastUpdateId`` matters:

- at or below the book's update id: the market is quiet; the replica records the confirmation
  (published as ``confirmed_time``) and its next check waits twice as long;
- above it: the venue moved on. Events still on their way get ``grace_ms`` to arrive; if the book
  has not reached that id by then, events were withheld or lost, and the replica is *stalled*
  (published ``stale``; it resyncs on its next event).

A venue whose REST book carries no id the stream's can be compared with (OKX) says instead, in
the stream, that a quiet book is alive: it sends each one a heartbeat about once a minute. There
the replica's stall policy makes a silence suspect only once that heartbeat is overdue, and the
checker (``by_rest`` False) stalls it without asking anything: the book is subscribed again.

A check that fails (the venue refused or timed out) is not retried before ``RETRY_S``, and a
silence whose checks fail turns the replica stale after the publisher's ``stale_after_ms``. A
check that only waits for the check share delays its verdict: the book stays synced meanwhile,
its ``age_ms`` (counted from its last event or confirmation) growing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import Final, Protocol

from book_store.schema import BookKey
from ingest_nodes.core.engine import BookEngine
from ingest_nodes.core.events import DepthSnapshot
from ingest_nodes.core.stall_watch import Rhythm, Verdict, judge
from ingest_nodes.ops.stats import ReplicaStats
from ingest_nodes.runtime.snapshots import Priority, SnapshotError, SnapshotScheduler
from ladder_process.clock import now_ms
from ladder_process.sweeps import in_slices

log = logging.getLogger(__name__)

CHECK_LIMIT: Final = 5
"""Levels a side asked for: the venue's cheapest snapshot; only its update id is used."""
RETRY_S: Final = 5.0
"""After a failed check, the next one of that replica waits this long."""


class Watched(Protocol):
    """A replica as the checker sees it (``replica.BookReplica``)."""

    book: BookKey
    watch: Rhythm
    stalled: bool
    stats: ReplicaStats

    @property
    def engine(self) -> BookEngine: ...

    def confirmed(self, at_ms: int) -> None:
        """A check found the venue where the book is, as of ``at_ms``."""

    def stall(self) -> None:
        """A check found events missing: stop serving the book as synced."""


class _Check:
    """One check of one replica: a snapshot request to the scheduler, then its judgement."""

    __slots__ = ("asked_ms", "failed_at", "replica", "venue_id")

    snapshot_limit: Final = CHECK_LIMIT
    priority: Final = Priority.CHECK

    def __init__(self, replica: Watched) -> None:
        self.replica = replica
        self.asked_ms: int | None = None
        self.venue_id: int | None = None
        """The venue's id, once answered and ahead of the book (waiting for the grace)."""
        self.failed_at: float | None = None

    @property
    def symbol(self) -> str:
        return self.replica.book.market

    def snapshot_granted(self) -> bool:
        replica = self.replica
        if replica.stalled or not replica.engine.synced or not replica.watch.suspect(now_ms()):
            return False  # events came, or the replica moved on, while it waited: no longer suspect
        self.asked_ms = now_ms()
        replica.stats.stall_checks += 1
        return True

    def fetching(self) -> AbstractContextManager[None]:
        return nullcontext()

    def snapshot_arrived(self, snapshot: DepthSnapshot) -> None:
        self.venue_id = snapshot.last_update_id

    def snapshot_failed(self, error: SnapshotError) -> None:
        self.failed_at = asyncio.get_running_loop().time()
        self.replica.watch.check_failed = True


class StallChecker:
    """Watches one exchange's replicas for suspect silences and checks them (module docstring).

    The checks under way are looked at every ``tick_s`` (a verdict waits for the grace, some
    hundred milliseconds); the scan of every watched replica for a new suspect runs only every
    ``scan_s``: a silence is suspect after a second at the least, so a quarter of a second later
    changes little, while scanning thousands of quiet books twenty times a second would be most
    of what an idle node spends.
    """

    def __init__(
        self,
        scheduler: SnapshotScheduler,
        *,
        by_rest: bool = True,
        tick_s: float = 0.05,
        scan_s: float = 0.25,
    ) -> None:
        """``by_rest`` False: a suspect silence is a stall (the venue's own heartbeat is overdue)."""
        self._scheduler = scheduler
        self._by_rest = by_rest
        self._tick_s = tick_s
        self._scan_s = scan_s
        self._watched: dict[Watched, None] = {}
        """The replicas watched and not being checked (a dict: ordered, unlike a set)."""
        self._checks: dict[Watched, _Check] = {}

    def watch(self, replica: Watched) -> None:
        self._watched[replica] = None

    def forget(self, replica: Watched) -> None:
        self._watched.pop(replica, None)
        check = self._checks.pop(replica, None)
        if check is not None:
            self._scheduler.cancel(check)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        scan_due = 0.0
        while True:
            await asyncio.sleep(self._tick_s)
            loop_now = loop.time()
            if loop_now >= scan_due:
                async for part in in_slices(list(self._watched)):
                    self.scan(part, now_ms())
                scan_due = loop_now + self._scan_s
            self.follow_checks(now_ms(), loop_now)

    def scan(self, replicas: Iterable[Watched], now: int) -> None:
        """Start a check of each of ``replicas`` whose silence has become suspect (and that is
        still watched and not being checked)."""
        watched = self._watched
        for replica in replicas:
            suspect = replica.watch.suspect(now) and not replica.stalled and replica.engine.synced
            if suspect and replica in watched and not self._by_rest:
                replica.stats.stalls += 1
                book = replica.book
                log.warning("%s/%s: the venue's heartbeat is overdue; subscribing the book again",
                            book.exchange, book.market)  # fmt: skip
                replica.stall()
            elif suspect and replica in watched:
                del watched[replica]
                check = self._checks[replica] = _Check(replica)
                self._scheduler.request(check)

    def follow_checks(self, now: int, loop_now: float) -> None:
        """Judge the checks answered; drop the ones failed long enough ago or no longer needed."""
        for replica, check in list(self._checks.items()):
            if check.failed_at is not None:
                if loop_now - check.failed_at >= RETRY_S:
                    self._done(replica)
            elif check.venue_id is not None:
                self._judge(replica, check, now)
            elif check.asked_ms is None and (replica.stalled or not replica.watch.suspect(now)):
                self._scheduler.cancel(check)  # still queued, and no longer suspect
                self._done(replica)

    def _done(self, replica: Watched) -> None:
        """The replica's check is over: watch it for its next suspect silence."""
        del self._checks[replica]
        self._watched[replica] = None

    def _judge(self, replica: Watched, check: _Check, now: int) -> None:
        assert check.venue_id is not None and check.asked_ms is not None
        engine = replica.engine
        if replica.stalled or not engine.synced:
            self._done(replica)  # the book started over meanwhile: nothing to judge
            return
        verdict = judge(
            check.venue_id, engine.update_id or 0, check.asked_ms, now, replica.watch.policy.grace_ms
        )
        if verdict is Verdict.CATCHING_UP:
            return  # look again next tick
        self._done(replica)
        if verdict is Verdict.QUIET:
            replica.stats.quiet_checks += 1
            replica.confirmed(check.asked_ms)
        else:
            replica.stats.stalls += 1
            book = replica.book
            log.warning("%s/%s: stream stalled (venue at %d, book at %s); stale until it resyncs",
                        book.exchange, book.market, check.venue_id, engine.update_id)  # fmt: skip
            replica.stall()
