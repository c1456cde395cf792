"""The operator endpoints (/v1/admin/...), each written once as a `Call`; both admin clients send them."""

from __future__ import annotations

from collections.abc import Mapping

from . import parse as parse
from .call import Call, params, path
from .errors import ConfigurationError
from .models import ApiKey, AuditEntry, ClusterBook, CreatedKey, EgressBudget, Node, Tenant, Usage

TENANT_FIELDS = frozenset(
    {"name", "max_markets", "max_replicas", "max_depth", "max_streams", "rate_limit_rps", "burst", "disabled"}
)


def create_tenant(
    name: str,
    max_markets: int | None,
    max_replicas: int | None,
    max_depth: int | None,
    rate_limit_rps: float | None,
    burst: int | None,
    max_streams: int | None = None,
) -> Call[Tenant]:
    """POST /v1/admin/tenants: creates an account, so never re-sent once it may have arrived.

    Limits left as None are not sent, so the server's defaults apply.
    """
    body = {"name": name} | params(
        max_markets=max_markets,
        max_replicas=max_replicas,
        max_depth=max_depth,
        max_streams=max_streams,
        rate_limit_rps=rate_limit_rps,
        burst=burst,
    )
    return Call("POST", path("v1", "admin", "tenants"), parse.tenant, body=body, retry_safe=False)


def tenants() -> Call[list[Tenant]]:
    """GET /v1/admin/tenants."""
    return Call("GET", path("v1", "admin", "tenants"), parse.tenants)


def tenant(tenant_id: str) -> Call[Tenant]:
    """GET /v1/admin/tenants/{id}."""
    return Call("GET", path("v1", "admin", "tenants", tenant_id), parse.tenant)


def update_tenant(tenant_id: str, fields: Mapping[str, object]) -> Call[Tenant]:
    """PATCH /v1/admin/tenants/{id}: sets fields to values, so sending it twice is harmless."""
    unknown = sorted(set(fields) - TENANT_FIELDS)
    if unknown or not fields:
        raise ConfigurationError(
            f"update_tenant takes one or more of {sorted(TENANT_FIELDS)}, got {sorted(fields)}"
        )
    return Call("PATCH", path("v1", "admin", "tenants", tenant_id), parse.tenant, body=dict(fields))


def create_tenant_key(tenant_id: str) -> Call[CreatedKey]:
    """POST /v1/admin/tenants/{id}/keys: creates a secret, so never re-sent once it may have arrived."""
    url = path("v1", "admin", "tenants", tenant_id, "keys")
    return Call("POST", url, parse.created_key, body={}, retry_safe=False)


def tenant_keys(tenant_id: str) -> Call[list[ApiKey]]:
    """GET /v1/admin/tenants/{id}/keys."""
    return Call("GET", path("v1", "admin", "tenants", tenant_id, "keys"), parse.api_keys)


def revoke_key(key_id: str) -> Call[None]:
    """DELETE /v1/admin/keys/{key_id}."""
    return Call("DELETE", path("v1", "admin", "keys", key_id), parse.nothing)


def nodes() -> Call[list[Node]]:
    """GET /v1/admin/nodes."""
    return Call("GET", path("v1", "admin", "nodes"), parse.nodes)


def tenant_usage(tenant_id: str) -> Call[Usage]:
    """GET /v1/admin/tenants/{id}/usage."""
    return Call("GET", path("v1", "admin", "tenants", tenant_id, "usage"), parse.usage)


def books() -> Call[list[ClusterBook]]:
    """GET /v1/admin/books."""
    return Call("GET", path("v1", "admin", "books"), parse.cluster_books)


def egress() -> Call[list[EgressBudget]]:
    """GET /v1/admin/egress."""
    return Call("GET", path("v1", "admin", "egress"), parse.egress)


def audit(limit: int | None) -> Call[list[AuditEntry]]:
    """GET /v1/admin/audit?limit=N, newest first."""
    return Call("GET", path("v1", "admin", "audit"), parse.audit, params(limit=limit))
