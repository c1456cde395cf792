"""Consolidated books: one pair's books on several venues merged into one ladder.

``GET /v1/consolidated/{base}-{quote}`` merges the books of a pair, and ``GET
/v1/consolidated/tops?pairs=...`` gives the best bid and ask of many pairs so. Each book that goes
in is exactly what a read of that book alone would serve (:mod:`read_functions.handlers.reads.rules`:
listed, subscribed, a synced replica heard from lately, young enough for ``max_age_ms``), at its
own ``update_id``; a book that would not be served alone is left out of the merge and named, with
the error a read of it would give. Which markets trade the pair is each venue's catalogue's word
(:mod:`read_functions.tenancy.pairs`). Quote currencies are never equated unasked: a pair merges the
books quoted in its own quote, and ``quotes=USD,USDT,USDC`` merges the books of every quote listed.

One venue book may be listed under two names: Coinbase's BTC-USDC is an alias of its BTC-USD book
(``MarketInfo.alias``). Of the books an answer would merge that are one venue book, only one goes
in (the one the others name, when it is among them); the others are named in ``left_out`` with
code ``alias`` and ``alias_of``, so that no liquidity is ever counted twice. An alias whose book
is not merged (not held, not synced) is a book like any other. A pair subscription holds one name
of each venue book, so a venue asked whose other names the tenant does not hold names them as
``alias`` too, not ``forbidden``.

A book's snapshot is chosen per request, like a read of it; the merge and its rendering are kept
per question and reused while every book still serves the same snapshot
(:mod:`read_functions.books.consolidated`), so in steady state an answer costs no store round trip
and no merge, only its books' ``age_ms``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import orjson

from book_store.codec import Snapshot
from book_store.schema import BookKey
from control_plane.errors import (
    ApiError,
    BookTooOldError,
    CatalogUnavailableError,
    ForbiddenError,
    InvalidRequestError,
    UnknownMarketError,
)
from control_plane.models import Principal
from control_plane.validation import require_exchange
from ladder_process.clock import now_ms
from read_functions.app.messages import JSON, Request, Response
from read_functions.app.params import int_param
from read_functions.books.consolidated import ConsolidatedView, Question, Source
from read_functions.books.entry import Entry
from read_functions.deps import Deps
from read_functions.handlers.reads.books import MAX_AGE_LIMIT_MS, TOO_OLD_RETRY_S
from read_functions.handlers.reads.rules import best_status, deep_or_head, synced_replica

MAX_VENUES = 16
MAX_QUOTES = 8
MAX_BOOKS = 32
"""The most books one consolidated answer merges (venues x quotes, as the catalogues list them)."""
MAX_PAIRS = 100
MAX_DEPTH = 1000
"""The deepest consolidated answer: its cost is the depth times the books merged."""
_ASSET_LENGTH = 32


class Pair(NamedTuple):
    """A pair as asked: base and quote asset names, upper case."""

    base: str
    quote: str

    @property
    def name(self) -> str:
        return f"{self.base}-{self.quote}"


class Ask(NamedTuple):
    """What a caller asks to merge: a pair, the quotes it equates, and on which venues (None:
    every book of the pair the caller subscribes to)."""

    pair: Pair
    quotes: tuple[str, ...]
    venues: tuple[str, ...] | None


def pair_param(text: object) -> Pair:
    """``BASE-QUOTE`` (asset names as the venues' catalogues write them, any case)."""
    if not isinstance(text, str):
        raise InvalidRequestError("pair must be BASE-QUOTE, such as 'BTC-USDT'")
    base, dash, quote = text.partition("-")
    if not dash or not _asset(base) or not _asset(quote):
        raise InvalidRequestError("pair must be BASE-QUOTE, asset names of letters and digits: 'BTC-USDT'")
    return Pair(base.upper(), quote.upper())


def ask_of(pair: Pair, quotes: object, venues: object) -> Ask:
    """The ask for ``pair``: ``quotes`` (the quotes it equates, which must include its own; None:
    its own only) and ``venues`` (None: the caller's books of the pair), each a list or a
    comma-separated string."""
    named = [pair.quote] if quotes is None else _names(quotes, "quotes", MAX_QUOTES)
    quote_list = tuple(dict.fromkeys(q.upper() for q in named))
    if not all(_asset(q) for q in quote_list):
        raise InvalidRequestError("quotes must be asset names, such as 'USD,USDT,USDC'")
    if pair.quote not in quote_list:
        raise InvalidRequestError(f"quotes must include the pair's own quote {pair.quote}")
    if venues is None:
        return Ask(pair, quote_list, None)
    venue_list = tuple(dict.fromkeys(require_exchange(v) for v in _names(venues, "venues", MAX_VENUES)))
    return Ask(pair, quote_list, venue_list)


async def get_consolidated(request: Request, deps: Deps) -> Response:
    """``GET /v1/consolidated/{pair}?venues=..&quotes=..&depth=N&max_age_ms=M``: one merged book."""
    query = request.query
    depth = int_param(query, "depth", lo=1, hi=MAX_DEPTH) or deps.settings.default_depth
    max_age_ms = int_param(query, "max_age_ms", lo=0, hi=MAX_AGE_LIMIT_MS)
    ask = ask_of(pair_param(request.path_params["pair"]), query.get("quotes"), query.get("venues"))
    assert request.principal is not None
    body = await _answer(deps, request.principal, ask, depth, max_age_ms, top=False)
    return Response(200, body, JSON, {"Cache-Control": "no-cache"})


async def get_consolidated_tops(request: Request, deps: Deps) -> Response:
    """``GET /v1/consolidated/tops?pairs=A-B,C-D&venues=..&quotes=..``: the best bid and ask of each
    pair across its books, in the order asked."""
    query = request.query
    max_age_ms = int_param(query, "max_age_ms", lo=0, hi=MAX_AGE_LIMIT_MS)
    pairs = [pair_param(p) for p in dict.fromkeys(_names(query.get("pairs"), "pairs", MAX_PAIRS))]
    if not pairs:
        raise InvalidRequestError("pairs must name at least one pair (comma-separated BASE-QUOTE)")
    assert request.principal is not None
    parts = []
    for pair in pairs:
        ask = ask_of(pair, query.get("quotes"), query.get("venues"))
        try:
            parts.append(await _answer(deps, request.principal, ask, 1, max_age_ms, top=True))
        except (CatalogUnavailableError, ForbiddenError, UnknownMarketError) as error:
            failed = {"pair": pair.name, "error": {"code": error.code, "message": str(error)}}
            parts.append(orjson.dumps(failed))
    return Response(200, b'{"tops":[%b]}' % b",".join(parts), JSON, {"Cache-Control": "no-cache"})


LeftOut = dict[str, object]
"""A book an answer names but leaves out: ``exchange``, ``market`` (when the venue lists one),
``code`` and ``message`` (the error a read of it would give, or ``alias``), ``status`` when it is
not synced, ``alias_of`` (the market merged in its place) when it is an alias."""

ALIAS = "alias"
"""The code of a book left out because another name of the same venue book is merged."""


class Books(NamedTuple):
    """The books an answer may merge, those it names but leaves out, and which of the books are
    aliases (another name of a book of the same venue: book -> the book it names)."""

    sources: list[Source]
    left_out: list[LeftOut]
    aliases: dict[BookKey, BookKey]


async def listed_books(deps: Deps, ask: Ask) -> Books:
    """The books of ``ask``'s pair the catalogues list, and the venues asked that list none (or
    whose catalogue is not loaded: ``catalog_unavailable``); UnknownMarketError when no venue
    lists one, InvalidRequestError past :data:`MAX_BOOKS`."""
    pair, pairs = ask.pair, deps.pair_markets
    listed: list[Source] = []
    left_out: list[LeftOut] = []
    aliases: dict[BookKey, BookKey] = {}
    unavailable: CatalogUnavailableError | None = None
    for exchange in ask.venues or await pairs.exchanges():
        try:
            markets = [
                (market, quote)
                for quote in ask.quotes
                for market in await pairs.markets(exchange, pair.base, quote)
            ]
        except CatalogUnavailableError as error:  # served, its market list not fetched yet: named
            unavailable = error
            left_out.append(_left_out(exchange, None, error))
            continue
        found = [Source(BookKey(exchange, market.market), quote) for market, quote in markets]
        aliases.update(
            (BookKey(exchange, market.market), BookKey(exchange, market.alias))
            for market, _ in markets
            if market.alias
        )
        if not found and ask.venues is not None:
            none = UnknownMarketError(f"{exchange} lists no spot market of {pair.base} in {_in(ask)}")
            left_out.append(_left_out(exchange, None, none))
        listed += found
    if not listed and unavailable is not None:
        raise unavailable  # it may list one: try again later, not "unknown"
    if not listed:
        venues = "none of the venues asked" if ask.venues else "no exchange"
        raise UnknownMarketError(f"{venues} lists a spot market of {pair.base} in {_in(ask)}")
    if len(listed) > MAX_BOOKS:
        raise InvalidRequestError(f"that is {len(listed)} books; one answer merges at most {MAX_BOOKS}")
    return Books(listed, left_out, aliases)


async def books_of(deps: Deps, principal: Principal, ask: Ask) -> Books:
    """The books ``ask`` merges for ``principal`` (:func:`listed_books` it subscribes to), and those
    it names but leaves out (a name it does not hold of a venue book it holds by another name as an
    alias, not forbidden: it reads that book already); ForbiddenError when it named no venue and
    subscribes to no book of the pair (the operator reads every book)."""
    listed, left_out, aliases = await listed_books(deps, ask)
    if principal.tenant_id is None:
        return Books(listed, left_out, aliases)
    entitled = await deps.access.entitlements(principal.tenant_id)
    sources = [source for source in listed if source.book in entitled]
    if ask.venues is None and not sources:
        raise ForbiddenError(
            f"not subscribed to any book of {ask.pair.name}: POST /v1/subscriptions/consolidated first"
        )
    held = one_per_venue_book([source.book for source in sources], aliases)
    held_as = {aliases.get(book, book): name for book, name in held.items()}
    for source in listed:
        book = source.book
        if book in entitled or ask.venues is None:
            continue
        instead = held_as.get(aliases.get(book, book))
        if instead is not None:  # its venue book is held by another name (what pair subscriptions do)
            left_out.append(_alias_left_out(book, instead))
            continue
        error = ForbiddenError(
            f"not subscribed to {book.exchange} {book.market}: POST /v1/subscriptions first"
        )
        left_out.append(_left_out(book.exchange, book.market, error))
    return Books(sources, left_out, aliases)


async def _answer(
    deps: Deps, principal: Principal, ask: Ask, depth: int, max_age_ms: int | None, *, top: bool
) -> bytes:
    """One consolidated answer: the books that may be served, merged; the others named."""
    books = await books_of(deps, principal, ask)
    entries = await deps.books.entries([source.book for source in books.sources])
    view, ages, left_out = merged(deps, ask, books, entries, depth, max_age_ms, top=top)
    return view.body(ages, orjson.dumps(left_out))


def merged(
    deps: Deps,
    ask: Ask,
    books: Books,
    entries: Sequence[Entry],
    depth: int,
    max_age_ms: int | None,
    *,
    top: bool,
) -> tuple[ConsolidatedView, list[int], list[LeftOut]]:
    """The view of ``books`` (their cache ``entries``, in order) that may be served now, each
    merged book's ``age_ms``, and ``left_out`` with the books that may not be served and the
    aliases of a book merged."""
    now = now_ms()
    silence = deps.settings.max_silence_ms
    named = list(books.left_out)
    servable: list[tuple[Source, Snapshot, int]] = []
    for source, entry in zip(books.sources, entries, strict=True):
        book = source.book
        try:
            head = synced_replica(deps, entry, now)
        except ApiError as error:
            status = best_status(entry.replicas, now, silence, entry.heartbeats)
            named.append({**_left_out(book.exchange, book.market, error), "status": status})
            continue
        snapshot, since = head, head.known_time
        if (head.more_bids and head.bid_count < depth) or (head.more_asks and head.ask_count < depth):
            snapshot, since = deep_or_head(deps, entry, head, now)
        age = max(0, now - since)
        if max_age_ms is not None and age > max_age_ms:
            too_old = BookTooOldError(
                f"{book.exchange} {book.market} is {age} ms old (max_age_ms={max_age_ms})", TOO_OLD_RETRY_S
            )
            named.append(_left_out(book.exchange, book.market, too_old))
            continue
        servable.append((source, snapshot, age))
    chosen = one_per_venue_book([source.book for source, _, _ in servable], books.aliases)
    sources: list[Source] = []
    snapshots: list[Snapshot] = []
    ages: list[int] = []
    for source, snapshot, age in servable:
        book = source.book
        instead = chosen[book]
        if instead != book:
            named.append(_alias_left_out(book, instead))
            continue
        sources.append(source)
        snapshots.append(snapshot)
        ages.append(age)
    question = Question(ask.pair.base, ask.pair.quote, ask.quotes, tuple(sources), depth, top)
    return deps.consolidated.view(question, tuple(snapshots)), ages, named


def one_per_venue_book(
    books: Sequence[BookKey], aliases: Mapping[BookKey, BookKey]
) -> dict[BookKey, BookKey]:
    """For each of ``books``, the one of them merged in its place: the names of one venue book (the
    book and its aliases) go in once, as the book itself when it is among ``books``, else as the
    first of its aliases. (An alias names a book that is no alias: the catalogue keeps no other.)"""
    merged_as: dict[BookKey, BookKey] = {}
    chosen: dict[BookKey, BookKey] = {}
    for book in books:
        unified = aliases.get(book, book)
        chosen[book] = merged_as.setdefault(unified, unified if unified in books else book)
    return chosen


def _alias_left_out(book: BookKey, instead: BookKey) -> LeftOut:
    message = (
        f"{book.exchange} {book.market} is another name of the book of {instead.market}: "
        f"this answer counts that book once, as {instead.market}"
    )
    return {
        "exchange": book.exchange,
        "market": book.market,
        "code": ALIAS,
        "alias_of": instead.market,
        "message": message,
    }


def _in(ask: Ask) -> str:
    return "/".join(ask.quotes)


def _left_out(exchange: str, market: str | None, error: ApiError) -> LeftOut:
    named: LeftOut = {"exchange": exchange}
    if market is not None:
        named["market"] = market
    return {**named, "code": error.code, "message": str(error)}


def _names(value: object, field: str, most: int) -> list[str]:
    """A list of names, given as a list of strings or a comma-separated string, at most ``most``."""
    if isinstance(value, str):
        names = [name for name in value.split(",", most) if name]
    elif isinstance(value, list) and all(isinstance(name, str) for name in value):
        names = [name for name in value if name]
    else:
        raise InvalidRequestError(f"{field} must be a list of names")
    if len(names) > most:
        raise InvalidRequestError(f"{field} may name at most {most}")
    return names


def _asset(name: str) -> bool:
    return 1 <= len(name) <= _ASSET_LENGTH and name.isalnum()
