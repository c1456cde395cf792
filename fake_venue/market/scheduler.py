"""The venue's clock: one task that makes every active symbol's updates and runs periodic jobs.

Theory of operation. Active markets sit in a heap ordered by their next due time; a market at rate
r is due every 1/r seconds from a random phase, so thousands of symbols spread over the second
instead of firing together. Each wake-up pops everything due, makes those updates (the feed
encodes and queues them), runs the periodic jobs that are due (window flushes of merged streams,
pings and time-outs) and sleeps until the next due time. A paused or stalled market stays in the
heap and is looked at again later; a fault that needs it sooner (a new rate, the end of a stall)
reschedules it, and a stale heap entry is recognised by its token and skipped. A market that fell
behind (a slow loop) catches up at most one second of updates, never an unbounded backlog.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from fake_venue.market.markets import Market

IDLE_RECHECK_S = 0.5
MAX_CATCH_UP_S = 1.0
EARLY_S = 0.002
"""Whatever is due within this long is made now: the loop's timers tick in whole milliseconds (uvloop
may wake a fraction early), and thousands of markets due a few microseconds apart would otherwise
cost a wake-up each."""


class Feed(Protocol):
    """A venue's stream side, as the clock sees it."""

    def emit(self, market: Market) -> None:
        """Make one update of ``market`` and send it to whoever listens."""


@dataclass(slots=True)
class _Job:
    period_s: float
    run: Callable[[], None]
    due: float = float("inf")
    """Set when the clock starts (or at once when the job is added to a running clock)."""


class Scheduler:
    """Drives markets at their rates and runs periodic jobs, on one task."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Market, Feed]] = []
        self._order = itertools.count()
        self._jobs: list[_Job] = []
        self._waiter: asyncio.Future[None] | None = None
        self._started = False
        self.wakeups = 0
        """Turns of the clock so far (what it costs the venue beside the updates themselves)."""

    def add(self, market: Market, feed: Feed) -> None:
        """Start driving a newly active market, at a random phase within its first period."""
        rate = market.effective_rate
        phase = market.rng.random() / rate if rate > 0 else IDLE_RECHECK_S
        self._push(market, feed, self._now() + phase)

    def reschedule(self, market: Market, feed: Feed) -> None:
        """Look at ``market`` again now (its rate or stall changed)."""
        market.schedule_token += 1
        self._push(market, feed, self._now())

    def every(self, period_s: float, run: Callable[[], None]) -> None:
        job = _Job(period_s, run)
        if self._started:
            job.due = self._now() + period_s
            self._wake()
        self._jobs.append(job)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._started = True
        for job in self._jobs:
            job.due = loop.time() + job.period_s
        while True:
            self.wakeups += 1
            now = loop.time() + EARLY_S
            heap = self._heap
            while heap and heap[0][0] <= now:
                due, _, token, market, feed = heapq.heappop(heap)
                if token == market.schedule_token:
                    self._push(market, feed, self._fire(market, feed, due, now))
            for job in self._jobs:
                if job.due <= now:
                    job.run()
                    job.due = max(job.due + job.period_s, now)
            wake_at = min([now + 1.0, *(job.due for job in self._jobs)] + ([heap[0][0]] if heap else []))
            await self._sleep_until(loop, wake_at)

    def _fire(self, market: Market, feed: Feed, due: float, now: float) -> float:
        rate = market.effective_rate
        if rate <= 0 or not market.trading:
            return now + IDLE_RECHECK_S
        if market.stall_until > now:
            return market.stall_until
        feed.emit(market)
        following = due + market.period_s()
        return following if following > now - MAX_CATCH_UP_S else now

    def _push(self, market: Market, feed: Feed, due: float) -> None:
        heapq.heappush(self._heap, (due, next(self._order), market.schedule_token, market, feed))
        if self._waiter is not None and (len(self._heap) == 1 or self._heap[0][0] == due):
            self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _sleep_until(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        handle = loop.call_at(when, _resolve, waiter)
        try:
            await waiter
        finally:
            handle.cancel()
            self._waiter = None

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
