"""The cost to fill an order from a book the caller holds: exact decimal arithmetic, no I/O.

Why the SDK and not the API: the cost of a fill is a walk down levels the caller already has, at
the update ids the answer names, so computing it here costs no request, no server CPU and no
second snapshot that could differ from the one the caller looks at; and what a caller counts as
a fill (which venues, fees, a limit price) is theirs to add around it.

Every sum and product is exact (a context too wide to round any venue's numbers, which raises
rather than rounds); only `Fill.average_price`, a quotient, may not terminate, so it is given to
`AVERAGE_DIGITS` significant digits, beside the exact `cost` and `filled` it comes from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Context, Decimal, Inexact, InvalidOperation, Rounded
from types import MappingProxyType

EXACT = Context(prec=200, traps=[Inexact, Rounded, InvalidOperation])
AVERAGE_DIGITS = 28
SIDES = ("buy", "sell")


@dataclass(frozen=True, slots=True)
class FillLevel:
    """One level a fill takes from: its price, the quantity taken, and how much of it from each
    book (by book id: `exchange:market`, or the book's market for a single book)."""

    price: Decimal
    quantity: Decimal
    books: Mapping[str, Decimal]


@dataclass(frozen=True, slots=True)
class Fill:
    """What filling `quantity` on `side` would take from the levels given, best price first.

    `filled` is less than `quantity` when the levels ran out (`complete` False): the answer did not
    hold enough, because the market is that thin, or because it was cut (`truncated`: the venue
    holds more past the last level, so ask for a deeper answer). `cost` is the exact sum of price
    times quantity taken, `books` the quantity and cost taken from each book.
    """

    side: str
    quantity: Decimal
    filled: Decimal
    cost: Decimal
    levels: tuple[FillLevel, ...]
    books: Mapping[str, tuple[Decimal, Decimal]]
    truncated: bool

    @property
    def complete(self) -> bool:
        """True when the levels held the whole quantity."""
        return self.filled == self.quantity

    @property
    def average_price(self) -> Decimal | None:
        """`cost / filled` to `AVERAGE_DIGITS` significant digits (None when nothing was filled)."""
        if not self.filled:
            return None
        return Context(prec=AVERAGE_DIGITS).divide(self.cost, self.filled)


def exact_quantity(quantity: object) -> Decimal:
    """A positive quantity as an exact Decimal: a Decimal, an int or a decimal string, never a
    float (which would carry its binary rounding into the sums)."""
    if isinstance(quantity, bool) or not isinstance(quantity, Decimal | int | str):
        raise TypeError("quantity must be a Decimal, an int or a decimal string (never a float)")
    try:
        exact = Decimal(quantity)
    except InvalidOperation:
        raise ValueError(f"quantity {quantity!r} is not a decimal number") from None
    if not exact.is_finite() or exact <= 0:
        raise ValueError("quantity must be a positive finite number")
    return exact


def walk(
    side: str,
    quantity: object,
    levels: Iterable[tuple[Decimal, Decimal, Sequence[tuple[str, Decimal]]]],
    *,
    truncated: bool,
) -> Fill:
    """Fill `quantity` on `side` (`buy` takes the asks, `sell` the bids) from `levels` (price,
    quantity, each book's part), best first. Where a level's books share its price, the part
    taken comes from them in the order given (every one of them at the same price)."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {', '.join(SIDES)}")
    wanted = exact_quantity(quantity)
    filled = cost = Decimal(0)
    taken_levels: list[FillLevel] = []
    per_book: dict[str, tuple[Decimal, Decimal]] = {}
    for price, available, parts in levels:
        if filled >= wanted:
            break
        take = min(available, EXACT.subtract(wanted, filled))
        left = take
        books: dict[str, Decimal] = {}
        for book, part in parts:
            if not left:
                break
            share = min(part, left)
            books[book] = share
            left = EXACT.subtract(left, share)
            so_far, spent = per_book.get(book, (Decimal(0), Decimal(0)))
            per_book[book] = EXACT.add(so_far, share), EXACT.add(spent, EXACT.multiply(price, share))
        filled = EXACT.add(filled, take)
        cost = EXACT.add(cost, EXACT.multiply(price, take))
        taken_levels.append(FillLevel(price, take, MappingProxyType(books)))
    return Fill(
        side,
        wanted,
        filled,
        cost,
        tuple(taken_levels),
        MappingProxyType(per_book),
        truncated and filled < wanted,
    )
