"""Kraken's WebSocket v2 wire shapes (in the venue's own field names) and the values parsing yields.

Every server message is one JSON object: channel messages carry ``channel`` (``book``,
``heartbeat``, ``status``), answers to requests carry ``method``. The ``TypedDict`` classes
document what the parser reads; the frozen dataclasses are what the stream receives besides depth
events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

# --- wire shapes ------------------------------------------------------------------------------


class BookLevel(TypedDict):
    """One level: JSON numbers written at the pair's full precision (read as their own text)."""

    price: str | int
    qty: str | int  # 0 removes the level


class BookData(TypedDict):
    """One pair's part of a ``book`` message."""

    symbol: str  # "BTC/USD"
    bids: list[BookLevel]
    asks: list[BookLevel]
    checksum: int  # CRC32 of the top 10 asks then bids (core/sync/kraken.py)
    timestamp: NotRequired[str]  # RFC 3339, microseconds: the book's last change


class BookMessage(TypedDict):
    """``channel: "book"``, ``type``: ``snapshot`` (after a subscribe) or ``update``."""

    channel: str
    type: str
    data: list[BookData]


class SubscriptionResult(TypedDict):
    """What a successful subscribe or unsubscribe answered, one pair at a time."""

    channel: str
    symbol: str
    depth: NotRequired[int]
    snapshot: NotRequired[bool]


class MethodResponse(TypedDict):
    """The answer to a request: one per pair for ``subscribe`` and ``unsubscribe``."""

    method: str  # "subscribe", "unsubscribe", "pong"
    success: bool
    result: NotRequired[SubscriptionResult]
    error: NotRequired[str]  # when success is false, e.g. "Currency pair not supported XBT/USD"
    symbol: NotRequired[str]  # the pair a failure is about
    req_id: NotRequired[int]
    time_in: str
    time_out: str


# --- typed values handed to the stream --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KrakenAnswer:
    """The venue's answer to a subscribe or unsubscribe, for one pair."""

    subscribe: bool
    success: bool
    symbol: str | None
    depth: int | None
    """The depth a successful book subscription is kept at."""
    req_id: int | None
    error: str


@dataclass(frozen=True, slots=True)
class KrakenHeartbeat:
    """``{"channel":"heartbeat"}``: sent about once a second to a connection with subscriptions."""


KrakenControl = KrakenAnswer | KrakenHeartbeat
