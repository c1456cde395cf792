"""JSON answers to typed models, checked at the edge so that nothing past here sees a dict.

The body is decoded with `parse_float=Decimal`, so even a price sent as a JSON number never passes
through a float. A field of the wrong type raises APIResponseError naming the field; fields this
SDK does not know are ignored, so a newer server stays readable by an older SDK.

A sample book answer, as `book` reads it::

    {"exchange": "binance.com", "market": "ETHBTC", "update_id": 7281945,
     "event_time": 1764500000123, "ingest_time": 1764500000125, "confirmed_time": null,
     "publish_time": 1764500000126, "age_ms": 3, "replica": 1, "status": "synced",
     "bids": [["0.03512000", "4.20000000"]], "asks": [["0.03513000", "1.00000000"]]}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal, InvalidOperation
from types import MappingProxyType

from .book import (
    Book,
    BookRead,
    ConsolidatedBook,
    ConsolidatedLevel,
    ConsolidatedTop,
    LeftOut,
    Level,
    MergedBook,
    Top,
    datetime_from_ms,
)
from .errors import APIResponseError
from .models import (
    Account,
    ApiKey,
    AuditEntry,
    BulkResult,
    ClusterBook,
    CreatedKey,
    EgressBudget,
    Market,
    MarketResult,
    Node,
    NodeAssignment,
    PairResult,
    ReplicaState,
    Subscription,
    Tenant,
    Usage,
    UsageLimits,
    UsageMinute,
)


def decode_json(body: bytes | str) -> object:
    """Decode a JSON body with exact decimals; raise APIResponseError when it is not JSON."""
    try:
        decoded: object = json.loads(body, parse_float=Decimal)
    except ValueError as exc:
        raise APIResponseError(f"the answer is not JSON: {exc}") from exc
    return decoded


class _Fields:
    """Typed access to one JSON object, with errors that name the missing or ill-typed field."""

    def __init__(self, data: object, what: str) -> None:
        if not isinstance(data, Mapping):
            raise APIResponseError(f"{what}: expected a JSON object, got {type(data).__name__}")
        self.data: Mapping[str, object] = data
        self.what = what

    def _wrong(self, name: str, expected: str) -> APIResponseError:
        return APIResponseError(f"{self.what}: field {name!r} is missing or not {expected}")

    def text(self, name: str) -> str:
        value = self.data.get(name)
        if not isinstance(value, str):
            raise self._wrong(name, "a string")
        return value

    def optional_text(self, name: str) -> str | None:
        return None if self.data.get(name) is None else self.text(name)

    def integer(self, name: str) -> int:
        value = self.data.get(name)
        # bool is an int in Python, but a JSON true where a number belongs is still the wrong type
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._wrong(name, "an integer")
        return value

    def optional_integer(self, name: str) -> int | None:
        return None if self.data.get(name) is None else self.integer(name)

    def counts(self, name: str) -> Mapping[str, int]:
        """An object of integer counts ({} when absent or null)."""
        value = self.data.get(name)
        if value is None:
            return MappingProxyType({})
        if not isinstance(value, Mapping) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in value.values()
        ):
            raise self._wrong(name, "an object of counts")
        return MappingProxyType(dict(value))

    def flag(self, name: str) -> bool:
        value = self.data.get(name)
        if not isinstance(value, bool):
            raise self._wrong(name, "true or false")
        return value

    def optional_flag(self, name: str) -> bool | None:
        return None if self.data.get(name) is None else self.flag(name)

    def number(self, name: str) -> float:
        value = self.data.get(name)
        if not isinstance(value, int | float | Decimal) or isinstance(value, bool):
            raise self._wrong(name, "a number")
        return float(value)

    def time(self, name: str) -> datetime:
        return datetime_from_ms(self.integer(name))

    def optional_time(self, name: str) -> datetime | None:
        return None if self.data.get(name) is None else self.time(name)

    def array(self, name: str) -> list[object]:
        value = self.data.get(name)
        if not isinstance(value, list):
            raise self._wrong(name, "a list")
        return value

    def optional_array(self, name: str) -> list[object]:
        return [] if self.data.get(name) is None else self.array(name)

    def frozen(self) -> Mapping[str, object]:
        return MappingProxyType(dict(self.data))


def _exact(value: object, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise APIResponseError(f"{what}: expected a decimal string, got {value!r}")
    try:
        number = Decimal(value)
    except InvalidOperation as exc:
        raise APIResponseError(f"{what}: {value!r} is not a decimal") from exc
    if not number.is_finite():
        raise APIResponseError(f"{what}: {value!r} is not a finite decimal")
    return number


def _levels(raw: list[object], what: str) -> tuple[Level, ...]:
    levels = []
    for entry in raw:
        if not isinstance(entry, list) or len(entry) != 2:
            raise APIResponseError(f"{what}: a level must be [price, quantity], got {entry!r}")
        levels.append(Level(price=_exact(entry[0], what), quantity=_exact(entry[1], what)))
    return tuple(levels)


def _items(data: object, name: str, what: str) -> list[object]:
    """The list under `name` of an envelope such as {"markets": [...]}; a bare list is accepted too."""
    if isinstance(data, list):
        return data
    return _Fields(data, what).array(name)


def book(data: object) -> Book:
    """A book (or one side of it) from its JSON object."""
    fields = _Fields(data, "book")
    return Book(
        exchange=fields.text("exchange"),
        market=fields.text("market"),
        update_id=fields.integer("update_id"),
        event_time_ms=fields.integer("event_time"),
        ingest_time_ms=fields.integer("ingest_time"),
        publish_time_ms=fields.integer("publish_time"),
        age_ms=fields.integer("age_ms"),
        replica=fields.integer("replica"),
        status=fields.text("status"),
        truncated=fields.flag("truncated"),
        bids=_levels(fields.optional_array("bids"), "book bids"),
        asks=_levels(fields.optional_array("asks"), "book asks"),
        confirmed_time_ms=fields.optional_integer("confirmed_time"),
    )


def _level(value: object, what: str) -> Level | None:
    return None if value is None else _levels([value], what)[0]


def tops(data: object) -> list[Top]:
    """GET /v1/tops: {"tops": [...]}, the prices of the books not synced left out."""
    result = []
    for item in _items(data, "tops", "tops"):
        fields = _Fields(item, "top")
        status = fields.text("status")
        synced = status == "synced"
        result.append(
            Top(
                exchange=fields.text("exchange"),
                market=fields.text("market"),
                status=status,
                update_id=fields.integer("update_id") if synced else None,
                replica=fields.integer("replica") if synced else None,
                age_ms=fields.integer("age_ms") if synced else None,
                publish_time_ms=fields.integer("publish_time") if synced else None,
                truncated=fields.flag("truncated") if synced else False,
                bid=_level(fields.data.get("bid"), "top bid"),
                ask=_level(fields.data.get("ask"), "top ask"),
            )
        )
    return result


def books(data: object) -> list[BookRead]:
    """GET /v1/books?markets=...: {"books": [book | {"exchange", "market", "error"}]}."""
    result = []
    for item in _items(data, "books", "books"):
        fields = _Fields(item, "book")
        raw_error = fields.data.get("error")
        if raw_error is None:
            result.append(BookRead(market=fields.text("market"), book=book(item)))
            continue
        error = _Fields(raw_error, "book error")
        result.append(
            BookRead(
                market=fields.text("market"),
                error_code=error.text("code"),
                error_message=error.text("message"),
            )
        )
    return result


def market(data: object) -> Market:
    """One entry of GET /v1/markets."""
    fields = _Fields(data, "market")
    return Market(
        exchange=fields.text("exchange"),
        market=fields.text("market"),
        status=fields.text("status"),
        base=fields.text("base"),
        quote=fields.text("quote"),
        kind=fields.optional_text("kind"),
    )


def markets(data: object) -> list[Market]:
    """GET /v1/markets: {"markets": [...]}."""
    return [market(item) for item in _items(data, "markets", "markets")]


def exchanges(data: object) -> list[str]:
    """GET /v1/exchanges: {"exchanges": ["binance.com", ...]}."""
    names = _items(data, "exchanges", "exchanges")
    if not all(isinstance(name, str) for name in names):
        raise APIResponseError("exchanges: every entry must be a string")
    return [str(name) for name in names]


def subscription(data: object) -> Subscription:
    """POST /v1/subscriptions, or one entry of GET /v1/subscriptions."""
    fields = _Fields(data, "subscription")
    return Subscription(
        exchange=fields.text("exchange"),
        market=fields.text("market"),
        replicas=fields.integer("replicas"),
        depth=fields.integer("depth"),
        created_at=fields.time("created_at"),
        status=fields.optional_text("status"),
        changed=_changes(fields.data.get("changed")),
    )


def _changes(data: object) -> Mapping[str, tuple[int, int]]:
    """``{"depth": {"from": 500, "to": 100}}`` as ``{"depth": (500, 100)}`` ({} when absent)."""
    if data is None:
        return MappingProxyType({})
    changes = _Fields(data, "changed")
    return MappingProxyType({
        name: (change.integer("from"), change.integer("to"))
        for name in changes.data
        for change in [_Fields(changes.data[name], f"changed.{name}")]
    })  # fmt: skip


def subscriptions(data: object) -> list[Subscription]:
    """GET /v1/subscriptions: {"subscriptions": [...]}."""
    return [subscription(item) for item in _items(data, "subscriptions", "subscriptions")]


def bulk_result(data: object) -> BulkResult:
    """POST /v1/subscriptions/bulk and DELETE /v1/subscriptions: one result per market."""
    fields = _Fields(data, "bulk result")
    return BulkResult(exchange=fields.text("exchange"), results=_market_results(fields))


def pair_result(data: object) -> PairResult:
    """POST /v1/subscriptions/consolidated: one result per book, each naming its exchange."""
    fields = _Fields(data, "pair subscription result")
    return PairResult(pair=fields.text("pair"), results=_market_results(fields))


def _market_results(fields: _Fields) -> tuple[MarketResult, ...]:
    results = []
    for item in fields.array("results"):
        entry = _Fields(item, "market result")
        raw_error = entry.data.get("error")
        error = None if raw_error is None else _Fields(raw_error, "market error")
        raw_subscription = entry.data.get("subscription")
        results.append(
            MarketResult(
                market=entry.optional_text("market") or "",
                result=entry.text("result"),
                subscription=None
                if raw_subscription is None
                else subscription(
                    {**_Fields(raw_subscription, "subscription").data, "changed": entry.data.get("changed")}
                ),
                error_code=None if error is None else error.text("code"),
                error_message=None if error is None else error.text("message"),
                exchange=entry.optional_text("exchange"),
                alias_of=entry.optional_text("alias_of"),
            )
        )
    return tuple(results)


def consolidated(data: object) -> ConsolidatedBook:
    """GET /v1/consolidated/{pair}."""
    fields = _Fields(data, "consolidated book")
    return ConsolidatedBook(
        base=fields.text("base"),
        quote=fields.text("quote"),
        quotes=tuple(_text_items(fields.array("quotes"), "consolidated quotes")),
        depth=fields.integer("depth"),
        books=_merged_books(fields),
        left_out=_left_out(fields),
        crossed=fields.flag("crossed"),
        truncated=fields.flag("truncated"),
        bids=tuple(_consolidated_level(level, "consolidated bids") for level in fields.array("bids")),
        asks=tuple(_consolidated_level(level, "consolidated asks") for level in fields.array("asks")),
    )


def consolidated_tops(data: object) -> list[ConsolidatedTop]:
    """GET /v1/consolidated/tops: one top per pair asked, or its error."""
    result = []
    for item in _items(data, "tops", "consolidated tops"):
        fields = _Fields(item, "consolidated top")
        raw_error = fields.data.get("error")
        if raw_error is not None:
            error = _Fields(raw_error, "consolidated top error")
            code, message = error.text("code"), error.text("message")
            result.append(ConsolidatedTop(fields.text("pair"), error_code=code, error_message=message))
            continue
        bid, ask = fields.data.get("bid"), fields.data.get("ask")
        result.append(
            ConsolidatedTop(
                pair=f"{fields.text('base')}-{fields.text('quote')}",
                books=_merged_books(fields),
                left_out=_left_out(fields),
                crossed=fields.flag("crossed"),
                truncated=fields.flag("truncated"),
                bid=None if bid is None else _consolidated_level(bid, "consolidated top bid"),
                ask=None if ask is None else _consolidated_level(ask, "consolidated top ask"),
            )
        )
    return result


def _merged_books(fields: _Fields) -> tuple[MergedBook, ...]:
    books = []
    for item in fields.array("books"):
        book = _Fields(item, "consolidated book entry")
        books.append(
            MergedBook(
                id=book.text("id"),
                exchange=book.text("exchange"),
                market=book.text("market"),
                quote=book.text("quote"),
                update_id=book.integer("update_id"),
                replica=book.integer("replica"),
                status=book.text("status"),
                truncated=book.flag("truncated"),
                publish_time_ms=book.integer("publish_time"),
                age_ms=book.integer("age_ms"),
            )
        )
    return tuple(books)


def _left_out(fields: _Fields) -> tuple[LeftOut, ...]:
    left = []
    for item in fields.optional_array("left_out"):
        entry = _Fields(item, "left-out book")
        left.append(
            LeftOut(
                exchange=entry.text("exchange"),
                market=entry.optional_text("market"),
                code=entry.text("code"),
                message=entry.text("message"),
                status=entry.optional_text("status"),
                alias_of=entry.optional_text("alias_of"),
            )
        )
    return tuple(left)


def _consolidated_level(value: object, what: str) -> ConsolidatedLevel:
    """``[price, total, {book id: quantity}]``."""
    if not isinstance(value, list) or len(value) != 3 or not isinstance(value[2], Mapping):
        raise APIResponseError(f"{what}: a level must be [price, total, {{book: quantity}}], got {value!r}")
    books = {str(book): _exact(quantity, what) for book, quantity in value[2].items()}
    return ConsolidatedLevel(_exact(value[0], what), _exact(value[1], what), MappingProxyType(books))


def _text_items(values: list[object], what: str) -> list[str]:
    if not all(isinstance(value, str) for value in values):
        raise APIResponseError(f"{what}: expected a list of strings")
    return [str(value) for value in values]


def usage(data: object) -> Usage:
    """GET /v1/usage."""
    fields = _Fields(data, "usage")
    minutes = []
    for item in fields.array("minutes"):
        minute = _Fields(item, "usage minute")
        errors = minute.optional_integer("errors") or 0  # an older server counts none
        minutes.append(
            UsageMinute(minute=minute.time("minute"), requests=minute.integer("requests"), errors=errors)
        )
    limits = None
    if fields.data.get("limits") is not None:
        given = _Fields(fields.data["limits"], "usage limits")
        limits = UsageLimits(
            max_markets=given.integer("max_markets"),
            max_replicas=given.integer("max_replicas"),
            max_depth=given.integer("max_depth"),
            rate_limit_rps=given.number("rate_limit_rps"),
            burst=given.integer("burst"),
            max_streams=given.optional_integer("max_streams"),
        )
    return Usage(
        tenant_id=fields.text("tenant_id"),
        requests_total=fields.integer("requests_total"),
        minutes=tuple(minutes),
        limits=limits,
        markets=fields.optional_integer("markets"),
        most_replicas=fields.optional_integer("most_replicas"),
        deepest=fields.optional_integer("deepest"),
        streams=fields.optional_integer("streams"),
    )


def account(data: object) -> Account:
    """GET /v1/account."""
    fields = _Fields(data, "account")
    return Account(
        role=fields.text("role"),
        tenant_id=fields.optional_text("tenant_id"),
        tenant_name=fields.optional_text("tenant_name"),
    )


def api_key(data: object) -> ApiKey:
    """One entry of GET /v1/keys (or of an operator's key list)."""
    fields = _Fields(data, "key")
    return ApiKey(
        id=fields.text("id"),
        prefix=fields.text("prefix"),
        last4=fields.text("last4"),
        created_at=fields.time("created_at"),
        last_used_at=fields.optional_time("last_used_at"),
        expires_at=fields.optional_time("expires_at"),
        revoked_at=fields.optional_time("revoked_at"),
    )


def api_keys(data: object) -> list[ApiKey]:
    """GET /v1/keys: {"keys": [...]}."""
    return [api_key(item) for item in _items(data, "keys", "keys")]


def created_key(data: object) -> CreatedKey:
    """POST /v1/keys (or an operator's POST .../keys): the one answer that carries the secret."""
    fields = _Fields(data, "created key")
    return CreatedKey(
        id=fields.text("id"),
        key=fields.text("key"),
        prefix=fields.optional_text("prefix"),
        last4=fields.optional_text("last4"),
        created_at=fields.optional_time("created_at"),
        expires_at=fields.optional_time("expires_at"),
    )


def tenant(data: object) -> Tenant:
    """An operator's view of one tenant."""
    fields = _Fields(data, "tenant")
    return Tenant(
        id=fields.text("id"),
        name=fields.text("name"),
        max_markets=fields.integer("max_markets"),
        max_replicas=fields.integer("max_replicas"),
        max_depth=fields.integer("max_depth"),
        rate_limit_rps=fields.number("rate_limit_rps"),
        burst=fields.integer("burst"),
        disabled=fields.flag("disabled"),
        created_at=fields.time("created_at"),
        max_streams=fields.optional_integer("max_streams"),
    )


def tenants(data: object) -> list[Tenant]:
    """GET /v1/admin/tenants: {"tenants": [...]}."""
    return [tenant(item) for item in _items(data, "tenants", "tenants")]


def node(data: object) -> Node:
    """One entry of GET /v1/admin/nodes; only "id" is required, the rest is read when present."""
    fields = _Fields(data, "node")
    assignments = []
    for item in fields.optional_array("assignments"):
        entry = _Fields(item, "node assignment")
        assignments.append(
            NodeAssignment(
                exchange=entry.text("exchange"), market=entry.text("market"), replica=entry.integer("replica")
            )
        )
    return Node(
        id=fields.text("id"),
        address=fields.optional_text("address"),
        heartbeat_at=fields.optional_time("heartbeat_at"),
        live=fields.optional_flag("live"),
        draining=fields.optional_flag("draining"),
        assignments=tuple(assignments),
        raw=fields.frozen(),
        stats=None
        if not isinstance(stats := fields.data.get("stats"), Mapping)
        else MappingProxyType(dict(stats)),
    )


def nodes(data: object) -> list[Node]:
    """GET /v1/admin/nodes: {"nodes": [...]}."""
    return [node(item) for item in _items(data, "nodes", "nodes")]


def audit_entry(data: object) -> AuditEntry:
    """One entry of GET /v1/admin/audit."""
    fields = _Fields(data, "audit entry")
    detail = fields.data.get("detail")
    return AuditEntry(
        at=fields.time("at"),
        actor=fields.text("actor"),
        action=fields.text("action"),
        target=fields.text("target"),
        detail=MappingProxyType(dict(detail)) if isinstance(detail, dict) else MappingProxyType({}),
    )


def audit(data: object) -> list[AuditEntry]:
    """GET /v1/admin/audit: {"audit": [...]}, newest first."""
    return [audit_entry(item) for item in _items(data, "audit", "audit")]


def nothing(data: object) -> None:
    """For 204 answers: there is nothing to read."""
    del data


def replica_state(data: object) -> ReplicaState:
    """One replica of an entry of GET /v1/admin/books."""
    fields = _Fields(data, "replica")
    return ReplicaState(
        replica=fields.integer("replica"),
        node_id=fields.optional_text("node_id"),
        status=fields.text("status"),
        update_id=fields.optional_integer("update_id"),
        age_ms=fields.optional_integer("age_ms"),
        resyncs=fields.counts("resyncs"),
        restarts=fields.optional_integer("restarts"),
        stale_episodes=fields.optional_integer("stale_episodes"),
        mismatches=fields.optional_integer("mismatches"),
        audit_mismatches=fields.optional_integer("audit_mismatches"),
    )


def cluster_books(data: object) -> list[ClusterBook]:
    """GET /v1/admin/books: {"books": [...], "disagreements": [...]} (the latter follow from the former)."""
    books = []
    for item in _items(data, "books", "books"):
        fields = _Fields(item, "book")
        books.append(
            ClusterBook(
                exchange=fields.text("exchange"),
                market=fields.text("market"),
                status=fields.text("status"),
                replicas=tuple(replica_state(r) for r in fields.array("replicas")),
            )
        )
    return books


def egress(data: object) -> list[EgressBudget]:
    """GET /v1/admin/egress: {"egress": [...]}."""
    pools = []
    for item in _items(data, "egress", "egress"):
        fields = _Fields(item, "egress pool")
        names = {key: fields.array(key) for key in ("exchanges", "nodes")}
        if not all(isinstance(n, str) for values in names.values() for n in values):
            raise APIResponseError("egress pool: exchanges and nodes must be lists of strings")
        pools.append(
            EgressBudget(
                egress_id=fields.text("egress_id"),
                pool=fields.text("pool"),
                used=fields.integer("used"),
                limit=fields.integer("limit"),
                window_ends_in_ms=fields.integer("window_ends_in_ms"),
                closed_for_ms=fields.integer("closed_for_ms"),
                refusals=fields.counts("refusals"),
                exchanges=tuple(str(n) for n in names["exchanges"]),
                nodes=tuple(str(n) for n in names["nodes"]),
                weight_spent=fields.integer("weight_spent"),
            )
        )
    return pools
