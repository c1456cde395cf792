"""What an ingest node's ``/readyz`` reports (``IngestNode.readiness``): registered with the control
store and not cut off from it, assignments read, venue connections up. A real node against the fake
venue and a real Valkey; its control store is reached through a proxy the test partitions."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import aiohttp
import pytest
import redis.asyncio as redis

from book_store.connect import opened, store_client
from control_plane.models import ReplicaAssignment
from control_plane.stores.redis import RedisControlStore
from fake_venue import FakeVenue
from ingest_nodes.runtime.node import IngestNode
from ladder_process.health import Check
from tests.e2e.tcp_proxy import CuttableProxy
from tests.fake_venue.conftest import small_config
from tests.ingest_nodes.runtime.harness import spot_node_settings
from tests.waiting import wait_until

pytestmark = pytest.mark.single_store(
    "partitions the control store through a proxy in front of one node (a cluster client connects "
    "to every primary past it)"
)

NODE = "readiness-node"


def checks_of(node: IngestNode) -> dict[str, Check]:
    return {check.name: check for check in node.readiness()}


def ready(node: IngestNode) -> bool:
    return all(check.ok for check in node.readiness())


async def test_a_node_is_ready_once_registered_with_assignments_read_and_its_venue_connections_up(
    redis_client: redis.Redis, clean_redis_url: str
) -> None:
    venue = FakeVenue(small_config())
    await venue.start()
    proxy = CuttableProxy("127.0.0.1", urlsplit(clean_redis_url).port or 0)
    proxy.partition()  # the control store does not answer when the node starts
    control = await opened(store_client(proxy.url(clean_redis_url)))
    settings = spot_node_settings(venue, clean_redis_url, NODE, heartbeat_ms=200, node_timeout_ms=2000,
                                  control_redis_url=proxy.url(clean_redis_url))  # fmt: skip
    names = list(venue.spot.markets.specs)[:2]
    assigned = [ReplicaAssignment("binance.com", name, r, NODE) for name in names for r in (1, 2)]
    await RedisControlStore(redis_client).replace_assignments(NODE, assigned)
    stop = asyncio.Event()
    try:
        async with aiohttp.ClientSession() as session:
            node = IngestNode(settings, redis_client, session, control_client=control)
            before = checks_of(node)
            assert before["registered"] == Check(
                "registered", False, "not registered with the control store yet"
            )
            assert before["assignments"] == Check("assignments", False, "assignments not read yet")
            assert before["venue:binance.com"].ok  # no books yet: nothing to connect

            task = asyncio.create_task(node.run(stop, drain=lambda: False))
            try:
                await wait_until(
                    lambda: "does not answer" in checks_of(node)["registered"].detail, 5, "a failed register"
                )
                assert not ready(node)

                proxy.heal()
                await wait_until(lambda: ready(node), 15, "registered, assignments read, connections up")
                now = checks_of(node)
                assert now["assignments"].detail == "4 replicas assigned"
                # two replicas of a book never share a socket: two connections for two books
                assert now["venue:binance.com"].detail == "2 of 2 connections up"

                proxy.partition()  # the control store stops answering: the node fences its writer
                await wait_until(lambda: not checks_of(node)["registered"].ok, 5, "cut off")
                assert "not reached for" in checks_of(node)["registered"].detail
                proxy.heal()
                await wait_until(lambda: ready(node), 10, "back in touch with the control store")

                await venue.stop()  # every venue connection drops and keeps failing
                await wait_until(lambda: not checks_of(node)["venue:binance.com"].ok, 10, "venue down")
                assert checks_of(node)["venue:binance.com"].detail == "0 of 2 connections up"
            finally:
                stop.set()
                await asyncio.wait_for(task, 20)
    finally:
        await control.aclose()
        proxy.close()
        await venue.stop()
