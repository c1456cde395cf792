"""The control plane's business logic, as the HTTP routes (and the CLI) call it.

``ControlService`` wires the parts together over one ControlStore and exposes one method per
action; routes stay thin: authenticate, check the principal's role (``require_admin`` /
``require_tenant`` in control_plane.accounts.auth), call one method, render ``to_json()``. Every method
raises only ``control_plane.errors`` (client-facing, with a ``code``) or
``ladder_process.errors.StoreError`` (the store failed). Mutations take the acting Principal so that
the audit log says who did what.

Tenant isolation: a tenant route passes the caller's own tenant id, never one from the request,
and another tenant's key or subscription is reported as "not found".
"""

from __future__ import annotations

from control_plane.accounts.audit import AuditLog
from control_plane.accounts.auth import Authenticator
from control_plane.accounts.keys import KeyAdmin
from control_plane.accounts.subscriptions import SubscriptionDesk
from control_plane.accounts.tenants import TenantAdmin
from control_plane.models import JsonScalar, ReplicaAssignment
from control_plane.scheduling.markets import MarketValidator
from control_plane.stores.base import ControlStore
from ladder_process.clock import Clock, now_ms


class ControlService:
    """The control plane's parts over one store, built once per process."""

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
        self.audit = AuditLog(store, clock)
        self.auth = Authenticator(store, pepper, admin_key, clock=clock, cache_ttl_ms=cache_ttl_ms)
        self.tenants = TenantAdmin(store, self.audit, clock, on_change=self.auth.forget)
        self.keys = KeyAdmin(store, pepper, self.audit, clock, on_revoke=self.auth.forget)
        self.subscriptions = SubscriptionDesk(store, markets, self.audit, clock, cache_ttl_ms=cache_ttl_ms)

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
