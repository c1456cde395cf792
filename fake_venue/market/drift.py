"""A walking price: the mid of a book moves many ticks, and sweeps consume the touch of one side.

Theory of operation. Without drift the mid is the slow random walk of trades through the touch and
stays near where the book was seeded, so a client's snapshot window never slides. A ``Walk`` keeps
a target mid that moves ``ticks_per_s`` a second in its direction (per-second figures are spread
over the symbol's updates at its rate, so the book stays a function of the seed and the update
count), and before the generator's own operations each update follows it:

- the side the walk heads into loses every level the target passed (an up-walk eats the asks at
  or below it, a down-walk the bids at or above it);
- the side behind is refilled up to the target, so the touch follows it with the usual spread;
- both sides grow back at their far end to the target depth, so the whole window slides: the
  side behind gains levels near the touch and the generator trims its far end, the side ahead
  loses them near the touch and gains new prices beyond its old worst level.

Direction changes are a Poisson process with mean ``turn_every_s``; the target also turns back at
half and at twice the symbol's listing price, so a low-priced book (1000 ticks from zero) never
walks its bids into the ground. Every ``sweep_every_s`` one update is a sweep and nothing else: the
best ``sweep_levels`` levels of the side ahead are deleted at once (a market order eating the
book), the target jumps to the new touch and the following updates refill behind it.

The walk stands still while a side is empty or the book is crossed (the faults that make those),
and starts over from the current mid whenever its settings change.
"""

from __future__ import annotations

import random

from fake_venue.config import Drift
from fake_venue.market.generator import ChangeSet, Generator


class Walk:
    """One book's drift state: where the mid is headed, and when it next turns or sweeps."""

    __slots__ = (
        "_clock",
        "_high",
        "_low",
        "_next_sweep",
        "_next_turn",
        "_rng",
        "_settings",
        "direction",
        "target",
    )

    def __init__(self, rng: random.Random, home_ticks: int) -> None:
        self._rng = rng
        self._low = max(home_ticks / 2, 2.0)
        self._high = max(home_ticks * 2.0, self._low + 2)
        self._settings: Drift | None = None
        self.direction = 0
        """+1 up, -1 down; drawn when the walk first starts."""
        self.target = 0.0
        self._clock = self._next_turn = self._next_sweep = 0.0

    def step(self, changes: ChangeSet, generator: Generator, drift: Drift, period_s: float) -> bool:
        """Move the book along the walk for one update that stands for ``period_s`` seconds.

        Returns True when the update is a sweep, which must carry no other operation.
        """
        bids, asks = changes.book.bids, changes.book.asks
        best_bid, best_ask = bids.best, asks.best
        if not drift.on or period_s <= 0 or best_bid is None or best_ask is None or best_bid >= best_ask:
            self._settings = None
            return False
        rng = self._rng
        if drift != self._settings:
            self._settings = drift
            self.direction = self.direction or (1 if rng.random() < 0.5 else -1)
            self.target = (best_bid + best_ask) / 2
            self._clock = 0.0
            self._next_turn = rng.expovariate(1 / drift.turn_every_s) if drift.turn_every_s > 0 else 0.0
            self._next_sweep = drift.sweep_every_s
        self._clock += period_s
        if drift.turn_every_s > 0 and self._clock >= self._next_turn:
            self.direction = -self.direction
            self._next_turn = self._clock + rng.expovariate(1 / drift.turn_every_s)
        if drift.sweep_every_s > 0 and self._clock >= self._next_sweep:
            self._next_sweep = self._clock + drift.sweep_every_s
            self._sweep(changes, drift.sweep_levels)
            return True
        target = self.target + self.direction * drift.ticks_per_s * period_s
        if target <= self._low:
            target, self.direction = self._low, 1
        elif target >= self._high:
            target, self.direction = self._high, -1
        self.target = target
        self._follow(changes, generator, round(target))
        return False

    def _sweep(self, changes: ChangeSet, levels: int) -> None:
        """Delete the best ``levels`` levels of the side ahead (one is always left)."""
        book = changes.book
        ahead = book.asks if self.direction > 0 else book.bids
        for tick, _ in ahead.levels(min(levels, ahead.count - 1)):
            changes.set(ahead.is_bid, tick, 0)
        best = ahead.best
        assert best is not None
        self.target = best - self.direction

    def _follow(self, changes: ChangeSet, generator: Generator, mid: int) -> None:
        book, step = changes.book, self.direction
        ahead, behind = (book.asks, book.bids) if step > 0 else (book.bids, book.asks)
        ahead_best, behind_best = ahead.best, behind.best
        assert ahead_best is not None and behind_best is not None
        while ahead.count > 1 and not ahead.better(mid, ahead_best):
            changes.set(ahead.is_bid, ahead_best, 0)
            ahead_best = ahead.best
            assert ahead_best is not None
        last = min(mid - 1, ahead_best - 1) if step > 0 else max(mid + 1, ahead_best + 1)
        generator.fill(changes, behind, range(behind_best + step, last + step, step))
        generator.extend(changes, ahead)
        generator.extend(changes, behind)
