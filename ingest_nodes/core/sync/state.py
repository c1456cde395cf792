"""The states every sync machine moves through."""

from __future__ import annotations

import enum


class SyncState(enum.Enum):
    """Where a machine stands on the way to (or in) a valid book.

    Binance machines use all four; the machines of venues that send the book on the stream (Alpaca,
    OKX, Bybit, Kraken, Coinbase) only ``IDLE`` (waiting for the venue's book on the stream) and
    ``SYNCED``.
    """

    IDLE = "idle"
    """No book, nothing buffered; the next event starts the sync."""
    BUFFERING = "buffering"
    """Events are buffered while a requested snapshot is on its way."""
    SNAPSHOT_HELD = "snapshot_held"
    """A snapshot newer than every buffered event is held until an event continues it."""
    SYNCED = "synced"
    """The book is valid at ``update_id``."""
