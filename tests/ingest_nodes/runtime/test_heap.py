"""A node keeps its heap frozen (``ladder_process.heap``): what it retires must not need the collector.

A frozen object that later becomes part of an unreachable cycle is never reclaimed, so every replica
a node stops, every lane a re-snapshot replaces and every book a resync reloads must be freed by
reference counting alone. The test runs a real node against the fake venue, freezes its heap once
the books are synced, makes it retire all of those, and then asks the collector what of the frozen
heap it would have had to reclaim.
"""

from __future__ import annotations

import gc
from collections import Counter

import aiohttp
import redis.asyncio as redis

from control_plane.models import ReplicaAssignment
from control_plane.stores.redis import RedisControlStore
from fake_venue import FakeVenue
from tests.fake_venue.conftest import small_config
from tests.heap import cyclic_garbage_of
from tests.ingest_nodes.runtime.harness import running_node, spot_node_settings
from tests.waiting import wait_until

NODE = "heap-node"
OURS = ("ingest_nodes.", "book_store.")


async def test_stopped_replicas_replaced_lanes_and_resyncs_leave_no_cyclic_garbage(
    redis_client: redis.Redis, clean_redis_url: str
) -> None:
    venue = FakeVenue(small_config(rate=20.0))
    await venue.start()
    settings = spot_node_settings(
        venue,
        clean_redis_url,
        NODE,
        heartbeat_ms=2000,
        resnapshot_interval_s=1.0,  # every synced book gets re-snapshots: lanes are replaced
    )
    names = list(venue.spot.markets.specs)[:4]
    assigned = [ReplicaAssignment("binance.com", name, r, NODE) for name in names for r in (1, 2)]
    control = RedisControlStore(redis_client)
    await control.replace_assignments(NODE, assigned)
    try:
        async with aiohttp.ClientSession() as session, running_node(settings, redis_client, session) as node:
            try:
                await wait_until(
                    lambda: (
                        len(node.replicas) == len(assigned)
                        and all(r.engine.synced for r in node.replicas.values())
                    ),
                    15,
                    "every replica synced",
                )
                gc.collect()
                frozen = {id(o) for o in gc.get_objects()}
                gc.freeze()
                before = {key: r.stats.resnapshots for key, r in node.replicas.items()}
                body = {"action": "gap", "venue": "spot", "symbol": names[0]}
                async with session.post(f"{venue.url}/_fake/control", json=body) as r:
                    assert r.status == 200
                await wait_until(
                    lambda: (
                        sum(r.stats.restarts for r in node.replicas.values()) > 0
                        and sum(r.stats.resnapshots for r in node.replicas.values()) > sum(before.values())
                    ),
                    15,
                    "a resync and a re-snapshot",
                )
                await control.replace_assignments(NODE, assigned[4:])  # two books leave the node
                await wait_until(lambda: len(node.replicas) == len(assigned) - 4, 15, "replicas stopped")
                assert cyclic_garbage_of(frozen, OURS) == Counter()
            finally:
                gc.unfreeze()
    finally:
        await venue.stop()
