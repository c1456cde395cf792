"""The control loop against real Valkey: placement, failover, the lease, and a clean stop."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
import redis.asyncio as redis

from book_store.codec import BookStatus, SnapshotMeta, encode_snapshot
from book_store.liveness import NodeHeartbeat, encode_heartbeat
from book_store.schema import NODES_ALIVE, BookKey, ReplicaId
from control_plane.models import Subscription, Tenant
from control_plane.scheduling import runtime
from control_plane.scheduling.assignments import AssignmentClient
from control_plane.scheduling.replica_status import BookStoreReplicaStatus
from control_plane.scheduling.runtime import (
    FORGET_AFTER_TIMEOUTS,
    REREAD_AFTER_MS,
    SCHEDULER_LEASE,
    ControlLoop,
    run_control,
)
from control_plane.scheduling.scheduler import Plan, plan_assignments
from control_plane.settings import ControlSettings
from control_plane.stores.base import ControlStore
from control_plane.stores.dynamodb import DynamoControlStore
from control_plane.stores.redis import HASH_TAG, RedisControlStore
from ladder_process.errors import StoreError
from tests.control_plane.helpers import make_tenant
from tests.stores import TestStore, pause, unpause

BTC = BookKey("binance.com", "BTCUSDT")
ETH = BookKey("binance.com", "ETHUSDT")


class EverythingSynced:
    """Replica status as if every assigned replica had synced at once."""

    async def synced_replicas(self, replicas: Collection[ReplicaId]) -> set[ReplicaId]:
        return set(replicas)


@dataclass
class ManualClock:
    now: int = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


async def _subscribe(store: ControlStore, replicas: int, *books: BookKey, max_replicas: int = 3) -> Tenant:
    tenant = make_tenant(max_replicas=max_replicas)
    await store.create_tenant(tenant)
    for book in books:
        await store.put_subscription(Subscription(tenant.id, book.exchange, book.market, replicas, 1))
    return tenant


async def test_step_places_replicas_and_moves_them_off_a_dead_node(redis_store: RedisControlStore) -> None:
    clock = ManualClock()
    nodes = AssignmentClient(redis_store, clock=clock)
    await nodes.register("node-1", "", capacity=10)
    await nodes.register("node-2", "", capacity=10)
    await _subscribe(redis_store, 1, BTC, ETH)
    loop = ControlLoop(redis_store, EverythingSynced(), node_timeout_ms=3000, clock=clock)

    await loop.step()
    first = {a.book: a.node_id for a in await redis_store.list_assignments()}
    assert sorted(first.values()) == ["node-1", "node-2"]

    clock.now += 3001
    await nodes.heartbeat("node-2")  # node-1 has gone quiet
    plan = await loop.step()
    assert plan is not None and "node-1" in plan.changed_nodes()
    assert await redis_store.get_assignments("node-1") == []
    assert {a.node_id for a in await redis_store.list_assignments()} == {"node-2"}

    clock.now += FORGET_AFTER_TIMEOUTS * 3000
    await nodes.heartbeat("node-2")
    await loop.step()
    assert [n.id for n in await redis_store.list_nodes()] == ["node-2"]


async def test_a_loop_back_from_a_store_outage_moves_nothing_for_one_timeout(
    test_store: TestStore, valkey_url: str, redis_store: RedisControlStore
) -> None:
    """Heartbeats stop with the store: right after it returns, an old heartbeat proves nothing."""
    clock = ManualClock()
    nodes = AssignmentClient(redis_store, clock=clock)
    for node_id in ("node-1", "node-2"):
        await nodes.register(node_id, "", capacity=10)
    await _subscribe(redis_store, 1, BTC)
    impatient = await test_store.client(valkey_url, socket_timeout=0.2)
    loop = ControlLoop(RedisControlStore(impatient, redis_store.prefix), EverythingSynced(), clock=clock)
    await loop.step()
    placed = await redis_store.list_assignments()
    [holder] = {a.node_id for a in placed}
    other = "node-2" if holder == "node-1" else "node-1"

    admin = redis_store.client
    await pause(admin, 10_000, all=False)  # the store stops answering writes
    try:
        clock.now += 10_000
        with pytest.raises(StoreError):
            await loop.step()
    finally:
        await unpause(admin)
    clock.now += 2_000  # back; the holder's heartbeat is 12 s old, as it had no store to send one to
    await nodes.heartbeat(other)
    await loop.step()
    assert await redis_store.list_assignments() == placed
    assert len(await redis_store.list_nodes()) == 2
    clock.now += 3_001  # a whole timeout since the loop regained the store, and the holder is silent
    await nodes.heartbeat(other)
    await loop.step()
    assert {a.node_id for a in await redis_store.list_assignments()} == {other}
    await impatient.aclose()


async def test_a_new_loop_gives_stale_heartbeats_one_timeout(redis_store: RedisControlStore) -> None:
    clock = ManualClock()
    nodes = AssignmentClient(redis_store, clock=clock)
    for node_id in ("node-1", "node-2"):
        await nodes.register(node_id, "", capacity=10)
    await _subscribe(redis_store, 1, BTC)
    first = ControlLoop(redis_store, EverythingSynced(), clock=clock)
    await first.step()
    await first.release()  # as a stopping control process does
    placed = await redis_store.list_assignments()
    [holder] = {a.node_id for a in placed}
    other = "node-2" if holder == "node-1" else "node-1"

    clock.now += 60_000  # the control process restarts a minute later, before any heartbeat
    restarted = ControlLoop(redis_store, EverythingSynced(), clock=clock)
    await restarted.step()
    assert await redis_store.list_assignments() == placed
    await nodes.heartbeat(other)
    clock.now += 3_001
    await nodes.heartbeat(other)
    await restarted.step()
    assert {a.node_id for a in await redis_store.list_assignments()} == {other}


async def test_step_keeps_each_book_as_deep_as_its_deepest_subscriber(redis_store: RedisControlStore) -> None:
    nodes = AssignmentClient(redis_store)
    await nodes.register("node-1", "", capacity=10)
    shallow, deep = make_tenant(), make_tenant(max_depth=5000)
    for tenant in (shallow, deep):
        await redis_store.create_tenant(tenant)
    await redis_store.put_subscription(Subscription(shallow.id, BTC.exchange, BTC.market, 1, 1))
    loop = ControlLoop(redis_store, EverythingSynced())

    await loop.step()
    [first] = await redis_store.get_assignments("node-1")
    assert first.depth == 100

    await redis_store.put_subscription(Subscription(deep.id, BTC.exchange, BTC.market, 1, 1, depth=5000))
    plan = await loop.step()
    assert plan is not None and plan.resized and not (plan.added or plan.removed)
    assert await redis_store.get_assignments("node-1") == [dataclasses.replace(first, depth=5000)]

    await redis_store.delete_subscription(deep.id, BTC)
    await loop.step()
    assert await redis_store.get_assignments("node-1") == [first]


class RecordedStatus:
    """Replica status with a set of synced replicas the test decides, recording what was asked."""

    def __init__(self) -> None:
        self.synced: set[ReplicaId] = set()
        self.asked: list[set[ReplicaId]] = []

    async def synced_replicas(self, replicas: Collection[ReplicaId]) -> set[ReplicaId]:
        self.asked.append(set(replicas))
        return self.synced & set(replicas)


async def test_a_settled_fleet_reads_no_snapshot_and_a_move_reads_only_the_books_it_moves(
    redis_store: RedisControlStore,
) -> None:
    nodes = AssignmentClient(redis_store)
    await nodes.register("node-1", "", capacity=10)
    await nodes.register("node-2", "", capacity=10)
    await _subscribe(redis_store, 1, BTC, ETH)
    status = RecordedStatus()
    loop = ControlLoop(redis_store, status)

    await loop.step()
    before = {a.book: a for a in await redis_store.list_assignments()}
    status.synced = {(book, a.replica) for book, a in before.items()}
    await loop.step()
    assert status.asked == []  # every book has its replica where it should: nothing to read

    await nodes.set_draining(before[BTC].node_id)
    await loop.step()
    assert status.asked == [{(BTC, before[BTC].replica)}]  # only the book being moved
    kept = await redis_store.list_assignments()
    assert before[BTC] in kept and len(kept) == 3  # make-before-break: the old one stays ...
    [new] = [a for a in kept if a.book == BTC and a != before[BTC]]

    await loop.step()
    assert before[BTC] in await redis_store.list_assignments()  # ... while the new one is not synced
    status.synced.add((BTC, new.replica))
    await loop.step()
    assert await redis_store.list_assignments() == sorted([new, before[ETH]])  # the old one went


async def test_only_the_lease_holder_plans(redis_store: RedisControlStore) -> None:
    first = ControlLoop(redis_store, EverythingSynced())
    second = ControlLoop(redis_store, EverythingSynced())
    assert await first.step() is not None
    assert await second.step() is None
    await first.release()
    assert await second.step() is not None


async def test_run_control_assigns_and_stops_cleanly_on_cancel(
    test_store: TestStore, valkey_url: str
) -> None:
    prefix = f"test-{uuid.uuid4().hex}:"
    settings = ControlSettings(redis_url=valkey_url, control_prefix=prefix, scheduler_interval_ms=50)
    client = await test_store.client(valkey_url)
    store = RedisControlStore(client, prefix=prefix)
    try:
        await AssignmentClient(store).register("node-1", "", capacity=10)
        await _subscribe(store, 1, BTC)
        task = asyncio.create_task(run_control(settings, EverythingSynced()))

        for _ in range(100):
            if await store.get_assignments("node-1"):
                break
            await asyncio.sleep(0.02)
        assert [a.book for a in await store.get_assignments("node-1")] == [BTC]

        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 2)
        # The lease was released: another control process may plan at once.
        assert await store.try_lease(SCHEDULER_LEASE, "successor", 0, 1000)
    finally:
        await client.aclose()


async def test_book_store_status_counts_only_fresh_synced_replicas(
    test_store: TestStore, valkey_url: str
) -> None:
    book = BookKey("binance.com", f"T{uuid.uuid4().hex[:12].upper()}")
    now = 1_700_000_000_000
    client = await test_store.client(valkey_url)

    def snapshot(replica: int, status: BookStatus, age_ms: int) -> bytes:
        meta = SnapshotMeta(7, now - age_ms, now - age_ms, now - age_ms, replica, status)
        return encode_snapshot(meta, [b'["1.0","2"]'], [b'["1.1","3"]'])

    key = BookKey(book.exchange, book.market).snapshots
    try:
        await client.hset(
            key,
            mapping={
                1: snapshot(1, BookStatus.SYNCED, 10),
                2: snapshot(2, BookStatus.RESYNCING, 10),
                3: snapshot(3, BookStatus.SYNCED, 5_000),
                4: snapshot(4, BookStatus.SYNCED, 10),
            },
        )
        status = BookStoreReplicaStatus(client, max_silence_ms=3000, clock=lambda: now)
        asked = {(book, 1), (book, 2), (book, 3), (BookKey("binance.com", "NOSUCHBOOK"), 1)}
        assert await status.synced_replicas(asked) == {(book, 1)}
    finally:
        await client.delete(key)
        await client.aclose()


async def test_book_store_status_counts_a_quiet_replica_its_node_vouches_for(
    redis_client: redis.Redis,
) -> None:
    now = 1_700_000_000_000
    meta = SnapshotMeta(7, now - 20_000, now - 20_000, now - 20_000, 1, BookStatus.SYNCED, node=5)
    await redis_client.hset(BTC.snapshots, "1", encode_snapshot(meta, [b'["1.0","2"]'], []))
    status = BookStoreReplicaStatus(redis_client, max_silence_ms=3000, clock=lambda: now)
    assert await status.synced_replicas({(BTC, 1)}) == set()  # quiet for 20 s, and no word from its node
    beat = NodeHeartbeat(node=5, time=now - 500, since=now - 60_000)
    await redis_client.hset(NODES_ALIVE, "node-5", encode_heartbeat("node-5", beat))
    assert await status.synced_replicas({(BTC, 1)}) == {(BTC, 1)}


_R = TypeVar("_R")


def _counted(
    counts: Counter[str], name: str, call: Callable[..., Awaitable[_R]]
) -> Callable[..., Awaitable[_R]]:
    async def counting(*args: Any, **kwargs: Any) -> _R:
        counts[name] += 1
        return await call(*args, **kwargs)

    return counting


def _count_reads_and_plans(store: ControlStore, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the store's two big reads and the plans made (the real ones run); before the loop
    is made, which takes the store's read methods."""
    counts: Counter[str] = Counter()
    for name in ("desired_books", "list_assignments"):
        monkeypatch.setattr(store, name, _counted(counts, name, getattr(store, name)))

    def planning(*args: Any, **kwargs: Any) -> Plan:
        counts["plans"] += 1
        return plan_assignments(*args, **kwargs)

    monkeypatch.setattr(runtime, "plan_assignments", planning)
    return counts


