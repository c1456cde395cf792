"""Snapshot codec: the bytes an ingest node stores and a reader slices.

Theory of operation
-------------------
The read path must answer ``depth=N`` for any N up to the stored depth without parsing or
re-encoding a single level. So the writer stores each side as one blob of JSON array items,
``["p","q"],["p","q"],...`` (best level first), together with the end offset of every level.
Answering depth N is then ``blob[:ends[N-1]]``, and a response is a handful of byte joins.

Layout (little-endian)::

    header  <B Q q q q H B H H I I>  version, update_id, event_time, ingest_time, publish_time,
                                     replica, status, n_bids, n_asks, len(bids), len(asks)
    bid_ends   n_bids x u32          end offset of each bid level inside the bids blob
    ask_ends   n_asks x u32
    bids blob, asks blob

``event_time`` and ``ingest_time`` are -1 when unknown. The metadata lives in the fixed header so
that a reader can choose between replicas (status, update id, publish time) with one
``struct.unpack_from`` and no JSON at all.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from book_store.errors import StoreError

VERSION = 1
_HEADER = struct.Struct("<BQqqqHBHHII")


class BookStatus(IntEnum):
    """A replica's state as its ingest node reports it."""

    SYNCED = 1
    RESYNCING = 2
    STALE = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class SnapshotMeta:
    """What a snapshot says about itself, besides its levels."""

    update_id: int
    event_time: int | None
    ingest_time: int | None
    publish_time: int
    replica: int
    status: BookStatus


def encode_snapshot(meta: SnapshotMeta, bids: Sequence[bytes], asks: Sequence[bytes]) -> bytes:
    """Encode pre-encoded levels (``b'["p","q"]'``, best first) and their metadata."""
    bid_blob = b",".join(bids)
    ask_blob = b",".join(asks)
    header = _HEADER.pack(
        VERSION,
        meta.update_id,
        -1 if meta.event_time is None else meta.event_time,
        -1 if meta.ingest_time is None else meta.ingest_time,
        meta.publish_time,
        meta.replica,
        meta.status,
        len(bids),
        len(asks),
        len(bid_blob),
        len(ask_blob),
    )
    return b"".join((header, _ends(bids).tobytes(), _ends(asks).tobytes(), bid_blob, ask_blob))


def _ends(levels: Sequence[bytes]) -> array[int]:
    ends = array("I")
    end = -1  # the first level has no comma before it
    for level in levels:
        end += len(level) + 1
        ends.append(end)
    return ends


class Snapshot:
    """A decoded view over stored bytes: metadata parsed, levels left as bytes to slice."""

    __slots__ = ("_asks", "_bids", "ask_ends", "bid_ends", "meta", "raw")

    def __init__(self, raw: bytes) -> None:
        try:
            (version, update_id, event_time, ingest_time, publish_time, replica, status, n_bids, n_asks,
             bids_len, asks_len) = _HEADER.unpack_from(raw)  # fmt: skip
        except struct.error as exc:
            raise StoreError("stored snapshot is truncated") from exc
        if version != VERSION:
            raise StoreError(f"stored snapshot has codec version {version}, this reader knows {VERSION}")
        offset = _HEADER.size
        view = memoryview(raw)
        self.bid_ends = view[offset : offset + 4 * n_bids].cast("I")
        offset += 4 * n_bids
        self.ask_ends = view[offset : offset + 4 * n_asks].cast("I")
        offset += 4 * n_asks
        self._bids = raw[offset : offset + bids_len]
        self._asks = raw[offset + bids_len : offset + bids_len + asks_len]
        self.raw = raw
        self.meta = SnapshotMeta(
            update_id=update_id,
            event_time=None if event_time < 0 else event_time,
            ingest_time=None if ingest_time < 0 else ingest_time,
            publish_time=publish_time,
            replica=replica,
            status=BookStatus(status),
        )

    @property
    def depth(self) -> int:
        """Levels stored on the deeper side."""
        return max(len(self.bid_ends), len(self.ask_ends))

    def bids(self, depth: int) -> bytes:
        """The best ``depth`` bids as JSON array items (no brackets)."""
        return _slice(self._bids, self.bid_ends, depth)

    def asks(self, depth: int) -> bytes:
        """The best ``depth`` asks as JSON array items (no brackets)."""
        return _slice(self._asks, self.ask_ends, depth)


def _slice(blob: bytes, ends: memoryview, depth: int) -> bytes:
    if depth <= 0 or not ends:
        return b""
    if depth >= len(ends):
        return blob
    return blob[: ends[depth - 1]]
