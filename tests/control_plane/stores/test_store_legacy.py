"""Records written before depth existed (and audit events before scopes), as each store held them,
read back with the defaults."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import boto3
import pytest

from book_store.schema import BookKey
from control_plane.depth import DEFAULT_DEPTH, DEFAULT_MAX_DEPTH
from control_plane.models import AuditEvent, BookWish, ReplicaAssignment, Subscription
from control_plane.stores import redis as redis_module
from control_plane.stores.dynamodb import DynamoControlStore, create_table
from control_plane.stores.redis import HASH_TAG, RedisControlStore
from tests.control_plane.helpers import make_tenant

BTC = BookKey("binance.com", "BTCUSDT")


async def test_redis_reads_tenants_and_subscriptions_without_depth(redis_store: RedisControlStore) -> None:
    tenant = make_tenant(max_replicas=3, max_depth=700)
    await redis_store.create_tenant(tenant)
    base = f"{redis_store.prefix}{HASH_TAG}:"
    client = redis_store.client
    await client.hdel(f"{base}tenant:{tenant.id}", "max_depth")
    await client.hset(f"{base}subs:{tenant.id}", "binance.com|BTCUSDT", "2:1000")
    await client.hset(f"{base}book:binance.com|BTCUSDT", tenant.id, "2")
    await client.sadd(f"{base}books", "binance.com|BTCUSDT")

    stored = await redis_store.get_tenant(tenant.id)
    assert stored is not None and stored.max_depth == DEFAULT_MAX_DEPTH
    legacy = Subscription(tenant.id, BTC.exchange, BTC.market, 2, 1000, DEFAULT_DEPTH)
    assert await redis_store.list_subscriptions(tenant.id) == [legacy]
    assert await redis_store.desired_books() == {BTC: BookWish(2, DEFAULT_DEPTH)}

    # Updating a legacy subscription keeps its created_at and writes the new shape.
    updated, created = await redis_store.put_subscription(
        Subscription(tenant.id, BTC.exchange, BTC.market, 1, 5000, 300)
    )
    assert not created and updated == Subscription(tenant.id, BTC.exchange, BTC.market, 1, 1000, 300)
    assert await redis_store.list_subscriptions(tenant.id) == [updated]
    assert await redis_store.desired_books() == {BTC: BookWish(1, 300)}


async def test_redis_moves_the_audit_list_of_before_scopes_into_the_scope_legacy(
    redis_store: RedisControlStore,
) -> None:
    base = f"{redis_store.prefix}{HASH_TAG}:"
    old = [AuditEvent(1_000 + i, "operator", "tenant.create", f"tnt_{i}") for i in range(3)]
    for event in old:  # as the list was written: newest first
        fields = {k: v for k, v in event.to_json().items() if k not in ("id", "scope")}
        await redis_store.client.lpush(f"{base}audit", json.dumps(fields))
    await redis_store.append_audit(AuditEvent(2_000, "operator", "tenant.create", "tnt_new"))
    events = await redis_store.list_audit(10)
    assert [(e.target, e.scope) for e in events] == [
        ("tnt_new", "operator"), ("tnt_2", "legacy"), ("tnt_1", "legacy"), ("tnt_0", "legacy")
    ]  # fmt: skip
    assert [e.target for e in await redis_store.list_audit(10, scope="legacy")] == ["tnt_2", "tnt_1", "tnt_0"]
    assert not await redis_store.client.exists(f"{base}audit")


async def test_redis_keeps_each_audit_scope_apart(
    redis_store: RedisControlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tenant that fills its own log drops its own oldest events, never the operator's."""
    monkeypatch.setattr(redis_module, "AUDIT_KEEP", 5)
    await redis_store.append_audit(AuditEvent(1, "operator", "tenant.create", "tnt_a"))
    for i in range(20):
        await redis_store.append_audit(AuditEvent(10 + i, "key:k1", "x.do", f"t{i}", scope="tnt_a"))
    assert [e.target for e in await redis_store.list_audit(10)] == [
        "t19",
        "t18",
        "t17",
        "t16",
        "t15",
        "tnt_a",
    ]
    assert [e.target for e in await redis_store.list_audit(10, scope="operator")] == ["tnt_a"]


