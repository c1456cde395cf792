"""The write side: batch every snapshot of one event-loop turn into one pipeline.

Theory of operation
-------------------
An ingest node may apply thousands of updates per second across hundreds of books. Writing each
snapshot with its own round trip would cap it at a few thousand writes per second and add queueing
latency. Instead :meth:`BookWriter.put` only records the latest snapshot per ``(book, replica,
deep)`` and makes sure a flush is scheduled; the flush sends everything recorded since the last one as one
pipeline (``HSET`` + ``PUBLISH`` per snapshot). Heads and deep snapshots have a pipeline each, on
connections of their own, so that the 20- and 100-level heads every reader and stream follows never
wait behind a deep snapshot of 5000 levels a side on its way to the store. Of each kind only one
flush is in flight at a time, so writes of one replica are never reordered; while a flush waits for
the store, new snapshots of the same replica replace each other (conflation), so memory stays bounded
by the number of replicas. A publisher that asks (:meth:`BookWriter.when_sent`) is told when the
heads in flight have been answered, so that it encodes the books that changed meanwhile once, when
they can be sent, instead of once per loop turn only to be replaced before they leave.

The published message is ``<replica as 2 bytes><snapshot>``: a subscribed reader updates its cache
from the message itself and never needs a round trip for a book it already follows. A removed
snapshot (a replica stopped or moved away, a deep snapshot no longer kept) is deleted and announced
with a *tombstone*: an empty ``resyncing`` snapshot of the same kind, which a reader keeps in its
place and never serves.

A writer can be *fenced*: it keeps recording (the newest snapshot per replica, as always) and
sends nothing until it is unfenced. An ingest node fences its writer when it may have been
declared dead, so that when it reaches the store again it writes nothing of replicas that were
taken from it meanwhile (it removes those first, and the removals are what it sends).

On a cluster the change messages are *sharded* (``SPUBLISH``): each goes only through the shard
that owns its book's slot, where a plain ``PUBLISH`` would be copied to every node of the cluster.
``RedisCluster``'s pipeline splits the batch per shard, and the deep snapshot's script goes as
``EVAL`` (a cluster pipeline does not load scripts first).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable

from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.exceptions import NoScriptError, RedisError

from book_store.codec import encode_message, tombstone
from book_store.connect import StoreClient
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
# Called by its digest; the store learns the script at the first deep flush and again after it
# forgot it (a restart). redis-py's Script would ask the store whether it knows the script before
# every pipeline: one more round trip per deep flush.
_STORE_AND_PUBLISH_SHA = hashlib.sha1(_STORE_AND_PUBLISH.encode(), usedforsecurity=False).hexdigest()
_STORE_AND_SPUBLISH = _STORE_AND_PUBLISH.replace("'PUBLISH'", "'SPUBLISH'")


class _Queue:
    """The snapshots of one kind (heads, or deep snapshots) waiting for their pipeline."""

    __slots__ = ("after_send", "deep", "flusher", "pending", "sending")

    def __init__(self, *, deep: bool) -> None:
        self.deep = deep
        self.pending: dict[tuple[BookKey, int], bytes | None] = {}
        self.flusher: asyncio.Task[None] | None = None
        self.sending = False
        """A pipeline of this queue is waiting for the store's answer."""
        self.after_send: list[Callable[[], None]] = []


