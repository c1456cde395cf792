"""The write side: batch every snapshot of one event-loop turn into one pipeline.

Theory of operation
-------------------
An ingest node may apply thousands of updates per second across hundreds of books. Writing each
snapshot with its own round trip would cap it at a few thousand writes per second and add queueing
latency. Instead :meth:`BookWriter.put` (a whole snapshot) and :meth:`BookWriter.put_delta` (a
head's change, :mod:`book_store.delta`) only record what to write and make sure a flush is
scheduled; the flush sends everything recorded since the last one as one pipeline.

What a head costs the store is what changed. A whole snapshot is stored in its replica's field of
the book's hash (``HSET``) and published as it is; a delta is published, and stored beside the
replica's snapshot as the next of its *delta fields* (``"<replica>:<n>"``, n counting from 1 since
the snapshot was stored), so that the hash always holds the replica's latest state: its last whole
snapshot (the *base*) and every delta since, which a reader reads in one ``HGETALL`` and applies
(:mod:`book_store.reader`). Every so often the publisher hands a fresh base along with a delta: it
is stored in the replica's field and the delta fields before it are deleted, all in the same
pipeline, so that the hash stays small. Heads are never conflated: every delta recorded is sent in
order (a whole snapshot replaces whatever of the replica is still unsent).

Heads and deep snapshots have a pipeline each, on connections of their own, so that the 20- and
100-level heads every reader and stream follows never wait behind a deep snapshot of 5000 levels a
side on its way to the store. Of each kind only one flush is in flight at a time, so writes of one
replica are never reordered; while a flush waits for the store, new deep snapshots of the same
replica replace each other (conflation). Whether heads can be sent now is the writer's
:attr:`~BookWriter.heads_ready` event (clear while a pipeline of heads waits for the store, or while
the writer is fenced): a publisher waits on it and encodes the books that changed meanwhile once,
when they can be sent, instead of once per loop turn, so what waits per replica is one change,
however many events it carries. The writer calls nothing on the publish path back: what waits for
it waits on its events (``heads_ready``, ``store_lost``); only telemetry hears of each batch
(``on_flush``).

The published message is ``<replica as 2 bytes><snapshot or delta>``: a subscribed reader updates
its cache from the message itself and never needs a round trip for a book it already follows. A
removed snapshot (a replica stopped or moved away, a deep snapshot no longer kept) is deleted with
its delta fields and announced with a *tombstone*: an empty ``resyncing`` snapshot of the same
kind, which a reader keeps in its place and never serves.

The node's heartbeat (:mod:`book_store.liveness`) goes with the heads, as the last command of
their pipeline (on a cluster, once every primary has answered): it vouches for the node's
snapshots, so it must never reach the store before a head recorded earlier, nor at all while the
writer is fenced. Storing it also tells the node whether the store still holds what it wrote: a
heartbeat field that was not there before (the store restarted empty, or was flushed) sets
``store_lost``, and the node, which waits on it, republishes everything it keeps.

A writer can be *fenced*: it keeps recording and sends nothing until it is unfenced (a publisher
encodes nothing meanwhile: ``heads_ready`` stays clear until then). An ingest node
fences its writer when it may have been declared dead, so that when it reaches the store again it
writes nothing of replicas that were taken from it meanwhile (it removes those first, and the
removals are what it sends).

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
from collections.abc import Awaitable, Callable
from typing import Final, NamedTuple

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisClusterException, RedisError

from book_store.codec import encode_message, tombstone
from book_store.connect import StoreClient, StoreLink, command, hset, node_url, publish
from book_store.liveness import NodeHeartbeat, encode_heartbeat
from book_store.schema import NODES_ALIVE, BookKey, ReplicaId, delta_field, snapshot_field
from ladder_process import clock
from ladder_process.errors import StoreError

log = logging.getLogger(__name__)

MAX_DELTA_FIELDS: Final = 64
"""Delta fields a replica's base is followed by in the store at most (a reader applies them all)."""
_WHOLE = 0
_DELTA = 1
_GONE = 2
_NODES_ALIVE = NODES_ALIVE.encode()


