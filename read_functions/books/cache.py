"""The process-local book cache: hot books cost no store round trip.

Theory of operation
-------------------
Each cached book is an :class:`~read_functions.books.entry.Entry` holding the latest decoded
snapshot of every replica (its head, and for a book published deeper than its head, its deep
snapshot too). An entry is *live* once its change channel is subscribed (confirmed by the server)
and its replicas have been fetched after that confirmation, and stays live until the cache drops it;
meanwhile every published snapshot arrives on the
:class:`~read_functions.books.change_feed.ChangeFeed` and replaces the replica's snapshot in place,
so a read of a live book is a dict look-up (or none, for a caller that kept the entry: see
:meth:`BookCache.entry`).

A change message carries a whole snapshot or, for most changes of a head, a delta
(:mod:`book_store.delta`): the levels that changed, and the update id of the head it follows. A
delta is applied to the replica's head only when it continues it; an older one is skipped, and one
that does not fit (a gap, or any doubt) is never guessed at: the entry is dropped, its watchers
are told, and the next read loads the book from the store again, where every replica's head is
whole (:mod:`book_store.reader`).

A read of a book that is not live registers it and waits for the next *load batch*: all the books
missed during one event-loop turn are subscribed with one ``SUBSCRIBE`` and fetched with one
pipelined ``HGETALL`` each, so a burst of misses across many books costs two round trips, not two
per book. A message that arrives while a book is loading is merged: a whole snapshot replaces the
replica's head if it is newer, and deltas wait until the load is done and are applied then.

A quiet replica is not republished while its node's heartbeat vouches for it
(:mod:`book_store.liveness`), so the cache also follows the nodes' heartbeats: the feed
subscribes their channel for good, and every load batch reads the stored ones in the same round
trip as the books (one small hash).

When the feed's connection drops, messages may have been lost, so every entry is forgotten at
once and the next read of each book loads it again; the heartbeats are forgotten too, and until
they are read again (with those books) a replica is heard only through its own publish time. On a
cluster the feed is sharded (:class:`~read_functions.books.sharded_feed.ShardedChangeFeed`), and a
shard's drop forgets only the books of that shard (the heartbeats ride on the plain feed of the
standing channels, whose drop forgets them). Books nobody read for ``idle_s`` (and that no stream
watches) are unsubscribed by a sweep; while the feed is down, reads go to the store directly
without caching (the heartbeats with them).

A watched book (a stream's) is the cache's to keep: its watchers belong to the book, not to one
entry, and whenever its entry is dropped (the feed or its shard dropped, or its load failed) the
cache loads it again by itself, retrying with a back-off until the book is live, and then hands its
watchers the new entry. A watcher never has to notice a drop, so no drop can leave it silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, cast

from redis.asyncio.cluster import RedisCluster

from book_store.codec import Snapshot
from book_store.connect import StoreClient
from book_store.delta import Delta, read_message
from book_store.liveness import Heartbeats, decode_heartbeat
from book_store.reader import BookReader, StoredBook
from book_store.schema import NODES_ALIVE, BookKey
from ladder_process.errors import StoreError
from read_functions.books.change_feed import ChangeFeed
from read_functions.books.entry import Entry, Watcher
from read_functions.books.sharded_feed import ShardedChangeFeed

book_cache_hit: ContextVar[bool | None] = ContextVar("ladder_book_cache_hit", default=None)
"""Set by the book cache while it serves a request; the request span reports it, then clears it
(a pipelined request's task starts from the context of the one before it). Without tracing nobody
reads it, so it is neither cleared nor set again to the value it holds."""

log = logging.getLogger(__name__)

_REWATCH_FIRST_S = 0.05
_REWATCH_MAX_S = 1.0
"""A watched book that lost its entry is loaded again once the feed is connected; a load that
fails (a shard still failing over) is tried again after these back-offs, doubling."""


class BookCache:
    """Snapshots of the books this process reads, kept true by the change feed."""

    def __init__(
        self,
        client: StoreClient,
        redis_url: str | None,
        *,
        idle_s: float = 60.0,
        standing: Mapping[str, Callable[[bytes], None]] | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> None:
        """``standing``: other channels the feed follows for good, each with its message handler;
        ``on_reset`` is called when the feed dropped (after the cache itself was emptied)."""
        self._client = client
        self._reader = BookReader(client)
        self._idle_s = idle_s
        self._entries: dict[BookKey, Entry] = {}
        self._by_channel: dict[bytes, Entry] = {}
        self._pending: list[Entry] = []
        self._loader: asyncio.Task[None] | None = None
        self._watched: dict[BookKey, set[Watcher]] = {}  # each book's watchers, shared by its entries
        self._rewatcher: asyncio.Task[None] | None = None
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.heartbeats = Heartbeats()
        """What the cache knows of the nodes' heartbeats (its entries share it)."""
        channels = {**(standing or {}), NODES_ALIVE: self._on_heartbeat}
        self._standing = {c.encode(): handler for c, handler in channels.items()}
        self._after_reset = on_reset
        self.feed: ChangeFeed | ShardedChangeFeed | None = None
        if redis_url is not None and isinstance(client, RedisCluster):
            self.feed = ShardedChangeFeed(
                redis_url,
                client,
                self._on_message,
                self._missed_standing,
                self._on_lost,
                standing=channels,
            )
        elif redis_url is not None:
            self.feed = ChangeFeed(redis_url, self._on_message, self._on_reset, standing=channels)
        self.hits = 0
        self.misses = 0
        self.messages = 0
        self.doubts = 0
        """Deltas that did not continue their replica's head (each dropped its entry)."""

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def following(self) -> bool:
        """True while changes reach the cache (or when it does not cache at all)."""
        return self.feed is None or self.feed.connected

    @property
    def resets(self) -> int:
        return 0 if self.feed is None else self.feed.resets

    async def start(self, connect_timeout_s: float = 5.0) -> None:
        if self.feed is not None:
            self.feed.start()
            await self.feed.wait_connected(connect_timeout_s)
            self._spawn(self._sweep())

    async def close(self) -> None:
        self._closed = True  # the loops end on it too (a cancellation can come out as a store error)
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.feed is not None:
            await self.feed.close()

    # -- the read path -----------------------------------------------------------------------
    async def entry(self, book: BookKey, last: Entry | None = None) -> Entry:
        """The live entry of ``book``, loading it first if needed (the hot path returns at once).

        ``last`` is the entry this caller got for ``book`` before: while it is live it is the
        book's entry, so no look-up is needed (an entry stops being live when it is dropped)."""
        entry = last if last is not None and last.live else self._entries.get(book)
        if entry is not None and entry.live:
            entry.touched = True
            self.hits += 1
            if book_cache_hit.get() is not True:  # a set copies the context's map: skip it when it holds
                book_cache_hit.set(True)
            return entry
        self.misses += 1
        book_cache_hit.set(False)
        if self.feed is None or not self.feed.connected:
            return await self._uncached(book)
        if entry is None:
            entry = self._register(book)
        await asyncio.shield(entry.loaded)
        return entry

    async def entries(self, books: Sequence[BookKey]) -> list[Entry]:
        """The live entries of many books, in order (a bulk read): the cached ones at once, and
        every other one registered in this same turn, so that all of them load in one batch."""
        found = [self._entries.get(book) for book in books]
        missing = [i for i, entry in enumerate(found) if entry is None or not entry.live]
        for entry in found:
            if entry is not None:
                entry.touched = True
        self.hits += len(books) - len(missing)
        if not missing:
            return cast(list[Entry], found)
        if self.feed is None or not self.feed.connected:
            self.misses += len(missing)
            stored = await self._fetch([books[i] for i in missing])  # one pipeline, nothing kept
            loaded = [self._uncached_entry(books[i], s) for i, s in zip(missing, stored, strict=True)]
        else:
            loaded = await asyncio.gather(*(self.entry(books[i], found[i]) for i in missing))
        for i, entry in zip(missing, loaded, strict=True):
            found[i] = entry
        return cast(list[Entry], found)

    async def peek_many(self, books: Iterable[BookKey]) -> dict[BookKey, dict[int, Snapshot]]:
        """Replicas of many books for a listing: live entries as they are, the rest in one pipeline.

        Books fetched here are not subscribed: a listing must not pin thousands of books.
        """
        result: dict[BookKey, dict[int, Snapshot]] = {}
        missing: list[BookKey] = []
        for book in books:
            entry = self._entries.get(book)
            if entry is not None and entry.live:
                result[book] = entry.replicas
            else:
                missing.append(book)
        if missing:
            for book, stored in zip(missing, await self._fetch(missing), strict=True):
                result[book] = stored.heads
        return result

    def watch(self, book: BookKey, watcher: Watcher) -> None:
        """Call ``watcher.changed`` on every change of ``book`` until :meth:`unwatch`: the book stays
        cached meanwhile, and is loaded again after every drop (see the module's doc)."""
        if self.feed is None:
            raise StoreError("this book cache follows no changes; streams need the server")
        watchers = self._watched.get(book)
        if watchers is None:
            entry = self._entries.get(book)
            watchers = self._watched[book] = set() if entry is None else entry.watchers
        watchers.add(watcher)
        if book not in self._entries:
            if self.feed.connected:
                self._register(book)
            else:
                self._rewatch_soon()

    def unwatch(self, book: BookKey, watcher: Watcher) -> None:
        watchers = self._watched.get(book)
        if watchers is not None:
            watchers.discard(watcher)
            if not watchers:
                del self._watched[book]

    def __len__(self) -> int:
        return len(self._entries)

    # -- loading -----------------------------------------------------------------------------
    def _register(self, book: BookKey) -> Entry:
        entry = Entry(book, asyncio.get_running_loop().create_future(), self.heartbeats)
        watchers = self._watched.get(book)
        if watchers is not None:
            entry.watchers = watchers
        entry.on_broken = self._doubt
        self._entries[book] = entry
        self._by_channel[entry.channel] = entry
        self._pending.append(entry)
        if self._loader is None:
            self._loader = asyncio.get_running_loop().create_task(self._load_batch())
        return entry

    async def _load_batch(self) -> None:
        await asyncio.sleep(0)  # every miss of this loop turn joins the batch
        batch, self._pending, self._loader = self._pending, [], None
        try:
            assert self.feed is not None  # only a following cache registers entries
            await self.feed.subscribe(entry.book.channel for entry in batch)
            fetched = await self._fetch([entry.book for entry in batch])
        except StoreError as exc:
            for entry in batch:
                self._forget(entry)
                _fail(entry.loaded, exc)
            if any(entry.watchers for entry in batch):
                self._rewatch_soon()
            return
        for entry, stored in zip(batch, fetched, strict=True):
            for snapshots in stored:
                for replica, snapshot in snapshots.items():
                    entry.apply(replica, snapshot)
            for delta in entry.take_waiting():
                try:
                    applied = entry.apply_delta(delta)
                except StoreError:
                    applied = None
                if applied is None:
                    self.doubts += 1
                    log.warning("%s: a delta that arrived while loading does not fit; replica %d left out",
                                entry.book, delta.replica)  # fmt: skip
                    entry.replicas.pop(delta.replica, None)
            # An entry forgotten meanwhile (feed reset) still answers its waiting readers.
            entry.live = self._entries.get(entry.book) is entry
            if not entry.loaded.done():
                entry.loaded.set_result(None)
            for watcher in list(entry.watchers):
                watcher.changed(entry)

    async def _fetch(self, books: list[BookKey]) -> list[StoredBook]:
        # A heartbeat read here only ever replaces an older one, so learning it is right whether
        # or not the feed follows them.
        fetched = await self._reader.stored_many(books, self.heartbeats)
        return [fetched[book] for book in books]

    async def _uncached(self, book: BookKey) -> Entry:
        return self._uncached_entry(book, (await self._fetch([book]))[0])

    def _uncached_entry(self, book: BookKey, stored: StoredBook) -> Entry:
        """An entry for one read, outside the cache (the feed is down, or there is none)."""
        entry = Entry(book, asyncio.get_running_loop().create_future(), self.heartbeats)
        entry.replicas, entry.deeps = stored
        return entry

    def _forget(self, entry: Entry) -> None:
        entry.live = False
        if self._entries.get(entry.book) is entry:
            del self._entries[entry.book]
            self._by_channel.pop(entry.channel, None)

    # -- the change feed ---------------------------------------------------------------------
    def _on_message(self, channel: bytes, data: bytes | memoryview) -> None:
        entry = self._by_channel.get(channel)
        if entry is None:
            handler = self._standing.get(channel)
            if handler is not None:
                handler(bytes(data))
            return
        self.messages += 1
        try:  # only the header is decoded here: most snapshots are replaced before anyone reads them
            replica, change = read_message(data)
        except StoreError as exc:
            log.warning("ignoring an undecodable change message for %s: %s", entry.book, exc)
            return
        if not isinstance(change, Delta):
            if not entry.apply(replica, change):
                return
        elif not entry.live:
            entry.wait(change)  # applied once the load is done
            return
        else:
            try:
                applied = entry.apply_delta(change)
            except StoreError:
                applied = None
            if applied is None:
                self._doubt(entry, change)
                return
            if not applied:
                return
        for watcher in list(entry.watchers):
            watcher.changed(entry)

    def _doubt(self, entry: Entry, delta: Delta | None = None) -> None:
        """A delta does not continue what the entry holds (or, ``delta`` None, a replica's levels
        turned out not to fit its deltas): serve none of it until it is loaded again."""
        self.doubts += 1
        if delta is None:
            log.warning("%s: a replica's levels do not fit its deltas; loading the book again", entry.book)
        else:
            log.warning("%s: a change of replica %d does not continue its head (update id %d after %d); "
                        "loading the book again", entry.book, delta.replica, delta.update_id,
                        delta.prev_update_id)  # fmt: skip
        self._forget(entry)
        if self.feed is not None:
            self.feed.unsubscribe([entry.book.channel])
        if entry.watchers:
            self._rewatch_soon()

    def _on_heartbeat(self, data: bytes) -> None:
        try:
            self.heartbeats.learn(decode_heartbeat(data)[1])
        except StoreError as exc:
            log.warning("ignoring an unreadable node heartbeat: %s", exc)

    def _on_reset(self) -> None:
        entries = list(self._entries.values())
        self._entries.clear()
        self._by_channel.clear()
        self.heartbeats.clear()
        for entry in entries:
            entry.live = False
        if self._watched:
            self._rewatch_soon()
        if self._after_reset is not None:
            self._after_reset()

    def _missed_standing(self) -> None:
        """A cluster's plain feed dropped: its channels may have missed messages, books did not."""
        self.heartbeats.clear()
        if self._after_reset is not None:
            self._after_reset()

    def _on_lost(self, channels: Collection[bytes]) -> None:
        """A shard's feed dropped these books' channels: forget just them."""
        for channel in channels:
            entry = self._by_channel.get(channel)
            if entry is None:
                continue
            self._forget(entry)
            if entry.watchers:
                self._rewatch_soon()

    def _rewatch_soon(self) -> None:
        if self._rewatcher is None or self._rewatcher.done():
            self._rewatcher = self._spawn(self._rewatch())

    async def _rewatch(self) -> None:
        """Load every watched book that has no live entry, backing off, until all of them are live."""
        assert self.feed is not None  # only a following cache has watchers
        delay = _REWATCH_FIRST_S
        while not self._closed:
            await asyncio.sleep(delay)
            if not await self.feed.wait_connected(_REWATCH_MAX_S):
                continue
            for book in self._watched:
                if book not in self._entries:
                    self._register(book)
            loading = [self._entries[book] for book in self._watched]
            await asyncio.gather(*(asyncio.shield(e.loaded) for e in loading), return_exceptions=True)
            if all(self._entries.get(e.book) is e and e.live for e in loading):
                return
            delay = min(2 * delay, _REWATCH_MAX_S)

    async def _sweep(self) -> None:
        """Unsubscribe books that were neither read nor watched for between idle_s/2 and idle_s."""
        while not self._closed:
            await asyncio.sleep(self._idle_s / 2)
            idle = [e for e in self._entries.values() if e.live and not e.touched and not e.watchers]
            for entry in self._entries.values():
                entry.touched = False
            for entry in idle:
                self._forget(entry)
            if self.feed is not None:
                self.feed.unsubscribe(entry.book.channel for entry in idle)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


def _fail(future: asyncio.Future[None], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
        future.exception()  # a reader may be gone; do not warn about an unretrieved exception
