"""Turns book replicas into stored snapshots: trimmed, pre-encoded, once per loop turn.

Theory of operation
-------------------
A replica that changed is only *marked*; at the end of the event-loop turn every marked replica is
published once and handed to the batching :class:`~book_store.writer.BookWriter`. A burst of
updates to one book inside one turn therefore costs one publish and one write. While the writer's
previous heads still wait for the store (or the writer is fenced), the marked replicas wait too
and are published once heads can be sent: what a replica changed meanwhile goes as one change. With
``publish_interval_ms`` > 0 a replica is published at most that often (the latest state wins).

**An event costs what it changes.** Readers hold each replica's head; the publisher remembers what
they hold (which book, how many levels a side, at which update id and status) and sends only how
it changed: the book's journal of changes among its first levels (``OrderBook.open_journal``),
made into a delta of the head (:mod:`book_store.delta`). A replica is published whole when readers
cannot follow otherwise: its first publish, a status change, a new book (a resync, a refresh
swapped in, a venue reset), a changed depth, a journal that overflowed, or a delta larger than the
head itself. The store keeps the last whole head (the *base*) and the deltas since; once those
deltas add up to the base's size (at least ``BASE_BUDGET``: a 20-level head would otherwise be
written whole every third event), a fresh base goes with the next delta, so a reader loading the
book cold reads at most about twice the head, or the head and 4 KB.

Each replica is published as deep as its deepest subscriber asks (``depth``), in two parts when
that is deeper than ``head_levels``:

- the **head** snapshot, the top ``head_levels`` a side, on every update, which is what 20- and
  100-level readers and streams see;
- the **deep** snapshot, every level up to ``depth``, at most every ``depth / deep_levels_per_s``
  seconds (the latest state wins), and empty at once when the replica stops being synced, so a
  deep snapshot is never ``synced`` while its replica is not. A quiet book's deep snapshot is not
  republished at all: a reader takes it as current while it is at the head's ``update_id``. Deep
  snapshots that fall due are written one at a time, most overdue first, and one of more than
  ``_ONE_TURN_LEVELS`` levels a side is spread over three event-loop turns: the first takes its
  levels (one atomic state: a level's bytes never change in place, a change replaces them), the
  second and third encode a side each. A 5000-level encode in one go holds the loop for over a
  millisecond; in three steps no turn holds it that long, and the events of other books go in
  between.

So a 5000-level book changing ten times a second costs ten 100-level encodes and writes a second
plus one 5000-level one every 2.5 s (at the default 2000 levels a second), not ten 5000-level
ones. Both parts are complete, atomic snapshots at their own ``update_id``.

Every published side says whether the venue may hold levels past the last one it carries (the
side was cut at the published depth, or at the edge of the trusted window), so readers can mark
an answer that stops short as ``truncated``.

The publish path goes one way. A replica decides what it is (``BookReplica.status``: synced,
stale, resyncing or refused, from its own state) and marks itself changed (:meth:`Publisher.mark`);
the publisher reads it and writes, and keeps its own record of what it wrote (:meth:`published`);
it calls nothing back. The writer calls nothing back either: the publisher waits on its
``heads_ready``.

Readers must tell a quiet book from a dead node. Every ``keepalive_ms`` the keepalive loop writes
the node's heartbeat (:mod:`book_store.liveness`), which vouches for every snapshot the node wrote
within the last two ``quiet_keepalive_ms``, so a quiet synced replica is republished only every
``quiet_keepalive_ms`` (30 s), and a thousand quiet books cost one store write a second, not a
thousand. What the heartbeat cannot vouch for is still published: a replica that is not synced
every ``resyncing_keepalive_ms``, a replica whose status would change with time alone (a failed
check's silence running out) within ``keepalive_ms`` of it, and, when the store turns out to have
lost the node's heartbeat (it restarted empty), every replica at once.

A synced replica says it is ``stale`` when a stall check found its stream stalled (see
``stall_checks``), or when its silence has been suspect for ``stale_after_ms`` and its check failed
(the venue cannot be asked): a quiet book that checks confirm stays ``synced``, with
``confirmed_time`` saying when it was last known current.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from book_store.codec import (
    DEEP,
    MORE_ASKS,
    MORE_BIDS,
    BookStatus,
    EncodedSide,
    SnapshotMeta,
    assemble_snapshot,
    encode_side,
    encode_snapshot,
)
from book_store.delta import encode_delta
from book_store.schema import BookKey, ReplicaId
from book_store.writer import MAX_DELTA_FIELDS, BookWriter
from ingest_nodes.core.book import OrderBook, SideWindow
from ingest_nodes.core.engine import BookEngine
from ingest_nodes.core.lag import LagWatch
from ingest_nodes.core.stall_watch import Rhythm
from ingest_nodes.ops.telemetry import IngestTelemetry
from ingest_nodes.settings import IngestSettings
from ladder_process.clock import now_ms
from ladder_process.sweeps import in_slices

BASE_BUDGET = 4096
"""Bytes of deltas stored after a base before a fresh base goes, when the base is smaller."""

_ONE_TURN_LEVELS = 1000
"""A deep snapshot of up to this many levels a side is taken and encoded in one loop turn."""


class _Shown:
    """What the readers of one replica hold: the head last published, whole or by deltas."""

    __slots__ = ("asks", "base_bytes", "bids", "book", "cap", "deltas", "since_base", "status", "update_id")

    def __init__(
        self, book: OrderBook, cap: int, meta: SnapshotMeta, counts: tuple[int, int], size: int
    ) -> None:
        self.book = book
        self.cap = cap
        self.status = meta.status
        self.bids, self.asks = counts
        self.update_id = meta.update_id
        self.base_bytes = size
        """The size of the head stored whole last (the base)."""
        self.since_base = 0
        """Bytes of the deltas stored after the base."""
        self.deltas = 0


class Publishable(Protocol):
    """A replica as the publisher reads it: what it is, and its status, which it decides itself."""

    book: BookKey
    replica: int
    watch: Rhythm

    @property
    def engine(self) -> BookEngine: ...

    @property
    def depth(self) -> int:
        """Levels a side to publish: the deepest subscriber's depth."""

    def status(self, now: int) -> BookStatus:
        """What the replica is at ``now`` (see ``runtime/replica.py``)."""


