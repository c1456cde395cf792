"""The compat listener's caller: every request acts as one configured tenant, created on first use.

The real UBDCC client cannot send an API key, so the compat listener (bound to a private
address) maps all of its requests to the tenant named by ``--compat-tenant``. The tenant is
found by name, or created with the ``compat_*`` limits from the settings and the ``max_depth``
that UBDCC's subscriptions need; tenant names are unique in the control store, so workers racing
to create it end up sharing one. A disabled compat tenant is refused like any other (403).
"""

from __future__ import annotations

import asyncio

from control_plane.errors import ConflictError, ForbiddenError
from control_plane.models import OPERATOR, Principal
from read_functions.deps import Deps
from read_functions.messages import Request
from read_functions.routing import Route
from read_functions.ubdcc import UBDCC_DEPTH


class CompatTenant:
    """A principal source (see :class:`read_functions.dispatch.Dispatcher`) for one tenant."""

    def __init__(self, deps: Deps, name: str) -> None:
        self._deps = deps
        self._name = name
        self._principal: Principal | None = None
        self._lock = asyncio.Lock()

    async def __call__(self, request: Request, route: Route) -> Principal:
        principal = self._principal or await self._resolve()
        assert principal.tenant_id is not None
        if (await self._deps.access.tenant(principal.tenant_id)).disabled:
            raise ForbiddenError("the tenant is disabled")
        return principal

    async def _resolve(self) -> Principal:
        async with self._lock:
            if self._principal is None:
                tenant_id = await self._find() or await self._create()
                self._principal = Principal(tenant_id=tenant_id, key_id=None, is_admin=False)
            return self._principal

    async def _find(self) -> str | None:
        wanted = self._name.casefold()
        for tenant in await self._deps.control.list_tenants():
            if tenant.name.casefold() == wanted:
                return tenant.id
        return None

    async def _create(self) -> str:
        settings = self._deps.settings
        fields = {
            "name": self._name,
            "max_markets": settings.compat_max_markets,
            "max_replicas": settings.compat_max_replicas,
            "max_depth": UBDCC_DEPTH,
            "rate_limit_rps": settings.compat_rate_limit_rps,
            "burst": max(1, int(settings.compat_rate_limit_rps)),
        }
        try:
            return (await self._deps.control.create_tenant(fields, actor=OPERATOR)).id
        except ConflictError:
            tenant_id = await self._find()  # another worker created it first
            if tenant_id is None:
                raise
            return tenant_id
