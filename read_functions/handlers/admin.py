"""Operator routes under ``/v1/admin``: tenants, their keys and usage, the audit log."""

from __future__ import annotations

from read_functions.app.messages import Request, Response, empty_response, json_response
from read_functions.app.params import int_param, json_object, require_fields
from read_functions.deps import Deps
from read_functions.handlers.account import usage_report
from read_functions.tenancy.access import keys_changed, tenant_changed

AUDIT_LIMIT_MAX = 1000
_TENANT_FIELDS = frozenset(
    {"name", "max_markets", "max_replicas", "max_depth", "max_streams", "rate_limit_rps", "burst", "disabled"}
)
_KEY_FIELDS = frozenset({"expires_in_s"})


async def create_tenant(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    body = json_object(request)
    require_fields(body, _TENANT_FIELDS - {"disabled"})
    tenant = await deps.control.tenants.create(body, actor=request.principal)
    return json_response(tenant.to_json(), 201)


async def list_tenants(request: Request, deps: Deps) -> Response:
    return json_response({"tenants": [t.to_json() for t in await deps.control.tenants.list_all()]})


async def get_tenant(request: Request, deps: Deps) -> Response:
    return json_response((await deps.control.tenants.get(request.path_params["tenant_id"])).to_json())


async def update_tenant(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    body = json_object(request)
    require_fields(body, _TENANT_FIELDS)
    tenant = await deps.control.tenants.update(
        request.path_params["tenant_id"], body, actor=request.principal
    )
    await deps.announce(tenant_changed(tenant.id))
    return json_response(tenant.to_json())


async def tenant_usage(request: Request, deps: Deps) -> Response:
    """``GET /v1/admin/tenants/{id}/usage``: what the tenant itself sees at ``GET /v1/usage``."""
    return json_response(await usage_report(deps, request.path_params["tenant_id"]))


async def create_tenant_key(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    body = json_object(request, allow_empty=True)
    require_fields(body, _KEY_FIELDS)
    record, key = await deps.control.keys.create(
        request.path_params["tenant_id"], body.get("expires_in_s"), actor=request.principal
    )
    return json_response({**record.to_json(), "key": key}, 201)


async def list_tenant_keys(request: Request, deps: Deps) -> Response:
    keys = await deps.control.keys.list_for(request.path_params["tenant_id"])
    return json_response({"keys": [k.to_json() for k in keys]})


async def revoke_any_key(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    await deps.control.keys.revoke(None, request.path_params["key_id"], actor=request.principal)
    await deps.announce(keys_changed())
    return empty_response()


async def audit(request: Request, deps: Deps) -> Response:
    limit = int_param(request.query, "limit", lo=1, hi=AUDIT_LIMIT_MAX) or 100
    query = request.query
    events = await deps.control.audit.recent(limit, before=query.get("before"), scope=query.get("scope"))
    following = events[-1].id if len(events) == limit else None
    return json_response({"audit": [e.to_json() for e in events], "next": following})
