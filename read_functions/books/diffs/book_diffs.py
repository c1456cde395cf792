"""Diffs of a book's best levels between two heads, as the multiplexed stream sends them: exact,
mergeable and checked by a checksum. Pure: no cache, no clock, no I/O.

A client in diff mode holds the best ``depth`` levels a side of one replica. A :class:`Diff` takes
that book from one head to the next: every level of the new top ``depth`` that is not in the old
one with the same quantity (a new price, or a new quantity), and every price of the old top
``depth`` that is not in the new one, with quantity ``"0"`` (deleted, or fallen out of the depth
the client follows). Applying it (set each price's quantity, drop the zeros, keep the best
``depth``) gives exactly the new top ``depth``, and diffs compose by "the last one to name a price
wins" (:func:`merge`), so a merged diff across messages a client missed is as exact.

When the new head is one delta of the old (the publish path's own change message,
:mod:`book_store.delta`), the diff is read off the delta's operations (:func:`side_changes`): the
work is the levels that changed, not the two tops compared. Such a diff may name a level again at
the quantity it had, or a price the client never held with ``"0"`` (a level that came and went
within the change), which changes nothing. The operations replayed on the client's view must give
the new top, else (and for any other new head: a whole snapshot, a gap) the tops are compared.

Levels are handled as the snapshot stores them, the bytes of each ``["price","qty"]`` JSON item
(here without its brackets, ``"price","qty"``): never parsed, never re-encoded, so a price
reaches the client as the venue wrote it. A price is the item's bytes up to its comma.

The checksum (:func:`checksum`, defined for clients in docs/api.md) is the CRC-32 of the best
:data:`CHECKSUM_LEVELS` levels a side (fewer when the book or the depth holds fewer), written
``price:qty`` with the exact strings, joined by ``,``, bids then ``|`` then asks.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import NamedTuple

import orjson

from book_store.codec import Snapshot
from book_store.delta import DELETE, INSERT, REPLACE, TRUNCATE, Delta, Op, follows
from ladder_process.errors import StoreError

CHECKSUM_LEVELS = 10
"""Levels a side the checksum covers."""
_ZERO = b',"0"'
"""What follows a price whose level goes."""
_UNSEEN = b""
"""A place in a client's view whose level came up from below it (see :func:`side_changes`): no
item is empty."""


class Diff(NamedTuple):
    """One replica's best levels from ``prev_update_id`` to ``update_id`` (see the module's doc)."""

    replica: int
    prev_update_id: int
    update_id: int
    bids: tuple[bytes, ...]
    """Changed levels as ``"price","qty"`` items, a deleted one with quantity ``"0"``."""
    asks: tuple[bytes, ...]
    checksum: int
    truncated: bool
    event_time: int | None
    ingest_time: int | None
    confirmed_time: int | None
    publish_time: int
    known_time: int
    """When the venue state after the diff was last known (``age_ms`` counts from here)."""

    @property
    def size(self) -> int:
        """Levels it changes."""
        return len(self.bids) + len(self.asks)


def top(snapshot: Snapshot, depth: int) -> tuple[list[bytes], list[bytes]]:
    """The best ``depth`` bids and asks of ``snapshot`` as ``"price","qty"`` items, best first."""
    return _items(snapshot.bids(depth)), _items(snapshot.asks(depth))


def _items(blob: bytes | memoryview) -> list[bytes]:
    raw = bytes(blob)
    return raw[1:-1].split(b"],[") if raw else []


def _price(item: bytes) -> bytes:
    return item[: item.index(b",")]


def diff_side(old: Sequence[bytes], new: Sequence[bytes]) -> list[bytes]:
    """What turns the levels ``old`` into ``new`` (see the module's doc)."""
    before = set(old)
    changed = [item for item in new if item not in before]
    after = set(new)
    gone = [item for item in old if item not in after]
    if gone:
        kept = {_price(item) for item in changed}
        changed += [price + _ZERO for price in map(_price, gone) if price not in kept]
    return changed


def delta_changes(
    old: Snapshot,
    old_top: tuple[list[bytes], list[bytes]],
    new: Snapshot,
    new_top: tuple[list[bytes], list[bytes]],
    depth: int,
) -> tuple[tuple[bytes, ...], tuple[bytes, ...]] | None:
    """The diff's levels of each side, from the publish path's own change message: when ``new`` is
    the head one delta made of ``old`` (:mod:`book_store.delta`), its operations say what changed,
    so the work is the levels that changed, not the two tops compared. None when ``new`` is not
    such a head, or its operations do not account for ``new_top`` (the caller compares the tops)."""
    if not isinstance(new, Delta) or follows(old, new) is not True:
        return None
    try:
        bid_ops, ask_ops = new.operations()
    except StoreError:
        return None
    limit = min(depth, new.cap)
    bids = side_changes(old_top[0], bid_ops, new_top[0], limit)
    if bids is None:
        return None
    asks = side_changes(old_top[1], ask_ops, new_top[1], limit)
    return None if asks is None else (bids, asks)


def side_changes(
    old: list[bytes], ops: Sequence[Op], new: list[bytes], limit: int
) -> tuple[bytes, ...] | None:
    """What turns ``old`` (a client's levels of one side, ``"price","qty"`` items, best first) into
    ``new``, from the operations that turned the head's side into the new one (see
    :mod:`book_store.delta`), applied to the client's view of at most ``limit`` levels:

    - ``REPLACE``/``INSERT`` at i inside the view: that level's price is set to its quantity;
    - ``DELETE`` at i inside the view, a ``TRUNCATE``, or an ``INSERT`` pushing the view's last
      level past ``limit``: the level leaves the view, its price goes to ``"0"``;
    - a ``DELETE`` inside the view pulls a level up from below it: that place is set from ``new``
      at the end, as is any place the view still lacks then;
    - an operation past the view changes nothing in it.

    The last word on a price wins. The view, completed, must then equal ``new`` (else None: the
    caller compares the tops instead), so what is sent is exact whatever the operations were."""
    view = old[:]
    out: dict[bytes, bytes] = {}
    try:
        for kind, index, level in ops:
            if index >= limit and kind != TRUNCATE:
                continue  # past the view
            if kind == REPLACE:
                item = level[1:-1]
                price = _price(item)
                gone = view[index]
                view[index] = out[price] = item
                if not gone.startswith(price) and gone is not _UNSEEN:  # (a price ends with its quote)
                    _leave(out, gone)
            elif kind == INSERT:
                if index > len(view):
                    return None
                item = level[1:-1]
                view.insert(index, item)
                out[_price(item)] = item
                if len(view) > limit:
                    _leave(out, view.pop())
            elif kind == DELETE:
                _leave(out, view.pop(index))
                view.append(_UNSEEN)
            elif index < len(view):  # TRUNCATE
                for gone in view[index:]:
                    _leave(out, gone)
                del view[index:]
    except (IndexError, ValueError):  # an index past the view, a level that is no item
        return None
    size = len(new)
    if len(view) < size:
        view += [_UNSEEN] * (size - len(view))
    elif len(view) > size:
        if any(gone is not _UNSEEN for gone in view[size:]):
            return None
        del view[size:]
    if _UNSEEN in view:
        for at in range(view.index(_UNSEEN), size):
            if view[at] is _UNSEEN:
                item = view[at] = new[at]
                out[_price(item)] = item
    if view != new:
        return None
    return tuple(out.values())


def _leave(out: dict[bytes, bytes], gone: bytes) -> None:
    """``gone`` left the client's view: its price goes to ``"0"`` (unless the client never had it)."""
    if gone is not _UNSEEN:
        price = _price(gone)
        out[price] = price + _ZERO


def checksum(bids: Sequence[bytes], asks: Sequence[bytes]) -> int:
    """The CRC-32 of the best :data:`CHECKSUM_LEVELS` of ``bids`` and ``asks`` (items, best first)."""
    text = b"|".join(
        b",".join(item[1:-1] for item in side[:CHECKSUM_LEVELS]).replace(b'","', b":")
        for side in (bids, asks)
    )
    return zlib.crc32(text)


def truncated(snapshot: Snapshot, depth: int) -> bool:
    """A side holds fewer than ``depth`` levels while the venue may hold more (as a read says)."""
    return (snapshot.more_bids and snapshot.bid_count < depth) or (
        snapshot.more_asks and snapshot.ask_count < depth
    )


def diff(
    old: Snapshot, old_top: tuple[list[bytes], list[bytes]], new: Snapshot, depth: int
) -> tuple[Diff, tuple[list[bytes], list[bytes]]]:
    """The diff from ``old`` (whose :func:`top` is ``old_top``) to ``new`` at ``depth``, and ``new``'s top:
    from the delta that made ``new`` of ``old`` when there is one (:func:`delta_changes`), else by
    comparing the two tops."""
    new_top = bids, asks = top(new, depth)
    changed = delta_changes(old, old_top, new, new_top, depth)
    if changed is None:
        changed = tuple(diff_side(old_top[0], bids)), tuple(diff_side(old_top[1], asks))
    changes = Diff(
        new.replica,
        old.update_id,
        new.update_id,
        changed[0],
        changed[1],
        checksum(bids, asks),
        truncated(new, depth),
        new.event_time,
        new.ingest_time,
        new.confirmed_time,
        new.publish_time,
        new.known_time,
    )
    return changes, new_top


def merge(diffs: Sequence[Diff]) -> Diff:
    """One diff with the effect of ``diffs`` (consecutive: each follows the one before)."""
    if len(diffs) == 1:
        return diffs[0]
    bids: dict[bytes, bytes] = {}
    asks: dict[bytes, bytes] = {}
    for each in diffs:
        for item in each.bids:
            bids[_price(item)] = item
        for item in each.asks:
            asks[_price(item)] = item
    last = diffs[-1]
    return last._replace(
        prev_update_id=diffs[0].prev_update_id, bids=tuple(bids.values()), asks=tuple(asks.values())
    )


class Message(NamedTuple):
    """A rendered message of the multiplexed stream: ``head + age_ms + tail``."""

    head: bytes
    tail: bytes
    known_time: int

    def body(self, now_ms: int) -> bytes:
        return b"%b%d%b" % (self.head, max(0, now_ms - self.known_time), self.tail)


def render_diff(names: bytes, changes: Diff) -> Message:
    """A ``diff`` message; ``names`` is the book's :func:`~read_functions.books.render.names_json`."""
    head = b'%b"type":"diff","replica":%d,"prev_update_id":%d,"update_id":%d,%b"age_ms":' % (
        names,
        changes.replica,
        changes.prev_update_id,
        changes.update_id,
        _times(changes.event_time, changes.ingest_time, changes.confirmed_time, changes.publish_time),
    )
    tail = b',"status":"synced","truncated":%b,"checksum":%d,"bids":[%b],"asks":[%b]}' % (
        _BOOL[changes.truncated],
        changes.checksum,
        _levels(changes.bids),
        _levels(changes.asks),
    )
    return Message(head, tail, changes.known_time)


def render_snapshot(
    names: bytes, snapshot: Snapshot, depth: int, levels: tuple[list[bytes], list[bytes]]
) -> Message:
    """A diff-mode ``snapshot`` message of ``snapshot``'s best ``depth`` levels (``levels``: its
    :func:`top`)."""
    bids, asks = levels
    head = b'%b"type":"snapshot","replica":%d,"update_id":%d,%b"age_ms":' % (
        names,
        snapshot.replica,
        snapshot.update_id,
        _times(snapshot.event_time, snapshot.ingest_time, snapshot.confirmed_time, snapshot.publish_time),
    )
    tail = b',"status":"synced","truncated":%b,"checksum":%d,"bids":[%b],"asks":[%b]}' % (
        _BOOL[truncated(snapshot, depth)],
        checksum(bids, asks),
        _levels(bids),
        _levels(asks),
    )
    return Message(head, tail, snapshot.known_time)


def render_status(names: bytes, status: str) -> bytes:
    """A ``status`` message: the book may not be served now (the client's copy is void until the
    next snapshot)."""
    return b'%b"type":"status","status":%b}' % (names, orjson.dumps(status))


def _times(
    event_time: int | None, ingest_time: int | None, confirmed_time: int | None, publish_time: int
) -> bytes:
    return b'"event_time":%b,"ingest_time":%b,"confirmed_time":%b,"publish_time":%d,' % (
        _int(event_time),
        _int(ingest_time),
        _int(confirmed_time),
        publish_time,
    )


def _int(value: int | None) -> bytes:
    return b"null" if value is None else b"%d" % value


def _levels(items: Sequence[bytes]) -> bytes:
    return b"[%b]" % b"],[".join(items) if items else b""


_BOOL = {True: b"true", False: b"false"}
