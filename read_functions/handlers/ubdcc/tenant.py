"""The compat listener's caller: one configured tenant, created on first use, or a key's tenant.

The real UBDCC client cannot send an API key, so the compat listener (bound to a private
address) maps its keyless requests to the tenant named by ``--compat-tenant``. The tenant is
found by name, or created with the ``compat_*`` limits from the settings and the ``max_depth``
that UBDCC's subscriptions need; tenant names are unique in the control store, so workers racing
to create it end up sharing one. A disabled compat tenant is refused like any other (403). A
request that sends a key acts as that key's tenant, as on the main API.

A private address does not make a keyless listener safe. Any web page the operator opens can
make the browser send a GET to it (an ``<img>`` tag), or resolve its own name to 127.0.0.1 (DNS
rebinding) and read the answers; any local user can connect. So:

- requests from a browser (an ``Origin`` header, or ``Sec-Fetch-Site`` other than ``none``,
  which no UBDCC client sends) and requests addressed to a host name that is not ``localhost`` or
  one of ``LADDER_COMPAT_HOSTS`` (an IP address always passes: rebinding needs a name) are
  refused before anything else, key or not;
- a keyless request may change nothing (create or stop a DepthCache, credentials) unless the
  operator opted in with ``LADDER_COMPAT_KEYLESS_CHANGES`` (``--compat-keyless-changes``), which
  the server accepts only for a loopback listener.
"""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

from control_plane.errors import ConflictError, ForbiddenError, UnauthorizedError
from control_plane.models import OPERATOR, Principal
from read_functions.app.api_key import presented_key
from read_functions.app.messages import Request
from read_functions.app.routing import Route
from read_functions.deps import Deps
from read_functions.handlers.ubdcc.wire import UBDCC_DEPTH


def _host_name(host_header: str) -> str:
    """The host of a ``Host`` header, without its port (``[::1]:8081`` -> ``::1``)."""
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")]
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class CompatTenant:
    """A principal source (see :class:`read_functions.app.dispatch.Dispatcher`) for one tenant."""

    def __init__(self, deps: Deps, name: str, *, keyless_changes: bool | None = None) -> None:
        self._deps = deps
        self._name = name
        self._keyless_changes = (
            deps.settings.compat_keyless_changes if keyless_changes is None else keyless_changes
        )
        self._hosts = frozenset(h.casefold() for h in deps.settings.compat_hosts) | {"localhost"}
        self._principal: Principal | None = None
        self._lock = asyncio.Lock()

    async def __call__(self, request: Request, route: Route[Any]) -> Principal:
        self._refuse_browsers(request)
        key = presented_key(request)
        if key is not None:
            return await self._deps.access.principal(key, source=request.peer)
        if route.changes_state and not self._keyless_changes:
            raise UnauthorizedError(
                "this compat listener changes nothing without an API key: send one in "
                "'Authorization: Bearer <key>' or 'X-API-Key', or see docs/ubdcc.md"
            )
        principal = self._principal or await self._resolve()
        assert principal.tenant_id is not None
        if (await self._deps.access.tenant(principal.tenant_id)).disabled:
            raise ForbiddenError("the tenant is disabled")
        return principal

    def _refuse_browsers(self, request: Request) -> None:
        headers = request.headers
        if "origin" in headers or headers.get("sec-fetch-site", "none") != "none":
            raise ForbiddenError("the compat listener does not answer requests made by web pages")
        host = _host_name(headers.get("host", "")).casefold()
        if host and not _is_ip_literal(host) and host not in self._hosts:
            raise ForbiddenError(
                "the compat listener answers only requests addressed to an IP address, localhost "
                "or a name in LADDER_COMPAT_HOSTS"
            )

    async def _resolve(self) -> Principal:
        async with self._lock:
            if self._principal is None:
                tenant_id = await self._find() or await self._create()
                self._principal = Principal(tenant_id=tenant_id, key_id=None, is_admin=False)
            return self._principal

    async def _find(self) -> str | None:
        wanted = self._name.casefold()
        for tenant in await self._deps.control.tenants.list_all():
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
            return (await self._deps.control.tenants.create(fields, actor=OPERATOR)).id
        except ConflictError:
            tenant_id = await self._find()  # another worker created it first
            if tenant_id is None:
                raise
            return tenant_id
