"""The whole stack on a real 3-primary Valkey Cluster, and a primary killed under load.

Every component is pointed at one node of the cluster (``LADDER_REDIS_URL``, as ``ladder up`` would
be) and finds out by itself that it is a cluster. The tenant's books land on two shards, the control
store on the third. Then the primary of one book's shard is killed with ``kill -9`` while reads, a
control call and a WebSocket stream of that book go on: reads see only ``200`` with the venue's
book or ``503`` with ``Retry-After``, within 20 s of the kill every book is served synced again, and
the stream, open throughout, delivers again within 5 s of that. Only the killed shard's books are
refused meanwhile: a tenant's rate-limit bucket lives on one shard too, and while it cannot be
reached each worker spends a bucket of its own at the tenant's rate, so the other books' reads go on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from redis.cluster import RedisCluster

from book_store.schema import BookKey
from tests.e2e.stack import Stack, start_stack
from tests.e2e.test_store_faults import BOOKS, RECOVERY_S, STREAM_RESUME_S, Load, all_synced, wait_until
from tests.valkey_cluster import ValkeyCluster

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cluster")]


@pytest.fixture(scope="module")
def cluster() -> Iterator[ValkeyCluster]:
    with ValkeyCluster() as running:
        yield running


@pytest.fixture(scope="module")
def stack(cluster: ValkeyCluster) -> Iterator[Stack]:
    urls = {"LADDER_REDIS_URL": cluster.url, "LADDER_CONTROL_REDIS_URL": cluster.url}
    running = start_stack(
        ingest_nodes=2,
        extra_env={**urls, "LADDER_NODE_TIMEOUT_MS": "1500", "LADDER_KEEPALIVE_MS": "200"},
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def key(stack: Stack) -> str:
    key = stack.tenant_key("cluster", max_markets=10, max_replicas=2, rate_limit_rps=100_000, burst=100_000)
    for exchange, market in BOOKS:
        body = {"exchange": exchange, "market": market, "replicas": 2}
        response = stack.call(key, "POST", "/v1/subscriptions", json=body)
        assert response.status_code == 201, response.text
    for exchange, market in BOOKS:
        stack.wait_synced(key, exchange, market, timeout_s=30)
    return key


def primary_of(cluster: ValkeyCluster, book: BookKey) -> int:
    with RedisCluster.from_url(cluster.url) as client:
        node = client.get_node_from_key(book.snapshots)
        assert node is not None
        return int(node.port)


def test_the_stack_runs_on_the_cluster_with_books_on_several_shards(
    stack: Stack, key: str, cluster: ValkeyCluster
) -> None:
    books = [BookKey(exchange, market) for exchange, market in BOOKS]
    assert len({primary_of(cluster, book) for book in books}) == 2
    with redis.Redis.from_url(cluster.url) as one_node:
        assert one_node.info("cluster")["cluster_enabled"] == 1
    assert all_synced(stack, key)
    for book in books:  # what the nodes wrote is where the slot map says, not on one node
        with RedisCluster.from_url(cluster.url) as client:
            assert client.hlen(book.snapshots) >= 2


def test_a_primary_killed_under_load_costs_only_its_books_a_few_seconds(
    stack: Stack, key: str, cluster: ValkeyCluster
) -> None:
    victim_port = primary_of(cluster, BookKey(*BOOKS[0]))
    victim = next(node for node in cluster.nodes if node.port == victim_port)
    spared = [m for e, m in BOOKS if primary_of(cluster, BookKey(e, m)) != victim_port]
    with Load(stack, key) as load:
        cluster.kill(victim)
        killed_at = time.monotonic()
        recovered_at = wait_until(lambda: all_synced(stack, key), "every book synced again", RECOVERY_S)
        # The stream streams the killed shard's book; it stays open and carries on once its book is
        # served again (its next message comes when the book next changes).
        wait_until(
            lambda: load.stream_resumed(recovered_at) is not None,
            "the open stream delivering again after the failover",
            STREAM_RESUME_S,
        )
        time.sleep(1.0)  # the reads carry on after the recovery
    load.assert_sound()
    assert recovered_at - killed_at < RECOVERY_S
    assert load.stream_closes == [], "the stream stays open through the failover"
    assert spared and not [m for m in spared if load.refused[m]], load.refused
    load.report("cluster primary kill -9", killed_at, recovered_at)
