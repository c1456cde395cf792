"""Operator actions on tenants: create, read, list and change limits (or disable).

Fields arrive as decoded JSON; each is checked for type and range here, and unknown fields are
refused rather than ignored, so a typo in an operator's request is never silently dropped.
Lowering ``max_markets`` below a tenant's current count keeps its subscriptions; it only stops
new ones. Lowering ``max_replicas`` or ``max_depth`` takes effect on the next scheduler round
(subscriptions keep what they asked for; the scheduler caps each wish by its tenant's limits).

A tenant's ``burst`` (the requests it may make at once before its rate applies) defaults to one
second of its rate, and never fewer than :data:`MIN_DEFAULT_BURST`: a fixed default would make a
high rate unusable (at 1,000,000 requests/s, a burst of 20 refuses all but 20 of any burst). A
burst left at its default follows a later change of the rate; one set by the operator stays.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import cast

from control_plane.accounts.audit import AuditLog
from control_plane.depth import DEFAULT_MAX_DEPTH, MAX_DEPTH_LIMIT
from control_plane.errors import InvalidRequestError, NotFoundError
from control_plane.ids import TENANT_ID_PREFIX, new_id
from control_plane.models import DEFAULT_MAX_STREAMS, Principal, Tenant
from control_plane.stores.base import ControlStore
from control_plane.validation import (
    require_bool,
    require_id,
    require_int,
    require_name,
    require_number,
    unknown_fields,
)
from ladder_process.clock import Clock

MAX_REPLICAS_LIMIT = 16
MAX_STREAMS_LIMIT = 100_000
DEFAULT_RATE_LIMIT_RPS = 10.0
MIN_DEFAULT_BURST = 20

_CHECKS: dict[str, Callable[[object], object]] = {
    "name": lambda v: require_name("name", v),
    "max_markets": lambda v: require_int("max_markets", v, lo=0, hi=100_000),
    "max_replicas": lambda v: require_int("max_replicas", v, lo=1, hi=MAX_REPLICAS_LIMIT),
    "max_depth": lambda v: require_int("max_depth", v, lo=1, hi=MAX_DEPTH_LIMIT),
    "max_streams": lambda v: require_int("max_streams", v, lo=0, hi=MAX_STREAMS_LIMIT),
    "rate_limit_rps": lambda v: require_number("rate_limit_rps", v, lo=0.01, hi=1_000_000),
    "burst": lambda v: require_int("burst", v, lo=1, hi=10_000_000),
    "disabled": lambda v: require_bool("disabled", v),
}


def _checked(fields: Mapping[str, object], allowed: frozenset[str]) -> dict[str, object]:
    if not isinstance(fields, Mapping):
        raise InvalidRequestError("the request body must be a JSON object")
    if not set(fields) <= allowed:
        raise unknown_fields(fields, allowed)  # a pasted secret is never echoed
    return {name: _CHECKS[name](value) for name, value in fields.items()}


def default_burst(rate_limit_rps: float) -> int:
    """The burst of a tenant whose operator did not set one: one second of its rate, at least 20."""
    return max(MIN_DEFAULT_BURST, math.ceil(rate_limit_rps))


class TenantAdmin:
    def __init__(
        self, store: ControlStore, audit: AuditLog, clock: Clock, on_change: Callable[[], None]
    ) -> None:
        self._store = store
        self._audit = audit
        self._clock = clock
        self._on_change = on_change

    async def create(self, fields: Mapping[str, object], *, actor: Principal) -> Tenant:
        """A new tenant from ``name`` and any of its limits; a limit not given gets its default.

        The limits: ``max_markets``, ``max_replicas``, ``max_depth``, ``max_streams``, ``rate_limit_rps``,
        ``burst``.
        """
        values = _checked(fields, frozenset(_CHECKS) - {"disabled"})
        if "name" not in values:
            raise InvalidRequestError("name is required")
        rate = cast(float, values.get("rate_limit_rps", DEFAULT_RATE_LIMIT_RPS))  # checked by _CHECKS
        template = Tenant(
            id=new_id(TENANT_ID_PREFIX),
            name="",
            max_markets=10,
            max_replicas=2,
            max_depth=DEFAULT_MAX_DEPTH,
            max_streams=DEFAULT_MAX_STREAMS,
            rate_limit_rps=rate,
            burst=default_burst(rate),
            disabled=False,
            created_at=self._clock(),
        )
        tenant = dataclasses.replace(template, **values)  # type: ignore[arg-type]  # checked by _CHECKS
        await self._store.create_tenant(tenant)
        await self._audit.record(actor, "tenant.create", tenant.id, name=tenant.name)
        return tenant

    async def get(self, tenant_id: object) -> Tenant:
        tenant = await self._store.get_tenant(require_id("tenant", tenant_id, TENANT_ID_PREFIX))
        if tenant is None:
            raise NotFoundError("no such tenant")
        return tenant

    async def list_all(self) -> list[Tenant]:
        return await self._store.list_tenants()

    async def update(self, tenant_id: object, fields: Mapping[str, object], *, actor: Principal) -> Tenant:
        """Change any of the fields a tenant was created with, and ``disabled``."""
        values = _checked(fields, frozenset(_CHECKS))
        current = await self.get(tenant_id)
        follows = current.burst == default_burst(current.rate_limit_rps)  # a default burst follows
        if follows and "rate_limit_rps" in values and "burst" not in values:
            values["burst"] = default_burst(cast(float, values["rate_limit_rps"]))
        tenant = dataclasses.replace(current, **values)  # type: ignore[arg-type]
        if not await self._store.update_tenant(tenant):
            raise NotFoundError("no such tenant")
        self._on_change()
        await self._audit.record(
            actor, "tenant.update", tenant.id, **{k: tenant.to_json()[k] for k in values}
        )
        return tenant
