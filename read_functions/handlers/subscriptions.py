"""The tenant's subscriptions: ``POST``/``GET /v1/subscriptions``, ``DELETE .../{exchange}/{market}``,
the bulk forms, ``POST /v1/subscriptions/bulk`` and ``DELETE /v1/subscriptions``, and one pair's
books on several venues at once, ``POST /v1/subscriptions/consolidated``.

A bulk call names its markets as a list or selects them with a filter (quote and/or base asset,
of the exchange's trading markets when subscribing, of the tenant's subscriptions when
unsubscribing), and answers one result per market, so a bad market never hides the others.
"""

from __future__ import annotations

from collections.abc import Mapping

from book_store.catalog import TRADING, MarketInfo
from book_store.schema import BookKey
from book_store.unplaced import UnplacedBooks
from control_plane.accounts.auth import require_tenant
from control_plane.accounts.subscriptions import CHANGEABLE, SubscriptionOutcome
from control_plane.errors import InvalidRequestError
from control_plane.validation import require_exchange
from ladder_process.clock import now_ms
from read_functions.app.messages import Request, Response, empty_response, json_response
from read_functions.app.params import json_object, require_fields
from read_functions.deps import Deps
from read_functions.handlers.reads.consolidated import (
    ALIAS,
    ask_of,
    listed_books,
    one_per_venue_book,
    pair_param,
)
from read_functions.handlers.reads.rules import best_status
from read_functions.tenancy.access import subscriptions_changed

_FIELDS = frozenset({"exchange", "market", "replicas", "depth"})
_BULK_FIELDS = frozenset({"exchange", "markets", "quote", "base", "status", "replicas", "depth"})
_PAIR_FIELDS = frozenset({"pair", "venues", "quotes", "replicas", "depth"})
_FILTERS = ("quote", "base")


async def subscribe(request: Request, deps: Deps) -> Response:
    """``POST /v1/subscriptions``: create, or change only the fields named (``changed`` says how)."""
    assert request.principal is not None
    tenant_id = require_tenant(request.principal)
    body = json_object(request)
    require_fields(body, _FIELDS)
    _no_nulls(body)
    outcome = await deps.control.subscriptions.subscribe(
        tenant_id,
        body.get("exchange"),
        body.get("market"),
        body.get("replicas"),
        body.get("depth"),
        actor=request.principal,
    )
    await deps.announce(subscriptions_changed(tenant_id))
    assert outcome.subscription is not None
    answer = outcome.subscription.to_json()
    if outcome.created:
        return json_response(answer, 201)
    return json_response({**answer, "changed": outcome.changes()})


