"""A tenant's own account: ``/v1/usage`` and its API keys (``/v1/keys``)."""

from __future__ import annotations

from control_plane.auth import require_tenant
from read_functions.access import keys_changed
from read_functions.deps import Deps, now_ms
from read_functions.messages import Request, Response, empty_response, json_response
from read_functions.params import int_param, json_object, require_fields

MAX_GRACE_S = 30 * 24 * 3600
_KEY_FIELDS = frozenset({"expires_in_s"})


async def usage(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    return json_response(await deps.usage.report(require_tenant(request.principal), now_ms()))


async def list_keys(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    keys = await deps.control.list_keys(require_tenant(request.principal))
    return json_response({"keys": [k.to_json() for k in keys]})


async def create_key(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    tenant_id = require_tenant(request.principal)
    body = json_object(request, allow_empty=True)
    require_fields(body, _KEY_FIELDS)
    record, key = await deps.control.create_key(tenant_id, body.get("expires_in_s"), actor=request.principal)
    return json_response({**record.to_json(), "key": key}, 201)


async def revoke_key(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    grace_s = int_param(request.query, "grace_s", lo=0, hi=MAX_GRACE_S)
    await deps.control.revoke_key(
        require_tenant(request.principal), request.path_params["key_id"], grace_s, actor=request.principal
    )
    await deps.announce(keys_changed())
    return empty_response()
