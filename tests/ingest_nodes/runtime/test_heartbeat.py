"""A node whose event loop is busy still heartbeats (``control_plane.scheduling.heartbeat``); one
whose loop is stuck does not.

A real node against the fake venue and a real store; the test holds the node's event loop in a
computation (what a flood of venue frames does to it past what the machine holds) while a thread of
the test reads the node's record in the registry the way the control plane does, with its own
connection, and notes how old the node's heartbeat was at each look.
"""

from __future__ import annotations

import asyncio
import threading
import time

import aiohttp
import pytest

from book_store.connect import StoreClient, store_client
from control_plane.stores.redis import RedisControlStore
from fake_venue import FakeVenue
from ingest_nodes.runtime.node import IngestNode
from ladder_process.clock import now_ms
from tests.fake_venue.conftest import small_config
from tests.ingest_nodes.runtime.harness import spot_node_settings
from tests.waiting import wait_until

NODE = "busy-node"
TIMEOUT_MS = 300
"""The node timeout: a heartbeat older than this and the control plane would judge the node dead."""


class RegistryWatch:
    """Reads the node's heartbeat age every 20 ms from a thread (its own loop, its own client)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ages: list[tuple[float, int]] = []
        """(monotonic time of the look, age of the heartbeat in ms)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._watch()))

    def __enter__(self) -> RegistryWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    async def _watch(self) -> None:
        client = store_client(self.url, cluster=None)
        store = RedisControlStore(client)
        try:
            while not self._stop.is_set():
                nodes = {node.id: node for node in await store.list_nodes()}
                if NODE in nodes:
                    self.ages.append((time.monotonic(), now_ms() - nodes[NODE].heartbeat_at))
                await asyncio.sleep(0.02)
        finally:
            await client.aclose()

    def oldest(self, since: float, until: float) -> int:
        return max(age for at, age in self.ages if since <= at <= until)


def hold_the_loop(seconds: float) -> None:
    """Keep the event loop's thread computing, as a flood of frames does."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(1000))


@pytest.mark.timeout(60)
async def test_a_busy_loop_keeps_heartbeating_and_a_stuck_one_stops(
    redis_client: StoreClient, clean_redis_url: str
) -> None:
    venue = FakeVenue(small_config())
    await venue.start()
    settings = spot_node_settings(venue, clean_redis_url, NODE, heartbeat_ms=50, node_timeout_ms=TIMEOUT_MS)
    stop = asyncio.Event()
    try:
        async with aiohttp.ClientSession() as session:
            node = IngestNode(settings, redis_client, session)
            task = asyncio.create_task(node.run(stop, drain=lambda: False))
            with RegistryWatch(clean_redis_url) as watch:
                try:
                    await wait_until(lambda: len(watch.ages) > 5, 10, "the node registered and heartbeating")
                    # Busy for ten node timeouts: every look finds a heartbeat younger than a timeout.
                    start = time.monotonic()
                    hold_the_loop(10 * TIMEOUT_MS / 1000)
                    busy_until = time.monotonic()
                    await asyncio.sleep(0.3)
                    assert watch.oldest(start, busy_until) < TIMEOUT_MS, watch.ages
                    assert node.readiness()[0].ok, node.readiness()
                    # Stuck for longer than ten node timeouts: the heartbeats stop, so the control
                    # plane judges the node dead, as it should a node that does no work.
                    start = time.monotonic()
                    hold_the_loop(15 * TIMEOUT_MS / 1000)
                    stuck_until = time.monotonic()
                    assert watch.oldest(start, stuck_until) > 2 * TIMEOUT_MS, watch.ages
                    # Going again, it heartbeats again.
                    await asyncio.sleep(1.0)
                    assert watch.ages[-1][1] < TIMEOUT_MS, watch.ages[-5:]
                finally:
                    stop.set()
                    await asyncio.wait_for(task, 20)
    finally:
        await venue.stop()
