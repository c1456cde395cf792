"""Tenants' subscriptions: which books each tenant reads, how many replicas and how deep it wants them.

A subscription is accepted only for an exchange Ladder knows and a market that exchange lists
as trading (through the injected MarketValidator), with ``replicas`` within the tenant's
``max_replicas`` and ``depth`` within both the venue's snapshot maximum and the tenant's
``max_depth``; the store enforces ``max_markets`` atomically. A book lives while any tenant
subscribes to it, as deep as its deepest subscriber asks: the scheduler reads the union of all
subscriptions from the store.

``is_entitled`` answers from a per-tenant cache refreshed every ``cache_ttl_ms`` (and at once
after this process changed that tenant's subscriptions), so the read path does not ask the store
on every request.
"""

from __future__ import annotations

from control_plane.audit import AuditLog
from control_plane.clock import Clock
from control_plane.depth import DEFAULT_DEPTH
from control_plane.errors import (
    LimitExceededError,
    NotFoundError,
    UnknownExchangeError,
    UnknownMarketError,
)
from control_plane.ids import TENANT_ID_PREFIX
from control_plane.markets import MarketValidator
from control_plane.models import BookRef, Principal, Subscription
from control_plane.stores.base import ControlStore
from control_plane.tenants import MAX_REPLICAS_LIMIT
from control_plane.validation import (
    require_depth,
    require_exchange,
    require_id,
    require_int,
    require_market,
)


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
        self._entitled: dict[str, tuple[frozenset[BookRef], int]] = {}

    async def subscribe(
        self,
        tenant_id: str,
        exchange: object,
        market: object,
        replicas: object = 1,
        depth: object = DEFAULT_DEPTH,
        *,
        actor: Principal,
    ) -> tuple[Subscription, bool]:
        """Create or update (replicas and depth) the subscription: ``(subscription, created)``."""
        book = BookRef(require_exchange(exchange), require_market(market))
        count = require_int("replicas", replicas, lo=1, hi=MAX_REPLICAS_LIMIT)
        tenant = await self._store.get_tenant(require_id("tenant", tenant_id, TENANT_ID_PREFIX))
        if tenant is None:
            raise NotFoundError("no such tenant")
        if not await self._markets.known_exchange(book.exchange):
            raise UnknownExchangeError(f"unknown exchange {book.exchange!r}")
        if not await self._markets.tradable(book.exchange, book.market):
            raise UnknownMarketError(f"{book.exchange} has no trading market {book.market!r}")
        levels = require_depth(book.exchange, depth)  # after the exchange check: its limit is known
        if count > tenant.max_replicas:
            raise LimitExceededError(f"replicas may be at most {tenant.max_replicas} for this tenant")
        if levels > tenant.max_depth:
            raise LimitExceededError(f"depth may be at most {tenant.max_depth} for this tenant")
        wanted = Subscription(tenant.id, book.exchange, book.market, count, self._clock(), levels)
        stored, created = await self._store.put_subscription(wanted)
        self._entitled.pop(tenant.id, None)
        await self._audit.record(
            actor,
            "subscription.put",
            tenant.id,
            exchange=book.exchange,
            market=book.market,
            replicas=count,
            depth=levels,
        )
        return stored, created

    async def unsubscribe(
        self, tenant_id: str, exchange: object, market: object, *, actor: Principal
    ) -> None:
        book = BookRef(require_exchange(exchange), require_market(market))
        if not await self._store.delete_subscription(tenant_id, book):
            raise NotFoundError(f"no subscription to {book.exchange} {book.market}")
        self._entitled.pop(tenant_id, None)
        await self._audit.record(
            actor, "subscription.delete", tenant_id, exchange=book.exchange, market=book.market
        )

    async def list_for(self, tenant_id: str) -> list[Subscription]:
        return await self._store.list_subscriptions(tenant_id)

    async def is_entitled(self, tenant_id: str, exchange: str, market: str) -> bool:
        """True if the tenant subscribes to the book (cached for ``cache_ttl_ms``)."""
        now = self._clock()
        cached = self._entitled.get(tenant_id)
        if cached is None or now - cached[1] >= self._ttl_ms:
            books = frozenset(s.book for s in await self._store.list_subscriptions(tenant_id))
            cached = (books, now)
            if self._ttl_ms > 0:
                self._entitled[tenant_id] = cached
        return BookRef(exchange, market) in cached[0]
