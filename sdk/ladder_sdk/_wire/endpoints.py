"""The tenant endpoints of the v1 API, each written once as a `Call`; both clients send them."""

from __future__ import annotations

from collections.abc import Iterable

from . import parse as parse
from .book import Book, BookRead, ConsolidatedBook, ConsolidatedTop, Top
from .call import Call, params, path
from .models import Account, ApiKey, BulkResult, CreatedKey, Market, PairResult, Subscription, Usage


def book(
    exchange: str, market: str, depth: int | None, max_age_ms: int | None, side: str | None
) -> Call[Book]:
    """GET /v1/books/{exchange}/{market}[/bids|/asks]."""
    segments = ("v1", "books", exchange, market) + ((side,) if side else ())
    return Call("GET", path(*segments), parse.book, params(depth=depth, max_age_ms=max_age_ms))


def tops(exchange: str | None) -> Call[list[Top]]:
    """GET /v1/tops[?exchange=...]."""
    return Call("GET", path("v1", "tops"), parse.tops, params(exchange=exchange))


def books(exchange: str, markets: list[str], depth: int | None) -> Call[list[BookRead]]:
    """GET /v1/books?exchange=...&markets=A,B,C[&depth=N]."""
    query: dict[str, str | int] = {"exchange": exchange, "markets": ",".join(markets)} | params(depth=depth)
    return Call("GET", path("v1", "books"), parse.books, query)


def _names(values: Iterable[str] | None) -> str | None:
    return None if values is None else ",".join(values)


def consolidated(
    pair: str,
    venues: Iterable[str] | None,
    quotes: Iterable[str] | None,
    depth: int | None,
    max_age_ms: int | None,
) -> Call[ConsolidatedBook]:
    """GET /v1/consolidated/{pair}[?venues=..&quotes=..&depth=N&max_age_ms=M]."""
    query: dict[str, str | int] = params(venues=_names(venues), quotes=_names(quotes))
    query |= params(depth=depth, max_age_ms=max_age_ms)
    return Call("GET", path("v1", "consolidated", pair), parse.consolidated, query)


def consolidated_tops(
    pairs: Iterable[str], venues: Iterable[str] | None, quotes: Iterable[str] | None, max_age_ms: int | None
) -> Call[list[ConsolidatedTop]]:
    """GET /v1/consolidated/tops?pairs=A-B,C-D[&venues=..&quotes=..&max_age_ms=M]."""
    query: dict[str, str | int] = {"pairs": ",".join(pairs)}
    query |= params(venues=_names(venues), quotes=_names(quotes), max_age_ms=max_age_ms)
    return Call("GET", path("v1", "consolidated", "tops"), parse.consolidated_tops, query)


def subscribe_pair(
    pair: str, venues: Iterable[str], quotes: Iterable[str] | None, replicas: int | None, depth: int | None
) -> Call[PairResult]:
    """POST /v1/subscriptions/consolidated: an upsert of every book, so sending it twice is harmless
    (`replicas` and `depth` left as None are not sent: each book held keeps its own)."""
    listed = None if quotes is None else list(quotes)
    body = {"pair": pair, "venues": list(venues)} | params(quotes=listed, replicas=replicas, depth=depth)
    return Call("POST", path("v1", "subscriptions", "consolidated"), parse.pair_result, body=body)


def markets(exchange: str | None) -> Call[list[Market]]:
    """GET /v1/markets, optionally for one exchange."""
    return Call("GET", path("v1", "markets"), parse.markets, params(exchange=exchange))


def exchanges() -> Call[list[str]]:
    """GET /v1/exchanges."""
    return Call("GET", path("v1", "exchanges"), parse.exchanges)


def subscribe(exchange: str, market: str, replicas: int | None, depth: int | None) -> Call[Subscription]:
    """POST /v1/subscriptions: an upsert, so sending it twice is harmless.

    `replicas` and `depth` left as None are not sent: a new subscription gets the server's
    defaults, one held keeps its own.
    """
    body = {"exchange": exchange, "market": market} | params(replicas=replicas, depth=depth)
    return Call("POST", path("v1", "subscriptions"), parse.subscription, body=body)


def subscribe_many(
    exchange: str,
    markets: list[str] | None,
    replicas: int | None,
    depth: int | None,
    quote: str | None = None,
    base: str | None = None,
) -> Call[BulkResult]:
    """POST /v1/subscriptions/bulk: the listed markets, or (markets None) every trading market
    that matches `quote` and `base`. An upsert of every market, so sending it twice is harmless."""
    body = {"exchange": exchange} | params(
        markets=markets, replicas=replicas, depth=depth, quote=quote, base=base
    )
    return Call("POST", path("v1", "subscriptions", "bulk"), parse.bulk_result, body=body)


def unsubscribe_many(
    exchange: str, markets: list[str] | None, quote: str | None = None, base: str | None = None
) -> Call[BulkResult]:
    """DELETE /v1/subscriptions?exchange=...: the listed markets, or every subscribed one that
    matches `quote` and `base`."""
    listed = None if markets is None else ",".join(markets)
    query = params(exchange=exchange, markets=listed, quote=quote, base=base)
    return Call("DELETE", path("v1", "subscriptions"), parse.bulk_result, query)


def unsubscribe(exchange: str, market: str) -> Call[None]:
    """DELETE /v1/subscriptions/{exchange}/{market}."""
    return Call("DELETE", path("v1", "subscriptions", exchange, market), parse.nothing)


def subscriptions() -> Call[list[Subscription]]:
    """GET /v1/subscriptions."""
    return Call("GET", path("v1", "subscriptions"), parse.subscriptions)


def account() -> Call[Account]:
    """GET /v1/account."""
    return Call("GET", path("v1", "account"), parse.account)


def usage() -> Call[Usage]:
    """GET /v1/usage."""
    return Call("GET", path("v1", "usage"), parse.usage)


def keys() -> Call[list[ApiKey]]:
    """GET /v1/keys."""
    return Call("GET", path("v1", "keys"), parse.api_keys)


def create_key(expires_in_s: int | None) -> Call[CreatedKey]:
    """POST /v1/keys: creates a secret, so never re-sent once it may have arrived."""
    body = {} if expires_in_s is None else {"expires_in_s": expires_in_s}
    return Call("POST", path("v1", "keys"), parse.created_key, body=body, retry_safe=False)


def revoke_key(key_id: str, grace_s: int | None) -> Call[None]:
    """DELETE /v1/keys/{id}?grace_s=N."""
    return Call("DELETE", path("v1", "keys", key_id), parse.nothing, params(grace_s=grace_s))
