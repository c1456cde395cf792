"""How a book moves: each update touches a few levels the way real order flow does.

Theory of operation. An update is a handful of operations drawn from one seeded ``Random``:
resize a level near the touch, add a level (sometimes inside the spread), delete one, "delete" a
price that holds nothing (venues do send those), or trade through the touch: the best ask (or bid)
is consumed and, half the time, the same price reappears on the other side in the same update.
Trades through the touch in both directions make the mid a random walk. After the operations each
side is pulled back to its shape: levels farther than ``span`` ticks from the touch (or beyond the
target count) are trimmed and holes anywhere within the span are refilled, so the book follows the
touch and far levels change too (what a client's trusted-depth logic must cope with). With deep
activity on, a share of the operations instead pick a tick uniformly within the span and add a
level there, or resize or delete the one it holds, so levels thousands deep change all the time.

New bids always stay below the best ask and new asks above the best bid, so the book never crosses
by itself; the cross fault (``force_cross``) is the only way to cross it. Every change goes through
a ``ChangeSet``, which keeps one entry per level and the quantity it replaced, for history.
"""

from __future__ import annotations

import bisect
import itertools
import random
from array import array

from fake_venue.market.book import Book, Side

OCCUPANCY = 0.75
"""Share of ticks that hold a level near the touch when a book is seeded."""
MAX_QTY = 2**62
_SIZE_BITS = 10
_SIZES = [draw(-0.5, 1.0) for draw in [random.Random(0).lognormvariate] * (1 << _SIZE_BITS)]
"""Level sizes relative to a symbol's typical size: a fixed log-normal sample, indexed at random
(far cheaper than drawing a log-normal per level, and just as deterministic)."""
_LARGEST_SIZE = int(max(_SIZES)) + 1
_OPERATIONS_PER_UPDATE = (1, 1, 2, 2, 3, 3, 4, 5)
SETTLE_EVERY = 4
"""``grow`` pulls the sides back to their shape after this many operations, as ``step`` does after each
update's (1 to 5)."""
_DEEP_DELETE = (1 - OCCUPANCY) / OCCUPANCY
"""Of the operations at depth that find a level, the share that delete it (the rest resize it):
with adds on every empty tick found, this keeps the side at ``OCCUPANCY``."""


class ChangeSet:
    """The levels one update touches: their new quantities in order, and the ones they replaced."""

    __slots__ = ("book", "new", "old")

    def __init__(self, book: Book) -> None:
        self.book = book
        self.new: dict[tuple[bool, int], int] = {}
        self.old: dict[tuple[bool, int], int] = {}

    def set(self, is_bid: bool, tick: int, qty: int) -> None:
        old = self.book.side(is_bid).set(tick, qty)
        key = (is_bid, tick)
        self.old.setdefault(key, old)
        self.new[key] = qty

    def side_changes(self, is_bid: bool) -> list[tuple[int, int]]:
        return [(tick, qty) for (bid, tick), qty in self.new.items() if bid is is_bid]


