"""Head deltas: a change message that carries only the levels that changed.

Theory of operation
-------------------
At a venue's real cadence a busy book gets one event per 100 ms, and an event changes ~15 levels,
most of them near the touch. Publishing the whole head (7.3 KB for 100 levels a side) to every
reader on every event would make an event cost the whole book, so a writer publishes a *delta*:
how the head a reader holds turns into the new one, position by position.

A reader keeps each replica's head as two lists of levels (each level's JSON array item,
``["price","qty"]``: :meth:`book_store.codec.Snapshot.parts`). A delta lists, per side, the
operations that turn the old list into the new one, applied in order:

- ``REPLACE i level``: the level at index i changes quantity;
- ``INSERT i level``: a level appears at index i; if the list is then longer than the delta's
  ``cap`` (the depth published), its last level falls off;
- ``DELETE i``: the level at index i goes;
- ``TRUNCATE n``: the list keeps its first n levels.

After them each side must hold exactly ``bid_count`` / ``ask_count`` levels.

**Continuity.** A delta names the update id of the message it follows (``prev_update_id``) and the
node that wrote it. It applies only to a head of the same node, replica and status at exactly that
update id, published no later than the delta; an older delta (a message that crossed a load from
the store) is skipped, and anything else is a *gap*: the reader does not guess, it falls back to
the stored snapshot (:mod:`book_store.reader` reconstructs it). Every status change, a resync, a
new book (a refresh swapped in), a changed depth and a journal too long to be worth it go as whole
snapshots instead, which replace what a reader holds.

Layout (little-endian)::

    header   <B B B H H H H H H Q Q q q q q Q I>  version (5), status, flags, cap, replica, bid_count,
                                                  ask_count, bid ops, ask ops, prev_update_id,
                                                  update_id, event_time, ingest_time, publish_time,
                                                  confirmed_time, node, length of the levels
    kinds    one byte per op, bids first          REPLACE, INSERT, DELETE or TRUNCATE
    indices  u16 per op                           the index (TRUNCATE: the length kept)
    levels   one per op, joined by newlines       the op's level (empty for DELETE and TRUNCATE)

A level is a JSON array of two JSON strings, which never holds a raw newline (JSON escapes it), so
a reader splits the levels with one ``bytes.split`` and reads the table column by column (``bytes``,
``array``): what it does per op in Python is the op itself.

Times are as in a snapshot (-1: unknown); ``flags`` are a snapshot's ``MORE_BIDS``/``MORE_ASKS``.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Final

from book_store.codec import (
    MORE_ASKS,
    MORE_BIDS,
    BookStatus,
    Snapshot,
    SnapshotMeta,
    decode_message,
    known_time,
    level_ends,
)
from ladder_process.errors import StoreError

VERSION: Final = 5
REPLACE: Final = 0
INSERT: Final = 1
DELETE: Final = 2
TRUNCATE: Final = 3
_HEADER = struct.Struct("<BBBHHHHHHQQqqqqQI")
_LITTLE_ENDIAN: Final = sys.byteorder == "little"
_STATUS_BY_CODE = {int(status): status for status in BookStatus}
CHAIN_LIMIT: Final = 16
"""Deltas a head waits with at most (past them, its levels are worked out at once)."""
_REPLICA_SIZE: Final = 2
"""Bytes of the replica a change message starts with (:func:`book_store.codec.encode_message`)."""

Op = tuple[int, int, bytes]
"""``(kind, index, level)``: a level is its JSON array item (``b'["1.5","2"]'``), ``b""`` for a
delete or a truncate."""


class Delta(Snapshot):
    """A decoded delta, and the head it makes once applied (:func:`apply_delta`): what it follows,
    and the header of the replica after it, read at once as a snapshot's plain attributes.

    A head made by a delta is kept as the head it was applied to (``_prev``) and this delta: its
    levels are worked out only when a read or a stream first asks for them, by applying in one
    pass every delta since the last head whose levels are known (a book followed but not read
    costs no level per change, and one read once every ten changes applies its ten deltas at once).
    Deltas that do not fit their head (which no writer of ours sends) make that a StoreError, and
    the reader drops the book and loads it again."""

    __slots__ = ("_at", "_prev", "_raw", "_waiting", "_whole", "cap", "flags", "n_bids", "n_ops",
                 "prev_update_id")  # fmt: skip

    def __init__(self, raw: bytes, at: int = 0) -> None:
        """Read the header of the delta at ``at`` in ``raw`` (a StoreError when it is no delta, or
        not whole)."""
        try:
            (version, code, flags, cap, replica, bid_count, ask_count, n_bids, n_asks, prev_update_id,
             update_id, event_time, ingest_time, publish_time, confirmed_time, node,
             levels_len) = _HEADER.unpack_from(raw, at)  # fmt: skip
        except struct.error as exc:
            raise StoreError("delta is truncated") from exc
        if version != VERSION:
            raise StoreError(f"change message has version {version}, not a delta's {VERSION}")
        status = _STATUS_BY_CODE.get(code)
        if status is None:
            raise StoreError(f"delta has an unknown status {code}")
        if flags & ~(MORE_BIDS | MORE_ASKS):
            raise StoreError(f"delta has unknown flags {flags:#x}")
        n_ops = n_bids + n_asks
        size = at + _HEADER.size + 3 * n_ops + levels_len
        if len(raw) != size:
            raise StoreError(f"delta is {len(raw) - at} bytes, its header says {size - at}")
        self._raw = raw
        self._at = at + _HEADER.size
        self.raw = b""  # no stored bytes: the levels are the deltas' (see parts)
        self.prev_update_id: int = prev_update_id
        self.update_id = update_id
        self.event_time = None if event_time < 0 else event_time
        self.ingest_time = None if ingest_time < 0 else ingest_time
        self.publish_time = publish_time
        self.confirmed_time = None if confirmed_time < 0 else confirmed_time
        self.known_time = known_time(ingest_time, confirmed_time, publish_time)
        self.replica = replica
        self.status = status
        self.node = node
        self.flags: int = flags
        self.more_bids = flags & MORE_BIDS != 0
        self.more_asks = flags & MORE_ASKS != 0
        self.deep = False
        self.cap: int = cap
        self.bid_count = bid_count
        self.ask_count = ask_count
        self.depth = bid_count if bid_count > ask_count else ask_count
        self.n_bids: int = n_bids
        """Operations of the bids (the first ones) ..."""
        self.n_ops: int = n_ops
        """... and of both sides."""
        self.recency = (publish_time, update_id)
        self._meta = None
        self._parts = None
        self._whole: list[bytes | None] = [None, None]
        """Each side's levels joined whole, once asked for (the views of a head, its streams'
        diffs and its top ask for the same bytes)."""
        self._prev: Snapshot | None = None
        """The head this delta was applied to, until this head's levels are worked out."""
        self._waiting = 0
        """Deltas whose levels are not worked out, back to a head whose are (this one included)."""

    @property
    def waiting(self) -> bool:
        """Whether this head's levels are still to be worked out (see :meth:`parts`)."""
        return self._parts is None

    @property
    def bid_ops(self) -> list[Op]:
        return self.operations()[0]

    @property
    def ask_ops(self) -> list[Op]:
        return self.operations()[1]

    def operations(self) -> tuple[list[Op], list[Op]]:
        """The bids' operations and the asks' (a StoreError when one is of no kind known)."""
        kinds, indices, levels = self._read()
        if kinds and max(kinds) > TRUNCATE:
            raise StoreError(f"delta has an unknown operation {max(kinds)}")
        ops = list(zip(kinds, indices, levels, strict=True))
        return ops[: self.n_bids], ops[self.n_bids :]

    def _read(self) -> tuple[bytes, array[int], list[bytes]]:
        """The operations' kinds, indices and levels (a StoreError when there are not as many levels
        as operations; an unknown kind is found when applied)."""
        raw, count, at = self._raw, self.n_ops, self._at
        indices = array("H", raw[at + count : at + 3 * count])
        if not _LITTLE_ENDIAN:  # pragma: no cover - the layout is little-endian, hosts mostly are too
            indices.byteswap()
        levels = raw[at + 3 * count :].split(b"\n") if count else []
        if len(levels) != count:
            raise StoreError(f"delta has {len(levels)} levels for {count} operations")
        return raw[at : at + count], indices, levels

    def after(self, head: Snapshot) -> Delta:
        """This delta as the head it makes of ``head`` (which it must follow); a delta already
        applied elsewhere is read again, so that each head has its own."""
        delta = self
        if self._prev is not None or self._parts is not None:
            delta = Delta(self._raw, self._at - _HEADER.size)
        delta._prev = head
        waiting = 1
        if type(head) is Delta and head._parts is None:
            waiting += head._waiting
        delta._waiting = waiting
        if waiting >= CHAIN_LIMIT:
            delta.parts()
        return delta

    def apply(self, bids: list[bytes], asks: list[bytes]) -> None:
        """Apply this delta's operations to both sides' levels, in place; a StoreError when they do
        not fit (an index out of range, an unknown operation, a side that does not end at its
        count), the sides then half changed (the caller's copies, dropped)."""
        ops = zip(*self._read(), strict=False)  # as many of each: _read
        cap = self.cap
        _apply(bids, islice(ops, self.n_bids), cap)  # the bids' operations come first ...
        _apply(asks, ops, cap)  # ... the asks' are the rest
        if len(bids) != self.bid_count or len(asks) != self.ask_count:
            raise StoreError(
                f"a delta leaves {len(bids)}/{len(asks)} levels a side where it says "
                f"{self.bid_count}/{self.ask_count}"
            )

    def parts(self) -> tuple[list[bytes], list[bytes]]:
        parts = self._parts
        if parts is None:
            waiting: list[Delta] = []
            head: Snapshot = self
            while type(head) is Delta and head._parts is None:
                waiting.append(head)
                if head._prev is None:
                    raise StoreError("a delta's levels were asked for before it was applied to a head")
                head = head._prev
            bids, asks = head.parts()
            bids, asks = bids[:], asks[:]  # copied once for all the deltas waiting
            for delta in reversed(waiting):
                delta.apply(bids, asks)
            parts = self._parts = (bids, asks)
            self._prev = None
        return parts

    @property
    def bid_ends(self) -> memoryview:
        return memoryview(level_ends(self.parts()[0]))

    @property
    def ask_ends(self) -> memoryview:
        return memoryview(level_ends(self.parts()[1]))

    def bids(self, depth: int) -> bytes:
        return self._joined(0, depth)

    def asks(self, depth: int) -> bytes:
        return self._joined(1, depth)

    def _joined(self, side: int, depth: int) -> bytes:
        """The best ``depth`` levels of ``side`` (0: the bids, 1: the asks) joined (a whole side's
        join is kept)."""
        levels = self.parts()[side]
        if depth < len(levels):
            return b",".join(levels[:depth]) if depth > 0 else b""
        whole = self._whole[side]
        if whole is None:
            whole = self._whole[side] = b",".join(levels)
        return whole


