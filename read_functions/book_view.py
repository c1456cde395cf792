"""Book responses as bytes: the stored level blobs joined with a few pre-rendered pieces.

A response body is ``head + age_ms + tail``. ``head`` (exchange, market and the snapshot's times)
and ``tail`` (replica, status, ``truncated`` and views of the level blobs) depend only on the
snapshot, the depth and the side, so they are rendered once per served snapshot and reused by
every request until the next snapshot replaces it; only ``age_ms`` is formatted per request. No
level is ever parsed or re-encoded here.

``truncated`` is true when a side carries fewer levels than asked while the venue may hold more
(the snapshot's ``MORE_*`` flags): a reader then knows the answer is not the venue's full top-N.
A head view that is truncated is where a read looks for the replica's deep snapshot instead.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import orjson

from book_store.codec import BookStatus, Snapshot
from book_store.keys import BookKey
from read_functions.book_cache import Entry

# Views kept per book: a few depths in use at once; a caller cycling through depths cannot
# make a book hold more than this many rendered copies.
MAX_VIEWS = 16


class Side(enum.IntEnum):
    """Which side(s) a response carries (an int enum: it hashes as fast as the int it is)."""

    BOTH = 0
    BIDS = 1
    ASKS = 2


class BookView(NamedTuple):
    """The pre-rendered pieces of one (snapshot, depth, side) response (a named tuple: with
    books changing faster than they are read, one is built for almost every read).

    ``tail`` holds the sides as views into the snapshot: a view copies no level, so a cached book
    holds its levels once, and reads spread over thousands of books touch half the memory."""

    head: bytes
    tail: tuple[bytes | memoryview, ...]
    etag: str
    known_time: int
    """When the venue state behind the view was last known (its ``age_ms`` counts from here)."""
    truncated: bool

    def body(self, age_ms: int) -> bytes:
        return b"".join((self.head, b"%d" % age_ms, *self.tail))


def view_of(entry: Entry, snapshot: Snapshot, depth: int, side: Side) -> BookView:
    """The cached view of ``snapshot`` for ``depth`` (at most what it holds) and ``side``
    (rendered on first use). A deep snapshot's views are kept apart, so that deep and head reads
    of one book do not throw each other's away."""
    entry.views_read = True
    if entry.views_of is not snapshot:
        if snapshot.deep:
            if entry.deep_views_of is not snapshot:
                entry.deep_views.clear()
                entry.deep_views_of = snapshot
            return _cached(entry, entry.deep_views, snapshot, depth, side)
        entry.views.clear()
        entry.views_of = snapshot
    return _cached(entry, entry.views, snapshot, depth, side)


def _cached(
    entry: Entry, views: dict[tuple[int, Side], BookView], snapshot: Snapshot, depth: int, side: Side
) -> BookView:
    key = (depth, side)
    view = views.get(key)
    if view is None:
        if len(views) >= MAX_VIEWS:
            views.clear()
        view = views[key] = render(names_of(entry), snapshot, depth, side)
    return view


def rerender(entry: Entry, now_ms: int, max_silence_ms: int) -> None:
    """A change message updated ``entry``: render its new views now, while the snapshot's bytes are
    still in the CPU's caches, if readers used the old ones; else just let the old ones go.

    With books changing faster than they are read, most reads would otherwise find a new snapshot
    and render it from memory that has gone cold; a book nobody reads stops being rendered after
    one change. A read still checks that a view belongs to the replica it serves.
    """
    if not entry.views:
        entry.views_of = None
        entry.views_read = False
        return
    snapshot = entry.served(now_ms, max_silence_ms)
    if snapshot is entry.views_of:
        return  # another replica changed: the views of the one served still hold
    keys = list(entry.views) if entry.views_read else []
    entry.views.clear()
    entry.views_of = None
    entry.views_read = False
    if snapshot is None or not keys:
        return
    entry.views_of = snapshot
    names = names_of(entry)
    for depth, side in keys:
        entry.views[depth, side] = render(names, snapshot, depth, side)


def render(names_json: bytes, snapshot: Snapshot, depth: int, side: Side) -> BookView:
    """The view of ``snapshot`` for ``depth`` and ``side``; ``names_json`` is the book's
    :func:`names_json`. It runs for most snapshots of a book being read, so it calls nothing it can
    do without (``min`` and ``max`` alone cost as much as formatting the head)."""
    if side is Side.BOTH:
        truncated = (snapshot.more_bids and snapshot.bid_count < depth) or (
            snapshot.more_asks and snapshot.ask_count < depth
        )
    elif side is Side.BIDS:
        truncated = snapshot.more_bids and snapshot.bid_count < depth
    else:
        truncated = snapshot.more_asks and snapshot.ask_count < depth
    if depth > snapshot.depth:  # the ETag names the depth actually served
        depth = snapshot.depth or 1
    event_time, ingest_time, update_id = snapshot.event_time, snapshot.ingest_time, snapshot.update_id
    confirmed_time = snapshot.confirmed_time
    head = (
        b'%b"update_id":%d,"event_time":%b,"ingest_time":%b,"confirmed_time":%b,"publish_time":%d,"age_ms":'
        % (
            names_json,
            update_id,
            b"null" if event_time is None else b"%d" % event_time,
            b"null" if ingest_time is None else b"%d" % ingest_time,
            b"null" if confirmed_time is None else b"%d" % confirmed_time,
            snapshot.publish_time,
        )
    )
    state = b',"replica":%d,"status":%b,"truncated":%b' % (
        snapshot.replica,
        _STATUS_JSON[snapshot.status],
        b"true" if truncated else b"false",
    )
    tail: tuple[bytes | memoryview, ...]
    if side is Side.BOTH:
        tail = (state + b',"bids":[', snapshot.bids(depth), b'],"asks":[', snapshot.asks(depth), b"]}")
    elif side is Side.BIDS:
        tail = (state + b',"bids":[', snapshot.bids(depth), b"]}")
    else:
        tail = (state + b',"asks":[', snapshot.asks(depth), b"]}")
    etag = f'W/"{update_id}.{snapshot.replica}.{depth}.{_SIDE_NAMES[side]}{".d" if snapshot.deep else ""}"'
    return BookView(head, tail, etag, snapshot.known_time, truncated)


def names_json(book: BookKey) -> bytes:
    """``{"exchange":...,"market":...,``: how every response about ``book`` starts."""
    return b'{"exchange":%b,"market":%b,' % (orjson.dumps(book.exchange), orjson.dumps(book.market))


def names_of(entry: Entry) -> bytes:
    """The entry's :func:`names_json`, rendered on its first view and kept with it."""
    names = entry.names_json
    if names is None:
        names = entry.names_json = names_json(entry.book)
    return names


_STATUS_JSON = {status: orjson.dumps(status.label) for status in BookStatus}
_SIDE_NAMES = {side: side.name.lower() for side in Side}
