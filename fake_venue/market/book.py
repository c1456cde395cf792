"""The venue's own order book: two dense ladders of integer quantities indexed by price tick.

Theory of operation. A side is an ``array('q')`` covering a window of consecutive ticks, quantity
0 meaning "no level". Levels of a real book crowd around the touch, so the window stays a small
multiple of the level count and costs 8 bytes per tick: 2000 books of 1500 levels a side fit in
tens of megabytes, where a dict of boxed ints would need a gigabyte. The best and worst occupied
ticks are tracked, so reading the top ``n`` levels walks ``n`` occupied slots plus the empty ones
between them: O(limit), never O(book). When a price falls outside the window the window is rebuilt
around the occupied range with a margin, so a random walk of the mid costs amortised O(1) a step.

Bids and asks are separate ladders on purpose: the same price may leave one side and join the
other in one update, and the cross fault puts a bid above the best ask.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

Levels = Sequence[tuple[int, int]]
"""One side of an event: ``(tick, qty)`` pairs, best first; qty 0 removes the level."""


class Side:
    """One side of a book: quantities (in step units) on a window of price ticks."""

    __slots__ = ("_base", "_best", "_qty", "_worst", "count", "is_bid")

    def __init__(self, is_bid: bool) -> None:
        self.is_bid = is_bid
        self.count = 0
        self._base = 0
        self._qty = array("q")
        self._best = 0
        self._worst = 0

    @property
    def best(self) -> int | None:
        """The best occupied tick (highest bid, lowest ask), or None when the side is empty."""
        return self._best if self.count else None

    @property
    def worst(self) -> int | None:
        """The occupied tick farthest from the touch, or None when the side is empty."""
        return self._worst if self.count else None

    def get(self, tick: int) -> int:
        index = tick - self._base
        if 0 <= index < len(self._qty):
            return self._qty[index]
        return 0

    def set(self, tick: int, qty: int) -> int:
        """Set the level at ``tick`` to ``qty`` (0 removes it); return the quantity it replaces."""
        index = tick - self._base
        if not 0 <= index < len(self._qty):
            if qty == 0:
                return 0
            if tick < 1:
                raise ValueError(f"price tick {tick} is not positive")
            self._regrow(tick)
            index = tick - self._base
        old = self._qty[index]
        self._qty[index] = qty
        if old == 0 and qty != 0:
            self._added(tick)
        elif old != 0 and qty == 0:
            self._removed(tick)
        return old

    def load(self, first_tick: int, quantities: list[int]) -> None:
        """Replace the side with ``quantities`` on consecutive ticks from ``first_tick`` up (0 = empty)."""
        if first_tick < 1 and any(quantities[: 1 - first_tick]):
            raise ValueError("price ticks must be positive")
        self._base = first_tick
        self._qty = array("q", quantities)
        self.count = len(quantities) - quantities.count(0)
        if self.count:
            low = first_tick + next(index for index, qty in enumerate(quantities) if qty)
            high = (
                first_tick
                + len(quantities)
                - 1
                - next(i for i, qty in enumerate(reversed(quantities)) if qty)
            )
            self._best, self._worst = (high, low) if self.is_bid else (low, high)

    def levels(self, limit: int | None = None) -> list[tuple[int, int]]:
        """Up to ``limit`` levels, best first, as ``(tick, qty)``."""
        wanted = self.count if limit is None else min(limit, self.count)
        out: list[tuple[int, int]] = []
        if wanted <= 0:
            return out
        qty, base = self._qty, self._base
        index = self._best - base
        step = -1 if self.is_bid else 1
        while len(out) < wanted:
            value = qty[index]
            if value:
                out.append((base + index, value))
            index += step
        return out

    def nth(self, n: int) -> int | None:
        """The tick of the ``n``-th occupied level from the touch (0 = best), clamped to the worst."""
        if not self.count:
            return None
        qty, base = self._qty, self._base
        index = self._best - base
        step = -1 if self.is_bid else 1
        last = self._worst - base
        while True:
            if qty[index]:
                if n == 0 or index == last:
                    return base + index
                n -= 1
            index += step

    def copy(self) -> Side:
        other = Side(self.is_bid)
        other.count, other._base, other._best, other._worst = self.count, self._base, self._best, self._worst
        other._qty = array("q", self._qty)
        return other

    def better(self, a: int, b: int) -> bool:
        """Whether tick ``a`` is nearer the touch than tick ``b`` on this side."""
        return a > b if self.is_bid else a < b

    def _added(self, tick: int) -> None:
        self.count += 1
        if self.count == 1:
            self._best = self._worst = tick
        elif self.better(tick, self._best):
            self._best = tick
        elif self.better(self._worst, tick):
            self._worst = tick

    def _removed(self, tick: int) -> None:
        self.count -= 1
        if not self.count:
            return
        if tick == self._best:
            self._best = self._scan(tick, toward_touch=False)
        elif tick == self._worst:
            self._worst = self._scan(tick, toward_touch=True)

    def _scan(self, tick: int, toward_touch: bool) -> int:
        """The next occupied tick from ``tick`` (excluded), away from or toward the touch."""
        step = 1 if self.is_bid == toward_touch else -1
        qty, base = self._qty, self._base
        index = tick - base + step
        while not qty[index]:
            index += step
        return base + index

    def _regrow(self, tick: int) -> None:
        """Rebuild the window around the occupied range and ``tick``, with room to move."""
        if self.count:
            low = min(tick, self._best, self._worst)
            high = max(tick, self._best, self._worst)
        else:
            low = high = tick
        margin = max(64, (high - low) // 4)
        new_base = max(low - margin, 1)
        new_qty = array("q", bytes(8 * (high + margin - new_base + 1)))
        if self.count:
            occupied_low = min(self._best, self._worst)
            occupied_high = max(self._best, self._worst)
            start = occupied_low - self._base
            new_qty[occupied_low - new_base : occupied_high - new_base + 1] = self._qty[
                start : occupied_high - self._base + 1
            ]
        self._base, self._qty = new_base, new_qty


class Book:
    """Both sides of one symbol's book."""

    __slots__ = ("asks", "bids")

    def __init__(self) -> None:
        self.bids = Side(is_bid=True)
        self.asks = Side(is_bid=False)

    def side(self, is_bid: bool) -> Side:
        return self.bids if is_bid else self.asks

    def copy(self) -> Book:
        other = Book()
        other.bids, other.asks = self.bids.copy(), self.asks.copy()
        return other
