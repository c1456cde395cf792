"""Coinbase Advanced Trade's WebSocket wire shapes (in the venue's own field names) and the values
parsing yields.

Every server message is one JSON object with ``channel``, ``timestamp``, ``sequence_num`` and a
list of ``events``; an error is ``{"type": "error", "message": ...}``. The ``TypedDict`` classes
document what the parser reads; ``CoinbaseMessage`` is what the stream receives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

from ingest_nodes.core.events import DepthUpdate

# --- wire shapes ------------------------------------------------------------------------------


class L2Update(TypedDict):
    """One level of a ``level2`` event: its new size, not a delta (``"0"`` removes it)."""

    side: str  # "bid", or "offer" for an ask
    event_time: str  # RFC 3339; "1970-01-01T00:00:00Z" in snapshots
    price_level: str
    new_quantity: str


class L2Event(TypedDict):
    """One product's part of an ``l2_data`` message."""

    type: str  # "snapshot" or "update"
    product_id: str
    updates: list[L2Update]


class ChannelMessage(TypedDict):
    """Every message of a channel: ``l2_data``, ``heartbeats``, ``subscriptions``."""

    channel: str
    client_id: NotRequired[str]
    timestamp: str  # RFC 3339, nanoseconds
    sequence_num: int  # numbers every message of the connection, whatever its channel
    events: list[dict[str, object]]


class ErrorMessage(TypedDict):
    type: str  # "error"
    message: str


# --- typed values handed to the stream --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CoinbaseMessage:
    """One message: its number on the connection, and what it means for books and requests."""

    sequence_num: int | None
    """None: the message carries no number (an error)."""
    updates: tuple[DepthUpdate, ...] = ()
    """Each product's event of an ``l2_data`` message, in order."""
    subscriptions: bool = False
    """The venue answered a subscribe or unsubscribe (with the whole subscription set)."""
    heartbeat: bool = False
    """A ``heartbeats`` message (one a second)."""
    error: str | None = None
    """The venue refused a request."""