def _apply(side: list[bytes], ops: Iterator[tuple[int, int, bytes]], cap: int) -> None:
    """Apply ``ops`` to ``side``: the read side's hot loop, so the kinds are literals (REPLACE 0,
    INSERT 1, DELETE 2, TRUNCATE 3) and an index out of range is the list's own IndexError."""
    kind = index = 0
    try:
        for kind, index, level in ops:
            if kind == 0:
                side[index] = level
            elif kind == 1:
                if index > len(side):
                    raise IndexError
                side.insert(index, level)
                if len(side) > cap:
                    side.pop()
            elif kind == 2:
                del side[index]
            elif kind == 3 and index <= len(side):
                del side[index:]
            else:
                raise IndexError
    except IndexError:
        raise StoreError(f"a delta's operation {kind} at {index} does not fit the head") from None


def read_change(payload: bytes | memoryview) -> Snapshot | Delta:
    """A change message's payload (past its replica): a whole snapshot or a delta (a StoreError if
    it is neither)."""
    return read_delta(payload) if len(payload) > 0 and payload[0] == VERSION else Snapshot(payload)


def read_message(message: bytes | memoryview) -> tuple[int, Snapshot | Delta]:
    """:func:`~book_store.codec.decode_message` and :func:`read_change` in one: a reader's every
    change message comes through here, and a delta's header is read where it lies in the message
    (copied once, with it)."""
    if len(message) > _REPLICA_SIZE and message[_REPLICA_SIZE] == VERSION:
        delta = Delta(message if type(message) is bytes else bytes(message), _REPLICA_SIZE)
        return delta.replica, delta
    replica, payload = decode_message(message)
    return replica, Snapshot(payload)