async def _settle(loop: ControlLoop, counts: Counter[str]) -> None:
    """Step until a round changes nothing; then a round must read and plan nothing."""
    for _ in range(5):
        plan = await loop.step()
        assert plan is not None
        if not plan.changed_nodes():
            break
    before = counts.copy()
    plan = await loop.step()
    assert plan is not None and not plan.changed_nodes()
    assert counts == before


async def test_a_settled_fleet_is_read_and_planned_again_only_when_something_changed(
    redis_store: RedisControlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = ManualClock()
    nodes = AssignmentClient(redis_store, clock=clock)
    for node_id in ("node-1", "node-2", "node-3"):
        await nodes.register(node_id, "", capacity=10)
    tenant = await _subscribe(redis_store, 2, BTC, ETH, max_replicas=1)
    counts = _count_reads_and_plans(redis_store, monkeypatch)
    loop = ControlLoop(redis_store, EverythingSynced(), clock=clock)
    await _settle(loop, counts)
    assert len(await redis_store.list_assignments()) == 2

    before = counts.copy()
    bnb = BookKey("binance.com", "BNBUSDT")
    await redis_store.put_subscription(Subscription(tenant.id, bnb.exchange, bnb.market, 1, 1))
    plan = await loop.step()  # a subscription changed: read the wishes again, not the assignments
    assert counts - before == Counter(desired_books=1, plans=1)
    assert plan is not None and {a.book for a in plan.added} == {bnb}
    await _settle(loop, counts)

    await redis_store.update_tenant(dataclasses.replace(tenant, max_replicas=2))
    plan = await loop.step()  # the tenant's cap rose: BTC and ETH get their second replica
    assert plan is not None and {a.book for a in plan.added} == {BTC, ETH}
    await _settle(loop, counts)

    before = counts.copy()
    await nodes.heartbeat("node-1", load=3.0)  # a node's load breaks ties: plan again
    plan = await loop.step()
    assert counts - before == Counter(plans=1)
    assert plan is not None and not plan.changed_nodes()
    await _settle(loop, counts)

    [drained, *_] = {a.node_id for a in await redis_store.list_assignments()}
    await nodes.set_draining(drained)
    plan = await loop.step()
    assert plan is not None and plan.added and all(a.node_id != drained for a in plan.added)
    await _settle(loop, counts)
    assert all(a.node_id != drained for a in await redis_store.list_assignments())

    clock.now += 3001
    [dead, *_] = {a.node_id for a in await redis_store.list_assignments()}
    for node_id in {"node-1", "node-2", "node-3"} - {dead}:
        await nodes.heartbeat(node_id, load=3.0 if node_id == "node-1" else 0.0)
    plan = await loop.step()  # nothing in the store changed, but a node's heartbeat is too old
    assert plan is not None and dead in plan.changed_nodes()
    assert await redis_store.get_assignments(dead) == []


async def test_a_write_that_moves_no_generation_is_seen_within_the_reread_time(
    redis_store: RedisControlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Such as a control store edited by hand, or by a process of a version before generations."""
    clock = ManualClock()
    nodes = AssignmentClient(redis_store, clock=clock)
    await nodes.register("node-1", "", capacity=10)
    await nodes.register("node-2", "", capacity=10)
    tenant = await _subscribe(redis_store, 1, BTC)
    counts = _count_reads_and_plans(redis_store, monkeypatch)
    loop = ControlLoop(redis_store, EverythingSynced(), clock=clock)
    await _settle(loop, counts)

    book = f"{redis_store.prefix}{HASH_TAG}:book:{BTC.exchange}|{BTC.market}"
    await redis_store.client.hset(book, tenant.id, "2:100")  # BTC's wish, behind the store's back
    clock.now += REREAD_AFTER_MS - 1
    for node_id in ("node-1", "node-2"):
        await nodes.heartbeat(node_id)
    await _settle(loop, counts)
    assert len(await redis_store.list_assignments()) == 1
    clock.now += 1
    plan = await loop.step()
    assert plan is not None and len(plan.assignments) == 2


async def test_a_store_without_generations_is_read_and_planned_every_round(
    dynamodb_store: DynamoControlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    nodes = AssignmentClient(dynamodb_store)
    await nodes.register("node-1", "", capacity=10)
    await _subscribe(dynamodb_store, 1, BTC)
    counts = _count_reads_and_plans(dynamodb_store, monkeypatch)
    loop = ControlLoop(dynamodb_store, EverythingSynced())
    for _ in range(3):
        await loop.step()
    assert counts == Counter(desired_books=3, list_assignments=3, plans=3)
