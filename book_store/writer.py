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

The node's heartbeat (:mod:`book_store.liveness`) goes with the heads, as the last command of
their pipeline (on a cluster, once every primary has answered): it vouches for the node's
snapshots, so it must never reach the store before a head recorded earlier, nor at all while the
writer is fenced. Storing it also tells the node whether the store still holds what it wrote: a
heartbeat field that was not there before (the store restarted empty, or was flushed) calls
``on_lost``, and the node republishes everything it keeps.

A writer can be *fenced*: it keeps recording (the newest snapshot per replica, as always) and
sends nothing until it is unfenced. An ingest node fences its writer when it may have been
declared dead, so that when it reaches the store again it writes nothing of replicas that were
taken from it meanwhile (it removes those first, and the removals are what it sends).

On a cluster the change messages are *sharded* (``SPUBLISH``): each goes only through the shard
that owns its book's slot, where a plain ``PUBLISH`` would be copied to every node of the cluster.
The batch is split by ``RedisCluster``'s slot map into one plain pipeline per primary, sent at
once; a failed batch (a moved slot, a failover) is retried as any failed batch is, after the slot
map has been read again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisClusterException, RedisError

from book_store.codec import encode_message, tombstone
from book_store.connect import StoreClient
from book_store.liveness import NodeHeartbeat, encode_heartbeat
from book_store.schema import NODES_ALIVE, BookKey, ReplicaId, snapshot_field
from ladder_process import clock

log = logging.getLogger(__name__)

_Batch = dict[ReplicaId, bytes | None]

# KEYS: the snapshots hash, the change channel. ARGV: field, change message. Stores the message's
# snapshot (past its 2-byte replica) and publishes the message: a deep snapshot of 5000 levels a
# side crosses the wire once instead of twice (HSET + PUBLISH).
_STORE_AND_PUBLISH = """
redis.call('HSET', KEYS[1], ARGV[1], string.sub(ARGV[2], 3))
redis.call('PUBLISH', KEYS[2], ARGV[2])
return 0
"""
_STORE_AND_SPUBLISH = _STORE_AND_PUBLISH.replace("'PUBLISH'", "'SPUBLISH'")


