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
from collections.abc import Sequence
from typing import Final

from book_store.codec import (
    MORE_ASKS,
    MORE_BIDS,
    BookStatus,
    Snapshot,
    SnapshotMeta,
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

Op = tuple[int, int, bytes]
"""``(kind, index, level)``: a level is its JSON array item (``b'["1.5","2"]'``), ``b""`` for a
delete or a truncate."""


class Delta:
    """A decoded delta: what it follows and what it says of the replica (its header's fields, named
    as a snapshot's), read at once; its operations are read from the columns they arrived in only
    when its levels are needed (a book followed but not read costs no level per change)."""

    __slots__ = ("_ops", "_raw", "ask_count", "bid_count", "cap", "confirmed_time", "event_time", "flags",
                 "ingest_time", "known_time", "n_bids", "n_ops", "node", "prev_update_id", "publish_time",
                 "replica", "status", "update_id")  # fmt: skip

    def __init__(self, raw: bytes) -> None:
        """Read the header of ``raw`` (a StoreError when it is no delta, or not whole)."""
        try:
            (version, code, flags, cap, replica, bid_count, ask_count, n_bids, n_asks, prev_update_id,
             update_id, event_time, ingest_time, publish_time, confirmed_time, node,
             levels_len) = _HEADER.unpack_from(raw)  # fmt: skip
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
        size = _HEADER.size + 3 * n_ops + levels_len
        if len(raw) != size:
            raise StoreError(f"delta is {len(raw)} bytes, its header says {size}")
        self._raw = raw
        self.prev_update_id: int = prev_update_id
        self.update_id: int = update_id
        self.event_time: int | None = None if event_time < 0 else event_time
        self.ingest_time: int | None = None if ingest_time < 0 else ingest_time
        self.publish_time: int = publish_time
        self.confirmed_time: int | None = None if confirmed_time < 0 else confirmed_time
        self.known_time: int = known_time(ingest_time, confirmed_time, publish_time)
        """As a snapshot's (:class:`book_store.codec.Snapshot`)."""
        self.replica: int = replica
        self.status: BookStatus = status
        self.node: int = node
        self.flags: int = flags
        self.cap: int = cap
        self.bid_count: int = bid_count
        self.ask_count: int = ask_count
        self.n_bids: int = n_bids
        """Operations of the bids (the first ones) ..."""
        self.n_ops: int = n_ops
        """... and of both sides."""
        self._ops: tuple[bytes, array[int], list[bytes]] | None = None

    @property
    def meta(self) -> SnapshotMeta:
        """The header's fields as a snapshot's (built on use: logs and tests)."""
        return SnapshotMeta(
            self.update_id,
            self.event_time,
            self.ingest_time,
            self.publish_time,
            self.replica,
            self.status,
            self.confirmed_time,
            self.node,
        )

    @property
    def bid_ops(self) -> list[Op]:
        kinds, indices, levels = self._read()
        n = self.n_bids
        return list(zip(kinds[:n], indices[:n], levels[:n], strict=True))

    @property
    def ask_ops(self) -> list[Op]:
        kinds, indices, levels = self._read()
        n = self.n_bids
        return list(zip(kinds[n:], indices[n:], levels[n:], strict=True))

    def _read(self) -> tuple[bytes, array[int], list[bytes]]:
        """The operations' kinds, indices and levels (a StoreError when they are not what the
        header says)."""
        ops = self._ops
        if ops is None:
            raw, count, at = self._raw, self.n_ops, _HEADER.size
            kinds = raw[at : at + count]
            if kinds and max(kinds) > TRUNCATE:
                raise StoreError(f"delta has an unknown operation {max(kinds)}")
            indices = array("H")
            indices.frombytes(raw[at + count : at + 3 * count])
            if not _LITTLE_ENDIAN:  # pragma: no cover - the layout is little-endian, hosts mostly are too
                indices.byteswap()
            levels = raw[at + 3 * count :].split(b"\n") if count else []
            if len(levels) != count:
                raise StoreError(f"delta has {len(levels)} levels for {count} operations")
            ops = self._ops = (kinds, indices, levels)
        return ops

    def apply(self, bids: list[bytes], asks: list[bytes]) -> None:
        """Apply this delta's operations to both sides' levels, in place; a StoreError when they do
        not fit (an index out of range, a side that does not end at its count), the sides then
        half changed (the caller's copies, dropped)."""
        kinds, indices, levels = self._read()
        n, cap = self.n_bids, self.cap
        _apply(bids, zip(kinds[:n], indices[:n], levels[:n], strict=True), cap)
        _apply(asks, zip(kinds[n:], indices[n:], levels[n:], strict=True), cap)
        if len(bids) != self.bid_count or len(asks) != self.ask_count:
            raise StoreError(
                f"a delta leaves {len(bids)}/{len(asks)} levels a side where it says "
                f"{self.bid_count}/{self.ask_count}"
            )


def _apply(side: list[bytes], ops: zip[tuple[int, int, bytes]], cap: int) -> None:
    """Apply ``ops`` to ``side``: the read side's hot loop, so the kinds are
    literals (REPLACE 0, INSERT 1, DELETE 2, TRUNCATE 3) and an index out of range is the list's
    own IndexError."""
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
            elif index > len(side):
                raise IndexError
            else:
                del side[index:]
    except IndexError:
        raise StoreError(f"a delta's operation {kind} at {index} is past the head") from None


class LevelsSnapshot(Snapshot):
    """A head snapshot a reader made by applying deltas (:func:`apply_delta`): the same header and
    reads as a stored one. Its levels are worked out when first asked for (a book followed but not
    read costs no level per change): the deltas since the last head whose levels are known, applied
    in order to that head's. Deltas that do not fit it (which no writer of ours sends) make that a
    StoreError, and the reader drops the book and loads it again."""

    __slots__ = ("_base", "_pending")

    _LIMIT = 16
    """Deltas a snapshot waits with at most (past them, its levels are worked out at once)."""

    def __init__(self, delta: Delta, base: Snapshot, pending: tuple[Delta, ...]) -> None:
        self.raw = b""
        self._header = 0
        self.node = delta.node
        self.update_id = update_id = delta.update_id
        self.event_time = delta.event_time
        self.ingest_time = delta.ingest_time
        self.publish_time = publish_time = delta.publish_time
        self.confirmed_time = delta.confirmed_time
        self.known_time = delta.known_time
        self.replica = delta.replica
        self.status = delta.status
        self.bid_count = bid_count = delta.bid_count
        self.ask_count = ask_count = delta.ask_count
        self.depth = bid_count if bid_count > ask_count else ask_count
        flags = delta.flags
        self.more_bids = bool(flags & MORE_BIDS)
        self.more_asks = bool(flags & MORE_ASKS)
        self.deep = False
        self._meta = None
        self._parts = None
        self._base: Snapshot | None = base
        self._pending = pending
        self._bids_len = self._asks_len = 0
        self.recency = (publish_time, update_id)
        if len(pending) >= self._LIMIT:
            self.parts()

    def after(self, delta: Delta) -> LevelsSnapshot:
        """The snapshot ``delta`` makes of this one (which it must follow and fit)."""
        if self._parts is None and self._base is not None:
            return LevelsSnapshot(delta, self._base, (*self._pending, delta))
        return LevelsSnapshot(delta, self, (delta,))

    def parts(self) -> tuple[list[bytes], list[bytes]]:
        parts = self._parts
        if parts is None:
            assert self._base is not None  # set until the levels are worked out
            bids, asks = self._base.parts()
            bids, asks = bids[:], asks[:]  # copied once for all the deltas waiting
            for delta in self._pending:
                delta.apply(bids, asks)
            parts = self._parts = (bids, asks)
            self._base, self._pending = None, ()
        return parts

    @property
    def bid_ends(self) -> memoryview:
        return memoryview(level_ends(self.parts()[0]))

    @property
    def ask_ends(self) -> memoryview:
        return memoryview(level_ends(self.parts()[1]))

    def bids(self, depth: int) -> bytes:
        levels = self.parts()[0]
        return b",".join(levels if depth >= len(levels) else levels[: max(depth, 0)])

    def asks(self, depth: int) -> bytes:
        levels = self.parts()[1]
        return b",".join(levels if depth >= len(levels) else levels[: max(depth, 0)])


def read_change(payload: bytes | memoryview) -> Snapshot | Delta:
    """A change message's payload (past its replica): a whole snapshot or a delta (a StoreError if
    it is neither)."""
    return read_delta(payload) if len(payload) > 0 and payload[0] == VERSION else Snapshot(payload)


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
    ops = (*bid_ops, *ask_ops)
    if ops:
        kinds, indices, levels = zip(*ops, strict=True)
        places = array("H", indices)
        if not _LITTLE_ENDIAN:  # pragma: no cover - the layout is little-endian, hosts mostly are too
            places.byteswap()
        table, joined = bytes(kinds) + places.tobytes(), b"\n".join(levels)
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
    return Delta(bytes(payload))


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


def apply_delta(head: Snapshot, delta: Delta) -> LevelsSnapshot:
    """The head ``delta`` makes of ``head`` (which it must :func:`follow <follows>`); its levels are
    worked out when first asked for (:class:`LevelsSnapshot`)."""
    if isinstance(head, LevelsSnapshot):
        return head.after(delta)
    return LevelsSnapshot(delta, head, (delta,))
