"""The caller's own account: who it is (``/v1/account``), ``/v1/usage`` and its API keys (``/v1/keys``)."""

from __future__ import annotations

from control_plane.accounts.auth import require_tenant
from ladder_process.clock import now_ms
from read_functions.app.messages import Request, Response, empty_response, json_response
from read_functions.app.params import int_param, json_object, require_fields
from read_functions.deps import Deps
from read_functions.tenancy.access import keys_changed

MAX_GRACE_S = 30 * 24 * 3600
_KEY_FIELDS = frozenset({"expires_in_s"})
LIMITS = ("max_markets", "max_replicas", "max_depth", "max_streams", "rate_limit_rps", "burst")


async def account(request: Request, deps: Deps) -> Response:
    """``GET /v1/account``: whether the key is the operator's or a tenant's (and which tenant).

    Any valid key may ask, so a client (the console) learns what to show without trying an
    operator route and being refused.
    """
    principal = request.principal
    assert principal is not None
    if principal.tenant_id is None:
        return json_response({"role": "operator", "tenant_id": None, "tenant_name": None})
    tenant = await deps.access.tenant(principal.tenant_id)
    return json_response({"role": "tenant", "tenant_id": tenant.id, "tenant_name": tenant.name})


async def usage(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    return json_response(await usage_report(deps, require_tenant(request.principal)))


async def usage_report(deps: Deps, tenant_id: str) -> dict[str, object]:
    """Requests counted, and what the tenant uses against each of its limits (``GET /v1/usage``).

    ``deepest`` and ``most_replicas`` are the largest wishes among its subscriptions, beside
    ``max_depth`` and ``max_replicas``; ``markets`` is the count beside ``max_markets``, ``streams``
    (open now, on every worker) beside ``max_streams``.
    """
    tenant = await deps.control.tenants.get(tenant_id)
    subscriptions = await deps.control.subscriptions.list_for(tenant_id)
    return {
        **await deps.usage.report(tenant_id, now_ms()),
        "limits": {name: tenant.to_json()[name] for name in LIMITS},
        "markets": len(subscriptions),
        "most_replicas": max((s.replicas for s in subscriptions), default=0),
        "deepest": max((s.depth for s in subscriptions), default=0),
        "streams": await deps.streams.open_streams(tenant_id),
    }


async def list_keys(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    keys = await deps.control.keys.list_for(require_tenant(request.principal))
    return json_response({"keys": [k.to_json() for k in keys]})


async def create_key(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    tenant_id = require_tenant(request.principal)
    body = json_object(request, allow_empty=True)
    require_fields(body, _KEY_FIELDS)
    record, key = await deps.control.keys.create(tenant_id, body.get("expires_in_s"), actor=request.principal)
    return json_response({**record.to_json(), "key": key}, 201)


async def revoke_key(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    grace_s = int_param(request.query, "grace_s", lo=0, hi=MAX_GRACE_S)
    await deps.control.keys.revoke(
        require_tenant(request.principal), request.path_params["key_id"], grace_s, actor=request.principal
    )
    await deps.announce(keys_changed())
    return empty_response()
