"""When a worker sheds load: too many requests held, or held requests waiting too long.

The dispatcher asks :meth:`Load.refuses` before it authenticates a request on a route that needs
a key, and tells :meth:`Load.done` how long each admitted one took. Two bounds apply:

- at most ``ceiling`` requests held at once (a count, so memory and store connections stay bounded
  whatever happens);
- a bound in time, as CoDel keeps a queue short: if even the quickest of the requests completed
  within one ``window_s`` took longer than ``target_s``, requests are standing in a queue (the
  store is slow, the CPU is saturated, a route is heavier than the worker can keep up with), so
  the worker refuses new ones, from the moment the window holds that evidence until a window
  ends without it, and the queue drains. Fewer than :data:`MIN_EVIDENCE` completions prove
  nothing (one slow call alone is not a queue).

A count alone cannot do the second: how many held requests make a long wait depends on what they
cost. Windows roll when requests arrive or complete, so an idle worker does no work for this.
"""

from __future__ import annotations

import math

MIN_EVIDENCE = 4


class Load:
    """Requests in progress in one worker, whether it sheds, and how many it refused."""

    __slots__ = ("_completed", "_quickest", "_window_end", "ceiling", "in_flight", "overloaded", "shed",
                 "target_s", "window_s")  # fmt: skip

    def __init__(self, ceiling: int, target_s: float, window_s: float = 0.1) -> None:
        self.ceiling = ceiling
        self.target_s = target_s
        self.window_s = window_s
        self.in_flight = 0
        self.shed = 0
        self.overloaded = False
        self._completed = 0
        self._quickest = math.inf
        self._window_end = 0.0

    def refuses(self, now: float) -> bool:
        """True (and counted) when a request arriving at ``now`` must be refused."""
        if now >= self._window_end:
            self._roll(now)
        if self.overloaded or self.in_flight > self.ceiling:
            self.shed += 1
            return True
        return False

    def done(self, seconds: float, now: float) -> None:
        """An admitted request took ``seconds`` from arrival to its answer at ``now``."""
        if now >= self._window_end:
            self._roll(now)
        self._completed += 1
        if seconds < self._quickest:
            self._quickest = seconds
        if self._completed >= MIN_EVIDENCE:
            self.overloaded = self._quickest > self.target_s

    def _roll(self, now: float) -> None:
        """End the window: what it proved holds through the next one (without proof: admit)."""
        self.overloaded = self._completed >= MIN_EVIDENCE and self._quickest > self.target_s
        self._completed, self._quickest, self._window_end = 0, math.inf, now + self.window_s