class BookWriter:
    """Writes snapshots of many replicas, one pipeline of heads (and one of deep snapshots) per
    event-loop turn."""

    def __init__(
        self,
        client: StoreClient,
        *,
        on_flush: Callable[[int, float], None] | None = None,
    ) -> None:
        """``client`` is owned by the caller. ``on_flush(count, seconds)`` observes each batch."""
        self._client = client
        self._heads = _Queue(deep=False)
        self._deeps = _Queue(deep=True)
        self._on_flush = on_flush
        self._sharded = isinstance(client, RedisCluster)
        self._script_known = self._sharded  # a cluster is sent the script itself (EVAL)
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
        for queue in (self._heads, self._deeps):
            if queue.pending:
                self._wake(queue)

    def put(self, book: BookKey, replica: int, snapshot: bytes, *, deep: bool = False) -> None:
        """Record the newest head (or deep) snapshot of a replica; it is written at the end of this
        loop turn."""
        queue = self._deeps if deep else self._heads
        queue.pending[(book, replica)] = snapshot
        self._wake(queue)

    def remove(self, book: BookKey, replica: int, *, deep_only: bool = False) -> None:
        """Delete a replica's snapshots (the replica was stopped or moved), or only its deep one
        (the book is no longer published deeper than its head)."""
        if not deep_only:
            self._heads.pending[(book, replica)] = None
            self._wake(self._heads)
        self._deeps.pending[(book, replica)] = None
        self._wake(self._deeps)

    def when_sent(self, callback: Callable[[], None]) -> bool:
        """While a pipeline of heads waits for the store, call ``callback`` once it is answered and
        return True (a head recorded now would wait for it anyway); False when none is waiting."""
        if not self._heads.sending:
            return False
        self._heads.after_send.append(callback)
        return True

    async def drain(self) -> None:
        """Wait until everything recorded so far has been written."""
        for queue in (self._heads, self._deeps):
            while queue.flusher is not None and not queue.flusher.done():
                await asyncio.shield(queue.flusher)

    async def close(self) -> None:
        """Write what is pending, then stop."""
        await self.drain()

    def _wake(self, queue: _Queue) -> None:
        if self._fenced:
            return
        if queue.flusher is None or queue.flusher.done():
            queue.flusher = asyncio.get_running_loop().create_task(self._flush_loop(queue))

    async def _flush_loop(self, queue: _Queue) -> None:
        # Yield once so that every put() of the current loop turn joins this batch.
        await asyncio.sleep(0)
        while queue.pending and not self._fenced:
            batch, queue.pending = queue.pending, {}
            started = time.perf_counter()  # loop.time() has 1 ms resolution under uvloop
            queue.sending = True
            failure: Exception | None = None
            try:
                if queue.deep and not self._script_known:
                    await self._client.script_load(_STORE_AND_PUBLISH)
                    self._script_known = True
                await self._pipeline(batch, deep=queue.deep).execute()
            except (RedisError, OSError) as exc:
                failure = exc
            finally:  # cancelled too: whoever waits for the answer must not wait forever
                queue.sending = False
                callbacks, queue.after_send = queue.after_send, []
                for callback in callbacks:
                    callback()
            if failure is not None:
                # Keep the newest version of each failed write unless a newer one arrived.
                for key, value in batch.items():
                    queue.pending.setdefault(key, value)
                if isinstance(failure, NoScriptError):
                    self._script_known = False  # the store restarted: teach it again, at once
                    continue
                log.warning("book store write failed (%s); retrying %d snapshots", failure, len(batch))
                await asyncio.sleep(0.2)
                continue
            if self._on_flush is not None:
                self._on_flush(len(batch), time.perf_counter() - started)

    def _pipeline(
        self, batch: dict[tuple[BookKey, int], bytes | None], *, deep: bool
    ) -> Pipeline | ClusterPipeline:
        pipe = self._client.pipeline(transaction=False)
        publish = pipe.spublish if self._sharded else pipe.publish
        now_ms = time.time_ns() // 1_000_000
        for (book, replica), snapshot in batch.items():
            field = snapshot_field(replica, deep=deep)
            if snapshot is None:
                pipe.hdel(book.snapshots, field)
                publish(book.channel, encode_message(replica, tombstone(replica, deep=deep, now_ms=now_ms)))
            elif deep and self._sharded:
                message = encode_message(replica, snapshot)
                pipe.eval(_STORE_AND_SPUBLISH, 2, book.snapshots, book.channel, field, message)
            elif deep:
                message = encode_message(replica, snapshot)
                pipe.evalsha(_STORE_AND_PUBLISH_SHA, 2, book.snapshots, book.channel, field, message)
            else:
                pipe.hset(book.snapshots, field, snapshot)
                publish(book.channel, encode_message(replica, snapshot))
        return pipe