class Published:
    """What the publisher last wrote of one replica: the status and when (its own record)."""

    __slots__ = ("at_ms", "status")

    def __init__(self, status: BookStatus, at_ms: int) -> None:
        self.status = status
        self.at_ms = at_ms


class _DeepState:
    """What the deep snapshot of one replica last said, and when."""

    __slots__ = ("published_ms", "said")

    def __init__(self) -> None:
        self.published_ms = 0
        self.said: tuple[int, BookStatus] | None = None
        """``(update_id, status)`` of the last deep snapshot written (None: none is stored)."""


class _DeepEncode:
    """A deep snapshot on its way through its loop turns: levels taken, sides encoded one a turn."""

    __slots__ = ("asks", "bids", "encoded_bids", "flags", "key", "meta", "replica")

    def __init__(
        self,
        key: ReplicaId,
        replica: Publishable,
        meta: SnapshotMeta,
        levels: tuple[list[bytes], list[bytes], int],
    ) -> None:
        self.key, self.replica, self.meta = key, replica, meta
        self.bids, self.asks, self.flags = levels
        self.encoded_bids: EncodedSide | None = None


class Publisher:
    """Encodes and writes the snapshots of every replica on this node."""

    @classmethod
    def from_settings(
        cls, writer: BookWriter, *, telemetry: IngestTelemetry, settings: IngestSettings, node: int
    ) -> Publisher:
        """The publisher a node with ``settings`` runs (the node and the benchmarks build it here, so
        a new setting reaches both)."""
        return cls(
            writer,
            telemetry=telemetry,
            head_levels=settings.head_levels,
            deep_levels_per_s=settings.deep_levels_per_s,
            publish_interval_ms=settings.publish_interval_ms,
            keepalive_ms=settings.keepalive_ms,
            stale_after_ms=settings.stale_after_ms,
            resyncing_keepalive_ms=settings.resyncing_keepalive_ms,
            quiet_keepalive_ms=settings.quiet_keepalive_ms,
            node=node,
            lag_stale_ms=settings.lag_stale_ms,
            shed_lag_ms=settings.shed_lag_ms,
            shed_publish_ms=settings.shed_publish_ms,
        )

    def __init__(
        self,
        writer: BookWriter,
        *,
        telemetry: IngestTelemetry,
        publish_interval_ms: int,
        keepalive_ms: int,
        stale_after_ms: int,
        head_levels: int = 100,
        deep_levels_per_s: int = 2000,
        resyncing_keepalive_ms: int = 4000,
        quiet_keepalive_ms: int | None = None,
        node: int = 0,
        lag_stale_ms: int = 5000,
        shed_lag_ms: int = 1000,
        shed_publish_ms: int = 250,
    ) -> None:
        """``quiet_keepalive_ms`` defaults to ``keepalive_ms`` (every quiet book republished as often
        as the heartbeat); ``node`` is the node's tag, written into every snapshot."""
        self._telemetry = telemetry
        self._node = node
        self._quiet = max(keepalive_ms, quiet_keepalive_ms or keepalive_ms)
        self._writer = writer
        self._head = head_levels
        self._deep_rate = deep_levels_per_s
        self._interval = publish_interval_ms
        self._shed_interval = max(publish_interval_ms, shed_publish_ms)
        self.lag = LagWatch(stale_ms=lag_stale_ms, shed_ms=shed_lag_ms)
        """How far behind the venue this node's books run (the node feeds it every second)."""
        self._keepalive = keepalive_ms
        self.stale_after_ms = stale_after_ms
        """The node's rule of when a suspect silence turns a replica stale (replicas read it)."""
        self._resyncing_keepalive = max(keepalive_ms, resyncing_keepalive_ms)
        self._dirty: dict[ReplicaId, Publishable] = {}
        self._scheduled = False
        self._replicas: dict[ReplicaId, Publishable] = {}
        self._deep: dict[ReplicaId, _DeepState] = {}
        self._deep_waiting: dict[ReplicaId, Publishable] = {}
        # uvloop's call_at answers a plain Handle (no ``when()``) for a time already past, so the
        # time the drain is due is kept beside its handle.
        self._deep_timer: asyncio.Handle | None = None
        self._deep_timer_at = 0.0
        """Wakes ``_drain_deep`` when the next waiting deep snapshot falls due."""
        self._encoding: _DeepEncode | None = None
        """The deep snapshot between its loop turns, if one is."""
        self._shown: dict[ReplicaId, _Shown] = {}
        self._published: dict[ReplicaId, Published] = {}
        self._waiting: asyncio.Task[None] | None = None
        """Waits for the writer's ``heads_ready`` while marked replicas wait for it."""

    @property
    def head_levels(self) -> int:
        return self._head

    def track(self, replica: Publishable) -> None:
        self._replicas[(replica.book, replica.replica)] = replica
        self.mark(replica)

    def untrack(self, replica: Publishable) -> None:
        key = (replica.book, replica.replica)
        self._replicas.pop(key, None)
        self._dirty.pop(key, None)
        self._shown.pop(key, None)
        self._published.pop(key, None)
        self._deep.pop(key, None)
        self._deep_waiting.pop(key, None)
        self._drop_encoding(key)
        self._writer.remove(replica.book, replica.replica)

    def republish_all(self) -> None:
        """The store lost what this node wrote: publish every replica again, whole, deep snapshots too."""
        self._shown.clear()
        for state in self._deep.values():
            state.said = None
        for replica in self._replicas.values():
            self.mark(replica)

    def mark(self, replica: Publishable) -> None:
        """The replica changed: publish it at the end of this loop turn (or when its interval allows)."""
        self._dirty[(replica.book, replica.replica)] = replica
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._publish_dirty)

    def published(self, replica: Publishable) -> Published | None:
        """What was last written of ``replica`` (None: nothing yet)."""
        return self._published.get((replica.book, replica.replica))

    def _last_ms(self, replica: Publishable) -> int:
        last = self._published.get((replica.book, replica.replica))
        return 0 if last is None else last.at_ms

    def _publish_dirty(self) -> None:
        if not self._writer.heads_ready.is_set():
            if self._waiting is None:  # still scheduled: published once heads can be sent
                self._waiting = asyncio.get_running_loop().create_task(self._when_heads_ready())
            return
        self._scheduled = False
        now = now_ms()
        dirty, self._dirty = self._dirty, {}
        later: list[Publishable] = []
        interval = self._shed_interval if self.lag.shedding else self._interval
        for replica in dirty.values():
            if interval and now - self._last_ms(replica) < interval:
                later.append(replica)
            else:
                self.publish(replica, now)
        if later:
            delay = min(interval - (now - self._last_ms(r)) for r in later) / 1000
            for replica in later:
                self._dirty[(replica.book, replica.replica)] = replica
            self._scheduled = True
            asyncio.get_running_loop().call_later(max(delay, 0), self._publish_dirty)

    async def _when_heads_ready(self) -> None:
        await self._writer.heads_ready.wait()
        self._waiting = None
        self._publish_dirty()

    def publish(self, replica: Publishable, now: int) -> None:
        """Encode the replica's current state (head, and deep when due) and hand it to the writer."""
        engine = replica.engine
        status = replica.status(now)
        meta = _meta(replica, status, now, self._node)
        depth = replica.depth
        key = (replica.book, replica.replica)
        if status is BookStatus.RESYNCING or status is BookStatus.REFUSED:
            self._shown.pop(key, None)
            self._writer.put(replica.book, replica.replica, encode_snapshot(meta, (), ()))
        else:
            bids, asks = engine.book.window()
            self._publish_head(key, engine.book, meta, min(depth, self._head), bids, asks)
        last = self._published.get(key)
        if last is None:
            self._telemetry.published(replica, meta.ingest_time, 0)
            self._published[key] = Published(status, now)
        else:
            self._telemetry.published(replica, meta.ingest_time, last.at_ms)
            last.status, last.at_ms = status, now
        if depth > self._head:
            self._publish_deep(key, replica, meta, now)
        elif key in self._deep:
            del self._deep[key]  # the book no longer goes deeper than its head
            self._deep_waiting.pop(key, None)
            self._drop_encoding(key)
            self._writer.remove(replica.book, replica.replica, deep_only=True)

    def _publish_head(
        self,
        key: ReplicaId,
        book: OrderBook,
        meta: SnapshotMeta,
        cap: int,
        bids: SideWindow,
        asks: SideWindow,
    ) -> None:
        """Publish a servable replica's head: as a delta of what its readers hold, or whole."""
        counts = (min(cap, bids.trusted), min(cap, asks.trusted))
        flags = _flags(bids, asks, counts)
        shown = self._shown.get(key)
        journal = None
        if shown is not None and shown.book is book and shown.cap == cap and shown.status is meta.status:
            journal = book.take_journal()
        if shown is not None and journal is not None:
            bid_changes = book.bid_changes(journal[0], shown.bids, counts[0])
            ask_changes = book.ask_changes(journal[1], shown.asks, counts[1])
            delta = encode_delta(meta, shown.update_id, flags, cap, counts, bid_changes, ask_changes)
            if len(delta) < shown.base_bytes:
                base = None
                budget = shown.base_bytes if shown.base_bytes > BASE_BUDGET else BASE_BUDGET
                if shown.since_base + len(delta) > budget or shown.deltas >= MAX_DELTA_FIELDS:
                    base = _whole(book, meta, counts, flags)
                    shown.base_bytes, shown.since_base, shown.deltas = len(base), 0, 0
                else:
                    shown.since_base += len(delta)
                    shown.deltas += 1
                self._writer.put_delta(key[0], key[1], delta, base=base)
                shown.bids, shown.asks = counts
                shown.update_id = meta.update_id
                return
        whole = _whole(book, meta, counts, flags)
        self._writer.put(key[0], key[1], whole)
        book.open_journal(cap)
        self._shown[key] = _Shown(book, cap, meta, counts, len(whole))

    # -- deep snapshots ----------------------------------------------------------------------

    def _publish_deep(self, key: ReplicaId, replica: Publishable, meta: SnapshotMeta, now: int) -> None:
        """The head was just published as ``meta``: bring the deep snapshot along when it is due."""
        state = self._deep.get(key)
        if state is None:
            state = self._deep[key] = _DeepState()
        if state.said == (meta.update_id, meta.status):
            return  # nothing new: readers vouch for it through the head
        if meta.status is not BookStatus.SYNCED:
            # Never served while its replica is not synced: an empty one says so, at once and cheaply
            # (and a synced one still on its way through its turns must not land after it).
            self._deep_waiting.pop(key, None)
            self._drop_encoding(key)
            state.said, state.published_ms = (meta.update_id, meta.status), meta.publish_time
            self._writer.put(replica.book, replica.replica, encode_snapshot(meta, (), (), DEEP), deep=True)
            return
        self._deep_waiting[key] = replica
        self._arm_deep_timer(self._deep_due(state, replica) - now)

    def _deep_due(self, state: _DeepState, replica: Publishable) -> int:
        if state.said is None or state.said[1] is not BookStatus.SYNCED:
            return 0  # newly synced: as soon as the loop has a turn for it
        return state.published_ms + 1000 * replica.depth // self._deep_rate

    def _start_deep(self, key: ReplicaId, replica: Publishable, now: int) -> None:
        """Take the synced replica's deep levels now; encode them now or over the next turns."""
        meta = _meta(replica, BookStatus.SYNCED, now, self._node)
        state = self._deep[key]
        state.said, state.published_ms = (meta.update_id, meta.status), now
        book = replica.engine.book
        bids, asks = book.window()
        job = _DeepEncode(key, replica, meta, _levels(book, replica.depth, bids, asks))
        if len(job.bids) <= _ONE_TURN_LEVELS and len(job.asks) <= _ONE_TURN_LEVELS:
            self._finish_deep(job, encode_side(job.bids))
            return
        self._encoding = job
        asyncio.get_running_loop().call_soon(self._continue_deep)

    def _continue_deep(self) -> None:
        job = self._encoding
        if job is None:
            return  # dropped meanwhile (the replica stopped being synced, or went)
        if job.encoded_bids is None:
            job.encoded_bids = encode_side(job.bids)
            asyncio.get_running_loop().call_soon(self._continue_deep)
            return
        self._encoding = None
        self._finish_deep(job, job.encoded_bids)

    def _finish_deep(self, job: _DeepEncode, bids: EncodedSide) -> None:
        payload = assemble_snapshot(job.meta, bids, encode_side(job.asks), job.flags | DEEP)
        self._writer.put(job.replica.book, job.replica.replica, payload, deep=True)
        if self._deep_waiting:
            self._arm_deep_timer(0)  # the next turn looks again

    def _drop_encoding(self, key: ReplicaId) -> None:
        if self._encoding is not None and self._encoding.key == key:
            self._encoding = None
            if self._deep_waiting:
                self._arm_deep_timer(0)

    def _arm_deep_timer(self, delay_ms: int) -> None:
        loop = asyncio.get_running_loop()
        at = loop.time() + max(delay_ms, 0) / 1000
        if self._deep_timer is not None:
            if self._deep_timer_at <= at:
                return
            self._deep_timer.cancel()
        self._deep_timer, self._deep_timer_at = loop.call_at(at, self._drain_deep), at

    def _drain_deep(self) -> None:
        """Start the most overdue deep snapshot (at the replica's state now), and come back in a
        later loop turn for the next one: a 5000-level encode takes over a millisecond, and books
        that fell due together must not hold up every other book's events for all of them at once."""
        self._deep_timer = None
        if self._encoding is not None:
            return  # the one on its way re-arms the timer when it is written
        now = now_ms()
        chosen: tuple[int, ReplicaId] | None = None  # (due, key) of the most overdue
        soonest: int | None = None  # when the next one falls due, if none is due now
        for key, replica in list(self._deep_waiting.items()):
            state, last = self._deep.get(key), self._published.get(key)
            if state is None or last is None or last.status is not BookStatus.SYNCED:
                del self._deep_waiting[key]  # gone, or no longer synced (published empty meanwhile)
                continue
            due = self._deep_due(state, replica)
            if due <= now and (chosen is None or due < chosen[0]):
                chosen = (due, key)
            elif due > now and (soonest is None or due < soonest):
                soonest = due
        if chosen is not None:
            key = chosen[1]
            self._start_deep(key, self._deep_waiting.pop(key), now)
        elif soonest is not None:
            self._arm_deep_timer(soonest - now)

    async def run_keepalive(self) -> None:
        """Write the node's heartbeat every ``keepalive_ms`` and republish what it cannot vouch for.

        A synced replica is republished after ``quiet_keepalive_ms`` of quiet, so that the heartbeat
        never needs to vouch for a snapshot older than two of those; one whose last check failed
        as soon as its status has changed with time (its silence ran out: ``stale``); a replica
        that is not synced has nothing to vouch for (readers never serve it) and is republished
        only every ``resyncing_keepalive_ms``, so that thousands of books waiting for their
        snapshots do not cost thousands of store writes a second.
        """
        period = self._keepalive / 2000
        heartbeat_due = 0
        while True:
            await asyncio.sleep(period)
            now = now_ms()
            async for part in in_slices(list(self._replicas.values())):
                at = now_ms()
                for replica in part:
                    if self._replicas.get((replica.book, replica.replica)) is not replica:
                        continue  # stopped while the sweep gave the loop a turn
                    last = self._published.get((replica.book, replica.replica))
                    quiet_for = at - (0 if last is None else last.at_ms)
                    if replica.engine.synced:
                        due = quiet_for >= self._quiet or (
                            replica.watch.check_failed
                            and quiet_for >= self._keepalive
                            and (last is None or replica.status(at) is not last.status)
                        )
                    else:
                        due = quiet_for >= self._resyncing_keepalive
                    if due:
                        self.publish(replica, at)
            if now >= heartbeat_due:
                self._writer.heartbeat(now, now - 2 * self._quiet)
                heartbeat_due = now + self._keepalive


