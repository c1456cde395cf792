"""Each followed book's diffs, computed once per change of the head it serves and shared by every
client of the multiplexed stream that follows it (see :mod:`read_functions.books.diffs.book_diffs`).

Theory of operation
-------------------
A :class:`BookFeed` is the one cache watcher of a book for all the stream's clients in this
process. On every change of the book (and once a second, since silence alone can disqualify a
replica) it asks its entry which head a read would serve. When that head is a new one it takes one
*step*: for each depth a client follows in diff mode (a :class:`Chain`), it diffs the new head's
best levels against the last head's (from the delta that made the new head of the last, when one
did: :func:`~read_functions.books.diffs.book_diffs.diff`) and renders the ``diff`` message once;
then it tells each follower that the book moved. A follower (one client's subscription) only
remembers the last step it sent (``seq``), so telling it costs nothing and a client that reads
slowly never makes a queue: when it is ready it asks :meth:`BookFeed.catch_up`, and gets the step's
shared message if it missed nothing, one merged diff (still exact) if it missed a few steps the
chain still holds, or None, meaning "send a snapshot", when it missed more than :data:`MAX_MERGE`
or the chain broke.

The chain breaks (a new *epoch*: every follower gets a snapshot) when the head served is another
replica's, goes back in update id, or no head may be served (the book stopped being synced: the
follower says so at once, and sends a snapshot when it is synced again).

Each chain keeps the steps of the last ``window_s`` seconds (at most ``kept``), for the slow
followers' merges and for a client that reconnects and asks to *resume* a book at its last
``update_id`` (:meth:`BookFeed.resume`); a feed stays alive ``window_s`` after its last follower
left, so that a client reconnecting to the same worker finds them. They live in this worker's
memory only: a client that reconnects to a worker that does not follow the book gets a snapshot.
What they cost: the bytes of the diffs of ``window_s`` seconds per followed book and depth
(:attr:`BookFeeds.kept_bytes` counts them).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import NamedTuple, Protocol

from book_store.codec import Snapshot
from book_store.schema import BookKey
from ladder_process.clock import now_ms
from ladder_process.errors import StoreError
from read_functions.books.cache import BookCache
from read_functions.books.diffs.book_diffs import (
    Diff,
    Message,
    diff,
    merge,
    render_diff,
    render_snapshot,
    top,
)
from read_functions.books.entry import Entry
from read_functions.books.render import names_json

RESUME_WINDOW_S = 10.0
"""How long a book's steps are kept (the resume window)."""
KEPT_STEPS = 256
"""Steps kept per chain at most, whatever the window (25 s of a book changing 10 times a second)."""
MAX_MERGE = 64
"""Steps a follower may be behind and still get one merged diff; further behind it gets a snapshot."""
REFRESH_S = 1.0


class Follower(Protocol):
    """One client's subscription to a book: told (cheaply, as often as the book moves) that it did."""

    def ready(self) -> None: ...


class Step(NamedTuple):
    seq: int
    at: float  # monotonic seconds, for the window
    diff: Diff
    message: Message


class Chain:
    """The steps of one depth a client follows in diff mode."""

    __slots__ = ("depth", "followers", "idle_since", "levels", "snapshot", "steps")

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.followers = 0
        self.idle_since: float | None = None
        self.levels: tuple[list[bytes], list[bytes]] | None = None  # the best levels of the feed's head
        self.snapshot: Message | None = None  # of the feed's head, rendered on first use
        self.steps: deque[Step] = deque()


