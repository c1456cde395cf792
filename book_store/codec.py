"""Snapshot codec: the bytes an ingest node stores and a reader slices.

Theory of operation
-------------------
The read path must answer ``depth=N`` for any N up to the stored depth without parsing or
re-encoding a single level. So the writer stores each side as one blob of JSON array items,
``["p","q"],["p","q"],...`` (best level first), together with the end offset of every level.
Answering depth N is then ``blob[:ends[N-1]]``, and a response is a handful of byte joins.

Layout (little-endian)::

    header  <B Q q q q q H B B H H I I Q>  version, update_id, event_time, ingest_time, publish_time,
                                           confirmed_time, replica, status, flags, n_bids, n_asks,
                                           len(bids), len(asks), node
    bid_ends   n_bids x u32            end offset of each bid level inside the bids blob
    ask_ends   n_asks x u32
    bids blob, asks blob

``event_time``, ``ingest_time`` and ``confirmed_time`` are -1 when unknown. ``ingest_time`` is when
the node received the last venue event applied, ``confirmed_time`` when it last confirmed with the
venue that nothing changed since (a quiet book's stall check); the later of the two is how old the
venue state behind the snapshot is, ``publish_time`` only when it was written. The metadata lives
in the fixed header so that a reader can choose between replicas (status, update id, publish
time) with one ``struct.unpack_from`` and no JSON at all.

``node`` is the tag of the ingest node (one process, from its start to its end) that wrote the
snapshot, so that a reader can take the node's heartbeat (:mod:`book_store.liveness`) as word that
a quiet replica is still kept. Version 3, the same header without ``node``, is still read (as
written by no known node), so readers can be upgraded before or after the nodes.

Flags say how far a side may be trusted and which of a replica's two snapshots this is:

- ``MORE_BIDS`` / ``MORE_ASKS``: the venue may hold levels past the last one stored (the side was
  cut at the published depth, or at the edge of what the last REST snapshot covered). A side
  without the flag is the venue's whole side, so a reader asking for more levels than it holds
  is not being short-changed; one with the flag is ``truncated`` for a deeper ask.
- ``DEEP``: a book published deeper than the head depth has two snapshots per replica, the head
  (the top levels, on every update) and the deep one (every level, conflated to a bounded rate);
  each is complete and atomic at its own ``update_id``.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence
from enum import IntEnum
from typing import NamedTuple, final

from ladder_process.errors import StoreError

VERSION = 4
_HEADER = struct.Struct("<BQqqqqHBBHHIIQ")
_HEADER_V3 = struct.Struct("<BQqqqqHBBHHII")
_END = struct.Struct("<I")


class BookStatus(IntEnum):
    """A replica's state as its ingest node reports it."""

    SYNCED = 1
    RESYNCING = 2
    STALE = 3
    REFUSED = 4
    """The venue refuses the node's key for this book (bad, missing or over its connection limit):
    nothing will be served until an operator acts, so readers are told so instead of "retry"."""

    @property
    def label(self) -> str:
        return self.name.lower()


_STATUS_BY_CODE = {int(status): status for status in BookStatus}

MORE_BIDS = 1
MORE_ASKS = 2
DEEP = 4
_KNOWN_FLAGS = MORE_BIDS | MORE_ASKS | DEEP


@final
class SnapshotMeta:
    """What a snapshot says about itself, besides its levels.

    A plain class, not a named tuple: a node builds one for every event it publishes, and compiled,
    a class is built natively, where a named tuple's ``__new__`` runs in the interpreter."""

    __slots__ = ("confirmed_time", "event_time", "ingest_time", "node", "publish_time", "replica", "status",
                 "update_id")  # fmt: skip

    def __init__(
        self,
        update_id: int,
        event_time: int | None,
        ingest_time: int | None,
        publish_time: int,
        replica: int,
        status: BookStatus,
        confirmed_time: int | None = None,
        node: int = 0,
    ) -> None:
        self.update_id = update_id
        self.event_time = event_time
        self.ingest_time = ingest_time
        self.publish_time = publish_time
        self.replica = replica
        self.status = status
        self.confirmed_time = confirmed_time
        self.node = node
        """The tag of the ingest node that wrote it (0: unknown)."""

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _META_FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SnapshotMeta):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"SnapshotMeta({', '.join(f'{name}={getattr(self, name)!r}' for name in _META_FIELDS)})"


_META_FIELDS = (
    "update_id", "event_time", "ingest_time", "publish_time", "replica", "status", "confirmed_time", "node"
)  # fmt: skip
""":class:`SnapshotMeta`'s fields, in the order it takes them."""


class EncodedSide(NamedTuple):
    """One side's part of a snapshot: its level count, end offsets and blob."""

    level_count: int
    ends: bytes
    blob: bytes


