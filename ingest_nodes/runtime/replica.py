"""One replica of one book on this node: its served engine, the stream feeding it, and handovers.

Theory of operation
-------------------
The replica's served engine (``main``, a :class:`~ingest_nodes.runtime.lane.Lane`) is fed by one
connection, ``source``. Events from any other connection are ignored, except during a handover.

Calls go one way: a connection (or the snapshot scheduler, through the replica's requester of
each lane) calls the replica; the replica calls its lanes, which return what their engines did and
leave the snapshot they need in ``ask``, for the replica to place; and the replica marks itself
for the publisher, which reads it. Nothing it calls calls it back: the scheduler's grants and
answers come later, as inputs, as a connection's events do.

Handover (make-before-break): when ``source`` must go (age limit, venue shutdown) the feed adds the
replica to a successor connection and calls ``begin_handover``. The successor's events are kept in
a splice buffer while the old connection keeps feeding the served book. As soon as the successor
has delivered the event the served book is at, or a buffered event *continues* the served book's
update id (the venue's own continuity rule: spot ``U <= id + 1``, futures ``pu == id``), the
replica switches: the buffered events are applied and the successor becomes ``source``. The book
stays synced and published throughout, costs no snapshot, and keeps its trusted depth; the engine
still checks every event, so a wrong splice could only ever show up as a gap and a resync, never as
a wrong book. For the same reason a quiet book, which reaches no splice point before the old
connection is closed, simply moves over as it is. A book that is not synced switches at once and
starts over; so does one whose old connection closes before the successor delivered anything for
it (the venue left no time between its notice and the close). If the successor itself must go
before the splice, the splice moves on to its own successor.

Fresh snapshots, make-before-break: a second engine on the same stream (``shadow``) syncs from a
fresh REST snapshot in the background; once synced it is at the served book's update id (both saw
the same events), the two are compared, and the shadow, with its fresh trusted window, becomes the
served engine. The served book keeps serving all the while. Two things start one:

- a *refresh*, when the trusted window has shrunk towards the published ``depth`` (checked
  each time the served book changes; :class:`~ingest_nodes.core.trusted_window.WindowKeeper` decides
  when, and how deep the refresh goes), so answers stop short only when the market outruns it;
- an *audit* (``resnapshot``, about once per ``LADDER_RESNAPSHOT_INTERVAL_S`` per book), at the
  cheapest depth that covers the published one: the comparison of every level both trust, at
  equal update ids, is the point. A disagreement is counted, logged and resolved in favour of the
  fresh snapshot; when they agree, the served book stays if it trusts a deeper window.

A depth change (a deeper or shallower subscriber) takes effect at the next publish; a deeper
depth than the trusted window covers starts a refresh at once.

A venue that sends the whole book on subscribe instead of serving snapshots (``resets_on_stream``:
Alpaca, OKX, Bybit, Kraken, Coinbase) has none of this: a book thrown away for any reason but a
lost socket is rebuilt by subscribing its symbol again on the same connection, and there is no
shadow. A chained book (OKX, Bybit, Kraken, Coinbase) refreshes a shrunk trusted window by
subscribing again too (the venue's snapshot replaces the served book, which serves on meanwhile;
Kraken's and Coinbase's windows do not shrink, the venue keeps the subscribed depth whole), and
splices a handover at the successor's snapshot; where the venue's REST book carries the stream's
update id (Bybit's ``u``), an audit asks for one and compares it with the served book once that is
at the same id (a disagreement resyncs the book). An Alpaca book has no refresh or audit, and a
handover starts it over. A snapshot that does not come (the venue lost it, or never sent it)
leaves a book waiting: the node asks ``retry_snapshot`` now and then, and a book that has waited
``LADDER_STREAM_SNAPSHOT_WAIT_MS`` is subscribed again. A venue that refuses the connection's
session (``on_refused``) leaves the book unserved, and its published status says why
(``refusal``).

Silent stalls: the replica keeps its book's rhythm (``watch``, see ``stall_watch``), and the
exchange's :class:`~ingest_nodes.runtime.stall_checks.StallChecker` checks a suspect silence against the
venue. A quiet market is ``confirmed`` (published as ``confirmed_time``); a stalled stream makes
the replica ``stalled``: published ``stale`` at once, and thrown away for a fresh snapshot on its
next event, since the events it missed are gone (or, replayed late, prove nothing a snapshot
would not).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Final

from book_store.codec import BookStatus
from book_store.schema import BookKey
from ingest_nodes.core.book import OrderBook
from ingest_nodes.core.engine import BookEngine, EngineResult
from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.core.stall_watch import Rhythm, StallPolicy
from ingest_nodes.core.sync import FuturesSyncMachine, SpotSyncMachine, StreamChainMachine
from ingest_nodes.core.trusted_window import WindowKeeper
from ingest_nodes.ops.checkpoints import CheckpointLog, same_top
from ingest_nodes.ops.stats import ReplicaStats
from ingest_nodes.ops.telemetry import IngestTelemetry
from ingest_nodes.runtime.connection import StreamConnection
from ingest_nodes.runtime.lane import Lane
from ingest_nodes.runtime.publisher import Publisher
from ingest_nodes.runtime.snapshots import Priority, SnapshotError, SnapshotScheduler
from ingest_nodes.venues.stream import Refused
from ladder_process.clock import now_ms

log = logging.getLogger(__name__)

STALLED = "stalled: the venue's book moved on while its stream stayed silent"
UNCONFIRMED = "silent: a long silence the venue could not confirm as a quiet market"
LAGGING = "lagging: its events reach the node too far behind the venue's"

MAX_SPLICE_BUFFER: Final = 2000
"""Successor events kept while the old connection catches up; beyond it, switch and resync."""


EngineFactory = Callable[[], BookEngine]


class _Splice:
    __slots__ = ("buffer", "heard", "target")

    def __init__(self, target: StreamConnection) -> None:
        self.target = target
        self.buffer: deque[DepthUpdate] = deque()
        self.heard = False
        """The successor has delivered an event of this symbol: it is live for it."""


class _Audit:
    """One REST book asked for to audit a book the stream rebuilds (a snapshot requester)."""

    __slots__ = ("book", "replica", "snapshot_limit")

    priority: Final = Priority.BACKGROUND

    def __init__(self, replica: BookReplica, limit: int) -> None:
        self.replica = replica
        self.snapshot_limit = limit
        self.book: DepthSnapshot | None = None

    @property
    def symbol(self) -> str:
        return self.replica.symbol

    def snapshot_granted(self) -> bool:
        return self.replica.engine.synced

    def fetching(self) -> AbstractContextManager[None]:
        return nullcontext()

    def snapshot_arrived(self, snapshot: DepthSnapshot) -> None:
        self.replica._audit_answered(snapshot)

    def snapshot_failed(self, error: SnapshotError) -> None:
        self.replica._audit_answered(None)


class _LaneRequests:
    """One lane's snapshot requests as the exchange's scheduler sees them (a snapshot requester):
    its grants and answers come in through the replica, which hands them to the lane and takes what
    the lane returns, so the lane calls nothing back. ``replica`` is None once the lane is closed
    (an answer still in flight then only reaches the lane, which ignores it)."""

    __slots__ = ("lane", "replica")

    def __init__(self, replica: BookReplica, lane: Lane) -> None:
        self.replica: BookReplica | None = replica
        self.lane = lane

    @property
    def symbol(self) -> str:
        return self.lane.symbol

    @property
    def snapshot_limit(self) -> int:
        return self.lane.snapshot_limit

    @property
    def priority(self) -> Priority:
        return self.lane.priority

    def snapshot_granted(self) -> bool:
        wanted, result = self.lane.snapshot_granted()
        if self.replica is not None:
            self.replica._took(self.lane, result)
        return wanted

    def fetching(self) -> AbstractContextManager[None]:
        replica = self.replica
        return nullcontext() if replica is None else replica._telemetry.snapshot_fetch(replica)

    def snapshot_arrived(self, snapshot: DepthSnapshot) -> None:
        result = self.lane.snapshot_arrived(snapshot)
        if self.replica is not None:
            self.replica._took(self.lane, result)

    def snapshot_failed(self, error: SnapshotError) -> None:
        self.lane.snapshot_failed()
        if self.replica is not None:
            self.replica._took(self.lane, None)


class BookReplica:
    """Keeps one replica of one book in sync and published (see the module docstring)."""

    def __init__(
        self,
        book: BookKey,
        replica: int,
        new_engine: EngineFactory,
        scheduler: SnapshotScheduler,
        publisher: Publisher,
        *,
        depth: int,
        depth_tiers: tuple[tuple[int, int], ...],
        checkpoints: CheckpointLog | None = None,
        stall_policy: StallPolicy | None = None,
        resets_on_stream: bool = False,
        silence_checked: bool = True,
        rest_audits: bool = False,
        telemetry: IngestTelemetry,
    ) -> None:
        """``depth`` is the levels a side to publish; ``depth_tiers`` the venue's snapshot weights;
        ``resets_on_stream``: the venue rebuilds a book by a resubscribe, not a snapshot;
        ``silence_checked``: something tells a quiet book from a stalled one (a REST id, a venue
        heartbeat); without it a suspect silence is judged as a failed check is; ``rest_audits``: a
        book the stream rebuilds is audited against REST books at its own update id (Bybit)."""
        self.book = book
        self.replica = replica
        self.stats = ReplicaStats()
        self._telemetry = telemetry
        self.source: StreamConnection | None = None
        self.last_event_ms = now_ms()
        self.watch = Rhythm(self.last_event_ms, stall_policy)
        self.watch.check_failed = not silence_checked
        """The book's rhythm of events, and its confirmations (see ``stall_watch``)."""
        self.stalled = False
        """A check found events missing: published stale until the next event starts a resync."""
        self.lagging = False
        """Its events run too far behind the venue's: published stale until they catch up."""
        self._status: BookStatus | None = None
        """The status last decided (a turn to stale is recorded as an episode)."""
        self._refresh_soon = False
        """A refresh was found due and starts after this loop turn's publish."""
        self.synced_since: float | None = None
        """Loop time the served book last became synced or passed an audit (None while not synced)."""
        self.refusal: Refused | None = None
        """Why the venue will not serve this book now (bad key, no free key), until it does."""
        self._waiting_since: int | None = now_ms()
        """When the book last began to wait for a sync (None: synced)."""
        self._resets_on_stream = resets_on_stream
        self._rest_audits = rest_audits
        self._audit: _Audit | None = None
        self._new_engine = new_engine
        self._scheduler = scheduler
        self._publisher = publisher
        self._window = WindowKeeper(depth_tiers, depth)
        self._checkpoints = checkpoints
        self._requests: dict[Lane, _LaneRequests] = {}
        """The scheduler's requester of each open lane (the main, and the shadow while one syncs)."""
        self.main = self._lane(self._window.sync_limit)
        self.engine: BookEngine = self.main.engine
        """The engine whose book is served (``main``'s, kept beside it: every event reads it)."""
        self._shadow: Lane | None = None
        self._shadow_is_audit = False
        self._splice: _Splice | None = None

    @property
    def symbol(self) -> str:
        return self.book.market

    @property
    def depth(self) -> int:
        """Levels a side published: the deepest subscriber's depth."""
        return self._window.depth

    def set_depth(self, depth: int) -> None:
        """A subscriber came or went: publish this deep from now on (deeper: refresh if needed)."""
        if depth == self._window.depth:
            return
        self._window.depth = depth
        self.main.snapshot_limit = self._window.sync_limit
        for connection in self.connections():
            connection.depth_changed()
        self._publisher.mark(self)

    @property
    def snapshot_limit(self) -> int:
        """The limit of the snapshot the served book was built from."""
        return self._window.served_limit

    def connections(self) -> list[StreamConnection]:
        """Every connection that carries this replica now (two during a handover)."""
        found = [] if self.source is None else [self.source]
        if self._splice is not None:
            found.append(self._splice.target)
        return found

    def start(self) -> None:
        self._publisher.track(self)
        self._telemetry.started(self)

    async def stop(self) -> None:
        self._close(self.main)
        self._drop_shadow()
        if self._audit is not None:
            self._scheduler.cancel(self._audit)
            self._audit = None
        self._publisher.untrack(self)
        self._telemetry.stopped(self)

    # -- what the connections deliver ----------------------------------------------------------

    def on_update(self, update: DepthUpdate, source: StreamConnection) -> None:
        if source is self.source:
            self.refusal = None
            self.last_event_ms = update.ingest_time
            stats = self.stats
            stats.events += 1
            if update.event_time is not None:  # a venue that stamps its events (Kraken's book does not)
                gap = stats.lag_ms = update.ingest_time - update.event_time
                if gap > stats.max_lag_ms:
                    stats.max_lag_ms = gap
                lagging = self._publisher.lag.lagging(gap, self.lagging)
                if lagging is not self.lagging:
                    self.lagging = lagging
                    stats.lagging_episodes += lagging
                    self._publisher.mark(self)
            if self.stalled:
                self._resume_after_stall(update.ingest_time)
            else:
                self.watch.event(update.ingest_time)
            main = self.main
            result = main.feed(update)
            if main.ask is not None:
                self._ask(main)
            if result is not None:
                self._main_result(result)
            shadow = self._shadow
            if shadow is not None:
                result = shadow.feed(update)
                if result is not None or shadow.ask is not None:  # mostly held, already asked
                    self._took(shadow, result)
            if self._audit is not None:
                self._audit_compare()
            if self._splice is not None:
                self._try_splice()
        elif self._splice is not None and source is self._splice.target:
            self._splice.heard = True
            self._splice.buffer.append(update)
            self._try_splice()

    def on_disconnect(self, source: StreamConnection) -> None:
        if source is self.source:
            if self._splice is not None and self._splice.heard:
                self._switch()  # the successor is live: the engine judges its events as they come
            elif self._splice is not None:
                self._switch(restart="the old connection closed before the successor was live")
            else:
                self._drop_shadow()
                self._took(self.main, self.main.disconnect())
        elif self._splice is not None and source is self._splice.target:
            self._splice.buffer.clear()
            self._splice.heard = False

    def on_refused(self, source: StreamConnection | None, refusal: Refused) -> None:
        """The venue refused ``source``'s session (None: no connection could be opened for us)."""
        if source is self.source:
            self.refusal = refusal
            self._publisher.mark(self)

    def retry_snapshot(self, now: int, wait_ms: int) -> bool:
        """Subscribe again a book of a venue that sends snapshots on the stream which has waited
        ``wait_ms`` for one (module docstring); True when it did."""
        waiting, source = self._waiting_since, self.source
        if not self._resets_on_stream or source is None or self.refusal is not None or self.engine.synced:
            return False
        if waiting is None or now - waiting < wait_ms:
            return False
        self._waiting_since = now
        log.info("%s/%s r%d: no snapshot after %d ms; subscribing again", self.book.exchange, self.symbol,
                 self.replica, now - waiting)  # fmt: skip
        source.resubscribe(self.symbol)
        return True

    def invalidate(self, reason: str) -> None:
        """Throw the served book away (a replica mismatch, say): it resyncs."""
        self._drop_shadow()
        self._took(self.main, self.main.invalidate(reason))

    # -- silent stalls (see stall_checks) --------------------------------------------------------

    def confirmed(self, at_ms: int) -> None:
        """A check found the venue where the book is: publish that it was current at ``at_ms``."""
        self.watch.quiet(at_ms)
        self._publisher.mark(self)

    def heard(self, source: StreamConnection, at_ms: int) -> None:
        """The venue's heartbeat on ``source``: a synced book it feeds was current at ``at_ms`` (the
        confirmation shows with the next publish; a heartbeat a second is no reason to publish)."""
        if source is self.source and self.engine.synced:
            self.watch.quiet(at_ms)

    def stall(self) -> None:
        """A check found events missing: stale at once, a fresh snapshot when events flow again.

        A book the stream rebuilds (OKX, Bybit) is subscribed again at once instead: its missing
        events may never come, and the subscribe brings the whole book."""
        if self._resets_on_stream:
            self.invalidate("stall")
            return
        self.stalled = True
        self._drop_shadow()
        self._publisher.mark(self)

    def _resume_after_stall(self, now: int) -> None:
        self.stalled = False
        self.watch.restart(now)
        self.invalidate("stall")

    # -- handover --------------------------------------------------------------------------------

    def begin_handover(self, old: StreamConnection, new: StreamConnection) -> None:
        if self._splice is not None and self._splice.target is old:
            # The successor we were splicing onto is itself being replaced: splice onto its successor.
            old.remove(self.symbol)
            self._splice = _Splice(new)
        elif self.source is old:
            self._splice = _Splice(new)
            if not self.engine.synced:
                self._switch(restart="not synced")

    def finish_handover(self, old: StreamConnection) -> None:
        """``old`` closes now. Nothing reached the splice point (a quiet book): the book moves over
        as it is, and the engine checks the successor's first event against it like any other."""
        if self.source is old and self._splice is not None:
            self._switch()

    def _try_splice(self) -> None:
        splice = self._splice
        assert splice is not None
        engine = self.engine
        update_id = engine.update_id
        machine = engine.machine
        if isinstance(machine, StreamChainMachine) and update_id is not None:
            self._splice_chain(splice, machine)
            return
        if update_id is None or not isinstance(machine, SpotSyncMachine | FuturesSyncMachine):
            self._switch(restart="sync lost during the handover")
            return
        rules = machine.rules
        buffer = splice.buffer
        caught_up = False
        while buffer and rules.is_duplicate(buffer[0], update_id):
            caught_up = buffer.popleft().final_update_id == update_id
        if caught_up or (buffer and rules.continues(buffer[0], update_id)):
            self._switch()
        elif len(buffer) > MAX_SPLICE_BUFFER:
            self._switch(restart="the old connection fell too far behind")

    def _splice_chain(self, splice: _Splice, machine: StreamChainMachine) -> None:
        """A chained book (OKX, Bybit) switches at the successor's first message it can take: its
        snapshot (the subscribe sends one first) or one that continues the served book."""
        buffer = splice.buffer
        while buffer and not machine.follows(buffer[0]):
            buffer.popleft()
        if buffer:
            self._switch()

    def _switch(self, restart: str | None = None) -> None:
        """Make the successor the source; the served book carries on, or starts over for ``restart``."""
        splice = self._splice
        assert splice is not None
        self._splice = None
        old, self.source = self.source, splice.target
        if old is not None:
            old.remove(self.symbol)
        if restart is None:
            self.stats.handovers += 1
        else:
            log.info("%s/%s r%d: handover without a splice (%s)", self.book.exchange, self.symbol,
                     self.replica, restart)  # fmt: skip
            self._drop_shadow()
            self._took(self.main, self.main.invalidate("handover"))
        for update in splice.buffer:
            self.on_update(update, splice.target)

    # -- fresh snapshots: refreshes and audits ----------------------------------------------------

    def resnapshot(self) -> None:
        """Audit: sync a second engine from a fresh snapshot, compare, and let it replace the served one.

        A book the stream rebuilds has no shadow: with ``rest_audits`` it asks for a REST book and
        compares it with the served one when the served one is at that book's update id."""
        if self._resets_on_stream:
            if self._rest_audits and self._audit is None and self.engine.synced:
                self._audit = _Audit(self, self._window.sync_limit)
                self._scheduler.request(self._audit)
                self.synced_since = asyncio.get_running_loop().time()  # the next one an interval on
            return
        if self._can_shadow():
            self._start_shadow(self._window.sync_limit, audit=True)

    def _audit_answered(self, snapshot: DepthSnapshot | None) -> None:
        """The audit's REST book (None: it failed): compare now, or once the stream reaches it."""
        audit = self._audit
        if audit is None:
            return
        if snapshot is None or not self.engine.synced:
            self._audit = None
        else:
            audit.book = snapshot
            self._audit_compare()

    def _audit_compare(self) -> None:
        """Compare the served book with the audit's REST book if both are at one update id; a REST
        book the stream has passed already proves nothing and is let go."""
        audit = self._audit
        engine = self.engine
        if audit is None or audit.book is None:
            return
        update_id = engine.update_id
        if update_id is None or update_id > audit.book.last_update_id:
            self._audit = None
            return
        if update_id < audit.book.last_update_id:
            return  # the stream is on its way there
        self._audit = None
        rest = OrderBook()
        snapshot = audit.book
        rest.load(
            snapshot.bids,
            snapshot.asks,
            bids_complete=snapshot.bids_complete,
            asks_complete=snapshot.asks_complete,
        )
        self.stats.audits += 1
        self.stats.last_audit_ms = now_ms()
        if not same_top(rest, engine.book, self.depth):
            self.stats.audit_mismatches += 1
            self.stats.mismatches += 1
            log.warning("%s/%s r%d: the venue's REST book disagrees with the served book at %s",
                        self.book.exchange, self.symbol, self.replica, update_id)  # fmt: skip
            self.invalidate("audit_mismatch")

    def status(self, now: int) -> BookStatus:
        """What this replica is at ``now``, decided here from its own state: resyncing (or refused,
        the venue saying why) until synced; stale while a check found its stream stalled, while its
        events run too far behind the venue's, or once a suspect silence whose check failed
        outlasts the node's ``stale_after_ms``; synced otherwise. A turn to stale is recorded in its
        stats (an episode, and why)."""
        if not self.engine.synced:
            status = BookStatus.RESYNCING if self.refusal is None else BookStatus.REFUSED
        elif self.stalled or self.lagging:
            status = BookStatus.STALE
        else:
            watch = self.watch
            silent = watch.check_failed and now - watch.suspect_at() > self._publisher.stale_after_ms
            status = BookStatus.STALE if silent else BookStatus.SYNCED
        if status is BookStatus.STALE and self._status is not BookStatus.STALE:
            self.stats.stale_episodes += 1
            why = STALLED if self.stalled else LAGGING if self.lagging else UNCONFIRMED
            self.stats.last_stale = (why, now)
        self._status = status
        return status

    def _refresh_if_due(self) -> None:
        """The served book changed: when its trusted window is about to fall short of the published
        depth, take a fresh snapshot (not while the node sheds work: a later change asks again). It
        starts after this loop turn's publish, which goes first."""
        if self._refresh_soon or self._publisher.lag.shedding:
            return
        if not self._resets_on_stream and not self._can_shadow():
            return  # a refresh or an audit is on its way already
        loop = asyncio.get_running_loop()
        bids, asks = self.engine.book.window()
        if self._window.refresh_due(bids, asks, loop.time()):
            self._refresh_soon = True
            loop.call_soon(self._refresh)

    def _refresh(self) -> None:
        """Start the refresh found due. A book the stream rebuilds refreshes by subscribing again:
        the venue's new snapshot replaces the book (which serves on meanwhile) with a full window."""
        self._refresh_soon = False
        now = asyncio.get_running_loop().time()
        if self._resets_on_stream:
            if isinstance(self.engine.machine, StreamChainMachine) and self.source is not None:
                self._window.refresh_limit(now)
                self.stats.refreshes += 1
                self.source.resubscribe(self.symbol)
        elif self._can_shadow():
            self.stats.refreshes += 1
            self._start_shadow(self._window.refresh_limit(now), audit=False)

    def _can_shadow(self) -> bool:
        fresh = not self._resets_on_stream  # no snapshot to sync a shadow from
        return fresh and self._shadow is None and self.engine.synced and self._splice is None

    def _start_shadow(self, limit: int, *, audit: bool) -> None:
        self._shadow = self._lane(limit, background=True)
        self._shadow_is_audit = audit

    def _shadow_result(self, shadow: Lane) -> None:
        if not shadow.engine.synced or not self.engine.synced:
            return
        self._shadow = None
        audit = self._shadow_is_audit
        same_id = shadow.engine.update_id == self.engine.update_id
        mismatch = same_id and not same_top(shadow.engine.book, self.engine.book, self.depth)
        if audit:
            self.stats.audits += 1
            self.stats.audit_mismatches += mismatch
            self.stats.last_audit_ms = now_ms()
        else:
            self.stats.refreshes_done += 1
        if mismatch:
            self.stats.mismatches += 1
            log.warning("%s/%s r%d: a fresh snapshot disagrees with the served book at %s",
                        self.book.exchange, self.symbol, self.replica, self.engine.update_id)  # fmt: skip
        elif audit and shadow.snapshot_limit < self._window.served_limit:
            self._close(shadow)  # the books agree, and the served one trusts a deeper window: keep it
            self.synced_since = asyncio.get_running_loop().time()
            return
        self._close(self.main)
        self.main, self.engine = shadow, shadow.engine
        shadow.serving()
        self._window.served_limit = shadow.snapshot_limit
        shadow.snapshot_limit = self._window.sync_limit  # its next sync from scratch is cheap again
        self.stats.resnapshots += 1
        self.synced_since = None
        self._main_result(EngineResult(changed=True, need_snapshot=False, resync_reason=None))

    def _drop_shadow(self) -> None:
        if self._shadow is not None:
            self._close(self._shadow)
            self._shadow = None

    # -- reacting to the served engine -----------------------------------------------------------

    def _lane(self, limit: int, *, background: bool = False) -> Lane:
        lane = Lane(
            self._new_engine(),
            self.symbol,
            snapshot_limit=limit,
            stats=self.stats,
            background=background,
            snapshots=not self._resets_on_stream,
        )
        self._requests[lane] = _LaneRequests(self, lane)
        return lane

    def _close(self, lane: Lane) -> None:
        """Retire ``lane``: its requests are cancelled and its requester lets go of the replica
        (without that cycle a retired lane, its engine and its book are freed by reference
        counting, which the node relies on: it keeps its heap out of the collector,
        ``ladder_process.heap``)."""
        lane.close()
        requests = self._requests.pop(lane, None)
        if requests is not None:
            self._scheduler.cancel(requests)
            requests.replica = None

    def _ask(self, lane: Lane) -> None:
        """Place the snapshot request ``lane`` left in its ``ask``."""
        delay = lane.take_ask()
        if delay is not None:
            self._scheduler.request(self._requests[lane], delay_s=delay)

    def _took(self, lane: Lane, result: EngineResult | None) -> None:
        """What a call into ``lane`` left: first the snapshot request it asks for, then its engine's
        result, which the served lane's or the shadow's reaction hears (a retired lane's nobody)."""
        if lane.ask is not None:
            self._ask(lane)
        if result is None:
            return
        if lane is self.main:
            self._main_result(result)
        elif lane is self._shadow:
            self._shadow_result(lane)

    def _main_result(self, result: EngineResult) -> None:
        reason = result.resync_reason
        if reason is not None:
            self._window.served_limit = self.main.snapshot_limit
            self._resynced(reason)
        engine = self.engine
        if not engine.synced:
            if self._waiting_since is None:
                self._waiting_since = now_ms()
        else:
            self._waiting_since = None
            if self.synced_since is None:
                self.synced_since = asyncio.get_running_loop().time()
                self.watch.restart(now_ms())  # the wait for the snapshot was no gap of the market's
            if result.changed and self._checkpoints is not None:
                self._checkpoints.offer(self.book, self.replica, engine)
        if result.changed or reason is not None:
            self._publisher.mark(self)
            if result.changed and engine.synced:
                self._refresh_if_due()

    def _resynced(self, reason: str) -> None:
        if self._resets_on_stream and reason != "disconnect" and self.source is not None:
            self.source.resubscribe(self.symbol)  # the venue sends the whole book again
        self.stats.resyncs[reason] += 1
        self.stats.last_resync = (reason, now_ms())
        self._telemetry.resync(self, reason)
        self.synced_since = None
        self._drop_shadow()
        where = (self.book.exchange, self.symbol, self.replica)
        if reason == "crossed":
            log.error("%s/%s r%d: ALARM crossed book; resyncing", *where)
        else:
            log.info("%s/%s r%d: resync (%s)", *where, reason)
