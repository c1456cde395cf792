"""The control plane's business logic, as the HTTP routes (and the CLI) call it.

``ControlService`` wires the parts together over one ControlStore and exposes one method per
action; routes stay thin: authenticate, check the principal's role (``require_admin`` /
``require_tenant`` in control_plane.auth), call one method, render ``to_json()``. Every method
raises only ``control_plane.errors`` (client-facing, with a ``code``) or
``ladder_process.errors.StoreError`` (the store failed). Mutations take the acting Principal so that
the audit log says who did what.

Tenant isolation: a tenant route passes the caller's own tenant id, never one from the request,
and another tenant's key or subscription is reported as "not found".
"""

from __future__ import annotations

from collections.abc import Mapping

from book_store.keys import BookKey
from control_plane.audit import AuditLog
from control_plane.auth import Authenticator
from control_plane.depth import DEFAULT_DEPTH
from control_plane.keys import KeyAdmin
from control_plane.markets import MarketValidator
from control_plane.models import (
    ApiKey,
    AuditEvent,
    JsonScalar,
    Principal,
    ReplicaAssignment,
    Subscription,
    Tenant,
)
from control_plane.stores.base import ControlStore
from control_plane.subscriptions import BulkOutcome, SubscriptionDesk
from control_plane.tenants import TenantAdmin
from ladder_process.clock import Clock, now_ms


class ControlService:
    def __init__(
        self,
        store: ControlStore,
        pepper: bytes,
        admin_key: str | None,
        markets: MarketValidator,
        *,
        clock: Clock = now_ms,
        cache_ttl_ms: int = 1000,
        node_timeout_ms: int = 3000,
    ) -> None:
        self._store = store
        self._clock = clock
        self._node_timeout_ms = node_timeout_ms
        self._audit = AuditLog(store, clock)
        self._auth = Authenticator(store, pepper, admin_key, clock=clock, cache_ttl_ms=cache_ttl_ms)
        self._tenants = TenantAdmin(store, self._audit, clock, on_change=self._auth.forget)
        self._keys = KeyAdmin(store, pepper, self._audit, clock, on_revoke=self._auth.forget)
        self._subscriptions = SubscriptionDesk(store, markets, self._audit, clock, cache_ttl_ms=cache_ttl_ms)

    # -- authentication ---------------------------------------------------------------------
    async def authenticate(self, presented_key: str | None) -> Principal:
        """UnauthorizedError (missing/unknown/revoked/expired), ForbiddenError (tenant disabled)."""
        return await self._auth.authenticate(presented_key)

    async def flush_last_used(self) -> None:
        """Write keys' ``last_used_at`` collected since the last flush (call every ~1 s)."""
        await self._auth.flush_last_used()

    # -- tenants (operator) -----------------------------------------------------------------
    async def create_tenant(self, fields: Mapping[str, object], *, actor: Principal) -> Tenant:
        return await self._tenants.create(fields, actor=actor)

    async def list_tenants(self) -> list[Tenant]:
        return await self._tenants.list_all()

    async def get_tenant(self, tenant_id: object) -> Tenant:
        return await self._tenants.get(tenant_id)

    async def update_tenant(
        self, tenant_id: object, fields: Mapping[str, object], *, actor: Principal
    ) -> Tenant:
        return await self._tenants.update(tenant_id, fields, actor=actor)

    # -- API keys (operator, or a tenant for itself) -----------------------------------------
    async def create_key(
        self, tenant_id: object, expires_in_s: object = None, *, actor: Principal
    ) -> tuple[ApiKey, str]:
        return await self._keys.create(tenant_id, expires_in_s, actor=actor)

    async def list_keys(self, tenant_id: object) -> list[ApiKey]:
        return await self._keys.list_for(tenant_id)

    async def revoke_key(
        self, tenant_id: str | None, key_id: object, grace_s: object = None, *, actor: Principal
    ) -> ApiKey:
        return await self._keys.revoke(tenant_id, key_id, grace_s, actor=actor)

    # -- subscriptions (tenant) -------------------------------------------------------------
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
        return await self._subscriptions.subscribe(tenant_id, exchange, market, replicas, depth, actor=actor)

    async def subscribe_many(
        self,
        tenant_id: str,
        exchange: object,
        markets: object,
        replicas: object = 1,
        depth: object = DEFAULT_DEPTH,
        *,
        actor: Principal,
    ) -> list[BulkOutcome]:
        return await self._subscriptions.subscribe_many(
            tenant_id, exchange, markets, replicas, depth, actor=actor
        )

    async def unsubscribe(
        self, tenant_id: str, exchange: object, market: object, *, actor: Principal
    ) -> None:
        await self._subscriptions.unsubscribe(tenant_id, exchange, market, actor=actor)

    async def unsubscribe_many(
        self, tenant_id: str, exchange: object, markets: object, *, actor: Principal
    ) -> list[BulkOutcome]:
        return await self._subscriptions.unsubscribe_many(tenant_id, exchange, markets, actor=actor)

    async def subscriptions(self, tenant_id: str) -> list[Subscription]:
        return await self._subscriptions.list_for(tenant_id)

    async def subscribed_books(self, tenant_id: str) -> frozenset[BookKey]:
        return await self._subscriptions.books_of(tenant_id)

    async def is_entitled(self, tenant_id: str, exchange: str, market: str) -> bool:
        return await self._subscriptions.is_entitled(tenant_id, exchange, market)

    # -- operator views ---------------------------------------------------------------------
    async def audit(self, limit: object = 100) -> list[AuditEvent]:
        """The newest audit events first."""
        return await self._audit.recent(limit)

    async def assignments(self) -> list[ReplicaAssignment]:
        """Every replica assignment: which node keeps which replica of which book."""
        return await self._store.list_assignments()

    async def nodes(self) -> list[dict[str, JsonScalar | list[dict[str, JsonScalar]]]]:
        """Each ingest node with ``live`` (heartbeat within node_timeout_ms) and its assignments."""
        now = self._clock()
        assignments = await self._store.list_assignments()
        return [
            {
                **node.to_json(),
                "live": now - node.heartbeat_at <= self._node_timeout_ms,
                "assignments": [a.to_json() for a in assignments if a.node_id == node.id],
            }
            for node in await self._store.list_nodes()
        ]
