"""Telling a quiet book from a stalled stream: each book's rhythm, and when its silence needs a check.

Theory of operation
-------------------
A venue can stop delivering one market's diff events while its book keeps changing and the socket
stays healthy (pings go on, other markets on the connection keep flowing). Nothing in the stream
says so, and silence alone proves nothing: some markets are quiet for minutes. So each book keeps
its own rhythm, a long gap among its recent ones (the ``RHYTHM_RANK``-th longest of the last
``RECENT_GAPS``, so that one odd pause does not slow the watch for long), and its silence becomes
*suspect* once it lasts ``FACTOR`` times that (at least ``FLOOR_MS``, at most ``CEILING_MS``). A suspect is
checked cheaply: the venue's book id is asked for with the smallest REST snapshot, and

- the same id as ours: the market is really quiet. That is remembered as a *confirmation* (readers
  see how recently the book was known to be current) and the next check waits twice as long;
- a larger id that the stream does not catch up with within ``GRACE_MS``: events were missed, the
  book is *stalled* (published ``stale``, never served) and resyncs when events flow again.

The next event of a book resets its backoff. Pure: times are passed in, the check's fetch is the
caller's.
"""

from __future__ import annotations

from collections import deque
from enum import Enum
from typing import Final

FACTOR: Final = 3
"""Silence longer than this many times the longest recent gap is suspect ..."""
FLOOR_MS: Final = 1000
"""... but never before this long (a busy book's 100 ms rhythm would make every hiccup a check) ..."""
CEILING_MS: Final = 600_000
"""... and always after this long, whatever the book's history."""
RECENT_GAPS: Final = 32
"""Gaps remembered per book ..."""
RHYTHM_RANK: Final = 4
"""... of which the rhythm is the 4th longest (about their 90th percentile)."""
GRACE_MS: Final = 500
"""A venue id ahead of ours may be events still on their way: this long to catch up."""


class Verdict(Enum):
    """What a check says."""

    QUIET = "quiet"
    """The venue is where the book is: nothing changed."""
    CATCHING_UP = "catching_up"
    """The venue is ahead: events may be on their way; look again after the grace."""
    STALLED = "stalled"
    """The venue is ahead and the stream did not follow: events were missed."""


class Rhythm:
    """One book's recent gaps between events, and when its silence becomes suspect."""

    __slots__ = ("_backoff", "_gaps", "_last_event_ms", "_rhythm", "confirmed_ms")

    def __init__(self, now_ms: int) -> None:
        self._gaps: deque[int] = deque(maxlen=RECENT_GAPS)
        self._last_event_ms = now_ms
        self._backoff = 1
        self._rhythm: int | None = 0
        """The rhythm, or None until it is worked out again (after new gaps)."""
        self.confirmed_ms: int | None = None
        """When a check last found the venue where the book is (None: no check said so yet)."""

    def event(self, now_ms: int) -> None:
        """An event of the book arrived (the hot path: an append and three assignments)."""
        self._gaps.append(now_ms - self._last_event_ms)
        self._last_event_ms = now_ms
        self._backoff = 1
        self._rhythm = None

    def restart(self, now_ms: int) -> None:
        """The book starts over (a resync after a stall): the silence that ended is no rhythm."""
        self._last_event_ms = now_ms
        self._backoff = 1
        self.confirmed_ms = None

    @property
    def last_event_ms(self) -> int:
        return self._last_event_ms

    def suspect_at(self) -> int:
        """When the current silence becomes suspect (a quiet confirmation pushes it further out)."""
        rhythm = self._rhythm
        if rhythm is None:
            longest = sorted(self._gaps, reverse=True)
            rhythm = self._rhythm = longest[min(RHYTHM_RANK, len(longest)) - 1] if longest else 0
        threshold = min(max(FACTOR * rhythm, FLOOR_MS) * self._backoff, CEILING_MS)
        since = (
            self._last_event_ms if self.confirmed_ms is None else max(self._last_event_ms, self.confirmed_ms)
        )
        return since + threshold

    def quiet(self, now_ms: int) -> None:
        """A check found nothing changed: the book is current as of ``now_ms``; check less often."""
        self.confirmed_ms = now_ms
        self._backoff = min(2 * self._backoff, CEILING_MS // FLOOR_MS)


def judge(venue_id: int, book_id: int, asked_ms: int, now_ms: int) -> Verdict:
    """What a check that the venue answered with ``venue_id`` (asked at ``asked_ms``) says now about a
    book at ``book_id``."""
    if venue_id <= book_id:
        return Verdict.QUIET
    if now_ms - asked_ms < GRACE_MS:
        return Verdict.CATCHING_UP
    return Verdict.STALLED
