"""One cached book: its replicas' snapshots, the replica a read serves, and its rendered views.

An entry owns what is rendered of it (:mod:`read_functions.books.render` does the rendering): the
views of the snapshot last served, by depth and side, and its top of book. A change message
replaces a replica's snapshot in place (:meth:`Entry.apply`) and renders nothing: a view is rendered
when a read or a stream first asks for it of the snapshot served. Under a venue's real cadence a
book changes several times between two reads of it, so a view rendered on every change would mostly
be thrown away unread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol, TypeVar

from book_store.codec import BookStatus, Snapshot
from book_store.delta import Delta, apply_delta, follows
from book_store.liveness import Heartbeats
from book_store.reader import choose_replica, heard
from book_store.schema import BookKey
from ladder_process.errors import StoreError
from read_functions.books.render import (
    BookView,
    Side,
    TopView,
    names_json,
    render,
    render_top,
    render_unsynced_top,
)

_R = TypeVar("_R")

MAX_VIEWS = 16
"""Views kept per book: a few depths in use at once; a caller cycling through depths cannot make a
book hold more than this many rendered copies."""


class Watcher(Protocol):
    """Something (a stream) that wants every change of one book, through whatever entry holds it."""

    def changed(self, entry: Entry) -> None: ...


class Entry:
    """One cached book: its replicas' snapshots and per-book state of the read path."""

    __slots__ = ("__weakref__", "_chosen", "_chosen_silence", "_chosen_until", "_waiting", "book", "channel",
                 "deep_views", "deep_views_of", "deeps", "heartbeats", "live", "loaded", "names_json",
                 "on_broken", "replicas", "top", "touched", "views", "views_of", "watchers")  # fmt: skip

    def __init__(
        self, book: BookKey, loaded: asyncio.Future[None], heartbeats: Heartbeats | None = None
    ) -> None:
        """``heartbeats``: what the cache knows of the nodes' heartbeats (shared by its entries)."""
        self.book = book
        self.heartbeats = Heartbeats() if heartbeats is None else heartbeats
        self.channel = book.channel.encode()
        self.replicas: dict[int, Snapshot] = {}
        """Each replica's head snapshot: what replicas are chosen by, and most reads are served from."""
        self.deeps: dict[int, Snapshot] = {}
        """Each replica's deep snapshot, for a book published deeper than its head."""
        self.live = False
        self.loaded = loaded
        self.touched = True
        self.watchers: set[Watcher] = set()
        # Rendered responses of the replica last served and the book's names as JSON, rendered
        # once (see :meth:`Entry.view`).
        self.views: dict[tuple[int, Side], BookView] = {}
        self.views_of: Snapshot | None = None
        self.deep_views: dict[tuple[int, Side], BookView] = {}
        self.deep_views_of: Snapshot | None = None
        self.names_json: bytes | None = None
        # The book's rendered top of book (see :meth:`Entry.top_view`), with the snapshot it shows.
        self.top: TopView | None = None
        # The replica choice, kept until a replica changes or the chosen one falls silent.
        self._chosen: Snapshot | None = None
        self._chosen_until = -1
        self._chosen_silence = -1
        self._waiting: list[Delta] = []
        """Deltas that arrived while the entry was loading, applied once it is."""
        self.on_broken: Callable[[Entry], None] | None = None
        """Called when a replica's levels turned out not to be what its deltas said (its cache
        drops the entry: the next read loads the book again)."""

    def apply(self, replica: int, snapshot: Snapshot) -> bool:
        """Keep ``snapshot`` unless the stored one was published later; True if it was kept."""
        kept = self.deeps if snapshot.deep else self.replicas
        old = kept.get(replica)
        if old is not None and old.recency > snapshot.recency:
            return False
        kept[replica] = snapshot
        if not snapshot.deep:
            self._chosen_until = -1
        return True

    def apply_delta(self, delta: Delta) -> bool | None:
        """Apply ``delta`` to its replica's head: True if applied, False if it is older than the
        head (skipped), None if it does not continue it (a gap, or no head). A StoreError when the
        head's levels, worked out now, turn out not to fit its deltas."""
        replica = delta.replica
        head = self.replicas.get(replica)
        if head is None:
            return None
        verdict = follows(head, delta)
        if not verdict:
            return verdict
        self.replicas[replica] = apply_delta(head, delta)
        self._chosen_until = -1
        return True

    def wait(self, delta: Delta) -> None:
        """Keep a delta that arrived while the entry loads (see :meth:`take_waiting`)."""
        self._waiting.append(delta)

    def take_waiting(self) -> list[Delta]:
        """The deltas that arrived while the entry loaded, in arrival order (and forget them)."""
        waiting, self._waiting = self._waiting, []
        return waiting

    def deep_of(self, head: Snapshot, now_ms: int, max_silence_ms: int) -> Snapshot | None:
        """The deep snapshot of ``head``'s replica, if it may be served: synced, and either at the
        head's update id (the head vouches for it: nothing changed since) or heard from within
        ``max_silence_ms`` (a book that keeps changing rewrites it every second or so)."""
        deep = self.deeps.get(head.replica)
        if deep is None or deep.status is not BookStatus.SYNCED:
            return None
        if deep.update_id != head.update_id and now_ms - deep.publish_time > max_silence_ms:
            return None
        return deep

    def served(self, now_ms: int, max_silence_ms: int) -> Snapshot | None:
        """:func:`~book_store.reader.choose_replica` of the replicas, chosen once per change.

        Time alone can only disqualify a replica (by silence), never reorder the rest, so a choice
        holds until a replica changes or the chosen one's silence runs out (then its node's later
        heartbeats may prolong it: it is chosen again). A read then touches none of the replicas'
        metadata: with reads spread over thousands of books, each object a read touches is likely
        a cache miss. Only a heartbeat of a node that had fallen silent can qualify a replica
        that was not chosen; until the book next changes, the live replica chosen is served.
        """
        if now_ms <= self._chosen_until and max_silence_ms == self._chosen_silence:
            return self._chosen
        heartbeats = self.heartbeats
        chosen = self._chosen = choose_replica(self.replicas.values(), now_ms, max_silence_ms, heartbeats)
        self._chosen_until = -1 if chosen is None else heard(chosen, heartbeats) + max_silence_ms
        self._chosen_silence = max_silence_ms
        return chosen

    def view(self, snapshot: Snapshot, depth: int, side: Side) -> BookView:
        """The cached view of ``snapshot`` for ``depth`` (at most what it holds) and ``side``
        (rendered on first use). A deep snapshot's views are kept apart, so that deep and head reads
        of one book do not throw each other's away."""
        if self.views_of is not snapshot:
            if snapshot.deep:
                if self.deep_views_of is not snapshot:
                    self.deep_views.clear()
                    self.deep_views_of = snapshot
                return self._cached(self.deep_views, snapshot, depth, side)
            self.views.clear()
            self.views_of = snapshot
        return self._cached(self.views, snapshot, depth, side)

    def _cached(
        self, views: dict[tuple[int, Side], BookView], snapshot: Snapshot, depth: int, side: Side
    ) -> BookView:
        key = (depth, side)
        view = views.get(key)
        if view is None:
            if len(views) >= MAX_VIEWS:
                views.clear()
            view = views[key] = self._levels_of(render, self.names, snapshot, depth, side)
        return view

    def _levels_of(self, renders: Callable[..., _R], names: bytes, snapshot: Snapshot, *args: object) -> _R:
        """``renders(names, snapshot, *args)``; when ``snapshot``'s levels cannot be worked out (its
        deltas do not fit it: :mod:`book_store.delta`), the entry drops the replica and tells its
        cache (``on_broken``) before the StoreError goes on: nothing of it is served."""
        try:
            return renders(names, snapshot, *args)
        except StoreError:
            self.replicas.pop(snapshot.replica, None)
            self._chosen_until = -1
            self.views.clear()
            self.views_of = None
            if self.on_broken is not None:
                self.on_broken(self)
            raise

    @property
    def names(self) -> bytes:
        """The entry's :func:`names_json`, rendered on its first view and kept with it."""
        names = self.names_json
        if names is None:
            names = self.names_json = names_json(self.book)
        return names

    def top_view(self, snapshot: Snapshot) -> TopView:
        """The top of ``snapshot`` (the replica served), rendered on first use."""
        top = self.top
        if top is None or top.snapshot is not snapshot:
            top = self.top = self._levels_of(render_top, self.names, snapshot)
        return top

    def unsynced_top(self, status: str) -> bytes:
        """A book no replica of which may be served: its names and how it is doing, no prices."""
        return render_unsynced_top(self.names, status)