async def test_redis_reads_assignments_without_depth(redis_store: RedisControlStore) -> None:
    base = f"{redis_store.prefix}{HASH_TAG}:"
    await redis_store.client.sadd(f"{base}assign:node-1", "binance.com|BTCUSDT|3", "alpaca-crypto|BTC/USD|1")
    await redis_store.client.sadd(f"{base}assigned", "node-1")

    legacy = [
        ReplicaAssignment("alpaca-crypto", "BTC/USD", 1, "node-1", DEFAULT_DEPTH),
        ReplicaAssignment("binance.com", "BTCUSDT", 3, "node-1", DEFAULT_DEPTH),
    ]
    assert await redis_store.get_assignments("node-1") == legacy
    assert await redis_store.list_assignments() == legacy


class _Table:
    """A control table of its own, and a boto3 client to write items the way older code did."""

    def __init__(self, name: str, endpoint_url: str) -> None:
        self.name = name
        self.store = DynamoControlStore(name, endpoint_url=endpoint_url)
        self._client: Any = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")

    async def call(self, operation: str, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self._client, operation), TableName=self.name, **kwargs)

    async def forget(self, pk: str, sk: str, attribute: str) -> None:
        """Remove one attribute from an item, as if it had been written before the attribute existed."""
        await self.call(
            "update_item",
            Key={"pk": {"S": pk}, "sk": {"S": sk}},
            UpdateExpression="REMOVE #a",
            ExpressionAttributeNames={"#a": attribute},
        )

    async def close(self) -> None:
        await self.store.close()
        await asyncio.to_thread(self._client.close)


@pytest.fixture
async def table(dynamodb_url: str) -> AsyncIterator[_Table]:
    name = f"control-{uuid.uuid4().hex}"
    await create_table(name, endpoint_url=dynamodb_url)
    table = _Table(name, dynamodb_url)
    yield table
    await table.close()


async def test_dynamodb_reads_tenants_and_subscriptions_without_depth(table: _Table) -> None:
    store = table.store
    tenant = make_tenant(max_replicas=3, max_depth=700)
    await store.create_tenant(tenant)
    await store.put_subscription(Subscription(tenant.id, BTC.exchange, BTC.market, 2, 1000, 400))
    await table.forget(f"TENANT#{tenant.id}", "TENANT", "max_depth")
    await table.forget(f"TENANT#{tenant.id}", "SUB#binance.com|BTCUSDT", "depth")

    stored = await store.get_tenant(tenant.id)
    assert stored is not None and stored.max_depth == DEFAULT_MAX_DEPTH
    assert [t.max_depth for t in await store.list_tenants()] == [DEFAULT_MAX_DEPTH]
    legacy = Subscription(tenant.id, BTC.exchange, BTC.market, 2, 1000, DEFAULT_DEPTH)
    assert await store.list_subscriptions(tenant.id) == [legacy]
    assert await store.desired_books() == {BTC: BookWish(2, DEFAULT_DEPTH)}

    updated, created = await store.put_subscription(
        Subscription(tenant.id, BTC.exchange, BTC.market, 1, 5000, 300)
    )
    assert not created and updated == Subscription(tenant.id, BTC.exchange, BTC.market, 1, 1000, 300)


async def test_dynamodb_reads_assignments_without_depth(table: _Table) -> None:
    replicas = [{"S": "binance.com|BTCUSDT|3"}, {"S": "alpaca-crypto|BTC/USD|1"}]
    item = {
        "pk": {"S": "NODE#node-1"},
        "sk": {"S": "ASSIGN"},
        "gsi1pk": {"S": "ASSIGNMENTS"},
        "gsi1sk": {"S": "node-1"},
        "node_id": {"S": "node-1"},
        "replicas": {"L": replicas},
    }
    await table.call("put_item", Item=item)

    legacy = [
        ReplicaAssignment("alpaca-crypto", "BTC/USD", 1, "node-1", DEFAULT_DEPTH),
        ReplicaAssignment("binance.com", "BTCUSDT", 3, "node-1", DEFAULT_DEPTH),
    ]
    assert await table.store.get_assignments("node-1") == legacy
    assert await table.store.list_assignments() == legacy
