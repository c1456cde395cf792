"""One order book replica: exact price ordering, pre-encoded levels, and a trusted-depth watermark.

Theory of operation
-------------------
Each side keeps its levels in a store (:mod:`ingest_nodes.core.levels`): sorted by price as an
exact integer, best first, each level already encoded as JSON with the venue's own strings, so
publishing the top N is a slice and a join with no per-publish encoding. The store is compiled
where it was built, pure Python elsewhere; this module is the same over either.

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

A publisher that sends readers only what changed opens a *journal* (``open_journal``): every change
to a level among the first ``cap`` of a side is recorded as it happens, by its position (replace,
insert or delete at index i, with the new level), so that what changed in the top levels since the
journal was last taken (``take_journal``) costs what changed, not the top N again. A load or a
clear closes the journal (the whole book changed: publish it whole), and so does a journal that
grows past ``JOURNAL_LIMIT`` entries without being taken.

The book does no sync logic: the engine decides what to load and apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Final, final

import orjson

from ingest_nodes.core.events import Level
from ingest_nodes.core.levels import DELETE, INSERT, REPLACE, SCALE, Change, new_store

__all__ = ["DELETE", "INSERT", "JOURNAL_LIMIT", "REPLACE", "TRUNCATE", "Change", "OrderBook", "SideWindow"]

_NOTHING_TRUSTED: Final = float("-inf")
"""Watermark of a side that came back full and empty (a zero limit): no level is trusted."""
TRUNCATE: Final = 3
JOURNAL_LIMIT: Final = 512
"""Journal entries a side keeps untaken; past them the journal closes (publish the book whole)."""


@final
class SideWindow:
    """How much of one side can be served: ``trusted`` levels, and whether the venue may hold more
    past them (``bounded``: the side has a watermark; a complete side has none).

    A plain class, not a named tuple: compiled, it is built natively, where a named tuple's
    ``__new__`` runs in the interpreter (two are built for every event that changes a book)."""

    __slots__ = ("bounded", "trusted")

    def __init__(self, trusted: int, bounded: bool) -> None:
        self.trusted = trusted
        self.bounded = bounded

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SideWindow):
            return NotImplemented
        return self.trusted == other.trusted and self.bounded == other.bounded

    def __hash__(self) -> int:
        return hash((self.trusted, self.bounded))

    def __repr__(self) -> str:
        return f"SideWindow(trusted={self.trusted}, bounded={self.bounded})"


class _Side:
    """One side of the book; bids are keyed by the negated price so the best price sorts first."""

    __slots__ = ("cap", "journal", "journal_cap", "negate", "store", "watermark")

    def __init__(self, *, negate: bool) -> None:
        self.negate = negate
        self.store = new_store()
        self.watermark: int | float | None = None
        self.journal: list[Change] | None = None
        self.journal_cap = 0
        """The journal records changes among the first ``journal_cap`` levels only."""
        self.cap: int | None = None
        """The venue keeps this many levels current (``truncate``); None: it keeps the whole side."""

    def load(self, levels: Iterable[Level], *, complete: bool) -> None:
        store = self.store
        store.load(levels, self.negate)
        self.journal = None
        self.cap = None
        if complete:
            self.watermark = None
        else:
            self.watermark = store.sort_key(len(store) - 1) if len(store) else _NOTHING_TRUSTED

    def apply(self, levels: Iterable[Level]) -> None:
        """Set or delete each level: the ingest hot path, all of it in the store."""
        try:
            self.store.apply(levels, self.negate, self.journal, self.journal_cap)
        finally:
            if self.journal is not None and len(self.journal) > JOURNAL_LIMIT:
                self.journal = None

    def truncate(self, depth: int) -> None:
        store = self.store
        if len(store) > depth:
            journal = self.journal
            if journal is not None:  # each level cut among the journaled ones: a delete at ``depth``
                journal.extend((DELETE, depth, b"") for _ in range(min(len(store), self.journal_cap) - depth))
            store.truncate(depth)
        self.cap = depth
        self.watermark = None

    def top(self, n: int) -> list[bytes]:
        return self.store.first(min(n, self.trusted_depth()))

    def first(self, n: int) -> list[bytes]:
        """The best ``n`` levels (the caller keeps ``n`` within the trusted depth)."""
        return self.store.first(n)

    def between(self, start: int, stop: int) -> list[bytes]:
        """Levels ``start`` to ``stop`` (exclusive), best first."""
        return self.store.between(start, stop)

    def head_changes(self, journal: list[Change], shown: int, count: int) -> list[Change]:
        """What turns the first ``shown`` levels (as they were when ``journal`` began) into the
        first ``count`` now (``count`` at most the journal's cap): the journal's entries that touch
        them, in order (a reader holding ``cap`` levels drops its last on an insert), then a
        truncation or the levels that moved up into view (``TRUNCATE n``: keep the first n)."""
        changes: list[Change] = []
        cap = self.journal_cap
        for change in journal:
            kind, index, _ = change
            if index >= shown:
                continue  # past what the reader holds (an insert there comes with the fill below)
            changes.append(change)
            if kind == INSERT:
                shown = min(shown + 1, cap)
            elif kind == DELETE:
                shown -= 1
        if shown > count:
            changes.append((TRUNCATE, count, b""))
        elif shown < count:
            changes.extend((INSERT, shown + i, level) for i, level in enumerate(self.between(shown, count)))
        return changes

    def trusted_depth(self) -> int:
        watermark = self.watermark
        if watermark is None:
            return len(self.store)
        if watermark == _NOTHING_TRUSTED:
            return 0
        return self.store.count_through(int(watermark))

    def window(self) -> SideWindow:
        trusted = self.trusted_depth()
        capped = self.cap is not None and trusted >= self.cap
        return SideWindow(trusted, self.watermark is not None or capped)

    def best_key(self) -> int | None:
        """The best level's price x 10**24 (None: no level)."""
        if not len(self.store):
            return None
        key = self.store.sort_key(0)
        return -key if self.negate else key

    def best(self) -> Decimal | None:
        key = self.best_key()
        return None if key is None else Decimal(f"{key}E-{SCALE}")  # exact: scaleb would round to 28 digits

    def decoded(self, n: int | None = None) -> list[Level]:
        return [_decode(level) for level in self.store.first(len(self.store) if n is None else n)]


def _decode(encoded: bytes) -> Level:
    price, quantity = orjson.loads(encoded)
    return (price, quantity)


class OrderBook:
    """Bids and asks of one replica; see the module docstring."""

    __slots__ = ("_asks", "_bids", "_window")

    def __init__(self) -> None:
        self._bids = _Side(negate=True)
        self._asks = _Side(negate=False)
        self._window: tuple[SideWindow, SideWindow] | None = None
        """``window()`` since the levels last changed: an event's window is read when it is applied
        and again when it is published. Every method that changes levels or watermarks drops it
        first (a bad number can stop one half way)."""

    def load(
        self, bids: Iterable[Level], asks: Iterable[Level], *, bids_complete: bool, asks_complete: bool
    ) -> None:
        """Replace the whole book; a side that is not complete gets a trusted-depth watermark.

        Levels with a zero quantity are skipped. Raises ``VenuePayloadError`` on a bad number
        (the book is then half loaded and must be cleared).
        """
        self._window = None
        self._bids.load(bids, complete=bids_complete)
        self._asks.load(asks, complete=asks_complete)

    def apply(self, bids: Iterable[Level], asks: Iterable[Level]) -> None:
        """Set each level to its absolute quantity; a zero quantity deletes (absent: no-op).

        Raises ``VenuePayloadError`` on a bad number (levels before it are already applied).
        """
        self._window = None
        self._bids.apply(bids)
        self._asks.apply(asks)

    def truncate(self, depth: int) -> None:
        """Keep the best ``depth`` levels a side, all trusted: the venue keeps that many current."""
        self._window = None
        self._bids.truncate(depth)
        self._asks.truncate(depth)

    def clear(self) -> None:
        """Empty both sides and drop the watermarks."""
        self._window = None
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

    def bids_between(self, start: int, stop: int) -> list[bytes]:
        """Bids ``start`` to ``stop`` (exclusive), best first (the caller keeps them trusted)."""
        return self._bids.between(start, stop)

    def asks_between(self, start: int, stop: int) -> list[bytes]:
        """Asks ``start`` to ``stop`` (exclusive), best first (the caller keeps them trusted)."""
        return self._asks.between(start, stop)

    def open_journal(self, cap: int) -> None:
        """Record from now on every change among the first ``cap`` levels of each side (see the
        module docstring); whatever was recorded before is dropped."""
        for side in (self._bids, self._asks):
            side.journal = []
            side.journal_cap = max(cap, 1)

    def bid_changes(self, journal: list[Change], shown: int, count: int) -> list[Change]:
        """See ``_Side.head_changes``: the bids' journal made into changes of the first levels."""
        return self._bids.head_changes(journal, shown, count)

    def ask_changes(self, journal: list[Change], shown: int, count: int) -> list[Change]:
        """See ``_Side.head_changes``: the asks' journal made into changes of the first levels."""
        return self._asks.head_changes(journal, shown, count)

    def take_journal(self) -> tuple[list[Change], list[Change]] | None:
        """The bid and ask changes recorded since the journal was opened or last taken (it stays
        open), or None when it is closed (never opened, or the book was loaded, cleared or changed
        too much since): then only the whole book says what it is."""
        bids, asks = self._bids.journal, self._asks.journal
        if bids is None or asks is None:
            return None
        self._bids.journal = []
        self._asks.journal = []
        return bids, asks

    def trusted_depth(self) -> tuple[int, int]:
        """How many bid and ask levels ``top_*`` can serve (a re-snapshot is due when too few)."""
        return self._bids.trusted_depth(), self._asks.trusted_depth()

    def window(self) -> tuple[SideWindow, SideWindow]:
        """The bid and ask windows: trusted levels, and whether the venue may hold more past them."""
        window = self._window
        if window is None:
            window = self._window = (self._bids.window(), self._asks.window())
        return window

    def best_bid(self) -> Decimal | None:
        """The highest bid price, or None when there are no bids."""
        return self._bids.best()

    def best_ask(self) -> Decimal | None:
        """The lowest ask price, or None when there are no asks."""
        return self._asks.best()

    def is_crossed(self) -> bool:
        """True when the best bid is at or above the best ask (crossed or locked)."""
        bid, ask = self._bids.best_key(), self._asks.best_key()
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
