"""Order books as the SDK hands them out: exact Decimals, aware datetimes, best-first sides.

A `Book` is one snapshot of one replica; a `ConsolidatedBook` is one pair's books on several
venues merged: every level carries the exact total and each book's part of it (by book id,
`exchange:market`), every book merged its own `update_id` and `age_ms`, and the books the server
left out (not synced, too old, not subscribed) are named with the error a read of them would get.
Both can say what filling an order from them would cost (`cost_to_fill`, exact: see `fill`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Generic, Protocol, TypeVar

from .fill import Fill, walk


@dataclass(frozen=True, slots=True)
class Level:
    """One price level: exact decimal price and quantity, as the venue wrote them."""

    price: Decimal
    quantity: Decimal


class _Priced(Protocol):
    @property
    def price(self) -> Decimal: ...


PricedLevel = TypeVar("PricedLevel", bound=_Priced)


class _Sides(Generic[PricedLevel]):
    """The best of two best-first sides of levels, and the spread between them."""

    bids: tuple[PricedLevel, ...]
    asks: tuple[PricedLevel, ...]

    @property
    def best_bid(self) -> PricedLevel | None:
        """The highest bid, or None when the bid side is empty."""
        return self.bids[0] if self.bids else None

    @property
    def best_ask(self) -> PricedLevel | None:
        """The lowest ask, or None when the ask side is empty."""
        return self.asks[0] if self.asks else None

    @property
    def spread(self) -> Decimal | None:
        """Best ask minus best bid, exact (negative when a consolidated book is `crossed`); None
        unless both sides have a level."""
        if self.best_bid is None or self.best_ask is None:
            return None
        return self.best_ask.price - self.best_bid.price


def datetime_from_ms(ms: int) -> datetime:
    """An aware UTC datetime from integer milliseconds since the epoch, without float rounding."""
    seconds, millis = divmod(ms, 1000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=millis * 1000)


@dataclass(frozen=True)
class Book(_Sides[Level]):
    """One snapshot of one replica of a book.

    `bids` are best (highest) first and `asks` best (lowest) first; a one-sided answer
    (`Ladder.bids` / `Ladder.asks`) leaves the other side empty. The `*_ms` fields are the raw
    milliseconds; `event_time` (the venue's clock), `ingest_time` (arrival at the ingest node)
    and `publish_time` (written to the store) are the same instants as aware UTC datetimes.
    `confirmed_time` (None until it happens) is when the ingest node last confirmed with the venue
    that a quiet book had not changed. `age_ms` is how old the venue state behind the book was when
    the server answered: since the later of `ingest_time` and `confirmed_time`, whatever
    `publish_time` says (a quiet book is republished without being any newer). `truncated` is True when a side
    holds fewer levels than asked while the venue may hold more: every level given is right, but
    the book goes on beyond them (sum depth or walk for a fill price with that in mind).
    """

    exchange: str
    market: str
    update_id: int
    event_time_ms: int
    ingest_time_ms: int
    publish_time_ms: int
    age_ms: int
    replica: int
    status: str
    truncated: bool
    bids: tuple[Level, ...]
    asks: tuple[Level, ...]
    confirmed_time_ms: int | None = None

    @property
    def confirmed_time(self) -> datetime | None:
        """When the ingest node last confirmed with the venue that nothing had changed (quiet books)."""
        return None if self.confirmed_time_ms is None else datetime_from_ms(self.confirmed_time_ms)

    @property
    def event_time(self) -> datetime:
        """When the venue produced the last applied update."""
        return datetime_from_ms(self.event_time_ms)

    @property
    def ingest_time(self) -> datetime:
        """When that update reached the ingest node."""
        return datetime_from_ms(self.ingest_time_ms)

    @property
    def publish_time(self) -> datetime:
        """When this snapshot was written to the store."""
        return datetime_from_ms(self.publish_time_ms)

    @property
    def mid(self) -> Decimal | None:
        """The midpoint of best bid and best ask, exact; None unless both sides have a level."""
        if self.best_bid is None or self.best_ask is None:
            return None
        return (self.best_ask.price + self.best_bid.price) / 2

    def cost_to_fill(self, side: str, quantity: Decimal | int | str) -> Fill:
        """What buying (`side="buy"`, from the asks) or selling (`"sell"`, into the bids) `quantity`
        would take from this snapshot's levels: exact cost and levels used (see `Fill`; the one
        book is named `exchange:market`)."""
        book = f"{self.exchange}:{self.market}"
        levels = self.asks if side == "buy" else self.bids
        return walk(
            side,
            quantity,
            ((level.price, level.quantity, ((book, level.quantity),)) for level in levels),
            truncated=self.truncated,
        )


@dataclass(frozen=True)
class Top:
    """The best bid and ask of one book (one entry of `Ladder.tops`).

    A book no replica of which may be served has only its `status` (`resyncing`, `stale`,
    `starting`): every other field is None then. `bid` or `ask` is None when that side is empty;
    `truncated` says that an empty side may hold levels at the venue.
    """

    exchange: str
    market: str
    status: str
    update_id: int | None = None
    replica: int | None = None
    age_ms: int | None = None
    publish_time_ms: int | None = None
    truncated: bool = False
    bid: Level | None = None
    ask: Level | None = None

    @property
    def synced(self) -> bool:
        """True when a replica was served (the prices are there)."""
        return self.status == "synced"


@dataclass(frozen=True)
class BookRead:
    """One book of `Ladder.books`: the `book`, or why it could not be served (`error_code`)."""

    market: str
    book: Book | None = None
    error_code: str | None = None
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        """True when the book was served."""
        return self.book is not None


@dataclass(frozen=True, slots=True)
class ConsolidatedLevel:
    """One price of the consolidated ladder: the total quantity there, and each book's part
    (`books`: book id -> quantity, in the order of the answer's `books`)."""

    price: Decimal
    quantity: Decimal
    books: Mapping[str, Decimal]


@dataclass(frozen=True, slots=True)
class MergedBook:
    """One book that went into a consolidated answer, exactly as a read of it alone was served."""

    id: str
    exchange: str
    market: str
    quote: str
    update_id: int
    replica: int
    status: str
    truncated: bool
    publish_time_ms: int
    age_ms: int


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A book (or a venue, `market` None: it lists no such market) named but not merged, and why:
    the `code` and `message` a read of it alone would have got, its `status` when it is not synced,
    and `alias_of` (code `alias`) the market merged in its place when it is another name of that
    venue book (Coinbase's USDC products are its USD books)."""

    exchange: str
    market: str | None
    code: str
    message: str
    status: str | None = None
    alias_of: str | None = None


@dataclass(frozen=True)
class ConsolidatedBook(_Sides[ConsolidatedLevel]):
    """A pair's books on several venues merged into one ladder (`Ladder.consolidated`).

    `bids` are best (highest) first and `asks` best (lowest) first. `crossed` is True when the best
    bid is above the best ask (books of different venues can cross while each is in sync): it is
    information, not an error. `truncated` is True when a side stops short of `depth` at the last
    price a truncated book is known to. `quotes` are the quote currencies merged as one.
    """

    base: str
    quote: str
    quotes: tuple[str, ...]
    depth: int
    books: tuple[MergedBook, ...]
    left_out: tuple[LeftOut, ...]
    crossed: bool
    truncated: bool
    bids: tuple[ConsolidatedLevel, ...]
    asks: tuple[ConsolidatedLevel, ...]

    def cost_to_fill(self, side: str, quantity: Decimal | int | str) -> Fill:
        """What buying (`side="buy"`, from the asks) or selling (`"sell"`, into the bids) `quantity`
        would take from this answer's levels: exact cost, levels and books used (see `Fill`)."""
        levels = self.asks if side == "buy" else self.bids
        return walk(
            side,
            quantity,
            ((level.price, level.quantity, tuple(level.books.items())) for level in levels),
            truncated=self.truncated,
        )


@dataclass(frozen=True)
class ConsolidatedTop:
    """The best bid and ask of one pair across its books (one entry of `Ladder.consolidated_tops`),
    or why it could not be answered (`error_code`: `unknown_market`, `forbidden`)."""

    pair: str
    books: tuple[MergedBook, ...] = ()
    left_out: tuple[LeftOut, ...] = ()
    crossed: bool = False
    truncated: bool = False
    bid: ConsolidatedLevel | None = None
    ask: ConsolidatedLevel | None = None
    error_code: str | None = None
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        """True when the pair was answered."""
        return self.error_code is None