class Generator:
    """Draws updates for one book; same seed and same call sequence, same updates."""

    __slots__ = ("_sizes", "levels", "mean_qty", "mid", "rng", "span")

    def __init__(self, rng: random.Random, levels: int, mean_qty: int, mid_ticks: int) -> None:
        self.rng = rng
        self.levels = levels
        self.span = max(int(levels / OCCUPANCY), 1)
        """How far from the touch (in ticks) a side may reach; levels beyond it are trimmed."""
        self.mean_qty = mean_qty
        scale = min(mean_qty, MAX_QTY // _LARGEST_SIZE)
        self._sizes = array("q", [int(scale * size) or 1 for size in _SIZES])
        self.mid = mid_ticks
        """Last known mid; where levels go when a side is empty."""

    def qty(self) -> int:
        """A level size: log-normal around the symbol's typical size, at least one step."""
        return self._sizes[self.rng.getrandbits(_SIZE_BITS)]

    def seed(self, book: Book) -> None:
        """Fill an empty book with ``levels`` levels a side around the mid, a quarter of ticks empty.

        Built in bulk from one block of random bytes, 16 bits a tick (two decide occupancy, ten
        pick a size), because activating thousands of symbols must not stall the event loop.
        """
        sizes, mask, occupied_bits = self._sizes, (1 << _SIZE_BITS) - 1, 3 << _SIZE_BITS
        width = int(self.levels / OCCUPANCY * 1.2) + 16
        for side in (book.bids, book.asks):
            ticks = max(min(width, self.mid - 1) if side.is_bid else width, 0)
            draws = array("H", self.rng.randbytes(2 * ticks))
            quantities = [sizes[draw & mask] if draw & occupied_bits else 0 for draw in draws]
            cut = bisect.bisect_left(list(itertools.accumulate(map(bool, quantities))), self.levels)
            quantities = quantities[: cut + 1]
            if side.is_bid:
                side.load(self.mid - len(quantities), quantities[::-1])
            else:
                side.load(self.mid + 1, quantities)

    def step(self, changes: ChangeSet, deep_share: float = 0.0) -> None:
        """Draw one update's operations into ``changes`` (which applies them to its book); a
        ``deep_share`` of them land at a uniformly random depth of a side."""
        for _ in range(_OPERATIONS_PER_UPDATE[self.rng.getrandbits(3)]):
            self._operate(changes, deep_share)
        self._settle(changes.book, changes)

    def grow(self, changes: ChangeSet, deep_share: float, levels: int, max_operations: int) -> int:
        """Operations into ``changes`` until it holds ``levels`` levels (or ``max_operations`` ran),
        each side's shape kept every few of them: a 100 ms window of a busy market. Returns how
        many operations it took."""
        operations = 0
        while len(changes.new) < levels and operations < max_operations:
            self._operate(changes, deep_share)
            operations += 1
            if operations % SETTLE_EVERY == 0:
                self._settle(changes.book, changes)
        return operations

    def _operate(self, changes: ChangeSet, deep_share: float) -> None:
        book, rng = changes.book, self.rng
        if deep_share and rng.random() < deep_share:
            self._at_depth(changes, book.bids if rng.random() < 0.5 else book.asks)
            return
        draw = rng.random()
        side = book.bids if rng.random() < 0.5 else book.asks
        if draw < 0.36:
            self._resize(changes, side)
        elif draw < 0.66:
            self._add(changes, book, side)
        elif draw < 0.79:
            self._delete(changes, side)
        elif draw < 0.84:
            self._delete_absent(changes, side)
        else:
            self._trade_through(changes, book, up=rng.random() < 0.5)

    def _settle(self, book: Book, changes: ChangeSet) -> None:
        for side in (book.bids, book.asks):
            self._keep_depth(changes, side)
        best_bid, best_ask = book.bids.best, book.asks.best
        if best_bid is not None and best_ask is not None:
            self.mid = (best_bid + best_ask) // 2

    def force_cross(self, changes: ChangeSet, book: Book, locked: bool) -> int | None:
        """Put a bid at (locked) or one tick above (crossed) the best ask; return its tick."""
        best_ask = book.asks.best
        if best_ask is None:
            return None
        tick = best_ask if locked else best_ask + 1
        changes.set(True, tick, self.qty())
        return tick

    def fill(self, changes: ChangeSet, side: Side, ticks: range) -> None:
        """Occupy ``OCCUPANCY`` of ``ticks`` at random sizes, as a seeded book is."""
        rng = self.rng
        for tick in ticks:
            if rng.random() < OCCUPANCY:
                changes.set(side.is_bid, tick, self.qty())

    def extend(self, changes: ChangeSet, side: Side) -> None:
        """Grow a side at its far end, within its span, until it holds ``levels`` levels again."""
        best, worst = side.best, side.worst
        if best is None or worst is None:
            return
        step = -1 if side.is_bid else 1
        edge = best + step * self.span
        tick = worst + step
        rng = self.rng
        while side.count < self.levels and tick >= 1 and not side.better(edge, tick):
            if rng.random() < OCCUPANCY:
                changes.set(side.is_bid, tick, self.qty())
            tick += step

    def _near_touch(self, side: Side) -> int | None:
        return side.nth(int(self.rng.expovariate(1 / 8)))

    def _resize(self, changes: ChangeSet, side: Side) -> None:
        tick = self._near_touch(side)
        if tick is not None:
            changes.set(side.is_bid, tick, self.qty())

    def _delete(self, changes: ChangeSet, side: Side) -> None:
        if side.count > 3:
            tick = self._near_touch(side)
            if tick is not None:
                changes.set(side.is_bid, tick, 0)

    def _delete_absent(self, changes: ChangeSet, side: Side) -> None:
        best = side.best if side.best is not None else self.mid
        offset = 1 + int(self.rng.expovariate(1 / 20))
        tick = best - offset if side.is_bid else best + offset
        if tick >= 1 and side.get(tick) == 0:
            changes.set(side.is_bid, tick, 0)

    def _add(self, changes: ChangeSet, book: Book, side: Side) -> None:
        rng = self.rng
        best_bid, best_ask = book.bids.best, book.asks.best
        if best_bid is not None and best_ask is not None and best_ask - best_bid > 1 and rng.random() < 0.3:
            tick = rng.randrange(best_bid + 1, best_ask)
        else:
            anchor = side.best if side.best is not None else self.mid
            offset = int(rng.expovariate(1 / 10)) + (0 if side.best is None else 1)
            tick = anchor - offset if side.is_bid else anchor + offset
        if side.is_bid and best_ask is not None:
            tick = min(tick, best_ask - 1)
        if not side.is_bid and best_bid is not None:
            tick = max(tick, best_bid + 1)
        if tick >= 1:
            changes.set(side.is_bid, tick, self.qty())

    def _at_depth(self, changes: ChangeSet, side: Side) -> None:
        """Add, resize or delete the level at a uniformly random depth within the side's span."""
        best = side.best
        if best is None:
            return
        rng = self.rng
        offset = 1 + int(rng.random() * self.span)
        tick = best - offset if side.is_bid else best + offset
        if tick < 1:
            return
        if side.get(tick) == 0:
            changes.set(side.is_bid, tick, self.qty())
        else:
            changes.set(side.is_bid, tick, 0 if rng.random() < _DEEP_DELETE else self.qty())

    def _trade_through(self, changes: ChangeSet, book: Book, up: bool) -> None:
        """Consume the touch on one side; half the time its price reappears on the other side."""
        taken, other = (book.asks, book.bids) if up else (book.bids, book.asks)
        if taken.count <= 3:
            return
        price = taken.best
        if price is None or (other.best is not None and not other.better(price, other.best)):
            return  # crossed by a fault: leave the touch alone until it clears
        changes.set(taken.is_bid, price, 0)
        if self.rng.random() < 0.5:
            changes.set(other.is_bid, price, self.qty())

    def _keep_depth(self, changes: ChangeSet, side: Side) -> None:
        """Trim levels beyond the side's span (or count), then refill holes anywhere within it."""
        best = side.best
        if best is None:
            return
        span = self.span
        edge = best - span if side.is_bid else best + span
        while side.count > self.levels or side.better(edge, side.worst or best):
            worst = side.worst
            assert worst is not None
            changes.set(side.is_bid, worst, 0)
        rng = self.rng
        for _ in range(2):
            if side.count >= self.levels:
                return
            depth = 1 + int(rng.random() * span)
            tick = best - depth if side.is_bid else best + depth
            if tick >= 1 and side.get(tick) == 0:
                changes.set(side.is_bid, tick, self.qty())
