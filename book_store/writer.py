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

The node's heartbeat (:mod:`book_store.liveness`) goes through the writer too, as the last
command of a batch: it vouches for the node's snapshots, so it must never reach the store before
a snapshot recorded earlier, nor at all while the writer is fenced. Storing it also tells the
node whether the store still holds what it wrote: a heartbeat field that was not there before
(the store restarted empty, or was flushed) calls ``on_lost``, and the node republishes
everything it keeps.

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
from book_store.keys import NODES_ALIVE, BookKey, snapshot_field
from book_store.liveness import NodeHeartbeat, encode_heartbeat

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
        node_id: str = "",
        node: int = 0,
        on_flush: Callable[[int, float], None] | None = None,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        """``client`` is owned by the caller. ``node_id`` and ``node`` (its tag) name the node
        in its heartbeats and tombstones. ``on_flush(count, seconds)`` observes each batch;
        ``on_lost()`` is called when the store no longer held the node's heartbeat."""
        self._client = client
        self._node_id = node_id
        self._node = node
        self._on_lost = on_lost
        self._heartbeat: bytes | None = None
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
        if self._pending or self._heartbeat is not None:
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

    def heartbeat(self, time_ms: int, since_ms: int) -> None:
        """Record the node's heartbeat: at ``time_ms`` its snapshots published since ``since_ms``
        still stand (written after everything recorded before it, in this loop turn)."""
        self._heartbeat = encode_heartbeat(self._node_id, NodeHeartbeat(self._node, time_ms, since_ms))
        self._wake()

    async def forget_node(self) -> None:
        """Remove the node's heartbeat (it is leaving and has removed its snapshots)."""
        await self._client.hdel(NODES_ALIVE, self._node_id)

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
        while (self._pending or self._heartbeat is not None) and not self._fenced:
            batch, self._pending = self._pending, {}
            heartbeat, self._heartbeat = self._heartbeat, None
            started = time.perf_counter()  # loop.time() has 1 ms resolution under uvloop
            pipe = self._client.pipeline(transaction=False)
            now_ms = time.time_ns() // 1_000_000
            for (book, replica, deep), snapshot in batch.items():
                field = snapshot_field(replica, deep=deep)
                if snapshot is None:
                    pipe.hdel(book.snapshots, field)
                    removed = tombstone(replica, deep=deep, now_ms=now_ms, node=self._node)
                    pipe.publish(book.channel, encode_message(replica, removed))
                elif deep:
                    message = encode_message(replica, snapshot)
                    await self._store_and_publish(
                        keys=[book.snapshots, book.channel], args=[field, message], client=pipe
                    )
                else:
                    pipe.hset(book.snapshots, field, snapshot)
                    pipe.publish(book.channel, encode_message(replica, snapshot))
            if heartbeat is not None:
                pipe.hset(NODES_ALIVE, self._node_id, heartbeat)
                pipe.publish(NODES_ALIVE, heartbeat)
            try:
                results = await pipe.execute()
            except (RedisError, OSError) as exc:
                # Keep the newest version of each failed write unless a newer one arrived.
                log.warning("book store write failed (%s); retrying %d snapshots", exc, len(batch))
                for key, value in batch.items():
                    self._pending.setdefault(key, value)
                if self._heartbeat is None:
                    self._heartbeat = heartbeat
                await asyncio.sleep(0.2)
                continue
            if heartbeat is not None and results[-2] == 1 and self._on_lost is not None:
                self._on_lost()  # the field was new: the store lost (or never had) what we wrote
            if self._on_flush is not None:
                self._on_flush(len(batch), time.perf_counter() - started)
