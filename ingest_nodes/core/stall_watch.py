"""Telling a quiet book from a stalled stream: each book's rhythm, and when its silence needs a check.

Theory of operation
-------------------
A venue can stop delivering one market's diff events while its book keeps changing and the socket
stays healthy (pings go on, other markets on the connection keep flowing). Nothing in the stream
says so, and silence alone proves nothing: some markets are quiet for minutes. So each book keeps
its own rhythm, a long gap among its recent ones (of the last ``RECENT_GAPS``, the one an eighth of
the way down from the longest, so that one odd pause does not slow the watch for long), and its
silence becomes *suspect* once it lasts ``factor`` times that (at least ``floor_ms``; a book that
has shown no gap yet waits ``unknown_ms``). A suspect is checked cheaply: the venue's book id is
asked for with the smallest REST snapshot (see ``stall_checks``), and

- the same id as ours: the market is really quiet. That is remembered as a *confirmation* (readers
  see how recently the book was known to be current) and the next check waits twice as long, up to
  ``ceiling_ms``;
- a larger id that the stream does not catch up with within ``grace_ms``: events were missed, the
  book is *stalled* (published ``stale``, never served) and resyncs when events flow again.

The next event of a book resets its backoff. Pure: times are passed in, the check's fetch is the
caller's.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import Enum
from typing import Final

RECENT_GAPS: Final = 32
"""Gaps remembered per book; the rhythm is the ``len // RHYTHM_SHARE``-th longest of them (0: the
longest), about their 85th percentile once all 32 are known."""
RHYTHM_SHARE: Final = 8


@dataclass(frozen=True, slots=True)
class StallPolicy:
    """When silence is suspect, and how long a venue id ahead of ours may take to arrive."""

    factor: int = 3
    """Silence longer than this many times the book's rhythm is suspect ..."""
    floor_ms: int = 1000
    """... but never before this long (a busy book's 100 ms rhythm would make every hiccup a check),"""
    unknown_ms: int = 10_000
    """... or this long for a book that has shown no gap yet,"""
    ceiling_ms: int = 1_800_000
    """... and always after this long, however quiet the book was confirmed to be."""
    grace_ms: int = 300
    """A venue id ahead of ours may be events still on their way: this long (from the ask) to catch
    up, some three of Binance's 100 ms stream batches."""


class Verdict(Enum):
    """What a check says."""

    QUIET = "quiet"
    """The venue is where the book is: nothing changed (or the events have arrived meanwhile)."""
    CATCHING_UP = "catching_up"
    """The venue is ahead: events may be on their way; look again after the grace."""
    STALLED = "stalled"
    """The venue is ahead and the stream did not follow: events were missed."""


class Rhythm:
    """One book's recent gaps between events, and when its silence becomes suspect."""

    __slots__ = ("_backoff", "_confirmed_ms", "_gaps", "_last_event_ms", "_policy", "_suspect_at",
                 "check_failed")  # fmt: skip

    def __init__(self, now_ms: int, policy: StallPolicy | None = None) -> None:
        self._policy = policy or StallPolicy()
        self._gaps: deque[int] = deque(maxlen=RECENT_GAPS)
        self._last_event_ms = now_ms
        self._backoff = 1
        self._suspect_at: int | None = None
        """:meth:`suspect_at`, or None until it is worked out again: the checker asks for it many
        times a second for every book, and it changes only with an event, a restart or a check."""
        self._confirmed_ms: int | None = None
        self.check_failed = False
        """The last check could not be made (the venue refused or timed out), or none can be: a
        suspect silence then turns the book stale after the publisher's ``stale_after_ms``."""

    @property
    def policy(self) -> StallPolicy:
        return self._policy

    def event(self, now_ms: int) -> None:
        """An event of the book arrived (the hot path: an append and three assignments)."""
        self._gaps.append(now_ms - self._last_event_ms)
        self._last_event_ms = now_ms
        self._backoff = 1
        self._suspect_at = None

    def restart(self, now_ms: int) -> None:
        """The book starts over (synced again, or resumed after a stall): the silence that ended is
        no rhythm, and no earlier confirmation vouches for the new book."""
        self._last_event_ms = now_ms
        self._backoff = 1
        self._confirmed_ms = None
        self._suspect_at = None

    @property
    def confirmed_ms(self) -> int | None:
        """When a check last found the venue where the book is (None: none did since the start)."""
        return self._confirmed_ms

    @property
    def last_event_ms(self) -> int:
        return self._last_event_ms

    @property
    def known_ms(self) -> int:
        """The latest moment the book was known to match the venue: its last event or confirmation."""
        confirmed = self._confirmed_ms
        return self._last_event_ms if confirmed is None else max(self._last_event_ms, confirmed)

    def suspect_at(self) -> int:
        """When the current silence becomes suspect (a quiet confirmation pushes it further out)."""
        if self._suspect_at is not None:
            return self._suspect_at
        policy = self._policy
        gaps = self._gaps
        rhythm = sorted(gaps, reverse=True)[len(gaps) // RHYTHM_SHARE] if gaps else -1
        base = policy.unknown_ms if rhythm < 0 else max(policy.factor * rhythm, policy.floor_ms)
        self._suspect_at = self.known_ms + min(base * self._backoff, policy.ceiling_ms)
        return self._suspect_at

    def suspect(self, now_ms: int) -> bool:
        """Whether the silence is suspect at ``now_ms`` (``now_ms >= suspect_at()``). The checker
        asks this of every book many times a second, and of a busy book the answer is nearly always
        no: a silence shorter than any rhythm can make suspect is answered without working the
        rhythm out."""
        policy = self._policy
        if now_ms - self._last_event_ms < min(policy.floor_ms, policy.unknown_ms, policy.ceiling_ms):
            return False
        return now_ms >= self.suspect_at()

    def quiet(self, at_ms: int) -> None:
        """A check found nothing changed: the book is current as of ``at_ms``; check less often."""
        confirmed = self._confirmed_ms
        self._confirmed_ms = at_ms if confirmed is None else max(confirmed, at_ms)
        self.check_failed = False
        self._backoff = min(2 * self._backoff, 1 << 20)
        self._suspect_at = None


def judge(venue_id: int, book_id: int, asked_ms: int, now_ms: int, grace_ms: int) -> Verdict:
    """What a check that the venue answered with ``venue_id`` (asked at ``asked_ms``) says now about a
    book at ``book_id``."""
    if venue_id <= book_id:
        return Verdict.QUIET
    if now_ms - asked_ms < grace_ms:
        return Verdict.CATCHING_UP
    return Verdict.STALLED
