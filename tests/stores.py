"""Which store the Valkey-using tests run against: one Valkey node (the default) or a real cluster.

``LADDER_TEST_STORE=cluster`` (``make test-cluster``) hands every store fixture of tests/conftest.py
the session's 3-primary Valkey Cluster instead of its single node, and every whole stack of the
e2e suite (tests/e2e/stack.py) a cluster of its own, so that each test written against one node
also proves the product on a cluster. The single node's databases have no counterpart there (a
cluster has only database 0): where a test asks for a database of its own, it gets the cluster,
emptied. A test that cannot apply to a cluster (it restarts the one server, or relies on what only
one node has) carries ``@pytest.mark.single_store("why")`` and is skipped in that mode.

:class:`TestStore` is the one object those fixtures hand out URLs and clients from, so a test
builds its clients the way the product does (``book_store.connect``), never with a bare
``Redis.from_url``, which a cluster answers with ``MOVED``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio as aioredis
import redis.cluster
from redis.asyncio.cluster import ClusterPubSub, RedisCluster

from book_store.connect import StoreClient, opened, store_client
from tests.valkey_cluster import ValkeyCluster

MODES = ("single", "cluster")
MODE = os.environ.get("LADDER_TEST_STORE", "single")
if MODE not in MODES:
    raise ValueError(f"LADDER_TEST_STORE={MODE!r}: expected one of {', '.join(MODES)}")
ON_CLUSTER = MODE == "cluster"

SyncClient = redis.Redis | redis.cluster.RedisCluster


@dataclass
class TestStore:
    """The session's store: a single node's ``host:port``, or a cluster (any node's URL will do)."""

    __test__ = False  # not a test class, whatever its name

    url: str
    """Database 0 of the node, or the cluster."""
    cluster: ValkeyCluster | None = None

    def database(self, db: int) -> str:
        """A URL for database ``db`` of the node; on a cluster (database 0 only) the cluster."""
        if self.cluster is not None:
            return self.url
        return f"{self.url.rsplit('/', 1)[0]}/{db}"

    def sync_client(self, url: str) -> SyncClient:
        """A blocking client of ``url``: one node's, or a cluster's that follows ``MOVED``."""
        if self.cluster is not None:
            return redis.cluster.RedisCluster.from_url(url)
        return redis.Redis.from_url(url)

    def flush(self, url: str) -> None:
        """Empty what ``url`` names: its database of the node, or every shard of the cluster."""
        if self.cluster is not None:
            self.cluster.flush()
            return
        with redis.Redis.from_url(url) as client:
            client.flushdb()

    @contextlib.contextmanager
    def own(self, db: int) -> Iterator[str]:
        """An empty store for a server that outlives single tests: database ``db`` of the node, or
        on a cluster a cluster of its own (stopped on the way out), since every test that asks for
        a clean store empties the session's cluster whole, whatever else is using it."""
        if self.cluster is None:
            url = self.database(db)
            self.flush(url)
            yield url
            return
        with ValkeyCluster() as cluster:
            yield cluster.url

    async def client(self, url: str, **options: Any) -> StoreClient:
        """An async client of ``url`` as the product opens one (a cluster's reads its slot map);
        ``options`` (a ``socket_timeout``, say) go to redis-py's ``from_url`` instead."""
        if not options:
            return await opened(store_client(url, cluster=self.cluster is not None))
        if self.cluster is not None:
            return await opened(RedisCluster.from_url(url, **options))
        return aioredis.Redis.from_url(url, **options)


def _on_every_primary(client: StoreClient) -> dict[str, object]:
    """The keyword that sends a server command to every primary of a cluster (none for a node)."""
    return {"target_nodes": RedisCluster.PRIMARIES} if isinstance(client, RedisCluster) else {}


async def command_calls(client: StoreClient) -> dict[str, int]:
    """How many times each command was called (``INFO commandstats``), summed over the primaries.

    ``RedisCluster`` asks one node of its choosing for ``INFO``; what clients sent is spread over
    every primary.
    """
    if not isinstance(client, RedisCluster):
        return _calls(await client.info("commandstats"))
    per_node = await client.info("commandstats", target_nodes=RedisCluster.PRIMARIES)
    totals: dict[str, int] = {}
    for stats in per_node.values():
        for name, calls in _calls(stats).items():
            totals[name] = totals.get(name, 0) + calls
    return totals


def _calls(stats: dict[str, Any]) -> dict[str, int]:
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


async def pause(client: StoreClient, timeout_ms: int, *, all: bool = True) -> None:
    """``CLIENT PAUSE`` the store: the node, or every primary of a cluster (each holds some keys)."""
    await client.client_pause(timeout_ms, all=all, **_on_every_primary(client))


async def unpause(client: StoreClient) -> None:
    """``CLIENT UNPAUSE`` what :func:`pause` paused."""
    await client.client_unpause(**_on_every_primary(client))


async def kill_subscribers(client: StoreClient) -> None:
    """Drop every pub/sub connection to the store (on a cluster, to every node of it)."""
    if isinstance(client, RedisCluster):
        await client.client_kill_filter(_type="pubsub", target_nodes=RedisCluster.ALL_NODES)
    else:
        await client.client_kill_filter(_type="pubsub")


async def keys_matching(client: StoreClient, pattern: str) -> list[bytes]:
    """Every key matching ``pattern`` (``SCAN``, which ``RedisCluster`` runs on every primary)."""
    return [key async for key in client.scan_iter(match=pattern)]


async def subscribe_calls(client: StoreClient) -> int:
    """``SUBSCRIBE`` and ``SSUBSCRIBE`` calls so far: a cluster's book channels are sharded."""
    calls = await command_calls(client)
    return calls.get("subscribe", 0) + calls.get("ssubscribe", 0)


def subscribe_commands(client: StoreClient, channels: list[str]) -> int:
    """How many subscribe calls one batch of ``channels`` takes: one ``SUBSCRIBE`` for them all, or
    on a cluster one ``SSUBSCRIBE`` per slot (a sharded subscribe names channels of one slot only),
    sent together down each shard's connection."""
    if not isinstance(client, RedisCluster):
        return 1
    return len({client.keyslot(channel) for channel in channels})


async def publish_change(client: StoreClient, channel: str, message: bytes) -> None:
    """Publish ``message`` on a book's channel as the writer does: ``SPUBLISH`` on a cluster."""
    if isinstance(client, RedisCluster):
        await client.spublish(channel, message)
    else:
        await client.publish(channel, message)


class ChangeMessages:
    """A subscriber to books' change channels as the writer publishes them: a plain ``SUBSCRIBE`` on
    one node, ``SSUBSCRIBE`` at each channel's shard on a cluster."""

    def __init__(self, client: StoreClient) -> None:
        self._client = client
        self._pubsub = client.pubsub()

    async def subscribe(self, *channels: str) -> None:
        """Subscribe ``channels`` and take in their confirmations."""
        if isinstance(self._pubsub, ClusterPubSub):
            for channel in channels:  # each at its own shard
                await self._pubsub.ssubscribe(channel)
        else:
            await self._pubsub.subscribe(*channels)
        for _ in channels:
            assert await self._next(timeout_s=1.0, kinds=("subscribe", "ssubscribe")) is not None

    async def next(self, timeout_s: float = 1.0) -> tuple[str, bytes] | None:
        """The next change message (channel, data), or None if none came within ``timeout_s``."""
        return await self._next(timeout_s, ("message", "smessage"))

    async def _next(self, timeout_s: float, kinds: tuple[str, ...]) -> tuple[str, bytes] | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while loop.time() < deadline:
            for message in await self._poll():
                if message is not None and message["type"] in kinds:
                    return message["channel"].decode(), message["data"]
        return None

    async def _poll(self) -> list[dict[str, Any] | None]:
        if not isinstance(self._pubsub, ClusterPubSub):
            return [await self._pubsub.get_message(timeout=0.01)]
        cluster = self._pubsub.cluster
        return [
            await self._pubsub.get_sharded_message(timeout=0.01, target_node=cluster.get_node(node_name=name))
            for name in list(self._pubsub.node_pubsub_mapping)
        ]

    async def close(self) -> None:
        await self._pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # unannotated before redis 8
