"""A book kept from the multiplexed stream's messages, and proven equal to Ladder's after each one.

A `LocalBook` starts from a `snapshot` message and applies each `diff` that continues it: the diff
must be of the same replica and name the book's `update_id` as its `prev_update_id`, each level
sets its price's quantity (`"0"` deletes it), and then the book's checksum must equal the one the
message carries: the CRC-32 of the best 10 levels a side, written `price:qty` with the exact
strings, joined by `,`, bids, then `|`, then asks (docs/api.md). Anything else raises `OutOfSync`:
the caller (`watch()`) then asks the server for a fresh snapshot. A `status` message voids the
book at once (`synced` is False and it holds no level) until the next snapshot. A one-book
`book` message (snapshot mode) replaces the book and carries no checksum.

Prices and quantities are kept as the strings the server sent (so the checksum is over the same
bytes) and handed out as exact Decimals.
"""

from __future__ import annotations

import zlib
from decimal import Decimal
from typing import Any

from .._wire.book import Level
from .._wire.errors import OutOfSync

CHECKSUM_LEVELS = 10


class LocalBook:
    """One book kept from a diff stream (or refreshed by whole books in snapshot mode)."""

    def __init__(self, exchange: str, market: str) -> None:
        self.exchange = exchange
        self.market = market
        self.status = "starting"
        self.replica: int | None = None
        self.update_id: int | None = None
        self.age_ms: int | None = None
        self.event_time_ms: int | None = None
        self.ingest_time_ms: int | None = None
        self.publish_time_ms: int | None = None
        self.truncated = False
        self.messages = 0
        self.mismatches = 0
        """Checksum mismatches (each made `watch()` fetch the book again)."""
        self._bids: dict[str, tuple[Decimal, str]] = {}
        self._asks: dict[str, tuple[Decimal, str]] = {}
        self._sorted: tuple[list[str], list[str]] | None = None

    def __repr__(self) -> str:
        return f"LocalBook({self.exchange} {self.market} {self.status} @{self.update_id})"

    @property
    def synced(self) -> bool:
        """The book equals Ladder's served book as of `update_id` (checked by its checksum)."""
        return self.status == "synced" and self.update_id is not None

    # -- reading -----------------------------------------------------------------------------
    def bids(self, n: int | None = None) -> list[Level]:
        """The best `n` bids (all when None), best (highest) first."""
        return self._levels(self._bids, self._order()[0], n)

    def asks(self, n: int | None = None) -> list[Level]:
        """The best `n` asks (all when None), best (lowest) first."""
        return self._levels(self._asks, self._order()[1], n)

    def depth(self, n: int | None = None) -> tuple[list[Level], list[Level]]:
        """The best `n` levels of both sides: `(bids, asks)`."""
        return self.bids(n), self.asks(n)

    @property
    def best_bid(self) -> Level | None:
        """The highest bid (None when the side is empty)."""
        best = self.bids(1)
        return best[0] if best else None

    @property
    def best_ask(self) -> Level | None:
        """The lowest ask (None when the side is empty)."""
        best = self.asks(1)
        return best[0] if best else None

    @property
    def spread(self) -> Decimal | None:
        """Best ask minus best bid, exactly (None when a side is empty)."""
        bid, ask = self.best_bid, self.best_ask
        return None if bid is None or ask is None else ask.price - bid.price

    def checksum(self) -> int:
        """The CRC-32 of the best 10 levels a side (see the module's doc)."""
        bids, asks = self._order()
        text = "|".join(
            ",".join(f"{price}:{side[price][1]}" for price in order[:CHECKSUM_LEVELS])
            for side, order in ((self._bids, bids), (self._asks, asks))
        )
        return zlib.crc32(text.encode())

    # -- applying ------------------------------------------------------------------------------
    def apply(self, message: dict[str, Any]) -> None:
        """Apply one message about this book (`snapshot`, `diff`, `status` or `book`); OutOfSync
        when it does not continue the book or the checksum after it disagrees."""
        kind = message.get("type")
        if kind == "status":
            self._void(str(message.get("status")))
            return
        if kind == "diff":
            if (
                not self.synced
                or message["replica"] != self.replica
                or message["prev_update_id"] != self.update_id
            ):
                self._void("resyncing")
                raise OutOfSync(
                    f"{self.exchange} {self.market}: a diff from {message['prev_update_id']} "
                    f"does not continue the book at {self.update_id}",
                    checksum=False,
                )
            _set(self._bids, message["bids"])
            _set(self._asks, message["asks"])
        elif kind in ("snapshot", "book"):
            self._bids = {p: (Decimal(p), q) for p, q in message["bids"]}
            self._asks = {p: (Decimal(p), q) for p, q in message["asks"]}
        else:
            raise OutOfSync(f"not a book message: {kind!r}", checksum=False)
        self._sorted = None
        self.status = str(message["status"])
        self.replica = int(message["replica"])
        self.update_id = int(message["update_id"])
        self.age_ms = message.get("age_ms")
        self.event_time_ms = message.get("event_time")
        self.ingest_time_ms = message.get("ingest_time")
        self.publish_time_ms = message.get("publish_time")
        self.truncated = bool(message.get("truncated"))
        self.messages += 1
        expected = message.get("checksum")
        if expected is not None and self.checksum() != expected:
            self._void("resyncing")
            raise OutOfSync(
                f"{self.exchange} {self.market}: checksum mismatch at {message['update_id']}", checksum=True
            )

    def _void(self, status: str) -> None:
        self.status = status
        self.update_id = None
        self._bids, self._asks, self._sorted = {}, {}, None

    def _order(self) -> tuple[list[str], list[str]]:
        order = self._sorted
        if order is None:
            bids, asks = self._bids, self._asks
            order = self._sorted = (
                sorted(bids, key=lambda p: bids[p][0], reverse=True),
                sorted(asks, key=lambda p: asks[p][0]),
            )
        return order

    @staticmethod
    def _levels(side: dict[str, tuple[Decimal, str]], order: list[str], n: int | None) -> list[Level]:
        return [Level(side[p][0], Decimal(side[p][1])) for p in (order if n is None else order[:n])]


def _set(side: dict[str, tuple[Decimal, str]], levels: list[list[str]]) -> None:
    for price, quantity in levels:
        if quantity == "0" or Decimal(quantity) == 0:
            side.pop(price, None)
        else:
            side[price] = (side[price][0] if price in side else Decimal(price), quantity)
