"""What a sync machine asks its caller to do.

A machine never touches the book or the network: it answers every input with a list of these
actions, executed in order by the caller (``ingest_nodes.core.engine.BookEngine`` for the book, the
async driver for snapshot fetches).
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest_nodes.core.events import DepthSnapshot, DepthUpdate


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
class ResyncRequired:
    """The machine threw its book or its buffered progress away; the book is invalid from now on.

    Reasons used here: ``"gap"``, ``"buffer_overflow"``, ``"disconnect"``, and whatever reason the
    caller passed to ``invalidate`` (the engine uses ``"crossed"`` and ``"bad_level"``).
    """

    reason: str


Action = FetchSnapshot | LoadSnapshot | ApplyUpdate | ResyncRequired
