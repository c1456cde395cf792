"""SIGTERM ends an ingest node within seconds, with its normal status, whatever is gone.

``python -m ingest_nodes`` in a subprocess against the fake venue and two Valkey servers of its
own (the book store and the control store, so that a test can stop either), with no control
process: each test stops one dependency while the node serves, sends SIGTERM and times the exit.
An orchestrator kills a node that outlives its stop timeout, and a benchmark that stopped the
store first found its nodes alive after 5 s, needing SIGKILL.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest
import redis.asyncio as redis

from book_store.schema import BookKey, snapshot_field
from control_plane.models import ReplicaAssignment
from control_plane.scheduling.runtime import SCHEDULER_LEASE
from control_plane.stores.redis import RedisControlStore
from fake_venue import FakeVenue
from ingest_nodes.runtime.node import DRAIN_CHECK_S, SHUTDOWN_S, IngestNode
from ladder_process.clock import now_ms
from ladder_process.embedded_valkey import EmbeddedValkey
from tests.components import component, terminated
from tests.fake_venue.conftest import small_config
from tests.ingest_nodes.runtime.harness import spot_node_settings
from tests.waiting import wait_until

NODE = "leaving-node"
EXIT_BOUND_S = 3.0
"""How long a node may take from SIGTERM to its exit (it gives up on what does not answer)."""


@dataclass
class Running:
    """A node serving one book, and what it depends on."""

    venue: FakeVenue
    books: EmbeddedValkey
    control: EmbeddedValkey
    node: asyncio.subprocess.Process
    book: BookKey

    async def terminate(self) -> int:
        """SIGTERM the node; its exit status (AssertionError if it still runs after the bound)."""
        return await terminated(self.node, EXIT_BOUND_S)


@pytest.fixture
async def running() -> AsyncIterator[Running]:
    venue = FakeVenue(small_config())
    await venue.start()
    books, control = EmbeddedValkey(), EmbeddedValkey()
    books.start()
    control.start()
    market = next(iter(venue.spot.markets.specs))
    book = BookKey("binance.com", market)
    client = redis.Redis.from_url(control.url)
    assigned = [ReplicaAssignment(book.exchange, market, 1, NODE)]
    await RedisControlStore(client).replace_assignments(NODE, assigned)
    await client.aclose()
    env = {
        "LADDER_REDIS_URL": books.url, "LADDER_CONTROL_REDIS_URL": control.url,
        "LADDER_REDIS_CLUSTER": "false", "LADDER_EXCHANGES": "binance.com",
        "LADDER_BINANCE_SPOT_REST_URL": venue.spot_rest_url,
        "LADDER_BINANCE_SPOT_WS_URL": venue.spot_ws_url, "LADDER_HEARTBEAT_MS": "200",
    }  # fmt: skip
    store = redis.Redis.from_url(books.url)
    try:
        async with component("ingest_nodes", "--node-id", NODE, "--log-level", "WARNING", env=env) as node:
            deadline = time.monotonic() + 30
            while not await store.hexists(book.snapshots, snapshot_field(1)):
                assert node.returncode is None, f"the node exited with status {node.returncode}"
                assert time.monotonic() < deadline, "the node published nothing within 30 s"
                await asyncio.sleep(0.1)
            yield Running(venue, books, control, node, book)
    finally:
        await store.aclose()
        books.stop()
        control.stop()
        await venue.stop()


async def test_a_node_whose_stores_are_gone_leaves_at_once(running: Running) -> None:
    """The benchmark's end: the store stopped first, then the nodes. Nothing can be flushed,
    drained or deregistered; the node says so and leaves."""
    running.books.stop()
    running.control.stop()
    assert await running.terminate() == 0


async def test_a_node_whose_control_store_is_gone_still_removes_its_books(running: Running) -> None:
    """No drain can be asked for: the node removes what it published from the book store (which
    answers) and leaves."""
    running.control.stop()
    assert await running.terminate() == 0
    store = redis.Redis.from_url(running.books.url)
    try:
        assert not await store.hexists(running.book.snapshots, snapshot_field(1))
    finally:
        await store.aclose()


async def test_a_node_with_no_control_process_does_not_wait_for_a_drain(running: Running) -> None:
    """Both stores answer but no control process runs, so nothing would move the node's replicas:
    it leaves at once instead of waiting out its drain timeout, and deregisters."""
    assert await running.terminate() == 0
    control = redis.Redis.from_url(running.control.url)
    try:
        assert await RedisControlStore(control).list_nodes() == []
    finally:
        await control.aclose()


async def test_a_node_whose_venue_is_gone_leaves_at_once(running: Running) -> None:
    await running.venue.stop()
    assert await running.terminate() == 0


async def test_a_node_drains_while_a_control_process_runs(
    redis_client: redis.Redis, clean_redis_url: str
) -> None:
    """The other side of leaving undrained: while a control process holds the scheduler lease the
    node keeps serving its replicas until the scheduler has taken them away, then leaves."""
    venue = FakeVenue(small_config())
    await venue.start()
    store = RedisControlStore(redis_client)
    market = next(iter(venue.spot.markets.specs))
    await store.replace_assignments(NODE, [ReplicaAssignment("binance.com", market, 1, NODE)])

    async def hold_lease() -> None:  # what a running control process does every round
        while True:
            await store.try_lease(SCHEDULER_LEASE, "test-control", now_ms(), 3000)
            await asyncio.sleep(0.5)

    lease = asyncio.create_task(hold_lease())
    stop = asyncio.Event()
    try:
        async with aiohttp.ClientSession() as session:
            node = IngestNode(spot_node_settings(venue, clean_redis_url, NODE), redis_client, session)
            task = asyncio.create_task(node.run(stop))
            await wait_until(lambda: len(node.replicas) == 1, 10, "the replica started")
            stop.set()  # what SIGTERM does
            await asyncio.sleep(3 * DRAIN_CHECK_S)
            assert not task.done() and len(node.replicas) == 1
            assert [n.draining for n in await store.list_nodes()] == [True]
            await store.replace_assignments(NODE, [])  # the scheduler moved the replica away
            await asyncio.wait_for(task, EXIT_BOUND_S + SHUTDOWN_S)
            assert await store.list_nodes() == []
    finally:
        lease.cancel()
        await asyncio.gather(lease, return_exceptions=True)
        await venue.stop()
