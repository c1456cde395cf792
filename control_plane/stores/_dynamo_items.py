"""How the DynamoDB control store writes each model as an item, and reads it back.

Attribute values are written in DynamoDB's typed JSON (``{"S": ...}``, ``{"N": ...}``) by hand:
the few types used here do not need boto3's serializer, and ints stay ints on the way back.
Items written before depth existed lack ``depth`` (subscriptions) and ``max_depth`` (tenants);
they read as the defaults of control_plane.depth. A tenant written before ``max_streams`` existed
reads as :data:`~control_plane.models.DEFAULT_MAX_STREAMS`.
"""

from __future__ import annotations

import json
from typing import Any

from control_plane.depth import DEFAULT_DEPTH, DEFAULT_MAX_DEPTH
from control_plane.models import DEFAULT_MAX_STREAMS, ApiKey, AuditEvent, NodeInfo, Subscription, Tenant
from control_plane.stores._common import name_key
from control_plane.stores.base import LEGACY_SCOPE

Item = dict[str, Any]


def str_attr(value: str) -> dict[str, str]:
    return {"S": value}


def num_attr(value: float) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def bool_attr(value: bool) -> dict[str, bool]:
    return {"BOOL": value}


def primary_key(pk: str, sk: str) -> Item:
    return {"pk": str_attr(pk), "sk": str_attr(sk)}


def optional_int(item: Item, name: str) -> int | None:
    return int(item[name]["N"]) if name in item else None


def int_or(item: Item, name: str, default: int) -> int:
    """A number attribute, or ``default`` when the item predates it."""
    value = optional_int(item, name)
    return default if value is None else value


def time_key(ms: int) -> str:
    """A sort-key prefix that orders by time."""
    return f"{ms:015d}"


def tenant_item(tenant: Tenant) -> Item:
    return {
        **primary_key(f"TENANT#{tenant.id}", "TENANT"),
        "gsi1pk": str_attr("TENANTS"),
        "gsi1sk": str_attr(f"{time_key(tenant.created_at)}#{tenant.id}"),
        "id": str_attr(tenant.id),
        "market_count": num_attr(0),
        **tenant_fields(tenant),
    }


def name_item_key(key: str) -> Item:
    return primary_key(f"TENANTNAME#{key}", "NAME")


def name_item(key: str, tenant_id: str) -> Item:
    """The item that claims a tenant name (case-folded ``key``) for ``tenant_id``."""
    return {**name_item_key(key), "tenant_id": str_attr(tenant_id)}


def tenant_fields(tenant: Tenant) -> Item:
    """The attributes an update may overwrite (never the key, the index or ``market_count``)."""
    return {
        "name": str_attr(tenant.name),
        "name_key": str_attr(name_key(tenant.name)),
        "max_markets": num_attr(tenant.max_markets),
        "max_replicas": num_attr(tenant.max_replicas),
        "max_depth": num_attr(tenant.max_depth),
        "max_streams": num_attr(tenant.max_streams),
        "rate_limit_rps": num_attr(float(tenant.rate_limit_rps)),
        "burst": num_attr(tenant.burst),
        "disabled": bool_attr(tenant.disabled),
        "created_at": num_attr(tenant.created_at),
    }


def tenant_from(item: Item) -> Tenant:
    return Tenant(
        id=item["id"]["S"],
        name=item["name"]["S"],
        max_markets=int(item["max_markets"]["N"]),
        max_replicas=int(item["max_replicas"]["N"]),
        rate_limit_rps=float(item["rate_limit_rps"]["N"]),
        burst=int(item["burst"]["N"]),
        disabled=bool(item["disabled"]["BOOL"]),
        created_at=int(item["created_at"]["N"]),
        max_depth=int_or(item, "max_depth", DEFAULT_MAX_DEPTH),
        max_streams=int_or(item, "max_streams", DEFAULT_MAX_STREAMS),
    )


def key_item(key: ApiKey) -> Item:
    item: Item = {
        **primary_key(f"KEY#{key.id}", "KEY"),
        "gsi1pk": str_attr(f"TENANTKEYS#{key.tenant_id}"),
        "gsi1sk": str_attr(f"{time_key(key.created_at)}#{key.id}"),
        "id": str_attr(key.id),
        "tenant_id": str_attr(key.tenant_id),
        "prefix": str_attr(key.prefix),
        "last4": str_attr(key.last4),
        "key_hash": str_attr(key.key_hash),
        "created_at": num_attr(key.created_at),
    }
    for name, value in (
        ("last_used_at", key.last_used_at),
        ("key_expires_at", key.expires_at),
        ("revoked_at", key.revoked_at),
    ):
        if value is not None:
            item[name] = num_attr(value)
    if key.parent_id is not None:
        item["parent_id"] = str_attr(key.parent_id)
    return item


def api_key_from(item: Item) -> ApiKey:
    return ApiKey(
        id=item["id"]["S"],
        tenant_id=item["tenant_id"]["S"],
        prefix=item["prefix"]["S"],
        last4=item["last4"]["S"],
        key_hash=item["key_hash"]["S"],
        created_at=int(item["created_at"]["N"]),
        last_used_at=optional_int(item, "last_used_at"),
        expires_at=optional_int(item, "key_expires_at"),
        revoked_at=optional_int(item, "revoked_at"),
        parent_id=item["parent_id"]["S"] if "parent_id" in item else None,
    )


def subscription_from(item: Item) -> Subscription:
    return Subscription(
        tenant_id=item["tenant_id"]["S"],
        exchange=item["exchange"]["S"],
        market=item["market"]["S"],
        replicas=int(item["replicas"]["N"]),
        created_at=int(item["created_at"]["N"]),
        depth=int_or(item, "depth", DEFAULT_DEPTH),
    )


def node_from(item: Item) -> NodeInfo:
    return NodeInfo(
        id=item["id"]["S"],
        address=item["address"]["S"],
        capacity=int(item["capacity"]["N"]),
        started_at=int(item["started_at"]["N"]),
        heartbeat_at=int(item["heartbeat_at"]["N"]),
        draining=bool(item["draining"]["BOOL"]),
        load=float(item["load"]["N"]),
    )


def audit_from(item: Item) -> AuditEvent:
    return AuditEvent(
        at=int(item["at"]["N"]),
        actor=item["actor"]["S"],
        action=item["action"]["S"],
        target=item["target"]["S"],
        detail=json.loads(item["detail"]["S"]),
        scope=item["scope"]["S"] if "scope" in item else LEGACY_SCOPE,
        id=item["sk"]["S"],
    )
