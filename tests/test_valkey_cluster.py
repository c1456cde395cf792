"""The cluster fixture is a real cluster: slots covered, replicas attached, a primary's death survived."""

from __future__ import annotations

import itertools
import time

import redis
from redis.cluster import RedisCluster

from book_store.schema import BookKey
from tests.valkey_cluster import SLOTS, ValkeyCluster, slot_ranges


def test_slot_ranges_cover_every_slot_once() -> None:
    ranges = slot_ranges(3)
    assert ranges[0][0] == 0 and ranges[-1][1] == SLOTS - 1
    assert all(high + 1 == low for (_, high), (low, _) in itertools.pairwise(ranges))


def test_three_primaries_each_with_a_replica_serve_every_slot(valkey_cluster: ValkeyCluster) -> None:
    with valkey_cluster.nodes[0].client() as client:
        shards = client.execute_command("CLUSTER", "SHARDS")
    assert len(shards) == 3
    for shard in shards:
        assert sorted(node[b"role"] for node in shard[b"nodes"]) == [b"master", b"replica"]
    bounds = [shard[b"slots"] for shard in shards]  # [low, high, low, high, ...] per shard
    assert sum(b[i + 1] - b[i] + 1 for b in bounds for i in range(0, len(b), 2)) == SLOTS


def test_books_land_on_several_shards_and_a_plain_client_is_moved(clean_cluster_url: str) -> None:
    books = [BookKey("binance.com", f"COIN{i}USDT") for i in range(12)]
    with RedisCluster.from_url(clean_cluster_url) as cluster:
        for book in books:
            cluster.hset(book.snapshots, "0", book.market)
        owners = {cluster.get_node_from_key(book.snapshots).port for book in books}
        assert len(owners) == 3, "a dozen books spread over all three primaries"
        assert [cluster.hget(book.snapshots, "0") for book in books] == [b.market.encode() for b in books]
    misplaced = 0
    with redis.Redis.from_url(clean_cluster_url) as single:
        for book in books:
            try:
                single.hget(book.snapshots, "0")
            except redis.ResponseError as exc:
                assert isinstance(exc, redis.exceptions.MovedError)
                misplaced += 1
    assert misplaced > 0, "a single-node client meets MOVED for books of other shards"


def test_a_killed_primary_is_replaced_by_its_replica() -> None:
    with ValkeyCluster() as cluster, RedisCluster.from_url(cluster.url) as client:
        victim = cluster.primaries[1]
        key = next(f"k{i}" for i in range(1000) if client.get_node_from_key(f"k{i}").port == victim.port)
        client.set(key, "kept")
        (replica,) = cluster.replicas_of(victim)
        with replica.client() as direct:
            direct.execute_command("READONLY")
            deadline = time.monotonic() + 10
            while direct.get(key) is None:
                assert time.monotonic() < deadline, "the write reached the replica"
                time.sleep(0.02)
        cluster.kill(victim)
        started = time.monotonic()
        cluster.wait_healthy(timeout_s=30)
        with replica.client() as direct:
            assert direct.info("replication")["role"] == "master"
        assert client.get(key) == b"kept", "the cluster client follows the promotion"
        assert time.monotonic() - started < 15
