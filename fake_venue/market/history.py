"""Recent history of one book, kept as undo records, to rebuild the book as of a past update id.

The truth endpoint answers "what was the whole book after update N" and the snapshot-lag fault
serves "the book as of n updates ago"; both copy the current book and undo the newer updates, newest
first. Records are compact (the (side, tick, old quantity) triples of an update packed as 64-bit
numbers) and are dropped once they are both beyond ``min_events`` and older than ``max_age_s``, or
beyond ``max_events``, so 2000 busy books don't hold gigabytes of history.

A record is a plain tuple of numbers and bytes, which CPython's cyclic collector stops tracking
after its first pass: a venue replaying thousands of busy books holds hundreds of thousands of
records, and as objects (each with its array) every full collection walked them all, holding every
frame of the venue back meanwhile.
"""

from __future__ import annotations

from array import array
from collections import deque
from typing import Final

from fake_venue.market.book import Book


class StateUnavailable(Exception):
    """The asked-for state cannot be rebuilt; ``status`` is 404 (never existed) or 410 (expired)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


Record = tuple[int, int, int, int, float, bytes]
"""An update's first, last and previous ids, its stamp (ns), its monotonic time (for ageing out)
and its undo triples (an ``array('q')``'s bytes)."""
_LAST: Final = 1
_PREV: Final = 2
_T_NS: Final = 3
_AT: Final = 4
_UNDO: Final = 5


class History:
    """Undo records of one book, oldest first."""

    __slots__ = ("_records", "initial_id", "initial_t_ns", "max_age_s", "max_events", "min_events", "trimmed")

    def __init__(
        self, initial_id: int, initial_t_ns: int, max_events: int, min_events: int, max_age_s: float
    ) -> None:
        self.initial_id = initial_id
        self.initial_t_ns = initial_t_ns
        self.max_events = max_events
        self.min_events = min_events
        self.max_age_s = max_age_s
        self.trimmed = False
        self._records: deque[Record] = deque()

    def __len__(self) -> int:
        return len(self._records)

    def record(
        self, first_id: int, last_id: int, prev_id: int, t_ns: int, at: float, undo: array[int]
    ) -> None:
        """Keep the update ``first_id``..``last_id`` (after ``prev_id``), stamped ``t_ns``, made at
        monotonic ``at``, whose ``undo`` triples put back what it changed."""
        records = self._records
        records.append((first_id, last_id, prev_id, t_ns, at, undo.tobytes()))
        horizon = at - self.max_age_s
        while len(records) > self.max_events or (
            len(records) > self.min_events and records[0][_AT] < horizon
        ):
            records.popleft()
            self.trimmed = True

    def skip(self) -> None:
        """Updates are about to go by unrecorded: forget every state before the next record."""
        self._records.clear()
        self.trimmed = True

    def id_back(self, n: int) -> int:
        """The update id the book had ``n`` updates ago (clamped to the oldest state kept)."""
        records = self._records
        if n <= 0 or not records:
            return records[-1][_LAST] if records else self.initial_id
        return records[-min(n, len(records))][_PREV]

    def id_at_time(self, t_ns: int) -> int | None:
        """The id of the state stamped ``t_ns`` (Alpaca messages carry only that), if still known."""
        for record in reversed(self._records):
            if record[_T_NS] == t_ns:
                return record[_LAST]
            if record[_T_NS] < t_ns:
                return None
        if not self.trimmed and t_ns == self.initial_t_ns:
            return self.initial_id
        return None

    def id_at_ms(self, ms: int) -> int | None:
        """The id of the state a client saw stamped ``ms`` (Kraken and Coinbase times, to the
        millisecond): after the newest update stamped within or before that millisecond."""
        end_ns = (ms + 1) * 1_000_000
        for record in reversed(self._records):
            if record[_T_NS] < end_ns:
                return record[_LAST]
        if not self.trimmed and self.initial_t_ns < end_ns:
            return self.initial_id
        return None

    def t_of(self, update_id: int) -> int:
        """The stamp of the state after ``update_id``: that of the newest update up to it."""
        for record in reversed(self._records):
            if record[_LAST] <= update_id:
                return record[_T_NS]
        return self.initial_t_ns

    def state_at(self, book: Book, current_id: int, update_id: int) -> Book:
        """The book as it was once every update with an id up to ``update_id`` was applied.

        Returns ``book`` itself when nothing needs undoing (callers must not change it).
        """
        if update_id > current_id:
            raise StateUnavailable(404, f"update {update_id} has not happened (latest is {current_id})")
        if update_id == current_id:
            return book
        oldest = self._records[0][_PREV] if self._records else current_id
        if update_id < oldest:
            if self.trimmed:
                raise StateUnavailable(410, f"update {update_id} is out of history (oldest kept is {oldest})")
            raise StateUnavailable(404, f"update {update_id} precedes the book's first state {oldest}")
        state = book.copy()
        for record in reversed(self._records):
            if record[_LAST] <= update_id:
                break
            undo = array("q", record[_UNDO])
            for i in range(len(undo) - 3, -1, -3):
                state.side(bool(undo[i])).set(undo[i + 1], undo[i + 2])
        return state
