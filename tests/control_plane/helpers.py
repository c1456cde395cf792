"""Builders for control-plane values with sensible defaults, so tests state only what matters."""

from __future__ import annotations

from control_plane.accounts.api_keys import display_parts, generate_key, hash_key
from control_plane.ids import KEY_ID_PREFIX, TENANT_ID_PREFIX, new_id
from control_plane.models import ApiKey, NodeInfo, Tenant

PEPPER = b"test-pepper-0123456789abcdef"


def make_tenant(name: str | None = None, **overrides: object) -> Tenant:
    tenant_id = new_id(TENANT_ID_PREFIX)
    fields: dict[str, object] = {
        "id": tenant_id,
        "name": name or f"tenant {tenant_id}",
        "max_markets": 5,
        "max_replicas": 3,
        "rate_limit_rps": 10.0,
        "burst": 20,
        "disabled": False,
        "created_at": 1_700_000_000_000,
    }
    fields.update(overrides)
    return Tenant(**fields)  # type: ignore[arg-type]


def make_key(
    tenant_id: str,
    *,
    created_at: int = 1_700_000_000_000,
    expires_at: int | None = None,
    parent_id: str | None = None,
) -> tuple[ApiKey, str]:
    secret = generate_key()
    prefix, last4 = display_parts(secret)
    key = ApiKey(
        id=new_id(KEY_ID_PREFIX),
        tenant_id=tenant_id,
        prefix=prefix,
        last4=last4,
        key_hash=hash_key(secret, PEPPER),
        created_at=created_at,
        last_used_at=None,
        expires_at=expires_at,
        revoked_at=None,
        parent_id=parent_id,
    )
    return key, secret


def make_node(
    node_id: str,
    *,
    capacity: int = 100,
    heartbeat_at: int = 1_700_000_000_000,
    draining: bool = False,
    load: float = 0.0,
) -> NodeInfo:
    return NodeInfo(
        id=node_id,
        address=f"{node_id}.internal:9000",
        capacity=capacity,
        started_at=1_700_000_000_000,
        heartbeat_at=heartbeat_at,
        draining=draining,
        load=load,
    )
