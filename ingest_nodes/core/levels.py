"""The price levels of one book side, best first: the store under each side of ``book.OrderBook``.

A level's *sort key* is its price as an exact integer, price x 10**24 (``price_key``: ``"4.0002"``
and ``"4.00020000"`` are one key, one level), negated for bids so that the best level sorts first.
Its value is the level already encoded as JSON, ``b'["price","qty"]'`` with the venue's own
strings, so publishing the top N is a slice and a join. Quantities are tested for zero numerically:
``"0"``, ``"0.00000000"`` and ``"0E-8"`` all delete. Prices are refused from 10**14 up (and with
more than 24 places): far beyond any venue's, and every key then fits in 128 bits.

Two stores keep the same levels the same way (``new_store`` picks one):

* ``_levels.SortedLevels``, compiled (``ingest_nodes/core/_levels.c``): contiguous arrays, the best
  level last, where a venue's changes cluster; it reads what venues send itself and hands any other
  level to ``slow_level``;
* ``PyLevels``, pure Python: a dict from sort key to level and the sorted key list (``bisect``),
  the reference the compiled store is tested against, and what runs where it was not built.

``apply`` records each change among a side's first ``cap`` levels in a journal, by its position
counted from the best (replace, insert or delete at index i, with the new level), when it is given
one: what a publisher sends readers instead of the top N again (see ``book.py``).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Final, Protocol, cast

import orjson

from ingest_nodes.core import native
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import Level

SCALE: Final = 24
"""Decimal places a price key keeps (a price with more is refused as unreadable)."""
MAX_WHOLE: Final = 14
"""Digits before the point a price may have (leading zeros aside): every key stays below 10**38."""
_KEY_LIMIT: Final = 10 ** (MAX_WHOLE + SCALE)
_POWERS: Final[list[int]] = [10**k for k in range(SCALE + 1)]

REPLACE: Final = 0
INSERT: Final = 1
DELETE: Final = 2

Change = tuple[int, int, bytes]
"""A journal entry: ``(REPLACE | INSERT | DELETE, index, level)`` (``b""`` for a delete)."""


def price_key(price: str) -> int:
    """``price`` x 10**24, exactly; InvalidOperation, TypeError or ValueError when it is not a
    finite number below 10**14 with at most ``SCALE`` places."""
    whole, _, places = price.partition(".")
    digits = whole + places
    if len(places) <= SCALE and len(whole) <= MAX_WHOLE and digits.isdigit():  # what venues send
        return int(digits) * _POWERS[SCALE - len(places)]
    value = Decimal(price)
    scaled = value.scaleb(SCALE)
    if not value.is_finite() or scaled != scaled.to_integral_value() or abs(scaled) >= _KEY_LIMIT:
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


def slow_level(level: object, negate: bool) -> tuple[int, bytes | None]:
    """One level read the general way: its sort key, and its encoding (None: a zero quantity);
    ``VenuePayloadError`` naming the level when it is not a pair of readable numbers."""
    try:
        price, quantity = cast("Level", level)  # anything a venue sent: refused below if not a pair
        key = price_key(price)
        encoded = _encoded(price, quantity) if _nonzero(quantity) else None
    except (InvalidOperation, TypeError, ValueError, AttributeError) as exc:
        raise VenuePayloadError(f"bad level {level!r}") from exc
    return -key if negate else key, encoded


class LevelStore(Protocol):
    """What a side keeps its levels in; indices count from the best level."""

    def __len__(self) -> int: ...

    def load(self, levels: Iterable[Level], negate: bool, /) -> None:
        """Replace every level (zero quantities skipped, a price given twice: its last level)."""

    def apply(self, levels: Iterable[Level], negate: bool, journal: list[Change] | None, cap: int, /) -> None:
        """Set or delete each level (absent: no-op), journaling changes among the first ``cap``."""

    def first(self, n: int, /) -> list[bytes]:
        """The best ``n`` encoded levels."""

    def between(self, start: int, stop: int, /) -> list[bytes]:
        """Encoded levels ``start`` to ``stop`` (exclusive), best first."""

    def count_through(self, key: int, /) -> int:
        """How many levels sort at or before sort key ``key``."""

    def sort_key(self, index: int, /) -> int:
        """The sort key of the level at ``index`` (IndexError: none there)."""

    def sort_keys(self) -> list[int]:
        """Every sort key, best first."""

    def truncate(self, depth: int, /) -> None:
        """Keep the best ``depth`` levels."""


class PyLevels:
    """The pure-Python store (see the module docstring)."""

    __slots__ = ("keys", "levels")

    def __init__(self) -> None:
        self.levels: dict[int, bytes] = {}
        self.keys: list[int] = []
        """The keys of ``levels``, ascending (best first)."""

    def __len__(self) -> int:
        return len(self.keys)

    def load(self, levels: Iterable[Level], negate: bool, /) -> None:
        fresh: dict[int, bytes] = {}
        for level in levels:
            key, encoded = slow_level(level, negate)
            if encoded is not None:
                fresh[key] = encoded
        self.levels = fresh
        self.keys = sorted(fresh)  # one sort instead of one insertion per level

    def apply(self, levels: Iterable[Level], negate: bool, journal: list[Change] | None, cap: int, /) -> None:
        """One loop and no calls of our own: a plain decimal (what venues send) is read inline, the
        fast path of ``price_key`` and ``_nonzero``; anything else goes through ``slow_level``."""
        book, keys = self.levels, self.keys
        for level in levels:
            key: int | None = None
            try:
                price, quantity = level
                whole, _, places = price.partition(".")
                digits = whole + places
                plain = len(places) <= SCALE and len(whole) <= MAX_WHOLE and digits.isdigit()
                if plain and quantity.replace(".", "", 1).isdigit():
                    key = int(digits) * _POWERS[SCALE - len(places)]
                    nonzero = quantity.strip("0.")
                    encoded: bytes | None = f'["{price}","{quantity}"]'.encode() if nonzero else None
            except (TypeError, ValueError, AttributeError):
                key = None  # not a pair of plain decimals after all
            if key is None:
                key, encoded = slow_level(level, negate)
            elif negate:
                key = -key
            if encoded is not None:
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

    def first(self, n: int, /) -> list[bytes]:
        return list(map(self.levels.__getitem__, self.keys[: max(n, 0)]))

    def between(self, start: int, stop: int, /) -> list[bytes]:
        return list(map(self.levels.__getitem__, self.keys[max(start, 0) : max(stop, 0)]))

    def count_through(self, key: int, /) -> int:
        return bisect_right(self.keys, key)

    def sort_key(self, index: int, /) -> int:
        if not 0 <= index < len(self.keys):
            raise IndexError("sort_key: no level there")
        return self.keys[index]

    def sort_keys(self) -> list[int]:
        return list(self.keys)

    def truncate(self, depth: int, /) -> None:
        keys, levels = self.keys, self.levels
        depth = max(depth, 0)
        for key in keys[depth:]:
            del levels[key]
        del keys[depth:]


def new_store() -> LevelStore:
    """The compiled store where it was built, else the pure-Python one."""
    compiled = native.SortedLevels
    return compiled(slow_level) if compiled is not None else PyLevels()
