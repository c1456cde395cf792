"""Tenants' subscriptions: which books each tenant reads, how many replicas and how deep it wants them.

A subscription is accepted only for an exchange Ladder knows and a market that exchange lists
as trading (through the injected MarketValidator), with ``replicas`` within the tenant's
``max_replicas`` and ``depth`` within both the venue's snapshot maximum and the tenant's
``max_depth``; the store enforces ``max_markets`` atomically. A book lives while any tenant
subscribes to it, as deep as its deepest subscriber asks: the scheduler reads the union of all
subscriptions from the store.

Subscribing again to a book the tenant holds changes only what the call names: a ``replicas`` or
``depth`` left out keeps the subscription's own value (a new subscription gets the defaults), so a
bulk call that names a market held 500 deep without a depth leaves it 500 deep. Each outcome keeps
the subscription as it was, so the caller is told what changed, a lowering included. Two calls
changing one subscription at once: the later write wins whole.

``is_entitled`` answers from a per-tenant cache refreshed every ``cache_ttl_ms`` (and at once
after this process changed that tenant's subscriptions), so the read path does not ask the store
on every request.
"""

from __future__ import annotations

from dataclasses import dataclass

from book_store.schema import BookKey
from control_plane.accounts.audit import AuditLog
from control_plane.accounts.tenants import MAX_REPLICAS_LIMIT
from control_plane.depth import DEFAULT_DEPTH
from control_plane.errors import (
    ApiError,
    InvalidRequestError,
    LimitExceededError,
    NotFoundError,
    UnknownExchangeError,
    UnknownMarketError,
    shown,
)
from control_plane.ids import TENANT_ID_PREFIX
from control_plane.models import Principal, Subscription, Tenant
from control_plane.scheduling.markets import MarketValidator
from control_plane.stores.base import ControlStore
from control_plane.validation import (
    require_depth,
    require_exchange,
    require_id,
    require_int,
    require_market,
)
from ladder_process.clock import Clock

DEFAULT_REPLICAS = 1  # a new subscription that names no replicas
MAX_BULK_MARKETS = 5000
"""The most markets one bulk call may name (more than any venue lists)."""


CHANGEABLE = ("replicas", "depth")
"""What subscribing again may change of a subscription."""


@dataclass(frozen=True, slots=True)
class SubscriptionOutcome:
    """What a call did to one market: ``error`` is None when it succeeded; ``previous`` is the
    subscription before an update."""

    exchange: str
    market: str
    subscription: Subscription | None = None
    created: bool = False
    error: ApiError | None = None
    previous: Subscription | None = None

    def changes(self) -> dict[str, dict[str, int]]:
        """The fields an update changed, ``{"depth": {"from": 500, "to": 100}}`` (empty: none)."""
        before, after = self.previous, self.subscription
        if before is None or after is None:
            return {}
        return {
            name: {"from": getattr(before, name), "to": getattr(after, name)}
            for name in CHANGEABLE
            if getattr(before, name) != getattr(after, name)
        }


def _merged(
    tenant_id: str,
    book: BookKey,
    replicas: int | None,
    depth: int | None,
    held: Subscription | None,
    now: int,
) -> Subscription:
    """The subscription to store: the fields given, the rest kept from ``held`` (or defaulted)."""
    if held is None:
        return Subscription(
            tenant_id, book.exchange, book.market, replicas or DEFAULT_REPLICAS, now, depth or DEFAULT_DEPTH
        )
    return Subscription(
        tenant_id,
        book.exchange,
        book.market,
        held.replicas if replicas is None else replicas,
        held.created_at,
        held.depth if depth is None else depth,
    )


def _market_list(markets: object) -> list[str]:
    """The distinct names of a bulk call's market list, first occurrence first (each checked later)."""
    if not isinstance(markets, list) or not all(isinstance(m, str) for m in markets):
        raise InvalidRequestError("markets must be a list of market names")
    if len(markets) > MAX_BULK_MARKETS:
        raise InvalidRequestError(f"markets may name at most {MAX_BULK_MARKETS} markets")
    return list(dict.fromkeys(markets))


