"""Book responses as bytes, rendered from a snapshot and nothing else: pure, no cache, no I/O.

A book response body is ``head + age_ms + tail``. ``head`` (exchange, market and the snapshot's
times) and ``tail`` (replica, status, ``truncated`` and views of the level blobs) depend only on the
snapshot, the depth and the side, so a cache entry (:mod:`read_functions.books.entry`) renders them
once per served snapshot and every request until the next snapshot reuses them; only ``age_ms``
is formatted per request. No level is ever parsed or re-encoded here.

``truncated`` is true when a side carries fewer levels than asked while the venue may hold more
(the snapshot's ``MORE_*`` flags): a reader then knows the answer is not the venue's full top-N.
A head view that is truncated is where a read looks for the replica's deep snapshot instead.

A tops answer (``GET /v1/tops``) lists every book a tenant subscribes to, so a book's top is
rendered the same way: two pre-rendered halves around its ``age_ms``, the stored level bytes never
parsed.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import orjson

from book_store.codec import BookStatus, Snapshot
from book_store.schema import BookKey


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


class TopView(NamedTuple):
    """The rendered top of one snapshot: ``head + age_ms + tail`` is its JSON object."""

    snapshot: Snapshot
    head: bytes
    tail: bytes
    since: int
    """When the venue state it shows was last known (its ``age_ms`` counts from here)."""


def render_top(names: bytes, snapshot: Snapshot) -> TopView:
    """The top of ``snapshot`` (best bid and ask), ``names`` being the book's :func:`names_json`."""
    # A side with no level while the venue may hold some is cut short, as a book read says.
    truncated = (snapshot.bid_count == 0 and snapshot.more_bids) or (
        snapshot.ask_count == 0 and snapshot.more_asks
    )
    head = b'%b"status":%b,"update_id":%d,"publish_time":%d,"replica":%d,"age_ms":' % (
        names,
        _SYNCED,
        snapshot.update_id,
        snapshot.publish_time,
        snapshot.replica,
    )
    tail = b',"truncated":%b,"bid":%b,"ask":%b}' % (
        b"true" if truncated else b"false",
        bytes(snapshot.bids(1)) or b"null",
        bytes(snapshot.asks(1)) or b"null",
    )
    return TopView(snapshot, head, tail, snapshot.known_time)


def render_unsynced_top(names: bytes, status: str) -> bytes:
    """A book no replica of which may be served: its names and how it is doing, no prices."""
    return b'%b"status":%b}' % (names, orjson.dumps(status))


_STATUS_JSON = {status: orjson.dumps(status.label) for status in BookStatus}
_SIDE_NAMES = {side: side.name.lower() for side in Side}
_SYNCED = orjson.dumps(BookStatus.SYNCED.label)
