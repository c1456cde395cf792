"""One order book replica: exact price ordering, pre-encoded levels, and a trusted-depth watermark.

Theory of operation
-------------------
Each side is a ``SortedDict`` keyed by the price as a ``Decimal`` (bids by the negated price), so
iteration order is best first and prices written differently (``"4.0002"``, ``"4.00020000"``) are
one level. The value is the level already encoded as JSON, ``b'["price","qty"]'`` with the
venue's own strings, so publishing the top N is a slice and a join with no per-publish encoding.
Quantities are tested for zero numerically: ``"0"`` and ``"0.00000000"`` both delete.

A snapshot holds at most ``limit`` levels per side. When a side came back full, prices past its
worst level exist at the venue but are unknown to us, and diff events only reveal the ones that
change. Those levels are untrusted: ``top_bids``/``top_asks`` stop at the worst price the snapshot
held (the watermark). A side shorter than the limit is complete and has no watermark, and stays
complete: every later change at any price reaches us as a diff.

The trusted window moves with the market: levels consumed at the touch leave it, levels added
between the touch and the watermark join it. A venue that keeps a client's top ``depth`` levels
current itself (Kraken: a level leaving that depth is replaced by the next in line, sent as an
insert) has no watermark: ``truncate`` keeps each side to ``depth`` levels, all of them trusted,
and a side holding fewer is the venue's whole side. ``window`` says, per side, how many levels are
trusted and whether the venue may hold more past them, which is what a publisher needs to mark a
side that stops short of the asked depth, and to ask for a fresh snapshot before it does.

The book does no sync logic: the engine decides what to load and apply.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from decimal import Decimal, InvalidOperation
from itertools import islice
from typing import Final, NamedTuple

import orjson
from sortedcontainers import SortedDict

from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import Level

_NOTHING_TRUSTED: Final = Decimal("-Infinity")
"""Watermark of a side that came back full and empty (a zero limit): no level is trusted."""


def _write(target: MutableMapping[Decimal, bytes], levels: Iterable[Level], *, negate: bool) -> None:
    """Set or delete each level in ``target``; the ingest hot path, so one loop and no calls."""
    dumps = orjson.dumps
    price = quantity = ""
    try:
        for price, quantity in levels:
            key = Decimal(price)
            if not key.is_finite():
                raise InvalidOperation
            if negate:
                key = -key
            if Decimal(quantity):
                # orjson hands back every result in a 4 KiB block; "%b" keeps an exact-size copy.
                target[key] = b"%b" % dumps((price, quantity))
            else:
                target.pop(key, None)
    except (InvalidOperation, TypeError, ValueError) as exc:
        raise VenuePayloadError(f"bad level {[price, quantity]!r}") from exc


class SideWindow(NamedTuple):
    """How much of one side can be served: ``trusted`` levels, and whether the venue may hold more
    past them (``bounded``: the side has a watermark; a complete side has none)."""

    trusted: int
    bounded: bool


class _Side:
    """One side of the book; bids are keyed by the negated price so the best price sorts first."""

    __slots__ = ("cap", "levels", "negate", "watermark")

    def __init__(self, *, negate: bool) -> None:
        self.negate = negate
        self.levels: SortedDict = SortedDict()
        self.watermark: Decimal | None = None
        self.cap: int | None = None
        """The venue keeps this many levels current (``truncate``); None: it keeps the whole side."""

    def load(self, levels: Iterable[Level], *, complete: bool) -> None:
        fresh: dict[Decimal, bytes] = {}
        _write(fresh, levels, negate=self.negate)
        self.levels = SortedDict(fresh)  # one sort instead of one insertion per level
        self.cap = None
        if complete:
            self.watermark = None
        else:
            self.watermark = self.levels.keys()[-1] if self.levels else _NOTHING_TRUSTED

    def apply(self, levels: Iterable[Level]) -> None:
        _write(self.levels, levels, negate=self.negate)

    def truncate(self, depth: int) -> None:
        levels = self.levels
        while len(levels) > depth:
            levels.popitem()
        self.cap = depth
        self.watermark = None

    def top(self, n: int) -> list[bytes]:
        return self.first(min(n, self.trusted_depth()))

    def first(self, n: int) -> list[bytes]:
        """The best ``n`` levels (the caller keeps ``n`` within the trusted depth)."""
        # Iterating the SortedDict itself walks its key lists in C; ``keys()`` would not.
        return list(map(self.levels.__getitem__, islice(self.levels, max(n, 0))))

    def trusted_depth(self) -> int:
        if self.watermark is None:
            return len(self.levels)
        return int(self.levels.bisect_right(self.watermark))

    def window(self) -> SideWindow:
        trusted = self.trusted_depth()
        capped = self.cap is not None and trusted >= self.cap
        return SideWindow(trusted, self.watermark is not None or capped)

    def best(self) -> Decimal | None:
        key: Decimal | None = next(iter(self.levels), None)
        if key is None:
            return None
        return -key if self.negate else key

    def decoded(self, n: int | None = None) -> list[Level]:
        return [_decode(encoded) for encoded in islice(self.levels.values(), n)]


def _decode(encoded: bytes) -> Level:
    price, quantity = orjson.loads(encoded)
    return (price, quantity)


class OrderBook:
    """Bids and asks of one replica; see the module docstring."""

    __slots__ = ("_asks", "_bids")

    def __init__(self) -> None:
        self._bids = _Side(negate=True)
        self._asks = _Side(negate=False)

    def load(
        self, bids: Iterable[Level], asks: Iterable[Level], *, bids_complete: bool, asks_complete: bool
    ) -> None:
        """Replace the whole book; a side that is not complete gets a trusted-depth watermark.

        Levels with a zero quantity are skipped. Raises ``VenuePayloadError`` on a bad number
        (the book is then half loaded and must be cleared).
        """
        self._bids.load(bids, complete=bids_complete)
        self._asks.load(asks, complete=asks_complete)

    def apply(self, bids: Iterable[Level], asks: Iterable[Level]) -> None:
        """Set each level to its absolute quantity; a zero quantity deletes (absent: no-op).

        Raises ``VenuePayloadError`` on a bad number (levels before it are already applied).
        """
        self._bids.apply(bids)
        self._asks.apply(asks)

    def truncate(self, depth: int) -> None:
        """Keep the best ``depth`` levels a side, all trusted: the venue keeps that many current."""
        self._bids.truncate(depth)
        self._asks.truncate(depth)

    def clear(self) -> None:
        """Empty both sides and drop the watermarks."""
        self._bids = _Side(negate=True)
        self._asks = _Side(negate=False)

    def top_bids(self, n: int) -> list[bytes]:
        """Up to ``n`` trusted bids, best first, each encoded as ``b'["price","qty"]'``."""
        return self._bids.top(n)

    def top_asks(self, n: int) -> list[bytes]:
        """Up to ``n`` trusted asks, best first, each encoded as ``b'["price","qty"]'``."""
        return self._asks.top(n)

    def first_bids(self, n: int) -> list[bytes]:
        """The best ``n`` bids; ``n`` must not exceed the trusted depth (see ``window``)."""
        return self._bids.first(n)

    def first_asks(self, n: int) -> list[bytes]:
        """The best ``n`` asks; ``n`` must not exceed the trusted depth (see ``window``)."""
        return self._asks.first(n)

    def trusted_depth(self) -> tuple[int, int]:
        """How many bid and ask levels ``top_*`` can serve (a re-snapshot is due when too few)."""
        return self._bids.trusted_depth(), self._asks.trusted_depth()

    def window(self) -> tuple[SideWindow, SideWindow]:
        """The bid and ask windows: trusted levels, and whether the venue may hold more past them."""
        return self._bids.window(), self._asks.window()

    def best_bid(self) -> Decimal | None:
        """The highest bid price, or None when there are no bids."""
        return self._bids.best()

    def best_ask(self) -> Decimal | None:
        """The lowest ask price, or None when there are no asks."""
        return self._asks.best()

    def is_crossed(self) -> bool:
        """True when the best bid is at or above the best ask (crossed or locked)."""
        bid = self._bids.best()
        ask = self._asks.best()
        return bid is not None and ask is not None and bid >= ask

    def best_levels(self, n: int) -> tuple[list[Level], list[Level]]:
        """The best ``n`` bids and asks as the venue wrote them (a checksum's input; decodes each)."""
        return self._bids.decoded(n), self._asks.decoded(n)

    def bids(self) -> list[Level]:
        """Every bid level, trusted or not, best first (tests and debugging; decodes each level)."""
        return self._bids.decoded()

    def asks(self) -> list[Level]:
        """Every ask level, trusted or not, best first (tests and debugging; decodes each level)."""
        return self._asks.decoded()