def known_time(ingest_time: int, confirmed_time: int, publish_time: int) -> int:
    """When the venue state behind a book was last known (times as stored, -1: unknown): the later
    of its ingest and its confirmation, else its publish time. ``age_ms`` counts from here."""
    known = ingest_time if ingest_time > confirmed_time else confirmed_time
    return known if known >= 0 else publish_time


def encode_side(levels: Sequence[bytes]) -> EncodedSide:
    """Encode one side's pre-encoded levels (``b'["p","q"]'``, best first)."""
    return EncodedSide(len(levels), _ends(levels).tobytes(), b",".join(levels))


def assemble_snapshot(meta: SnapshotMeta, bids: EncodedSide, asks: EncodedSide, flags: int = 0) -> bytes:
    """The snapshot of two encoded sides (a writer may encode them in separate event-loop turns)."""
    header = _HEADER.pack(
        VERSION,
        meta.update_id,
        -1 if meta.event_time is None else meta.event_time,
        -1 if meta.ingest_time is None else meta.ingest_time,
        meta.publish_time,
        -1 if meta.confirmed_time is None else meta.confirmed_time,
        meta.replica,
        meta.status,
        flags,
        bids.level_count,
        asks.level_count,
        len(bids.blob),
        len(asks.blob),
        meta.node,
    )
    return b"".join((header, bids.ends, asks.ends, bids.blob, asks.blob))


def encode_snapshot(
    meta: SnapshotMeta, bids: Sequence[bytes], asks: Sequence[bytes], flags: int = 0
) -> bytes:
    """Encode pre-encoded levels (``b'["p","q"]'``, best first), their metadata and ``flags``."""
    return assemble_snapshot(meta, encode_side(bids), encode_side(asks), flags)


def level_ends(levels: Sequence[bytes]) -> array[int]:
    """The end offset of each of ``levels`` in their join with commas (the codec's level index)."""
    return _ends(levels)


def _ends(levels: Sequence[bytes]) -> array[int]:
    ends = array("I")
    end = -1  # the first level has no comma before it
    for level in levels:
        end += len(level) + 1
        ends.append(end)
    return ends


