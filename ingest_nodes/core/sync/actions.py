"""What a sync machine asks its caller to do.

A machine never touches the book or the network: it answers every input with a list of these
actions, executed in order by the caller (``ingest_nodes.core.engine.BookEngine`` for the book, the
async driver for snapshot fetches).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ingest_nodes.core.events import DepthSnapshot, DepthUpdate, Level

Checksum = Callable[[Sequence[Level], Sequence[Level]], int]
"""A venue's checksum of a book's best levels: ``(bids, asks)``, best first, to the venue's number."""


@dataclass(frozen=True, slots=True)
class FetchSnapshot:
    """Fetch a REST depth snapshot and hand it to ``receive_snapshot``; updates keep buffering.

    ``reason`` is for logs and metrics: ``"start"`` (a sync begins), ``"snapshot_too_old"`` (the
    last snapshot could not reach the buffered events) or ``"gap_while_buffering"``.
    """

    reason: str = "start"


@dataclass(frozen=True, slots=True)
class LoadSnapshot:
    """Replace the whole book with this snapshot."""

    snapshot: DepthSnapshot


@dataclass(frozen=True, slots=True)
class ApplyUpdate:
    """Apply this event's levels to the book (``update.reset``: they replace the whole book).

    The book's update id becomes ``update.final_update_id``.
    """

    update: DepthUpdate


@dataclass(frozen=True, slots=True)
class Truncate:
    """Drop every level past the best ``depth`` of each side: the venue keeps only that many
    current and never deletes the levels that fall past them (Kraken). The kept sides are the
    venue's top ``depth``: a side holding fewer is the venue's whole side."""

    depth: int


@dataclass(frozen=True, slots=True)
class VerifyChecksum:
    """Compute ``digest`` over the book's best ``levels`` a side, now, and compare it with the
    venue's ``checksum`` (Kraken: CRC32 of the top 10).

    A mismatch means the book is wrong: the caller invalidates the machine with reason
    ``"checksum"`` and clears the book, as it does for a crossed book."""

    checksum: int
    levels: int
    digest: Checksum


@dataclass(frozen=True, slots=True)
class ResyncRequired:
    """The machine threw its book or its buffered progress away; the book is invalid from now on.

    Reasons used here: ``"gap"``, ``"buffer_overflow"``, ``"disconnect"``, and whatever reason the
    caller passed to ``invalidate`` (the engine uses ``"crossed"``, ``"bad_level"`` and ``"checksum"``).
    """

    reason: str


Action = FetchSnapshot | LoadSnapshot | ApplyUpdate | Truncate | VerifyChecksum | ResyncRequired
