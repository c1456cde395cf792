"""Turns book replicas into stored snapshots: trimmed, pre-encoded, once per loop turn.

Theory of operation
-------------------
A replica that changed is only *marked*; at the end of the event-loop turn every marked replica is
encoded once (its top ``depth_levels`` per side are already encoded level by level in the book, so
this is a slice and a join) and handed to the batching :class:`~book_store.writer.BookWriter`. A
burst of updates to one book inside one turn therefore costs one encode and one write. With
``publish_interval_ms`` > 0 a replica is published at most that often (the latest state wins).

A keepalive loop republishes replicas that have been quiet for ``keepalive_ms``, so that readers can
tell a quiet book from a dead node by ``publish_time``, and marks a synced replica ``stale`` when its
venue stream has sent nothing for ``stale_after_ms`` while the socket stays open. Stale means "not
trusted now", not "broken": the next event makes the replica ``synced`` again (a genuinely quiet
book is stale while it is quiet, and readers are told so instead of being served a book nobody can
vouch for).
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from book_store.codec import BookStatus, SnapshotMeta, encode_snapshot
from book_store.keys import BookKey
from book_store.writer import BookWriter
from ingest_nodes import telemetry
from ingest_nodes.engine import BookEngine
from ingest_nodes.rest import now_ms
from ingest_nodes.stats import ReplicaStats


class Publishable(Protocol):
    """A replica as the publisher sees it."""

    book: BookKey
    replica: int
    last_event_ms: int
    last_publish_ms: int
    last_status: BookStatus | None
    stats: ReplicaStats

    @property
    def engine(self) -> BookEngine: ...


class Publisher:
    """Encodes and writes the snapshots of every replica on this node."""

    def __init__(
        self,
        writer: BookWriter,
        *,
        depth_levels: int,
        publish_interval_ms: int,
        keepalive_ms: int,
        stale_after_ms: int,
        resyncing_keepalive_ms: int = 4000,
    ) -> None:
        self._writer = writer
        self._depth = depth_levels
        self._interval = publish_interval_ms
        self._keepalive = keepalive_ms
        self._stale_after = stale_after_ms
        self._resyncing_keepalive = max(keepalive_ms, resyncing_keepalive_ms)
        self._dirty: dict[tuple[BookKey, int], Publishable] = {}
        self._scheduled = False
        self._replicas: dict[tuple[BookKey, int], Publishable] = {}

    def track(self, replica: Publishable) -> None:
        self._replicas[(replica.book, replica.replica)] = replica
        self.mark(replica)

    def untrack(self, replica: Publishable) -> None:
        key = (replica.book, replica.replica)
        self._replicas.pop(key, None)
        self._dirty.pop(key, None)
        self._writer.remove(replica.book, replica.replica)

    def mark(self, replica: Publishable) -> None:
        """The replica changed: publish it at the end of this loop turn (or when its interval allows)."""
        self._dirty[(replica.book, replica.replica)] = replica
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._publish_dirty)

    def _publish_dirty(self) -> None:
        self._scheduled = False
        now = now_ms()
        dirty, self._dirty = self._dirty, {}
        later: list[Publishable] = []
        for replica in dirty.values():
            if self._interval and now - replica.last_publish_ms < self._interval:
                later.append(replica)
            else:
                self.publish(replica, now)
        if later:
            delay = min(self._interval - (now - r.last_publish_ms) for r in later) / 1000
            for replica in later:
                self._dirty[(replica.book, replica.replica)] = replica
            self._scheduled = True
            asyncio.get_running_loop().call_later(max(delay, 0), self._publish_dirty)

    def status(self, replica: Publishable, now: int) -> BookStatus:
        if not replica.engine.synced:
            return BookStatus.RESYNCING
        if now - replica.last_event_ms > self._stale_after:
            return BookStatus.STALE
        return BookStatus.SYNCED

    def publish(self, replica: Publishable, now: int) -> None:
        """Encode the replica's current state and hand it to the writer."""
        engine = replica.engine
        status = self.status(replica, now)
        if status is BookStatus.STALE and replica.last_status is not BookStatus.STALE:
            replica.stats.stale_episodes += 1
        replica.last_status = status
        meta = SnapshotMeta(
            update_id=engine.update_id or 0,
            event_time=engine.event_time,
            ingest_time=engine.ingest_time,
            publish_time=now,
            replica=replica.replica,
            status=status,
        )
        if status is BookStatus.RESYNCING:
            payload = encode_snapshot(meta, (), ())
        else:
            payload = encode_snapshot(
                meta, engine.book.top_bids(self._depth), engine.book.top_asks(self._depth)
            )
        telemetry.current().published(replica, meta.ingest_time)
        replica.last_publish_ms = now
        self._writer.put(replica.book, replica.replica, payload)

    async def run_keepalive(self) -> None:
        """Republish quiet replicas so their ``publish_time`` keeps vouching for them.

        A replica that is not synced has nothing to vouch for (readers never serve it): it is
        republished only every ``resyncing_keepalive_ms``, so that thousands of books waiting for
        their snapshots do not cost thousands of store writes a second.
        """
        period = self._keepalive / 2000
        while True:
            await asyncio.sleep(period)
            now = now_ms()
            for replica in list(self._replicas.values()):
                due = self._keepalive if replica.engine.synced else self._resyncing_keepalive
                if now - replica.last_publish_ms >= due:
                    self.publish(replica, now)
