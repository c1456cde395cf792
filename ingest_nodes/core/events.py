"""The venue-neutral values that venue parsers produce and the sync machines consume.

Parsers turn wire frames into these at the edge, so nothing past a parser ever reads a dict.
Prices and quantities stay the venue's exact strings: the order book converts them to Decimal
only for ordering and for the zero test, and publishes the strings unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

Level = tuple[str, str]
"""One price level, ``(price, quantity)``, exactly as the venue wrote them."""

_T = TypeVar("_T")


@dataclass_transform(frozen_default=True)
def _event(cls: type[_T]) -> type[_T]:
    """A frozen dataclass to the type checker (mypy refuses any assignment), a plain one with slots
    at run time: a frozen dataclass sets each field through ``object.__setattr__``, a large part of
    parsing a venue frame for a value made once per event."""
    return dataclass(slots=True)(cls)


@_event
class DepthUpdate:
    """One diff event: a Binance ``depthUpdate``, or one book's part of a stream message (an Alpaca
    ``"o"`` message, an OKX, Bybit or Kraken book message, a Coinbase ``l2_data`` event).

    Quantities are absolute (the level's new size, not a delta); a quantity that is numerically
    zero removes the level. Venues that number no book's messages (Alpaca, Kraken, Coinbase) leave
    the ids 0. ``reset`` marks a message that carries the venue's book (Alpaca ``r: true``, an OKX,
    Bybit, Kraken or Coinbase snapshot) instead of changes.
    """

    symbol: str
    first_update_id: int
    """``U``: the first update id folded into this event (Alpaca: 0; OKX ``seqId``, Bybit ``u``)."""
    final_update_id: int
    """``u``: the last update id folded into this event (Alpaca: 0; OKX ``seqId``, Bybit ``u``)."""
    prev_final_update_id: int | None
    """``pu``: ``u`` of the previous event of the symbol; Binance futures (and OKX ``prevSeqId``)."""
    event_time: int | None
    """Venue time of the event, ms since the epoch (None: the venue stamped none)."""
    ingest_time: int
    """When the frame reached this process, ms since the epoch (stamped by the caller)."""
    bids: tuple[Level, ...]
    asks: tuple[Level, ...]
    reset: bool = False
    """The levels are the venue's book, replacing ours (Alpaca ``r: true``, an OKX, Bybit, Kraken or
    Coinbase snapshot)."""
    limit: int = 0
    """A reset's depth: the channel carries the venue's best ``limit`` levels a side (0: all of
    them). A side that came back shorter is the venue's whole side; a full one is cut off there
    (Kraken: and kept that deep by the venue from then on, see ``core/sync/kraken.py``)."""
    checksum: int | None = None
    """Kraken: the venue's CRC32 of its top levels after this message (None: the venue sends none)."""

    @classmethod
    def unnumbered(
        cls,
        symbol: str,
        event_time: int | None,
        ingest_time: int,
        bids: tuple[Level, ...],
        asks: tuple[Level, ...],
        *,
        reset: bool,
        checksum: int | None = None,
    ) -> DepthUpdate:
        """A message of a venue that numbers no book's messages (Alpaca, Kraken, Coinbase): its ids
        stay 0, and its order on the connection is what sequences it."""
        return cls(symbol, 0, 0, None, event_time, ingest_time, bids, asks, reset=reset, checksum=checksum)


@dataclass(frozen=True, slots=True)
class DepthSnapshot:
    """A REST depth snapshot (Binance ``/api/v3/depth`` or ``/fapi/v1/depth``).

    ``limit`` is the depth that was requested: a side that came back with fewer levels than that
    is the venue's whole side, while a full side is cut off and says nothing about deeper prices.
    """

    symbol: str
    last_update_id: int
    bids: tuple[Level, ...]
    asks: tuple[Level, ...]
    limit: int
    event_time: int | None = None
    """Futures ``E``; spot snapshots carry no time."""
    ingest_time: int = 0

    @property
    def bids_complete(self) -> bool:
        """True when the bid side is the venue's whole side (shorter than the limit)."""
        return len(self.bids) < self.limit

    @property
    def asks_complete(self) -> bool:
        """True when the ask side is the venue's whole side (shorter than the limit)."""
        return len(self.asks) < self.limit
