"""The top of a book (best bid and ask with their quantities) as bytes, for ``GET /v1/tops``.

A tops answer lists every book a tenant subscribes to, so its cost per book must be what a
book read costs at most: the top is rendered once per served snapshot and kept on the book's
cache entry, and a request only formats each book's ``age_ms`` between the two pre-rendered
halves. The levels are the stored level bytes, never parsed.
"""

from __future__ import annotations

from typing import NamedTuple

import orjson

from book_store.codec import BookStatus, Snapshot
from read_functions.book_cache import Entry
from read_functions.book_view import names_of


class TopView(NamedTuple):
    """The rendered top of one snapshot: ``head + age_ms + tail`` is its JSON object."""

    snapshot: Snapshot
    head: bytes
    tail: bytes
    since: int
    """When the venue state it shows was last known (its ``age_ms`` counts from here)."""


def top_of(entry: Entry, snapshot: Snapshot) -> TopView:
    """The entry's top of ``snapshot`` (the replica served), rendered on first use."""
    top = entry.top
    if top is None or top.snapshot is not snapshot:
        top = entry.top = _render(names_of(entry), snapshot)
    return top


def unsynced_top(entry: Entry, status: str) -> bytes:
    """A book no replica of which may be served: its names and how it is doing, no prices."""
    return b'%b"status":%b}' % (names_of(entry), orjson.dumps(status))


def _render(names: bytes, snapshot: Snapshot) -> TopView:
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


_SYNCED = orjson.dumps(BookStatus.SYNCED.label)
