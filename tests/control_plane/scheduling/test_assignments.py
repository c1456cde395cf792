"""The ingest node's assignment client against both stores, and its change notifications."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator

import pytest

from control_plane.errors import InvalidRequestError, NotFoundError
from control_plane.models import ReplicaAssignment
from control_plane.scheduling.assignments import AssignmentClient
from control_plane.stores._common import replica_id
from control_plane.stores.base import ControlStore
from control_plane.stores.dynamodb import DynamoControlStore
from control_plane.stores.redis import RedisControlStore
from tests.stores import TestStore

BTC_1 = ReplicaAssignment("binance.com", "BTCUSDT", 1, "node-1")
ETH_2 = ReplicaAssignment("binance.com", "ETHUSDT", 2, "node-1")


async def test_register_heartbeat_drain_deregister(store: ControlStore) -> None:
    client = AssignmentClient(store)
    await client.register("node-1", "10.0.0.7:9000", capacity=40)
    await client.heartbeat("node-1", load=120)
    await client.set_draining("node-1")

    [node] = await store.list_nodes()
    assert (node.id, node.address, node.capacity, node.load, node.draining) == (
        "node-1",
        "10.0.0.7:9000",
        40,
        120.0,
        True,
    )
    await store.replace_assignments("node-1", [BTC_1])
    assert await client.assignments("node-1") == [BTC_1]

    await client.deregister("node-1")
    assert await store.list_nodes() == []
    assert await client.assignments("node-1") == []


async def test_a_forgotten_node_registers_again_on_its_next_heartbeat(store: ControlStore) -> None:
    client = AssignmentClient(store)
    await client.register("node-1", "", capacity=5)
    await client.set_draining("node-1")
    await store.remove_node("node-1")  # what the control loop does to a long-silent node

    await client.heartbeat("node-1", load=3)
    [node] = await store.list_nodes()
    assert (node.capacity, node.load, node.draining) == (5, 3.0, True)

    with pytest.raises(NotFoundError):
        await AssignmentClient(store).heartbeat("node-2")


async def test_node_ids_and_capacity_are_checked(store: ControlStore) -> None:
    client = AssignmentClient(store)
    for node_id in ("", "a{b}", "a|b", "x" * 129):
        with pytest.raises(InvalidRequestError):
            await client.register(node_id, "", capacity=1)
    with pytest.raises(InvalidRequestError):
        await client.register("node-1", "", capacity=0)


async def _next(changes: AsyncIterator[list[ReplicaAssignment]], within_s: float) -> list[ReplicaAssignment]:
    return await asyncio.wait_for(anext(changes), within_s)


async def test_redis_watch_is_notified_at_once(
    test_store: TestStore, valkey_url: str, redis_store: RedisControlStore
) -> None:
    # A separate connection pool, as an ingest node would have; resync so slow it cannot be the cause.
    node_client = await test_store.client(valkey_url)
    watcher = AssignmentClient(node_client, prefix=redis_store.prefix, resync_s=60)
    changes = watcher.watch("node-1")
    assert isinstance(changes, AsyncGenerator)  # so the test can aclose() it
    try:
        assert await _next(changes, 2) == []
        started = time.monotonic()
        await redis_store.replace_assignments("node-1", [BTC_1, ETH_2])
        assert await _next(changes, 2) == [BTC_1, ETH_2]
        assert time.monotonic() - started < 1.0
        await redis_store.replace_assignments("node-1", [ETH_2])
        assert await _next(changes, 2) == [ETH_2]
    finally:
        await changes.aclose()
        await node_client.aclose()


async def test_redis_watch_reads_a_set_again_when_its_generation_moved_without_a_notification(
    test_store: TestStore, valkey_url: str, redis_store: RedisControlStore
) -> None:
    node_client = await test_store.client(valkey_url)
    watcher = AssignmentClient(node_client, prefix=redis_store.prefix, resync_s=0.05, reread_s=1.5)
    changes = watcher.watch("node-1")
    assert isinstance(changes, AsyncGenerator)  # so the test can aclose() it
    key = redis_store._k("assign", "node-1")
    try:
        assert await _next(changes, 2) == []
        # A write whose notification was lost and that left the generation alone: not read again
        # before ``reread_s`` has passed, then read anyway.
        await node_client.sadd(key, replica_id(BTC_1))
        unseen = asyncio.ensure_future(anext(changes))
        await asyncio.sleep(0.5)
        assert not unseen.done()
        assert await asyncio.wait_for(unseen, 3) == [BTC_1]
        # A write whose notification was lost but that renewed the generation: read at once.
        started = time.monotonic()
        await node_client.sadd(key, replica_id(ETH_2))
        await node_client.set(redis_store._k("generation", "assignments"), "moved")
        assert await _next(changes, 2) == [BTC_1, ETH_2]
        assert time.monotonic() - started < 1.0
    finally:
        await changes.aclose()
        await node_client.aclose()


async def test_watch_polls_a_store_without_notifications(dynamodb_store: DynamoControlStore) -> None:
    watcher = AssignmentClient(dynamodb_store, poll_s=0.05)
    changes = watcher.watch("node-1")
    assert isinstance(changes, AsyncGenerator)  # so the test can aclose() it
    try:
        assert await _next(changes, 2) == []
        await dynamodb_store.replace_assignments("node-1", [BTC_1])
        assert await _next(changes, 2) == [BTC_1]
    finally:
        await changes.aclose()


async def test_watch_yields_a_depth_change_of_the_same_replica(store: ControlStore) -> None:
    watcher = AssignmentClient(store, poll_s=0.05)
    await store.replace_assignments("node-1", [BTC_1])
    changes = watcher.watch("node-1")
    assert isinstance(changes, AsyncGenerator)  # so the test can aclose() it
    try:
        assert await _next(changes, 2) == [BTC_1]
        deeper = dataclasses.replace(BTC_1, depth=1000)
        await store.replace_assignments("node-1", [deeper])
        assert await _next(changes, 2) == [deeper]
    finally:
        await changes.aclose()


async def test_client_built_from_a_redis_connection_uses_the_redis_store(
    test_store: TestStore, valkey_url: str
) -> None:
    connection = await test_store.client(valkey_url)
    prefix = f"test-{uuid.uuid4().hex}:"
    try:
        client = AssignmentClient(connection, prefix=prefix)
        await client.register("node-from-client", "", capacity=1)
        store = RedisControlStore(connection, prefix=prefix)
        assert [n.id for n in await store.list_nodes()] == ["node-from-client"]
        await client.deregister("node-from-client")
    finally:
        await connection.aclose()
