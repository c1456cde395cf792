"""Which replicas are synced right now, as the scheduler needs to know for make-before-break.

The scheduler removes an old replica only once its replacement is synced, so this answer must not
be optimistic: a replica counts only if its latest snapshot says ``synced`` *and* it was heard
from within ``max_silence_ms``: published, or vouched for by its node's heartbeat, read in the
same round trip (see book_store.liveness; silence means trouble).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from book_store.codec import BookStatus
from book_store.connect import StoreClient
from book_store.liveness import Heartbeats
from book_store.reader import BookReader, heard
from book_store.schema import BookKey, ReplicaId
from ladder_process.clock import Clock, now_ms


class ReplicaStatusSource(Protocol):
    async def synced_replicas(self, replicas: Collection[ReplicaId]) -> set[ReplicaId]:
        """The subset of ``replicas`` whose snapshots are synced and fresh."""


class BookStoreReplicaStatus:
    """ReplicaStatusSource reading the snapshots in the book store (one pipelined round trip)."""

    def __init__(self, client: StoreClient, *, max_silence_ms: int = 3000, clock: Clock = now_ms) -> None:
        self._reader = BookReader(client)
        self._max_silence_ms = max_silence_ms
        self._clock = clock

    async def synced_replicas(self, replicas: Collection[ReplicaId]) -> set[ReplicaId]:
        wanted = set(replicas)
        books = sorted({book for book, _ in wanted})
        heartbeats = Heartbeats()
        stored = await self._reader.many([BookKey(b.exchange, b.market) for b in books], heartbeats)
        now = self._clock()
        synced: set[ReplicaId] = set()
        for book in books:
            for replica, snapshot in stored[BookKey(book.exchange, book.market)].items():
                fresh = now - heard(snapshot, heartbeats) <= self._max_silence_ms
                if snapshot.status is BookStatus.SYNCED and fresh and (book, replica) in wanted:
                    synced.add((book, replica))
        return synced