def _meta(replica: Publishable, status: BookStatus, now: int, node: int) -> SnapshotMeta:
    engine = replica.engine
    return SnapshotMeta(
        update_id=engine.update_id or 0,
        event_time=engine.event_time,
        ingest_time=engine.ingest_time,
        publish_time=now,
        replica=replica.replica,
        status=status,
        confirmed_time=replica.watch.confirmed_ms,
        node=node,
    )


def _flags(bids: SideWindow, asks: SideWindow, counts: tuple[int, int]) -> int:
    """The flags of sides cut at ``counts`` levels: where the venue may hold more past them."""
    flags = 0
    if bids.bounded or bids.trusted > counts[0]:
        flags |= MORE_BIDS
    if asks.bounded or asks.trusted > counts[1]:
        flags |= MORE_ASKS
    return flags


def _whole(book: OrderBook, meta: SnapshotMeta, counts: tuple[int, int], flags: int) -> bytes:
    """The head of ``book``, ``counts`` levels a side, as one snapshot."""
    return encode_snapshot(meta, book.first_bids(counts[0]), book.first_asks(counts[1]), flags)


def _levels(
    book: OrderBook, depth: int, bids: SideWindow, asks: SideWindow
) -> tuple[list[bytes], list[bytes], int]:
    """``book``'s top ``depth`` trusted levels a side, and the flags of each side where the venue
    may hold levels past the last one it carries."""
    top_bids = book.first_bids(min(depth, bids.trusted))
    top_asks = book.first_asks(min(depth, asks.trusted))
    flags = 0
    if bids.bounded or bids.trusted > len(top_bids):
        flags |= MORE_BIDS
    if asks.bounded or asks.trusted > len(top_asks):
        flags |= MORE_ASKS
    return top_bids, top_asks, flags