class _Queue:
    """The snapshots of one kind (heads, or deep snapshots) waiting for their pipeline."""

    __slots__ = ("after_send", "deep", "flusher", "pending", "sending")

    def __init__(self, *, deep: bool) -> None:
        self.deep = deep
        self.pending: _Batch = {}
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
        self._heads = _Queue(deep=False)
        self._deeps = _Queue(deep=True)
        self._on_flush = on_flush
        self._store_and_publish = client.register_script(_STORE_AND_PUBLISH)
        self._store_and_spublish = client.register_script(_STORE_AND_SPUBLISH)
        self._shards: dict[str, aioredis.Redis] = {}  # on a cluster: a plain client per primary
        self._map_stale = False
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
            if queue.pending or (self._heartbeat is not None and not queue.deep):
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

    def heartbeat(self, time_ms: int, since_ms: int) -> None:
        """Record the node's heartbeat: at ``time_ms`` its snapshots published since ``since_ms``
        still stand (written after every head recorded before it)."""
        self._heartbeat = encode_heartbeat(self._node_id, NodeHeartbeat(self._node, time_ms, since_ms))
        self._wake(self._heads)

    async def forget_node(self) -> None:
        """Remove the node's heartbeat (it is leaving and has removed its snapshots). Best effort: a
        node leaving while the store is unreachable leaves its heartbeat to age out."""
        try:
            await self._client.hdel(NODES_ALIVE, self._node_id)
        except (RedisError, OSError) as exc:
            log.warning("heartbeat not removed (%s): it ages out", type(exc).__name__)

    async def drain(self) -> None:
        """Wait until everything recorded so far has been written."""
        for queue in (self._heads, self._deeps):
            while queue.flusher is not None and not queue.flusher.done():
                await asyncio.shield(queue.flusher)

    async def close(self) -> None:
        """Write what is pending, then stop."""
        await self.drain()
        for client in self._shards.values():
            await client.aclose()
        self._shards.clear()

    def _wake(self, queue: _Queue) -> None:
        if self._fenced:
            return
        if queue.flusher is None or queue.flusher.done():
            queue.flusher = asyncio.get_running_loop().create_task(self._flush_loop(queue))

    async def _flush_loop(self, queue: _Queue) -> None:
        # Yield once so that every put() of the current loop turn joins this batch.
        await asyncio.sleep(0)
        while (queue.pending or (self._heartbeat is not None and not queue.deep)) and not self._fenced:
            batch, queue.pending = queue.pending, {}
            heartbeat = None
            if not queue.deep:
                heartbeat, self._heartbeat = self._heartbeat, None
            started = time.perf_counter()  # loop.time() has 1 ms resolution under uvloop
            now_ms = clock.now_ms()
            queue.sending = True
            failure: Exception | None = None
            lost = False
            try:
                lost = await self._send(batch, heartbeat, now_ms, deep=queue.deep)
            except (RedisError, OSError) as exc:
                failure = exc
            finally:  # cancelled too: whoever waits for the answer must not wait forever
                queue.sending = False
                callbacks, queue.after_send = queue.after_send, []
                for callback in callbacks:
                    callback()
            if failure is not None:
                # Keep the newest version of each failed write unless a newer one arrived.
                log.warning("book store write failed (%s); retrying %d snapshots", failure, len(batch))
                for key, value in batch.items():
                    queue.pending.setdefault(key, value)
                if self._heartbeat is None:
                    self._heartbeat = heartbeat
                self._map_stale = True  # on a cluster: a moved slot or a failover, perhaps
                await asyncio.sleep(0.2)
                continue
            if lost and self._on_lost is not None:
                self._on_lost()
            if batch and self._on_flush is not None:
                self._on_flush(len(batch), time.perf_counter() - started)

    async def _send(self, batch: _Batch, heartbeat: bytes | None, now_ms: int, *, deep: bool) -> bool:
        """Write ``batch`` and then ``heartbeat``; True if the store did not hold the node's
        heartbeat before (it lost, or never had, what the node wrote)."""
        client = self._client
        if isinstance(client, RedisCluster):
            if batch:
                await self._send_per_shard(client, batch, now_ms, deep=deep)
            if heartbeat is None:
                return False
            created = await client.hset(NODES_ALIVE, self._node_id, heartbeat)
            await client.publish(NODES_ALIVE, heartbeat)  # to every node: readers follow it on any
            return bool(created)
        pipe = client.pipeline(transaction=False)
        await self._queue(pipe, batch, now_ms, sharded=False, deep=deep)
        if heartbeat is not None:
            pipe.hset(NODES_ALIVE, self._node_id, heartbeat)
            pipe.publish(NODES_ALIVE, heartbeat)
        results = await pipe.execute()
        return heartbeat is not None and results[-2] == 1

    async def _queue(self, pipe: Pipeline, batch: _Batch, now_ms: int, *, sharded: bool, deep: bool) -> None:
        """Add the writes of ``batch`` to ``pipe``: per snapshot HSET + (S)PUBLISH, or the script."""
        publish = pipe.spublish if sharded else pipe.publish
        script = self._store_and_spublish if sharded else self._store_and_publish
        for (book, replica), snapshot in batch.items():
            field = snapshot_field(replica, deep=deep)
            if snapshot is None:
                pipe.hdel(book.snapshots, field)
                removed = tombstone(replica, deep=deep, now_ms=now_ms, node=self._node)
                publish(book.channel, encode_message(replica, removed))
            elif deep:
                message = encode_message(replica, snapshot)
                await script(keys=[book.snapshots, book.channel], args=[field, message], client=pipe)
            else:
                pipe.hset(book.snapshots, field, snapshot)
                publish(book.channel, encode_message(replica, snapshot))

    async def _send_per_shard(self, cluster: RedisCluster, batch: _Batch, now_ms: int, *, deep: bool) -> None:
        """One plain pipeline per primary, all at once (RedisCluster's own pipeline costs the
        writer twice the CPU per snapshot: ``ladder bench cluster_clients``)."""
        if self._map_stale:
            await cluster.nodes_manager.initialize()
            self._map_stale = False
            primaries = {node.name for node in cluster.get_primaries()}
            for name in [name for name in self._shards if name not in primaries]:
                await self._shards.pop(name).aclose()
        else:
            await cluster.initialize()  # at once after the first time
        by_primary: dict[str, tuple[ClusterNode, _Batch]] = {}
        for key, snapshot in batch.items():
            node = cluster.get_node_from_key(key[0].snapshots)
            if node is None:  # pragma: no cover - a covered cluster always names one
                raise RedisClusterException(f"no primary serves the slot of {key[0].snapshots}")
            by_primary.setdefault(node.name, (node, {}))[1][key] = snapshot
        pipes = []
        for node, items in by_primary.values():
            pipe = self._shard(node).pipeline(transaction=False)
            await self._queue(pipe, items, now_ms, sharded=True, deep=deep)
            pipes.append(pipe)
        outcomes = await asyncio.gather(*(pipe.execute() for pipe in pipes), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    def _shard(self, node: ClusterNode) -> aioredis.Redis:
        """A plain client of one primary, with the cluster client's connection settings."""
        client = self._shards.get(node.name)
        if client is None:
            pool = aioredis.ConnectionPool(connection_class=node.connection_class, **node.connection_kwargs)
            client = self._shards[node.name] = aioredis.Redis.from_pool(pool)
        return client