class SubscriptionDesk:
    def __init__(
        self,
        store: ControlStore,
        markets: MarketValidator,
        audit: AuditLog,
        clock: Clock,
        *,
        cache_ttl_ms: int = 1000,
    ) -> None:
        self._store = store
        self._markets = markets
        self._audit = audit
        self._clock = clock
        self._ttl_ms = cache_ttl_ms
        self._entitled: dict[str, tuple[frozenset[BookKey], int]] = {}

    async def subscribe(
        self,
        tenant_id: str,
        exchange: object,
        market: object,
        replicas: object = None,
        depth: object = None,
        *,
        actor: Principal,
    ) -> SubscriptionOutcome:
        """Create the subscription, or update the fields given (None: keep; a new one: default)."""
        self._audit.admit(actor)
        book = BookKey(require_exchange(exchange), require_market(market))
        tenant = await self._tenant(tenant_id)
        await self._require_exchange(book.exchange)
        if not await self._markets.tradable(book.exchange, book.market):
            raise UnknownMarketError(f"{book.exchange} has no trading market {shown(book.market)}")
        count, levels = self._wish(tenant, book.exchange, replicas, depth)
        previous = (await self._held(tenant.id)).get(book)
        wanted = _merged(tenant.id, book, count, levels, previous, self._clock())
        stored, created = await self._store.put_subscription(wanted)
        self._entitled.pop(tenant.id, None)
        await self._audit.record(
            actor,
            "subscription.put",
            tenant.id,
            exchange=book.exchange,
            market=book.market,
            replicas=stored.replicas,
            depth=stored.depth,
        )
        return SubscriptionOutcome(book.exchange, book.market, stored, created, previous=previous)

    async def subscribe_many(
        self,
        tenant_id: str,
        exchange: object,
        markets: object,
        replicas: object = None,
        depth: object = None,
        *,
        actor: Principal,
    ) -> list[SubscriptionOutcome]:
        """Subscribe to many markets of one exchange at once, one outcome per distinct market.

        The exchange, ``replicas`` and ``depth`` apply to every market, so a bad one refuses the
        whole call; a market that is malformed or not trading fails on its own and the others
        go ahead. A field left out keeps each held market's own value. The markets that would be
        new count against ``max_markets`` together: all fit, or LimitExceededError and nothing
        changes.
        """
        self._audit.admit(actor)
        venue = require_exchange(exchange)
        names = _market_list(markets)
        tenant = await self._tenant(tenant_id)
        await self._require_exchange(venue)
        count, levels = self._wish(tenant, venue, replicas, depth)
        outcomes: dict[str, SubscriptionOutcome] = {}
        books: list[BookKey] = []
        for name in names:
            try:
                books.append(BookKey(venue, require_market(name)))
            except ApiError as error:
                outcomes[name] = SubscriptionOutcome(venue, name, error=error)
        put = await self._put_all(tenant, books, count, levels)
        outcomes.update((book.market, outcome) for book, outcome in put.items())
        if all(outcome.error is not None for outcome in put.values()):
            return [outcomes[name] for name in names]  # nothing changed: nothing to record
        await self._audit.record(
            actor,
            "subscription.put_many",
            tenant.id,
            exchange=venue,
            markets=sum(1 for o in put.values() if o.error is None),
            replicas=count,
            depth=levels,
        )
        return [outcomes[name] for name in names]

    async def subscribe_books(
        self,
        tenant_id: str,
        books: list[BookKey],
        replicas: object = None,
        depth: object = None,
        *,
        actor: Principal,
    ) -> list[SubscriptionOutcome]:
        """Subscribe to books of several exchanges at once (one pair on several venues), one
        outcome per distinct book, as :meth:`subscribe_many` does for one exchange: ``replicas``
        and ``depth`` must suit every exchange named (left out: each held book keeps its own), a
        book that is not trading fails alone, and the new books count against ``max_markets``
        together."""
        self._audit.admit(actor)
        if len(books) > MAX_BULK_MARKETS:
            raise InvalidRequestError(f"a call may name at most {MAX_BULK_MARKETS} books")
        tenant = await self._tenant(tenant_id)
        wish: tuple[int | None, int | None] = (None, None)
        for exchange in dict.fromkeys(book.exchange for book in books):
            await self._require_exchange(exchange)
            wish = self._wish(tenant, exchange, replicas, depth)
        put = await self._put_all(tenant, list(dict.fromkeys(books)), *wish)
        if all(outcome.error is not None for outcome in put.values()):
            return list(put.values())  # nothing changed: nothing to record
        await self._audit.record(
            actor,
            "subscription.put_books",
            tenant.id,
            exchanges=",".join(dict.fromkeys(book.exchange for book, o in put.items() if o.error is None)),
            markets=sum(1 for o in put.values() if o.error is None),
            replicas=wish[0],
            depth=wish[1],
        )
        return list(put.values())

    async def _put_all(
        self, tenant: Tenant, books: list[BookKey], replicas: int | None, depth: int | None
    ) -> dict[BookKey, SubscriptionOutcome]:
        """Subscribe ``tenant`` to every distinct book of ``books`` that is trading, in one atomic
        step of the store, each held one keeping what is not given; one outcome per book, in order."""
        held = await self._held(tenant.id)
        now = self._clock()
        outcomes: dict[BookKey, SubscriptionOutcome] = {}
        wanted: list[Subscription] = []
        for book in books:
            if not await self._markets.tradable(book.exchange, book.market):
                error = UnknownMarketError(f"{book.exchange} has no trading market {shown(book.market)}")
                outcomes[book] = SubscriptionOutcome(book.exchange, book.market, error=error)
                continue
            outcomes[book] = SubscriptionOutcome(book.exchange, book.market)
            wanted.append(_merged(tenant.id, book, replicas, depth, held.get(book), now))
        for stored, created in await self._store.put_subscriptions(wanted):
            outcomes[stored.book] = SubscriptionOutcome(
                stored.exchange, stored.market, stored, created, previous=held.get(stored.book)
            )
        self._entitled.pop(tenant.id, None)
        return outcomes

    async def _held(self, tenant_id: str) -> dict[BookKey, Subscription]:
        """The tenant's subscriptions by book, as they are before a change."""
        return {s.book: s for s in await self._store.list_subscriptions(tenant_id)}

    async def unsubscribe(
        self, tenant_id: str, exchange: object, market: object, *, actor: Principal
    ) -> None:
        self._audit.admit(actor)
        book = BookKey(require_exchange(exchange), require_market(market))
        if not await self._store.delete_subscription(tenant_id, book):
            raise NotFoundError(f"no subscription to {book.exchange} {shown(book.market)}")
        self._entitled.pop(tenant_id, None)
        await self._audit.record(
            actor, "subscription.delete", tenant_id, exchange=book.exchange, market=book.market
        )

    async def unsubscribe_many(
        self, tenant_id: str, exchange: object, markets: object, *, actor: Principal
    ) -> list[SubscriptionOutcome]:
        """Unsubscribe from many markets of one exchange, one outcome per distinct market (a
        market the tenant does not subscribe to fails with ``not_found``; the others go ahead)."""
        self._audit.admit(actor)
        venue = require_exchange(exchange)
        names = _market_list(markets)
        outcomes: dict[str, SubscriptionOutcome] = {}
        books: list[BookKey] = []
        for name in names:
            try:
                books.append(BookKey(venue, require_market(name)))
            except ApiError as error:
                outcomes[name] = SubscriptionOutcome(venue, name, error=error)
        for book, removed in zip(
            books, await self._store.delete_subscriptions(tenant_id, books), strict=True
        ):
            missing = NotFoundError(f"no subscription to {book.exchange} {shown(book.market)}")
            outcomes[book.market] = SubscriptionOutcome(
                venue, book.market, error=None if removed else missing
            )
        self._entitled.pop(tenant_id, None)
        removed_count = sum(1 for o in outcomes.values() if o.error is None)
        if removed_count:  # a delete of nothing changes nothing: nothing to record
            await self._audit.record(
                actor, "subscription.delete_many", tenant_id, exchange=venue, markets=removed_count
            )
        return [outcomes[name] for name in names]

    async def _tenant(self, tenant_id: str) -> Tenant:
        tenant = await self._store.get_tenant(require_id("tenant", tenant_id, TENANT_ID_PREFIX))
        if tenant is None:
            raise NotFoundError("no such tenant")
        return tenant

    async def _require_exchange(self, exchange: str) -> None:
        if not await self._markets.known_exchange(exchange):
            raise UnknownExchangeError(f"unknown exchange {shown(exchange)}")

    @staticmethod
    def _wish(
        tenant: Tenant, exchange: str, replicas: object, depth: object
    ) -> tuple[int | None, int | None]:
        """``(replicas, depth)`` as given (None: not given), checked against the venue's and the
        tenant's limits. A value kept from before is not checked again: a tenant whose limit was
        lowered keeps its subscriptions, capped by the scheduler (see tenants.py)."""
        count = None if replicas is None else require_int("replicas", replicas, lo=1, hi=MAX_REPLICAS_LIMIT)
        levels = None if depth is None else require_depth(exchange, depth)  # after the exchange check
        if count is not None and count > tenant.max_replicas:
            raise LimitExceededError(f"replicas may be at most {tenant.max_replicas} for this tenant")
        if levels is not None and levels > tenant.max_depth:
            raise LimitExceededError(f"depth may be at most {tenant.max_depth} for this tenant")
        return count, levels

    async def list_for(self, tenant_id: str) -> list[Subscription]:
        return await self._store.list_subscriptions(tenant_id)

    async def books_of(self, tenant_id: str) -> frozenset[BookKey]:
        return await self._store.subscribed_books(tenant_id)

    async def is_entitled(self, tenant_id: str, exchange: str, market: str) -> bool:
        """True if the tenant subscribes to the book (cached for ``cache_ttl_ms``)."""
        now = self._clock()
        cached = self._entitled.get(tenant_id)
        if cached is None or now - cached[1] >= self._ttl_ms:
            cached = (await self._store.subscribed_books(tenant_id), now)
            if self._ttl_ms > 0:
                self._entitled[tenant_id] = cached
        return BookKey(exchange, market) in cached[0]
