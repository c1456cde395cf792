"""The read API over a store that takes TLS only (``rediss://``), on one node and on a cluster.

Every path to the store goes through TLS here: redis-py's clients (books, control data, limits,
the ingest writer) and the change feed's own socket, which follows books by their change messages
(a stream's message is one of those, arrived over TLS); on a cluster the feed's shard connections
too. The stores are tests/tls_store.py's (Debian's redis-server: the embedded server has no TLS).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import orjson

from tests.read_functions.helpers import ETH, Stack, open_stack, snapshot
from tests.stores import TestStore
from tests.tls_store import Tls, TlsStore, tls_server_binary
from tests.valkey_cluster import ValkeyCluster

STREAM = "/v1/stream?exchange=binance.com&market=ETHBTC&depth=5"


async def reads_and_streams(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    async with stack.http.get(f"{stack.url}/v1/books/binance.com/ETHBTC", headers=headers) as r:
        assert r.status == 200 and (await r.json())["update_id"] == 1
    async with stack.http.ws_connect(stack.url + STREAM, headers=headers) as socket:
        for update_id in (1, 2, 3):
            if update_id > 1:
                await stack.publish(ETH, 0, snapshot(update_id))
            message = await asyncio.wait_for(socket.receive(), 10)
            assert message.type is aiohttp.WSMsgType.TEXT
            assert orjson.loads(message.data)["update_id"] == update_id
    assert stack.deps.books.following and stack.deps.books.messages >= 2, "changes came over the feed"


async def read_and_stream_over(store: TestStore) -> None:
    """The read API over ``store``: its books read, and streamed as they change."""
    assert store.url.startswith("rediss://")
    client = await store.client(store.url)
    stack = await open_stack(store.url, client)
    try:
        await reads_and_streams(stack)
    finally:
        await stack.close()
        await client.aclose()


async def test_the_read_api_over_a_tls_store() -> None:
    with TlsStore() as store:
        await read_and_stream_over(TestStore(store.url))


async def test_the_read_api_over_a_tls_cluster(tmp_path: Path) -> None:
    with ValkeyCluster(replicas=0, binary=tls_server_binary(), tls=Tls.made_in(tmp_path)) as cluster:
        await read_and_stream_over(TestStore(cluster.url, cluster))