class BookFeed:
    """One followed book (see the module's doc); the cache's :class:`~read_functions.books.entry.Watcher`."""

    def __init__(self, book: BookKey, max_silence_ms: int, window_s: float, kept: int) -> None:
        self.book = book
        self.names = names_json(book)
        self.entry: Entry | None = None
        self.head: Snapshot | None = None
        """The head served now (None: the book may not be served)."""
        self.epoch = 0
        self.seq = 0
        """The last step taken (a follower that sent it is up to date)."""
        self.followers: set[Follower] = set()
        self.chains: dict[int, Chain] = {}
        self.idle_since: float | None = None
        self._max_silence_ms = max_silence_ms
        self._window_s = window_s
        self._kept = kept

    def changed(self, entry: Entry) -> None:
        self.entry = entry
        self.refresh(now_ms())

    def refresh(self, now: int) -> None:
        """Take a step if the head served changed (see the module's doc), and tell the followers."""
        entry = self.entry
        head = None if entry is None else entry.served(now, self._max_silence_ms)
        old = self.head
        if head is old:
            return
        self.head = head
        moving = time.monotonic()
        if head is None or old is None or head.replica != old.replica or head.update_id < old.update_id:
            self.epoch += 1
            for chain in self.chains.values():
                chain.steps.clear()
                chain.levels = None if head is None else top(head, chain.depth)
                chain.snapshot = None
        else:
            for chain in self.chains.values():
                self._step(chain, old, head, moving)
        self.seq += 1
        for follower in list(self.followers):
            follower.ready()

    def _step(self, chain: Chain, old: Snapshot, head: Snapshot, at: float) -> None:
        levels = chain.levels or top(old, chain.depth)
        changes, chain.levels = diff(old, levels, head, chain.depth)
        steps = chain.steps
        steps.append(Step(self.seq + 1, at, changes, render_diff(self.names, changes)))
        while len(steps) > self._kept or steps[0].at < at - self._window_s:
            steps.popleft()
        chain.snapshot = None

    # -- what a follower asks ----------------------------------------------------------------
    def snapshot(self, depth: int) -> Message | None:
        """The ``snapshot`` message of the head served at ``depth`` (rendered once per head), or
        None when no head may be served."""
        head = self.head
        if head is None:
            return None
        chain = self.chains.get(depth)
        if chain is None:  # a follower in diff mode always has its chain; this is a spare render
            return render_snapshot(self.names, head, depth, top(head, depth))
        if chain.snapshot is None:
            levels = chain.levels = chain.levels or top(head, depth)
            chain.snapshot = render_snapshot(self.names, head, depth, levels)
        return chain.snapshot

    def catch_up(self, depth: int, epoch: int, seq: int) -> Message | None:
        """What takes a follower that sent step ``seq`` of ``epoch`` to the head: the step's own
        message, or one merged diff; None when it needs a snapshot instead."""
        chain = self.chains.get(depth)
        if chain is None or epoch != self.epoch or self.head is None:
            return None
        steps = chain.steps
        behind = self.seq - seq
        if behind <= 0 or behind > len(steps) or behind > MAX_MERGE:
            return None
        if behind == 1:
            return steps[-1].message
        missed = [steps[i].diff for i in range(len(steps) - behind, len(steps))]
        return render_diff(self.names, merge(missed))

    def resume(self, depth: int, replica: int, update_id: int) -> int | None:
        """The step a client holding ``replica``'s book at ``update_id`` has sent, if this chain can
        take it from there (None: it needs a snapshot)."""
        head, chain = self.head, self.chains.get(depth)
        if head is None or chain is None or head.replica != replica:
            return None
        if head.update_id == update_id:
            return self.seq
        for step in chain.steps:
            if step.diff.prev_update_id == update_id:
                return step.seq - 1
        return None

    @property
    def kept_bytes(self) -> int:
        """The bytes of the steps kept (their rendered messages)."""
        return sum(len(s.message.head) + len(s.message.tail) for c in self.chains.values() for s in c.steps)


class BookFeeds:
    """This worker's followed books: one :class:`BookFeed` per book, kept while followed (and
    ``window_s`` after), refreshed once a second."""

    def __init__(
        self,
        cache: BookCache,
        max_silence_ms: int,
        *,
        window_s: float = RESUME_WINDOW_S,
        kept: int = KEPT_STEPS,
    ) -> None:
        self._cache = cache
        self._max_silence_ms = max_silence_ms
        self.window_s = window_s
        self._kept = kept
        self.feeds: dict[BookKey, BookFeed] = {}
        self._ticker: asyncio.Task[None] | None = None
        self._loading: set[asyncio.Task[None]] = set()
        self._closed = False

    def follow(self, book: BookKey, follower: Follower, depth: int | None) -> BookFeed:
        """Tell ``follower`` of every move of ``book``; ``depth``: the diff chain it reads (None in
        snapshot mode). StoreError when this worker follows no changes."""
        feed = self.feeds.get(book)
        if feed is None:
            feed = self.feeds[book] = BookFeed(book, self._max_silence_ms, self.window_s, self._kept)
            self._cache.watch(book, feed)
            loop = asyncio.get_running_loop()
            if self._ticker is None:
                self._ticker = loop.create_task(self._tick())
            # The cache tells a watcher of changes to come; a book it holds already is handed over now.
            task = loop.create_task(self._first(feed))
            self._loading.add(task)
            task.add_done_callback(self._loading.discard)
        feed.followers.add(follower)
        feed.idle_since = None
        if depth is not None:
            chain = feed.chains.get(depth)
            if chain is None:
                chain = feed.chains[depth] = Chain(depth)
                chain.levels = None if feed.head is None else top(feed.head, depth)
            chain.followers += 1
            chain.idle_since = None
        return feed

    def unfollow(self, feed: BookFeed, follower: Follower, depth: int | None) -> None:
        now = time.monotonic()
        feed.followers.discard(follower)
        if depth is not None:
            chain = feed.chains.get(depth)
            if chain is not None:
                chain.followers -= 1
                if chain.followers <= 0:
                    chain.idle_since = now
        if not feed.followers:
            feed.idle_since = now

    def refresh(self) -> None:
        """Refresh every feed (silence) and let go of what nobody followed for ``window_s``."""
        now, moving = now_ms(), time.monotonic()
        for book, feed in list(self.feeds.items()):
            if feed.idle_since is not None and moving - feed.idle_since > self.window_s:
                del self.feeds[book]
                self._cache.unwatch(book, feed)
                continue
            for depth, chain in list(feed.chains.items()):
                if chain.idle_since is not None and moving - chain.idle_since > self.window_s:
                    del feed.chains[depth]
            feed.refresh(now)

    @property
    def kept_bytes(self) -> int:
        return sum(feed.kept_bytes for feed in self.feeds.values())

    async def _first(self, feed: BookFeed) -> None:
        with contextlib.suppress(StoreError):  # a watched book is the cache's to load again
            entry = await self._cache.entry(feed.book)
            if feed.entry is None and entry.live:
                feed.changed(entry)

    async def _tick(self) -> None:
        while not self._closed:
            await asyncio.sleep(REFRESH_S)
            self.refresh()

    async def close(self) -> None:
        self._closed = True
        for task in list(self._loading):
            task.cancel()
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
