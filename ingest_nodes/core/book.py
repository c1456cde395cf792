"""One order book replica: exact price ordering, pre-encoded levels, and a trusted-depth watermark.

Theory of operation
-------------------
Each side is a dict from the price's *key* (bids by the negated key) to the level, and a plain
list of those keys kept sorted with :mod:`bisect`, so the best price is first. A key is the price
as an exact integer, price x 10**24 (a scaled integer: ``"4.0002"`` and ``"4.00020000"`` are one
key, one level); a plain decimal string becomes one by a regular expression and ``int``, anything
else a ``Decimal`` parses (an exponent, a sign) is scaled exactly or refused. Integers are what
make a level cheap: a ``Decimal`` key costs a hash of modular arithmetic on every dict look-up
(about twenty thousand instructions, most of what a level cost), an integer's hash and comparison
are a few. A venue frame changes a few levels near the touch: finding one in the list, inserting
or deleting it is a binary search in C and a ``memmove`` of pointers, and the top N is a slice.
The value is the level already encoded as JSON, ``b'["price","qty"]'`` with the venue's own
strings, so publishing the top N is a slice and a join with no per-publish encoding. Quantities
are tested for zero numerically: ``"0"``, ``"0.00000000"`` and ``"0E-8"`` all delete.

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

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Final, NamedTuple

import orjson

from ingest_nodes.core import native
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import Level

_NOTHING_TRUSTED: Final = float("-inf")
"""Watermark of a side that came back full and empty (a zero limit): no level is trusted."""
SCALE: Final = 24
"""Decimal places a price key keeps (a price with more is refused as unreadable)."""
_POWERS: Final[list[int]] = [10**k for k in range(SCALE + 1)]

REPLACE: Final = 0
INSERT: Final = 1
DELETE: Final = 2
TRUNCATE: Final = 3
JOURNAL_LIMIT: Final = 512
"""Journal entries a side keeps untaken; past them the journal closes (publish the book whole)."""

Change = tuple[int, int, bytes]
"""A journal entry: ``(REPLACE | INSERT | DELETE, index, level)`` (``b""`` for a delete)."""


def price_key(price: str) -> int:
    """``price`` x 10**24, exactly (see the module docstring); InvalidOperation, TypeError or
    ValueError when it is not a finite number with at most ``SCALE`` places."""
    whole, _, places = price.partition(".")
    digits = whole + places
    if len(places) <= SCALE and digits.isdigit():  # a plain decimal: what venues send
        return int(digits) * _POWERS[SCALE - len(places)]
    value = Decimal(price)
    scaled = value.scaleb(SCALE)
    if not value.is_finite() or scaled != scaled.to_integral_value():
        raise InvalidOperation
    return int(scaled)


def _plain(text: str) -> bool:
    """Whether ``text`` is digits with at most one point among them (a level's strings then need no
    JSON escaping, and a quantity is zero when it has no other digit)."""
    whole, _, places = text.partition(".")
    return (whole + places).isdigit()


def _nonzero(quantity: str) -> bool:
    """Whether ``quantity`` is a number other than zero (InvalidOperation, TypeError or ValueError
    if it is none)."""
    if _plain(quantity):
        return bool(quantity.strip("0."))
    return bool(Decimal(quantity))


def _encoded(price: str, quantity: str) -> bytes:
    """The level as its JSON array, ``b'["price","qty"]'``."""
    if _plain(price) and _plain(quantity):
        return f'["{price}","{quantity}"]'.encode()  # one format and one encode: the cheapest way
    # orjson hands back every result in a 4 KiB block; "%b" keeps an exact-size copy.
    return b"%b" % orjson.dumps((price, quantity))


def _read(levels: Iterable[Level], *, negate: bool) -> dict[int, bytes]:
    """A snapshot side as key -> encoded level (zero quantities skipped)."""
    fresh: dict[int, bytes] = {}
    level: object = None
    try:
        for level in levels:
            price, quantity = level
            key = price_key(price)
            if _nonzero(quantity):
                fresh[-key if negate else key] = _encoded(price, quantity)
    except (InvalidOperation, TypeError, ValueError, AttributeError) as exc:
        raise VenuePayloadError(f"bad level {level!r}") from exc
    return fresh


class SideWindow(NamedTuple):
    """How much of one side can be served: ``trusted`` levels, and whether the venue may hold more
    past them (``bounded``: the side has a watermark; a complete side has none)."""

    trusted: int
    bounded: bool


class _Side:
    """One side of the book; bids are keyed by the negated price so the best price sorts first."""

    __slots__ = ("cap", "journal", "journal_cap", "keys", "levels", "negate", "watermark")

    def __init__(self, *, negate: bool) -> None:
        self.negate = negate
        self.levels: dict[int, bytes] = {}
        self.keys: list[int] = []
        """The keys of ``levels``, ascending (best first)."""
        self.watermark: int | float | None = None
        self.journal: list[Change] | None = None
        self.journal_cap = 0
        """The journal records changes among the first ``journal_cap`` levels only."""
        self.cap: int | None = None
        """The venue keeps this many levels current (``truncate``); None: it keeps the whole side."""

    def load(self, levels: Iterable[Level], *, complete: bool) -> None:
        self.levels = _read(levels, negate=self.negate)
        self.keys = sorted(self.levels)  # one sort instead of one insertion per level
        self.journal = None
        self.cap = None
        if complete:
            self.watermark = None
        else:
            self.watermark = self.keys[-1] if self.keys else _NOTHING_TRUSTED

    def apply(self, levels: Iterable[Level]) -> None:
        """Set or delete each level: the ingest hot path.

        The compiled loop (``native.apply_plain``) takes every level that is a pair of plain
        decimals, which is what venues send, and stops at any other; ``_apply_levels`` takes that
        one (it reads it or refuses it) and the compiled loop goes on after it. Without the
        compiled loop, ``_apply_levels`` takes them all."""
        compiled = native.apply_plain
        try:
            if compiled is not None and (type(levels) is tuple or type(levels) is list):
                book, keys, negate, cap = self.levels, self.keys, self.negate, self.journal_cap
                done = compiled(levels, 0, book, keys, negate, self.journal, cap)
                while done < len(levels):
                    self._apply_levels(levels[done : done + 1])
                    done = compiled(levels, done + 1, book, keys, negate, self.journal, cap)
            else:
                self._apply_levels(levels)
        finally:
            if self.journal is not None and len(self.journal) > JOURNAL_LIMIT:
                self.journal = None

    def _apply_levels(self, levels: Iterable[Level]) -> None:
        """The reference loop, one loop and no calls of our own.

        A plain decimal (what venues send) is read inline, the fast path of ``price_key`` and
        ``_nonzero``; anything else goes through those functions. Nearly all of a level's cost is
        the work on its two strings (the key, the zero test, the encoding); there is no per-price
        cache of keys all the same: on a node holding hundreds of books, finding a price in one
        costs more in cache misses than reading it again."""
        book, keys, negate, journal, cap = self.levels, self.keys, self.negate, self.journal, self.journal_cap
        level: object = None
        try:
            for level in levels:
                price, quantity = level
                whole, _, places = price.partition(".")
                digits = whole + places
                plain = len(places) <= SCALE and digits.isdigit()
                key = int(digits) * _POWERS[SCALE - len(places)] if plain else price_key(price)
                if negate:
                    key = -key
                plain_quantity = quantity.replace(".", "", 1).isdigit()
                if quantity.strip("0.") != "" if plain_quantity else _nonzero(quantity):
                    if plain and plain_quantity:
                        encoded = f'["{price}","{quantity}"]'.encode()
                    else:
                        encoded = _encoded(price, quantity)
                    held = book.get(key)
                    if held is not None:
                        if held == encoded:
                            continue  # venues repeat levels as they are: nothing changed
                        book[key] = encoded
                        if journal is not None and (len(keys) <= cap or key <= keys[cap - 1]):
                            journal.append((REPLACE, bisect_left(keys, key), encoded))
                    else:
                        i = bisect_left(keys, key)
                        keys.insert(i, key)
                        book[key] = encoded
                        if journal is not None and i < cap:
                            journal.append((INSERT, i, encoded))
                elif book.pop(key, None) is not None:
                    i = bisect_left(keys, key)
                    del keys[i]
                    if journal is not None and i < cap:
                        journal.append((DELETE, i, b""))
        except (InvalidOperation, TypeError, ValueError, AttributeError) as exc:
            raise VenuePayloadError(f"bad level {level!r}") from exc

    def truncate(self, depth: int) -> None:
        keys, levels = self.keys, self.levels
        if len(keys) > depth:
            journal = self.journal
            if journal is not None:  # each level cut among the journaled ones: a delete at ``depth``
                journal.extend((DELETE, depth, b"") for _ in range(min(len(keys), self.journal_cap) - depth))
            for key in keys[depth:]:
                del levels[key]
            del keys[depth:]
        self.cap = depth
        self.watermark = None

    def top(self, n: int) -> list[bytes]:
        return self.first(min(n, self.trusted_depth()))

    def first(self, n: int) -> list[bytes]:
        """The best ``n`` levels (the caller keeps ``n`` within the trusted depth)."""
        return list(map(self.levels.__getitem__, self.keys[: max(n, 0)]))

    def between(self, start: int, stop: int) -> list[bytes]:
        """Levels ``start`` to ``stop`` (exclusive), best first."""
        return list(map(self.levels.__getitem__, self.keys[start:stop]))

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
        if self.watermark is None:
            return len(self.keys)
        return bisect_right(self.keys, self.watermark)

    def window(self) -> SideWindow:
        trusted = self.trusted_depth()
        capped = self.cap is not None and trusted >= self.cap
        return SideWindow(trusted, self.watermark is not None or capped)

    def best(self) -> Decimal | None:
        if not self.keys:
            return None
        key = self.keys[0]
        return Decimal(-key if self.negate else key).scaleb(-SCALE)

    def decoded(self, n: int | None = None) -> list[Level]:
        return [_decode(self.levels[key]) for key in self.keys[:n]]


def _decode(encoded: bytes) -> Level:
    price, quantity = orjson.loads(encoded)
    return (price, quantity)


class OrderBook:
    """Bids and asks of one replica; see the module docstring."""

    __slots__ = ("_asks", "_bids")

    def __init__(self) -> None:
        self._bids = _Side(negate=True)
        self._asks = _Side(negate=False)

    def load(
        self, bids: Iterable[Level], asks: Iterable[Level], *, bids_complete: bool, asks_complete: bool
    ) -> None:
        """Replace the whole book; a side that is not complete gets a trusted-depth watermark.

        Levels with a zero quantity are skipped. Raises ``VenuePayloadError`` on a bad number
        (the book is then half loaded and must be cleared).
        """
        self._bids.load(bids, complete=bids_complete)
        self._asks.load(asks, complete=asks_complete)

    def apply(self, bids: Iterable[Level], asks: Iterable[Level]) -> None:
        """Set each level to its absolute quantity; a zero quantity deletes (absent: no-op).

        Raises ``VenuePayloadError`` on a bad number (levels before it are already applied).
        """
        self._bids.apply(bids)
        self._asks.apply(asks)

    def truncate(self, depth: int) -> None:
        """Keep the best ``depth`` levels a side, all trusted: the venue keeps that many current."""
        self._bids.truncate(depth)
        self._asks.truncate(depth)

    def clear(self) -> None:
        """Empty both sides and drop the watermarks."""
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
        return self._bids.window(), self._asks.window()

    def best_bid(self) -> Decimal | None:
        """The highest bid price, or None when there are no bids."""
        return self._bids.best()

    def best_ask(self) -> Decimal | None:
        """The lowest ask price, or None when there are no asks."""
        return self._asks.best()

    def is_crossed(self) -> bool:
        """True when the best bid is at or above the best ask (crossed or locked)."""
        bids, asks = self._bids.keys, self._asks.keys
        return bool(bids) and bool(asks) and -bids[0] >= asks[0]

    def best_levels(self, n: int) -> tuple[list[Level], list[Level]]:
        """The best ``n`` bids and asks as the venue wrote them (a checksum's input; decodes each)."""
        return self._bids.decoded(n), self._asks.decoded(n)

    def bids(self) -> list[Level]:
        """Every bid level, trusted or not, best first (tests and debugging; decodes each level)."""
        return self._bids.decoded()

    def asks(self) -> list[Level]:
        """Every ask level, trusted or not, best first (tests and debugging; decodes each level)."""
        return self._asks.decoded()
