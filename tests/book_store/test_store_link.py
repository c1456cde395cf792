"""The writer's own store connection: batches answered line by line, errors that keep it aligned,
credentials and databases as redis-py's clients have them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis.asyncio as redis
from redis.asyncio.cluster import RedisCluster

from book_store.connect import StoreLink, command, node_url
from ladder_process.embedded_valkey import EmbeddedValkey
from ladder_process.errors import StoreError, StoreUnavailableError

pytestmark = pytest.mark.single_store("opens one node's URL; the writer's shard links: test_store_cluster")


async def test_a_batch_is_answered_line_by_line_and_an_error_fails_it_without_breaking_the_link(
    redis_client: redis.Redis,
) -> None:
    link = StoreLink(node_url(redis_client.connection_pool))
    try:
        replies = await link.execute([command(b"HSET", b"h", b"a", b"1"), command(b"SET", b"s", b"x")])
        assert replies == [b":1", b"+OK"]
        with pytest.raises(StoreError, match="WRONGTYPE"):
            await link.execute([command(b"HSET", b"s", b"a", b"1"), command(b"HSET", b"h", b"b", b"2")])
        assert await redis_client.hget("h", "b") == b"2"  # the rest of the batch was still done
        assert await link.execute([command(b"HDEL", b"h", b"a", b"b")]) == [b":2"]  # and the link is aligned
    finally:
        await link.close()


async def test_the_database_and_the_password_of_a_client_are_the_link_s(tmp_path: Path) -> None:
    with EmbeddedValkey(tmp_path, password="s3cr:t@/x", persistent=False) as server:
        client = redis.Redis.from_url(server.url.removesuffix("/0") + "/3")
        link = StoreLink(node_url(client.connection_pool))
        try:
            assert await link.execute([command(b"SET", b"k", b"v")]) == [b"+OK"]
            assert await client.get("k") == b"v"
            other = redis.Redis.from_url(server.url)
            assert await other.get("k") is None
            await other.aclose()
        finally:
            await link.close()
            await client.aclose()


async def test_an_unreachable_or_silent_store_fails_the_batch_quickly() -> None:
    closed = StoreLink("redis://127.0.0.1:1/0", timeout_s=0.5)
    with pytest.raises(StoreUnavailableError):
        await closed.execute([command(b"PING")])

    async def silent(_reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(10)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    link = StoreLink(f"redis://127.0.0.1:{port}/0", timeout_s=0.2)
    try:
        with pytest.raises(StoreUnavailableError):
            await link.execute([command(b"PING")])
    finally:
        await link.close()
        server.close()


def test_a_cluster_node_s_url_keeps_the_client_s_credentials() -> None:
    cluster = RedisCluster(host="10.0.0.1", port=7000, password="secret", ssl=True, ssl_cert_reqs="none")
    node = cluster.get_default_node() or next(iter(cluster.nodes_manager.startup_nodes.values()))
    url = node_url(node.connection_kwargs, node.connection_class, "10.0.0.2", 7001)
    assert url == "rediss://default:secret@10.0.0.2:7001/0?ssl_cert_reqs=none"
