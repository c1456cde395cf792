"""The JSON shapes of docs/api.md, and what the models hide."""

from __future__ import annotations

from book_store.schema import BookKey
from control_plane.models import (
    OPERATOR,
    ApiKey,
    AuditEvent,
    NodeInfo,
    Principal,
    ReplicaAssignment,
    Subscription,
    Tenant,
)


def test_tenant_json_has_the_documented_fields() -> None:
    tenant = Tenant("tnt_1", "Acme", 10, 2, 5.5, 20, False, 1_000)
    assert tenant.to_json() == {
        "id": "tnt_1",
        "name": "Acme",
        "max_markets": 10,
        "max_replicas": 2,
        "max_depth": 1000,
        "max_streams": 100,
        "rate_limit_rps": 5.5,
        "burst": 20,
        "disabled": False,
        "created_at": 1_000,
    }


def test_key_json_and_repr_leave_out_the_hash() -> None:
    key = ApiKey("key_1", "tnt_1", "ldr_AbCd", "wxyz", "f" * 64, 1_000, None, 9_000, None)
    assert key.to_json() == {
        "id": "key_1",
        "prefix": "ldr_AbCd",
        "last4": "wxyz",
        "created_at": 1_000,
        "last_used_at": None,
        "expires_at": 9_000,
        "revoked_at": None,
        "parent_id": None,
    }
    assert "f" * 64 not in repr(key)


def test_key_usability_follows_expiry_and_revocation() -> None:
    key = ApiKey("key_1", "tnt_1", "ldr_AbCd", "wxyz", "0" * 64, 1_000, None, 9_000, 5_000)
    assert key.usable_at(4_999)
    assert not key.usable_at(5_000)
    assert not ApiKey("key_1", "tnt_1", "p", "l", "h", 1, None, 9_000, None).usable_at(9_000)


def test_subscription_node_assignment_and_audit_shapes() -> None:
    assert Subscription("tnt_1", "alpaca-crypto", "BTC/USD", 2, 7).to_json() == {
        "exchange": "alpaca-crypto",
        "market": "BTC/USD",
        "replicas": 2,
        "depth": 100,
        "created_at": 7,
    }
    assert Subscription("tnt_1", "binance.com", "BTCUSDT", 1, 7, depth=5000).to_json()["depth"] == 5000
    node = NodeInfo("n1", "10.0.0.1:9000", 100, 1, 2, True, 3.5)
    assert node.to_json() == {
        "id": "n1",
        "address": "10.0.0.1:9000",
        "capacity": 100,
        "started_at": 1,
        "heartbeat_at": 2,
        "draining": True,
        "load": 3.5,
    }
    replica = ReplicaAssignment("binance.com", "BTCUSDT", 3, "n1")
    assert replica.to_json() == {
        "exchange": "binance.com",
        "market": "BTCUSDT",
        "replica": 3,
        "node_id": "n1",
    }
    assert replica.book == BookKey("binance.com", "BTCUSDT")
    event = AuditEvent(5, "operator", "tenant.create", "tnt_1", {"name": "Acme"}, id="17")
    assert event.to_json() == {
        "id": "17",
        "at": 5,
        "actor": "operator",
        "scope": "operator",
        "action": "tenant.create",
        "target": "tnt_1",
        "detail": {"name": "Acme"},
    }


def test_principal_actor_names() -> None:
    assert OPERATOR.actor == "operator"
    assert Principal("tnt_1", "key_9", False).actor == "key:key_9"
    assert Principal("tnt_1", None, False).actor == "tenant:tnt_1"


def test_assignments_order_by_book_replica_and_node_before_depth() -> None:
    deep = ReplicaAssignment("binance.com", "BTCUSDT", 1, "n1", 5000)
    other_node = ReplicaAssignment("binance.com", "BTCUSDT", 1, "n2", 10)
    next_index = ReplicaAssignment("binance.com", "BTCUSDT", 2, "n1", 1)
    assert sorted([next_index, other_node, deep]) == [deep, other_node, next_index]
    assert ReplicaAssignment("binance.com", "BTCUSDT", 1, "n1").depth == 100
