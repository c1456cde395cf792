"""The write side: batch every snapshot of one event-loop turn into one pipeline.

Theory of operation
-------------------
An ingest node may apply thousands of updates per second across hundreds of books. Writing each
snapshot with its own round trip would cap it at a few thousand writes per second and add queueing
latency. Instead :meth:`BookWriter.put` only records the latest snapshot per ``(book, replica,
deep)`` and makes sure a flush is scheduled; the flush sends everything recorded since the last one as one
pipeline (``HSET`` + ``PUBLISH`` per snapshot). Only one flush is in flight at a time, so writes of
one replica are never reordered; while a flush waits for the store, new snapshots of the same
replica replace each other (conflation), so memory stays bounded by the number of replicas.

The published message is ``<replica as 2 bytes><snapshot>``: a subscribed reader updates its cache
from the message itself and never needs a round trip for a book it already follows. A removed
snapshot (a replica stopped or moved away, a deep snapshot no longer kept) is deleted and announced
with a *tombstone*: an empty ``resyncing`` snapshot of the same kind, which a reader keeps in its
place and never serves.

A writer can be *fenced*: it keeps recording (the newest snapshot per replica, as always) and
sends nothing until it is unfenced. An ingest node fences its writer when it may have been
declared dead, so that when it reaches the store again it writes nothing of replicas that were
taken from it meanwhile (it removes those first, and the removals are what it sends).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import redis.asyncio as redis
from redis.exceptions import RedisError

from book_store.codec import encode_message, tombstone
from book_store.keys import BookKey, snapshot_field

log = logging.getLogger(__name__)

# KEYS: the snapshots hash, the change channel. ARGV: field, change message. Stores the message's
# snapshot (past its 2-byte replica) and publishes the message: a deep snapshot of 5000 levels a
# side crosses the wire once instead of twice (HSET + PUBLISH).
_STORE_AND_PUBLISH = """
redis.call('HSET', KEYS[1], ARGV[1], string.sub(ARGV[2], 3))
redis.call('PUBLISH', KEYS[2], ARGV[2])
return 0
"""


class BookWriter:
    """Writes snapshots of many replicas, one pipeline per event-loop turn."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        on_flush: Callable[[int, float], None] | None = None,
    ) -> None:
        """``client`` is owned by the caller. ``on_flush(count, seconds)`` observes each batch."""
        self._client = client
        self._pending: dict[tuple[BookKey, int, bool], bytes | None] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._on_flush = on_flush
        self._store_and_publish = client.register_script(_STORE_AND_PUBLISH)
        self._fenced = False

    @property
    def fenced(self) -> bool:
        return self._fenced

    def fence(self) -> None:
        """Send nothing from now on (a flush already in flight completes) until :meth:`unfence`."""
        self._fenced = True

    def unfence(self) -> None:
        """Send what was recorded meanwhile (the newest of each replica) and carry on."""
        self._fenced = False
        if self._pending:
            self._wake()

    def put(self, book: BookKey, replica: int, snapshot: bytes, *, deep: bool = False) -> None:
        """Record the newest head (or deep) snapshot of a replica; it is written at the end of this
        loop turn."""
        self._pending[(book, replica, deep)] = snapshot
        self._wake()

    def remove(self, book: BookKey, replica: int, *, deep_only: bool = False) -> None:
        """Delete a replica's snapshots (the replica was stopped or moved), or only its deep one
        (the book is no longer published deeper than its head)."""
        if not deep_only:
            self._pending[(book, replica, False)] = None
        self._pending[(book, replica, True)] = None
        self._wake()

    async def drain(self) -> None:
        """Wait until everything recorded so far has been written."""
        while self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)

    async def close(self) -> None:
        """Write what is pending, then stop."""
        await self.drain()

    def _wake(self) -> None:
        if self._fenced:
            return
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_loop())

    async def _flush_loop(self) -> None:
        # Yield once so that every put() of the current loop turn joins this batch.
        await asyncio.sleep(0)
        while self._pending and not self._fenced:
            batch, self._pending = self._pending, {}
            started = time.perf_counter()  # loop.time() has 1 ms resolution under uvloop
            pipe = self._client.pipeline(transaction=False)
            now_ms = time.time_ns() // 1_000_000
            for (book, replica, deep), snapshot in batch.items():
                field = snapshot_field(replica, deep=deep)
                if snapshot is None:
                    pipe.hdel(book.snapshots, field)
                    pipe.publish(
                        book.channel, encode_message(replica, tombstone(replica, deep=deep, now_ms=now_ms))
                    )
                elif deep:
                    message = encode_message(replica, snapshot)
                    await self._store_and_publish(
                        keys=[book.snapshots, book.channel], args=[field, message], client=pipe
                    )
                else:
                    pipe.hset(book.snapshots, field, snapshot)
                    pipe.publish(book.channel, encode_message(replica, snapshot))
            try:
                await pipe.execute()
            except (RedisError, OSError) as exc:
                # Keep the newest version of each failed write unless a newer one arrived.
                log.warning("book store write failed (%s); retrying %d snapshots", exc, len(batch))
                for key, value in batch.items():
                    self._pending.setdefault(key, value)
                await asyncio.sleep(0.2)
                continue
            if self._on_flush is not None:
                self._on_flush(len(batch), time.perf_counter() - started)
