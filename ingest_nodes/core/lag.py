"""How far behind the venue a node's books run, and when that means shedding work or not serving.

Theory of operation
-------------------
A venue event carries the venue's time (``E``); the node stamps when it read the frame. A node that
keeps up reads each frame a few milliseconds after the venue wrote it; one that falls behind reads
frames that waited in its socket, and the gap grows with the backlog. The raw gap also holds the
difference between the venue's clock and ours, which can be tens or hundreds of milliseconds
either way, so the node measures its books against a *baseline*: the smallest gap any book showed
in each second, the lowest of those over the last ``window_s`` (a node keeps up at least a moment
in ten minutes; if it never does, its books look current to it and the stall and silence checks
still hold them to account).

- A book whose newest event came more than ``stale_ms`` past the baseline is *lagging*: it is
  published ``stale`` (readers serve another replica or refuse), until its events come within half
  that again (so a book near the edge does not flip with every event).
- The node *sheds* while its worst book of the last second runs more than ``shed_ms`` past the
  baseline, until it is within half of that: each book is published at most every so often
  instead of on every event, and refreshes and audits wait (the publisher and the replicas read
  :attr:`LagWatch.shedding`).

Pure: the node hands it each second's gaps and the time; no clock, no I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable


class LagWatch:
    """The baseline, the lagging limits and the shedding state (see the module docstring)."""

    __slots__ = ("_minima", "backlog_ms", "baseline_ms", "fresh_below", "shed_ms", "shedding", "stale_above",
                 "stale_ms")  # fmt: skip

    def __init__(self, *, stale_ms: int, shed_ms: int, window_s: int = 600) -> None:
        self.stale_ms = stale_ms
        self.shed_ms = shed_ms
        self._minima: deque[int] = deque(maxlen=window_s)
        self.baseline_ms = 0
        """The smallest gap between the venue's time and the node's reading of late (clock offset)."""
        self.backlog_ms = 0
        """How far past the baseline the node's worst book of the last second ran."""
        self.stale_above = stale_ms
        """A book whose newest event's gap is above this is lagging ..."""
        self.fresh_below = stale_ms // 2
        """... until its gap is below this again."""
        self.shedding = False

    def second(self, gaps: Iterable[int]) -> None:
        """The gaps (receipt time minus venue time) of every book that had an event in the last
        second, newest event of each."""
        low = high = None
        for gap in gaps:
            if low is None or gap < low:
                low = gap
            if high is None or gap > high:
                high = gap
        if low is None or high is None:
            self.backlog_ms = 0
        else:
            self._minima.append(low)
            self.baseline_ms = min(self._minima)
            self.backlog_ms = high - self.baseline_ms
        self.stale_above = self.baseline_ms + self.stale_ms
        self.fresh_below = self.baseline_ms + self.stale_ms // 2
        if self.backlog_ms > self.shed_ms:
            self.shedding = True
        elif self.backlog_ms < self.shed_ms // 2:
            self.shedding = False

    def lagging(self, gap: int, was: bool) -> bool:
        """Whether a book whose newest event's gap is ``gap`` is lagging (``was``: it was)."""
        return gap > self.stale_above or (was and gap >= self.fresh_below)