async def list_subscriptions(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    subscriptions = await deps.control.subscriptions.list_for(require_tenant(request.principal))
    books = [BookKey(s.exchange, s.market) for s in subscriptions]
    replicas = await deps.books.peek_many(books)
    unplaced = await UnplacedBooks(deps.redis).reasons([b for b in books if not replicas[b]])
    now = now_ms()
    silence, beats = deps.settings.max_silence_ms, deps.books.heartbeats
    return json_response({
        "subscriptions": [
            {**s.to_json(), "status": best_status(replicas[book], now, silence, beats, unplaced.get(book)),
             **({"reason": unplaced[book]} if book in unplaced else {})}
            for s, book in zip(subscriptions, books, strict=True)
        ]
    })  # fmt: skip


async def unsubscribe(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    params = request.path_params
    tenant_id = require_tenant(request.principal)
    await deps.control.subscriptions.unsubscribe(
        tenant_id, params["exchange"], params["market"], actor=request.principal
    )
    await deps.announce(subscriptions_changed(tenant_id))
    return empty_response()


async def subscribe_bulk(request: Request, deps: Deps) -> Response:
    """``POST /v1/subscriptions/bulk``: many markets of one exchange, by list or by filter."""
    assert request.principal is not None
    tenant_id = require_tenant(request.principal)
    body = json_object(request)
    require_fields(body, _BULK_FIELDS)
    _no_nulls(body)
    exchange = require_exchange(body.get("exchange"))
    if body.get("status", TRADING) != TRADING:
        raise InvalidRequestError(f"status may only be {TRADING!r}: only trading markets can be subscribed")
    filters = _filters(body)
    markets = body.get("markets")
    if markets is None:
        markets = [
            m.market for m in await deps.catalog.markets(exchange) if m.tradable and _matches(m, filters)
        ]
    elif filters:
        raise InvalidRequestError("give either markets or a filter (quote, base), not both")
    outcomes = await deps.control.subscriptions.subscribe_many(
        tenant_id,
        exchange,
        markets,
        body.get("replicas"),
        body.get("depth"),
        actor=request.principal,
    )
    await deps.announce(subscriptions_changed(tenant_id))
    return json_response(_bulk_answer(exchange, outcomes, "created", "updated"))


async def subscribe_pair(request: Request, deps: Deps) -> Response:
    """``POST /v1/subscriptions/consolidated``: every spot book of a pair on the venues named (in
    the quotes named), what a consolidated read of them needs, in one atomic step of the limits;
    a book held already changes only the fields named (``changed`` says how). Of the names of one
    venue book (Coinbase's BTC-USD and its alias BTC-USDC) only the one the read merges is
    subscribed: the others are ``skipped``, so a venue book costs one market."""
    assert request.principal is not None
    tenant_id = require_tenant(request.principal)
    body = json_object(request)
    require_fields(body, _PAIR_FIELDS)
    _no_nulls(body)
    if body.get("venues") is None:
        raise InvalidRequestError("venues must name the exchanges to subscribe the pair on")
    ask = ask_of(pair_param(body.get("pair")), body.get("quotes"), body.get("venues"))
    listed, missing, aliases = await listed_books(deps, ask)
    chosen = one_per_venue_book([source.book for source in listed], aliases)
    outcomes = await deps.control.subscriptions.subscribe_books(
        tenant_id,
        [book for book, instead in chosen.items() if instead == book],
        body.get("replicas"),
        body.get("depth"),
        actor=request.principal,
    )
    await deps.announce(subscriptions_changed(tenant_id))
    done = {BookKey(o.exchange, o.market): _result(o, "created", "updated") for o in outcomes}
    results = [
        {"exchange": book.exchange, **done[book]} if instead == book else _alias_skipped(book, instead)
        for book, instead in chosen.items()
    ]
    for venue in missing:  # a venue that lists no market of the pair
        error = {"code": venue["code"], "message": venue["message"]}
        results.append({"exchange": venue["exchange"], "result": "failed", "error": error})
    return json_response({"pair": ask.pair.name, **_counted(results, "created", "updated", "skipped")})


async def unsubscribe_bulk(request: Request, deps: Deps) -> Response:
    """``DELETE /v1/subscriptions?exchange=...``: the listed markets, or every subscription of the
    exchange that matches the filter (every one, without a filter)."""
    assert request.principal is not None
    tenant_id = require_tenant(request.principal)
    query = request.query
    exchange = require_exchange(query.get("exchange"))
    filters = _filters(query)
    listed = query.get("markets")
    if listed is not None:
        if filters:
            raise InvalidRequestError("give either markets or a filter (quote, base), not both")
        markets = [m for m in listed.split(",") if m]
    else:
        mine = [
            s.market for s in await deps.control.subscriptions.list_for(tenant_id) if s.exchange == exchange
        ]
        if filters:
            catalog = {m.market: m for m in await deps.catalog.markets(exchange)}
            mine = [m for m in mine if m in catalog and _matches(catalog[m], filters)]
        markets = mine
    outcomes = await deps.control.subscriptions.unsubscribe_many(
        tenant_id, exchange, markets, actor=request.principal
    )
    await deps.announce(subscriptions_changed(tenant_id))
    return json_response(_bulk_answer(exchange, outcomes, "deleted", "deleted"))


def _no_nulls(body: Mapping[str, object]) -> None:
    """A field left out keeps the subscription's value; one sent as null is a mistake, said so."""
    for name in CHANGEABLE:
        if name in body and body[name] is None:
            raise InvalidRequestError(f"{name} must be an integer (leave it out to keep the current one)")


def _filters(fields: Mapping[str, object]) -> dict[str, str]:
    """The asset filters given (``quote``, ``base``), each a non-empty asset name."""
    filters: dict[str, str] = {}
    for name in _FILTERS:
        value = fields.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or not 1 <= len(value) <= 32 or not value.isalnum():
            raise InvalidRequestError(f"{name} must be an asset name such as 'USDT'")
        filters[name] = value.upper()
    return filters


def _matches(market: MarketInfo, filters: Mapping[str, str]) -> bool:
    return all(getattr(market, name).upper() == value for name, value in filters.items())


def _bulk_answer(
    exchange: str, outcomes: list[SubscriptionOutcome], created: str, updated: str
) -> dict[str, object]:
    """One result per market and how many of each: ``created``/``updated`` (or ``deleted``) and ``failed``."""
    return {
        "exchange": exchange,
        **_counted([_result(o, created, updated) for o in outcomes], created, updated),
    }


def _result(outcome: SubscriptionOutcome, created: str, updated: str) -> dict[str, object]:
    """One market's result: ``failed`` with its error, or ``created``/``updated`` with the
    subscription (and, for an update, what it ``changed``)."""
    if outcome.error is not None:
        error = {"code": outcome.error.code, "message": str(outcome.error)}
        return {"market": outcome.market, "result": "failed", "error": error}
    result: dict[str, object] = {"market": outcome.market, "result": created if outcome.created else updated}
    if outcome.subscription is not None:
        result["subscription"] = outcome.subscription.to_json()
        if not outcome.created:
            result["changed"] = outcome.changes()
    return result


def _alias_skipped(book: BookKey, instead: BookKey) -> dict[str, object]:
    """An alias not subscribed because the call subscribes its venue book by another name: one
    venue book costs one market, and the consolidated read would leave the alias out anyway. It
    is said the way the read's ``left_out`` says it (code ``alias``, ``alias_of``)."""
    message = (
        f"{book.exchange} {book.market} is another name of the book of {instead.market}, "
        "which this call subscribes: it counts as one market"
    )
    return {
        "exchange": book.exchange,
        "market": book.market,
        "result": "skipped",
        "alias_of": instead.market,
        "error": {"code": ALIAS, "message": message},
    }


def _counted(results: list[dict[str, object]], *kinds: str) -> dict[str, object]:
    """``results`` and how many of each kind: those given (``created``/``updated``, ``deleted``,
    ``skipped``) and ``failed``."""
    counts = {name: 0 for name in dict.fromkeys((*kinds, "failed"))}
    for result in results:
        counts[str(result["result"])] += 1
    return {**counts, "results": results}