class Snapshot:
    """A view over stored bytes that decodes only what a caller asks for.

    A reader receives every published snapshot of the books it follows but serves few of them, so
    construction only unpacks the fixed header and checks version, status and length (a snapshot
    that would fail later is rejected here, never while serving). The header's fields are plain
    attributes, because choosing a replica and rendering a response read them for every snapshot
    served; levels are sliced out of ``raw`` per call.
    """

    __slots__ = ("_asks_len", "_bids_len", "_header", "_meta", "_parts", "ask_count", "bid_count",
                 "confirmed_time", "deep", "depth", "event_time", "ingest_time", "known_time", "more_asks",
                 "more_bids", "node", "publish_time", "raw", "recency", "replica", "status",
                 "update_id")  # fmt: skip

    def __init__(self, raw: bytes | memoryview) -> None:
        try:
            version = raw[0]
            if version == VERSION:
                (_, update_id, event_time, ingest_time, publish_time, confirmed_time, replica, code, flags,
                 n_bids, n_asks, bids_len, asks_len, node) = _HEADER.unpack_from(raw)  # fmt: skip
                header_size = _HEADER.size
            elif version == 3:
                (_, update_id, event_time, ingest_time, publish_time, confirmed_time, replica, code, flags,
                 n_bids, n_asks, bids_len, asks_len) = _HEADER_V3.unpack_from(raw)  # fmt: skip
                node, header_size = 0, _HEADER_V3.size
            else:
                raise StoreError(
                    f"stored snapshot has codec version {version}, this reader knows 3 and {VERSION}"
                )
        except (struct.error, IndexError) as exc:
            raise StoreError("stored snapshot is truncated") from exc
        status = _STATUS_BY_CODE.get(code)
        if status is None:
            raise StoreError(f"stored snapshot has an unknown status {code}")
        if flags & ~_KNOWN_FLAGS:
            raise StoreError(f"stored snapshot has unknown flags {flags:#x}")
        size = header_size + 4 * (n_bids + n_asks) + bids_len + asks_len
        if len(raw) != size:
            raise StoreError(f"stored snapshot is {len(raw)} bytes, its header says {size}")
        self.raw = raw
        self._header: int = header_size
        self.node: int = node
        """The tag of the ingest node that wrote it (0: unknown, as in version 3)."""
        self.update_id: int = update_id
        self.event_time: int | None = None if event_time < 0 else event_time
        self.ingest_time: int | None = None if ingest_time < 0 else ingest_time
        self.publish_time: int = publish_time
        self.confirmed_time: int | None = None if confirmed_time < 0 else confirmed_time
        # How old the venue state behind the snapshot is counts from here (see the module docstring).
        self.known_time: int = known_time(ingest_time, confirmed_time, publish_time)
        self.replica: int = replica
        self.status: BookStatus = status
        self.depth: int = n_bids if n_bids > n_asks else n_asks
        """Levels stored on the deeper side."""
        self.bid_count: int = n_bids
        self.ask_count: int = n_asks
        self.more_bids: bool = bool(flags & MORE_BIDS)
        """The venue may hold bids past the last one stored."""
        self.more_asks: bool = bool(flags & MORE_ASKS)
        self.deep: bool = bool(flags & DEEP)
        """The replica's deep snapshot (see the module docstring), not its head."""
        self._meta: SnapshotMeta | None = None
        self._parts: tuple[list[bytes], list[bytes]] | None = None
        self._bids_len: int = bids_len
        self._asks_len: int = asks_len
        # Of two snapshots of one replica, the greater is the newer (compared on every message).
        self.recency: tuple[int, int] = (publish_time, update_id)

    @property
    def meta(self) -> SnapshotMeta:
        """The header's fields as one value (built on first use)."""
        meta = self._meta
        if meta is None:
            meta = self._meta = SnapshotMeta(
                self.update_id,
                self.event_time,
                self.ingest_time,
                self.publish_time,
                self.replica,
                self.status,
                self.confirmed_time,
                self.node,
            )
        return meta

    @property
    def bid_ends(self) -> memoryview:
        """End offset of each bid level inside the bids blob."""
        return memoryview(self.raw)[self._header : self._header + 4 * self.bid_count].cast("I")

    @property
    def ask_ends(self) -> memoryview:
        """End offset of each ask level inside the asks blob."""
        start = self._header + 4 * self.bid_count
        return memoryview(self.raw)[start : start + 4 * self.ask_count].cast("I")

    def parts(self) -> tuple[list[bytes], list[bytes]]:
        """Each side's levels, best first, each its JSON array item (``b'["1.5","2"]'``): what a
        delta (:mod:`book_store.delta`) is applied to (split once)."""
        parts = self._parts
        if parts is None:
            parts = self._parts = (_split(self.bids(self.bid_count)), _split(self.asks(self.ask_count)))
        return parts

    def bids(self, depth: int) -> bytes | memoryview:
        """The best ``depth`` bids as JSON array items (no brackets), a view into ``raw``.

        A view, not a copy: a response joins it straight into its body, and a cached book holds
        its levels once."""
        n_bids, header = self.bid_count, self._header
        start = header + 4 * (n_bids + self.ask_count)
        return memoryview(self.raw)[start : start + self._cut(header, n_bids, self._bids_len, depth)]

    def asks(self, depth: int) -> bytes | memoryview:
        """The best ``depth`` asks as JSON array items (no brackets), a view into ``raw``."""
        n_bids, n_asks, header = self.bid_count, self.ask_count, self._header
        start = header + 4 * (n_bids + n_asks) + self._bids_len
        ends = header + 4 * n_bids
        return memoryview(self.raw)[start : start + self._cut(ends, n_asks, self._asks_len, depth)]

    def _cut(self, ends: int, count: int, blob_len: int, depth: int) -> int:
        """Bytes of the best ``depth`` of a side's ``count`` levels, whose end offsets start at
        ``ends`` in ``raw`` and whose blob is ``blob_len`` bytes (never more than that)."""
        if depth >= count:
            return blob_len
        if depth <= 0:
            return 0
        end: int = _END.unpack_from(self.raw, ends + 4 * (depth - 1))[0]
        return end if end < blob_len else blob_len


def _split(items: bytes | memoryview) -> list[bytes]:
    """``["a","b"],["c","d"]`` -> ``[b'["a","b"]', b'["c","d"]']`` (a level holds no bracket inside)."""
    if not items:
        return []
    return [b"[%b]" % inner for inner in bytes(items)[1:-1].split(b"],[")]


# -- change messages ---------------------------------------------------------------------------
# A writer publishes ``<replica as 2 bytes><snapshot>`` on a book's change channel, so that a
# subscribed reader updates its cache from the message alone (book_store.writer).

_REPLICA = struct.Struct("<H")


def encode_message(replica: int, snapshot: bytes) -> bytes:
    """The change message: which replica, then its snapshot."""
    return _REPLICA.pack(replica) + snapshot


def tombstone(replica: int, *, deep: bool, now_ms: int, node: int = 0) -> bytes:
    """The snapshot that announces a removed one: empty, ``resyncing``, published ``now_ms`` by
    ``node``."""
    meta = SnapshotMeta(0, None, None, now_ms, replica, BookStatus.RESYNCING, node=node)
    return encode_snapshot(meta, (), (), DEEP if deep else 0)


def decode_message(message: bytes | memoryview) -> tuple[int, memoryview]:
    """Inverse of :func:`encode_message` (the snapshot is a view into ``message``: a reader applies
    thousands a second); a message too short to name its replica is a StoreError."""
    if len(message) < _REPLICA.size:
        raise StoreError(f"change message is {len(message)} bytes, too short to name its replica")
    return _REPLICA.unpack_from(message)[0], memoryview(message)[_REPLICA.size :]