class _Write(NamedTuple):
    """One write of a replica: a whole snapshot, a delta (with a new base or as delta field ``seq``),
    or its removal; ``drop`` delta fields (1 to ``drop``) go with a whole snapshot, base or removal."""

    kind: int
    payload: bytes = b""
    base: bytes | None = None
    seq: int = 0
    drop: int = 0


_Batch = dict[ReplicaId, list[_Write]]

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

    __slots__ = ("deep", "flusher", "pending", "sending")

    def __init__(self, *, deep: bool) -> None:
        self.deep = deep
        self.pending: _Batch = {}
        self.flusher: asyncio.Task[None] | None = None
        self.sending = False
        """A pipeline of this queue is waiting for the store's answer."""


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
    ) -> None:
        """``client`` is owned by the caller. ``node_id`` and ``node`` (its tag) name the node
        in its heartbeats and tombstones. ``on_flush(count, seconds)`` observes each batch."""
        self._client = client
        self._node_id = node_id
        self._node = node
        self._heartbeat: bytes | None = None
        self._heads = _Queue(deep=False)
        self._deeps = _Queue(deep=True)
        self._on_flush = on_flush
        self._store_and_publish = client.register_script(_STORE_AND_PUBLISH)
        self._store_and_spublish = client.register_script(_STORE_AND_SPUBLISH)
        self._shards: dict[str, aioredis.Redis] = {}  # on a cluster: a plain client per primary
        self._links: dict[str, StoreLink] = {}  # heads: a link per store node, by its URL
        self._names: dict[BookKey, tuple[bytes, bytes]] = {}  # a book's hash and channel, encoded
        self._map_stale = False
        self._fenced = False
        self._closing = False
        self.heads_ready = asyncio.Event()
        """Set while a head recorded now would be sent at once: no pipeline of heads waits for the
        store and the writer is not fenced."""
        self.heads_ready.set()
        self.store_lost = asyncio.Event()
        """Set when a heartbeat found the store without the node's earlier one (it lost what the
        node wrote, or the node had written none yet); whoever waits on it clears it."""
        self._deltas: dict[ReplicaId, int] = {}
        """Per replica, the delta fields recorded since its base (the next is one more)."""

    @property
    def fenced(self) -> bool:
        return self._fenced

    def fence(self) -> None:
        """Send nothing from now on (a flush already in flight completes) until :meth:`unfence`."""
        self._fenced = True
        self.heads_ready.clear()

    def unfence(self) -> None:
        """Send what was recorded meanwhile and carry on."""
        self._fenced = False
        for queue in (self._heads, self._deeps):
            if queue.pending or (self._heartbeat is not None and not queue.deep):
                self._wake(queue)
        if not self._heads.sending:
            self.heads_ready.set()

    def put(self, book: BookKey, replica: int, snapshot: bytes, *, deep: bool = False) -> None:
        """Record a whole head (or deep) snapshot of a replica; it is written at the end of this
        loop turn, and replaces whatever of the replica's head (or deep snapshot) is still unsent."""
        key = (book, replica)
        if deep:
            self._deeps.pending[key] = [_Write(_WHOLE, snapshot)]
            self._wake(self._deeps)
            return
        self._heads.pending[key] = [_Write(_WHOLE, snapshot, drop=self._dropped(key))]
        self._wake(self._heads)

    def put_delta(self, book: BookKey, replica: int, delta: bytes, *, base: bytes | None = None) -> None:
        """Record a delta of a replica's head (:mod:`book_store.delta`), after everything recorded
        of it before; with ``base`` (the head the delta makes, whole), store that instead of the
        delta and drop the replica's delta fields."""
        key = (book, replica)
        if base is not None:
            write = _Write(_DELTA, delta, base, drop=self._dropped(key))
        else:
            seq = self._deltas[key] = self._deltas.get(key, 0) + 1
            write = _Write(_DELTA, delta, seq=seq)
        self._heads.pending.setdefault(key, []).append(write)
        self._wake(self._heads)

    def remove(self, book: BookKey, replica: int, *, deep_only: bool = False) -> None:
        """Delete a replica's snapshots (the replica was stopped or moved), or only its deep one
        (the book is no longer published deeper than its head)."""
        key = (book, replica)
        if not deep_only:
            self._heads.pending[key] = [_Write(_GONE, drop=self._dropped(key))]
            self._deltas.pop(key, None)
            self._wake(self._heads)
        self._deeps.pending[key] = [_Write(_GONE)]
        self._wake(self._deeps)

    def _dropped(self, key: ReplicaId) -> int:
        """The replica's delta fields since its base, which a new base deletes (counting restarts)."""
        # A replica this writer has not written yet may have delta fields of an earlier writer (a
        # node that kept it before): all that there can be go.
        recorded = self._deltas.get(key, MAX_DELTA_FIELDS)
        self._deltas[key] = 0
        unsent = self._heads.pending.get(key, ())
        return max(recorded, *(w.drop for w in unsent)) if unsent else recorded

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
        """Write what is pending, then stop. A write that fails now is not retried: a node closing
        its writer is leaving, and a store that does not answer must not keep it."""
        self._closing = True
        await self.drain()
        for client in self._shards.values():
            await client.aclose()
        self._shards.clear()
        for link in self._links.values():
            await link.close()
        self._links.clear()

    def _wake(self, queue: _Queue) -> None:
        if self._fenced:
            return
        if queue.flusher is None or queue.flusher.done():
            queue.flusher = asyncio.get_running_loop().create_task(self._flush_loop(queue))

    async def _flush_loop(self, queue: _Queue) -> None:
        # A task's first step runs in the loop's next turn, so every put() of this turn has joined
        # the batch by then; yielding once more would hold the batch through another turn's I/O
        # (a node's venue frames) before it is sent.
        while (queue.pending or (self._heartbeat is not None and not queue.deep)) and not self._fenced:
            batch, queue.pending = queue.pending, {}
            heartbeat = None
            if not queue.deep:
                heartbeat, self._heartbeat = self._heartbeat, None
            started = time.perf_counter()  # loop.time() has 1 ms resolution under uvloop
            now_ms = clock.now_ms()
            queue.sending = True
            if not queue.deep:
                self.heads_ready.clear()
            failure: Exception | None = None
            lost = False
            try:
                lost = await self._send(batch, heartbeat, now_ms, deep=queue.deep)
            except (RedisError, OSError, StoreError) as exc:
                failure = exc
            finally:  # cancelled too: whoever waits for the answer must not wait forever
                queue.sending = False
                if not queue.deep and not self._fenced:
                    self.heads_ready.set()
            if failure is not None and self._closing:
                log.warning("book store write failed (%s) while closing: %d replicas not written",
                            failure, len(batch))  # fmt: skip
                return
            if failure is not None:
                # Send the failed writes again, before what was recorded since, unless that
                # replaces them (a whole snapshot, or a removal).
                log.warning("book store write failed (%s); retrying %d replicas", failure, len(batch))
                for key, writes in batch.items():
                    newer = queue.pending.get(key)
                    if newer is None:
                        queue.pending[key] = writes
                    elif newer[0].kind == _DELTA:
                        queue.pending[key] = writes + newer
                    else:
                        dropped = max(newer[0].drop, *(w.drop for w in writes), *(w.seq for w in writes))
                        newer[0] = newer[0]._replace(drop=dropped)
                if self._heartbeat is None:
                    self._heartbeat = heartbeat
                self._map_stale = True  # on a cluster: a moved slot or a failover, perhaps
                await asyncio.sleep(0.2)
                continue
            if lost:
                self.store_lost.set()
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
        if deep:
            pipe = client.pipeline(transaction=False)
            await self._queue_deep(pipe, batch, now_ms, sharded=False)
            await pipe.execute()
            return False
        commands = self._head_commands(batch, now_ms, sharded=False)
        if heartbeat is not None:
            commands.append(hset(_NODES_ALIVE, self._node_id.encode(), heartbeat))
            commands.append(publish(b"PUBLISH", _NODES_ALIVE, heartbeat))
        replies = await self._link(node_url(client.connection_pool)).execute(commands)
        return heartbeat is not None and replies[-2] == b":1"

    def _head_commands(self, batch: _Batch, now_ms: int, *, sharded: bool) -> list[bytes]:
        """The commands of ``batch``'s heads: per write HSET (+ HDEL) + (S)PUBLISH."""
        verb = b"SPUBLISH" if sharded else b"PUBLISH"
        commands = []
        names = self._names
        for (book, replica), writes in batch.items():
            named = names.get(book)
            if named is None:
                named = names[book] = (book.snapshots.encode(), book.channel.encode())
            snapshots, channel = named
            field = snapshot_field(replica).encode()
            for write in writes:
                dropped = [delta_field(replica, seq).encode() for seq in range(1, write.drop + 1)]
                if write.kind == _GONE:
                    commands.append(command(b"HDEL", snapshots, field, *dropped))
                    removed = tombstone(replica, deep=False, now_ms=now_ms, node=self._node)
                    commands.append(publish(verb, channel, encode_message(replica, removed)))
                    continue
                if write.kind == _WHOLE or write.base is not None:
                    commands.append(hset(snapshots, field, write.base or write.payload))
                    if dropped:
                        commands.append(command(b"HDEL", snapshots, *dropped))
                else:
                    commands.append(hset(snapshots, delta_field(replica, write.seq).encode(), write.payload))
                commands.append(publish(verb, channel, encode_message(replica, write.payload)))
        return commands

    async def _queue_deep(self, pipe: Pipeline, batch: _Batch, now_ms: int, *, sharded: bool) -> None:
        """Add the deep snapshots of ``batch`` to ``pipe``: each through the store-and-publish
        script, a removal as HDEL + a tombstone."""
        publish = pipe.spublish if sharded else pipe.publish
        script = self._store_and_spublish if sharded else self._store_and_publish
        for (book, replica), writes in batch.items():
            field = snapshot_field(replica, deep=True)
            for write in writes:
                if write.kind == _GONE:
                    pipe.hdel(book.snapshots, field)
                    removed = tombstone(replica, deep=True, now_ms=now_ms, node=self._node)
                    publish(book.channel, encode_message(replica, removed))
                else:
                    message = encode_message(replica, write.payload)
                    await script(keys=[book.snapshots, book.channel], args=[field, message], client=pipe)

    def _link(self, url: str) -> StoreLink:
        link = self._links.get(url)
        if link is None:
            link = self._links[url] = StoreLink(url)
        return link

    async def _send_per_shard(self, cluster: RedisCluster, batch: _Batch, now_ms: int, *, deep: bool) -> None:
        """One batch per primary, all at once: heads on a link of their own, deep snapshots in a
        plain pipeline (RedisCluster's own pipeline costs the writer twice the CPU per snapshot:
        ``ladder bench cluster_clients``)."""
        if self._map_stale:
            await cluster.nodes_manager.initialize()
            self._map_stale = False
            primaries = {node.name for node in cluster.get_primaries()}
            for name in [name for name in self._shards if name not in primaries]:
                await self._shards.pop(name).aclose()
        else:
            await cluster.initialize()  # at once after the first time
        by_primary: dict[str, tuple[ClusterNode, _Batch]] = {}
        for key, writes in batch.items():
            node = cluster.get_node_from_key(key[0].snapshots)
            if node is None:  # pragma: no cover - a covered cluster always names one
                raise RedisClusterException(f"no primary serves the slot of {key[0].snapshots}")
            by_primary.setdefault(node.name, (node, {}))[1][key] = writes
        sends: list[Awaitable[object]] = []
        for node, items in by_primary.values():
            if deep:
                pipe = self._shard(node).pipeline(transaction=False)
                await self._queue_deep(pipe, items, now_ms, sharded=True)
                sends.append(pipe.execute())
            else:
                url = node_url(node.connection_kwargs, node.connection_class, node.host, node.port)
                sends.append(self._link(url).execute(self._head_commands(items, now_ms, sharded=True)))
        outcomes = await asyncio.gather(*sends, return_exceptions=True)
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