def encode_delta(
    meta: SnapshotMeta,
    prev_update_id: int,
    flags: int,
    cap: int,
    counts: tuple[int, int],
    bid_ops: Sequence[Op],
    ask_ops: Sequence[Op],
) -> bytes:
    """The delta that turns a head at ``prev_update_id`` into ``meta``'s, ``counts`` levels a side."""
    ops = [*bid_ops, *ask_ops]
    if ops:
        # One typed pass per column (compiled, each is a plain loop); zip(*ops) would go through
        # the interpreter's generic argument unpacking.
        places = array("H", [index for _, index, _ in ops])
        if not _LITTLE_ENDIAN:  # pragma: no cover - the layout is little-endian, hosts mostly are too
            places.byteswap()
        table = bytes([kind for kind, _, _ in ops]) + places.tobytes()
        joined = b"\n".join([level for _, _, level in ops])
    else:
        table = joined = b""
    header = _HEADER.pack(
        VERSION,
        meta.status,
        flags,
        cap,
        meta.replica,
        counts[0],
        counts[1],
        len(bid_ops),
        len(ask_ops),
        prev_update_id,
        meta.update_id,
        -1 if meta.event_time is None else meta.event_time,
        -1 if meta.ingest_time is None else meta.ingest_time,
        meta.publish_time,
        -1 if meta.confirmed_time is None else meta.confirmed_time,
        meta.node,
        len(joined),
    )
    return header + table + joined


def read_delta(payload: bytes | memoryview) -> Delta:
    """Inverse of :func:`encode_delta`: its header at once, its operations when first needed; a
    payload that is not a valid delta is a StoreError (of its operations: then)."""
    return Delta(payload if type(payload) is bytes else bytes(payload))


def follows(head: Snapshot, delta: Delta) -> bool | None:
    """Whether ``delta`` continues ``head`` (True), is older than it (False: skip it), or neither
    (None: a gap, or a head it cannot be applied to)."""
    if (delta.publish_time, delta.update_id) < head.recency:
        return False  # published before what the head says: a message that crossed a load
    if head.deep or head.node != delta.node or head.replica != delta.replica:
        return None
    if head.status is not delta.status:
        return None  # a status change comes whole
    if head.update_id != delta.prev_update_id:
        return False if delta.update_id <= head.update_id else None
    return True


def apply_delta(head: Snapshot, delta: Delta) -> Delta:
    """The head ``delta`` makes of ``head`` (which it must :func:`follow <follows>`); its levels are
    worked out when first asked for (:class:`Delta`)."""
    return delta.after(head)
