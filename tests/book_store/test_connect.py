"""Opening the store: a cluster is recognised by asking the node, and gets a cluster client."""

from __future__ import annotations

import asyncio
import logging

import pytest
import redis.asyncio as redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import MaxConnectionsError

from book_store.connect import StoreClient, get_many, is_cluster, store_client
from book_store.schema import BookKey, node_stats_key
from ladder_process.embedded_valkey import free_port
from tests.valkey_cluster import ValkeyCluster


def test_a_cluster_node_says_so_and_a_single_node_does_not(
    valkey_cluster: ValkeyCluster, valkey_url: str
) -> None:
    assert is_cluster(valkey_cluster.url)
    assert is_cluster(valkey_cluster.nodes[-1].url), "any node will do, a replica too"
    assert not is_cluster(valkey_url)


def test_a_node_that_cannot_be_asked_is_taken_for_a_single_node(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert not is_cluster(f"redis://:secret@127.0.0.1:{free_port()}/0", timeout_s=0.5)
    assert "LADDER_REDIS_CLUSTER" in caplog.text
    assert "secret" not in caplog.text


async def test_detection_picks_the_client_and_the_cluster_client_reaches_every_shard(
    clean_cluster_url: str, valkey_url: str
) -> None:
    cluster = store_client(clean_cluster_url, cluster=None)
    single = store_client(valkey_url, cluster=None)
    forced = store_client(clean_cluster_url, cluster=False)
    try:
        assert isinstance(cluster, RedisCluster)
        assert isinstance(single, redis.Redis) and isinstance(forced, redis.Redis)
        books = [BookKey("binance.com", f"COIN{i}USDT") for i in range(12)]
        async with cluster.pipeline(transaction=False) as pipe:
            for book in books:
                pipe.hset(book.snapshots, "0", book.market)
            await pipe.execute()
        assert [await cluster.hget(b.snapshots, "0") for b in books] == [b.market.encode() for b in books]
        assert len({cluster.get_node_from_key(b.snapshots).name for b in books}) == 3  # type: ignore[union-attr]
    finally:
        for client in (cluster, single, forced):
            await client.aclose()


async def test_get_many_reads_keys_of_several_slots_in_order(redis_client: StoreClient) -> None:
    """Node counters and weight pools each have a slot of their own: one ``MGET`` of them all is
    refused by a cluster (``CROSSSLOT``), so the operator's views read them with ``get_many``."""
    keys = [node_stats_key(f"node-{i}") for i in range(6)]
    for i, key in enumerate(keys[:-1]):
        await redis_client.set(key, f"doc-{i}")
    if isinstance(redis_client, RedisCluster):
        assert len({redis_client.keyslot(k) for k in keys}) > 1, "the keys span several slots"
    assert await get_many(redis_client, keys) == [*(f"doc-{i}".encode() for i in range(5)), None]


async def test_a_cluster_call_waits_for_a_busy_connection_as_on_one_node(clean_cluster_url: str) -> None:
    """Two connections a node, twenty calls that each hold one for 0.1 s: every call waits for
    one come back (about a second in all), where redis-py's cluster client refused 18 at once; a
    call that waits longer than pool_wait_s still fails, as a store error."""
    patient = store_client(clean_cluster_url, cluster=True, max_connections=2, pool_wait_s=5.0)
    impatient = store_client(clean_cluster_url, cluster=True, max_connections=2, pool_wait_s=0.05)
    try:
        for client in (patient, impatient):
            await client.initialize()

        async def hold(client: StoreClient) -> object:
            return await client.blpop(["{slot}:nothing"], timeout=0.1)  # one node, one connection each

        assert await asyncio.gather(*(hold(patient) for _ in range(20))) == [None] * 20
        outcomes = await asyncio.gather(*(hold(impatient) for _ in range(20)), return_exceptions=True)
        assert any(isinstance(o, MaxConnectionsError) for o in outcomes)
    finally:
        await patient.aclose()
        await impatient.aclose()
