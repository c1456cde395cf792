"""The change feed of a Valkey/Redis Cluster: one sharded connection per primary.

Theory of operation
-------------------
On a cluster the ingest nodes publish each book's change messages with ``SPUBLISH``, so they travel
only through the shard that owns the book's slot. This feed keeps one
:class:`~read_functions.books.change_feed.ChangeFeed` per primary in sharded mode and subscribes
each book's channel where its slot lives (the slot map is ``RedisCluster``'s). Whatever ends a
subscription, a shard's connection dropping (its primary failed over, a network cut) or the node
ending one itself (``sunsubscribe``: the slot moved), ``on_lost`` gets exactly the channels that
may have missed a message, and the cache drops only those books; the slot map is then read again,
so the next load of such a book subscribes at its new owner. Channels that are not books (the
control plane's announcements, published with a plain ``PUBLISH`` that a cluster copies to every
node) stay on one plain feed, which connects to the node of the URL and, when that fails, to the
other nodes in turn; its drop costs what those channels carry (``on_reset``), not the books.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Iterable
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError

from ladder_process.errors import StoreUnavailableError
from read_functions.books.change_feed import ChangeFeed, MessageHandler

log = logging.getLogger(__name__)


class ShardedChangeFeed:
    """:class:`ChangeFeed`'s interface over a cluster; ``on_lost(channels)`` after a shard's drop."""

    def __init__(
        self,
        redis_url: str,
        cluster: RedisCluster,
        on_message: MessageHandler,
        on_reset: Callable[[], None],
        on_lost: Callable[[Collection[bytes]], None],
        *,
        standing: Iterable[str] = (),
        ping_interval_s: float = 5.0,
        connect_timeout_s: float = 5.0,
    ) -> None:
        """``on_reset()``: the plain feed (``standing`` channels) dropped; ``on_lost``: book channels
        whose shard connection dropped or whose subscription the node ended."""
        self._url = redis_url
        self._cluster = cluster
        self._on_message = on_message
        self._on_lost = on_lost
        self._ping_interval_s = ping_interval_s
        self._connect_timeout_s = connect_timeout_s
        self._plain = ChangeFeed(
            redis_url, on_message, on_reset, standing=standing,
            ping_interval_s=ping_interval_s, connect_timeout_s=connect_timeout_s, next_url=self._plain_url,
        )  # fmt: skip
        self._plain_attempts = 0
        self._shards: dict[str, ChangeFeed] = {}  # primary "host:port" -> its sharded feed
        self._owner: dict[bytes, str] = {}  # subscribed book channel -> the primary it is at
        self._refresh: asyncio.Task[None] | None = None
        self.shard_resets = 0

    @property
    def connected(self) -> bool:
        return self._plain.connected

    @property
    def resets(self) -> int:
        return self._plain.resets + self.shard_resets

    def start(self) -> None:
        self._plain.start()

    async def wait_connected(self, timeout_s: float) -> bool:
        return await self._plain.wait_connected(timeout_s)

    async def close(self) -> None:
        if self._refresh is not None:
            self._refresh.cancel()
        for feed in [self._plain, *self._shards.values()]:
            await feed.close()
        self._shards.clear()

    async def subscribe(self, channels: Iterable[str]) -> None:
        """Subscribe each channel at its slot's primary; returns once every one is confirmed."""
        by_primary: dict[str, list[str]] = {}
        try:
            await self._cluster.initialize()
            for channel in channels:
                node = self._cluster.get_node_from_key(channel)
                if node is None:  # pragma: no cover - a covered cluster always names one
                    raise StoreUnavailableError(f"no primary serves the slot of {channel}")
                by_primary.setdefault(node.name, []).append(channel)
        except RedisError as exc:
            raise StoreUnavailableError(f"the cluster's slot map is unavailable ({exc})") from exc
        await asyncio.gather(*(self._subscribe_at(name, names) for name, names in by_primary.items()))

    def unsubscribe(self, channels: Iterable[str]) -> None:
        """Stop receiving ``channels`` (no confirmation awaited; late messages are ignored)."""
        by_primary: dict[str, list[str]] = {}
        for channel in channels:
            name = self._owner.pop(channel.encode(), None)
            if name is not None:
                by_primary.setdefault(name, []).append(channel)
        for name, names in by_primary.items():
            feed = self._shards.get(name)
            if feed is not None:
                feed.unsubscribe(names)

    async def _subscribe_at(self, primary: str, channels: list[str]) -> None:
        feed = self._shards.get(primary)
        if feed is None:
            feed = self._shards[primary] = self._shard_feed(primary)
            feed.start()
            connected = await feed.wait_connected(self._connect_timeout_s)
        else:  # one that dropped is reconnecting: the caller answers 503 now, not after a timeout
            connected = feed.connected
        if not connected:
            self._reread_soon()  # it may be a primary no more
            raise StoreUnavailableError(f"the change feed cannot reach the primary {primary}")
        for channel in channels:
            self._owner[channel.encode()] = primary
        await feed.subscribe(channels)

    def _node_url(self, node: str) -> str:
        """The URL of one node (``host:port``): the feed's URL, credentials and all, at that node."""
        parts = urlsplit(self._url)
        credentials = parts.netloc.rpartition("@")[0]
        return urlunsplit(parts._replace(netloc=f"{credentials}@{node}" if credentials else node))

    def _plain_url(self) -> str:
        """The URL first, then every node the slot map knows, in turn, one per connection attempt."""
        candidates = [self._url, *(self._node_url(node.name) for node in self._cluster.get_nodes())]
        self._plain_attempts += 1
        return candidates[(self._plain_attempts - 1) % len(candidates)]

    def _shard_feed(self, primary: str) -> ChangeFeed:
        return ChangeFeed(
            self._node_url(primary), self._on_message, lambda: self._shard_dropped(primary),
            ping_interval_s=self._ping_interval_s, connect_timeout_s=self._connect_timeout_s,
            on_dropped=lambda channel: self._lose([channel]),
        )  # fmt: skip

    def _shard_dropped(self, primary: str) -> None:
        self.shard_resets += 1
        self._lose([channel for channel, name in self._owner.items() if name == primary])

    def _lose(self, channels: list[bytes]) -> None:
        for channel in channels:
            self._owner.pop(channel, None)
        if channels:
            self._on_lost(channels)
        self._reread_soon()

    def _reread_soon(self) -> None:
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.get_running_loop().create_task(self._reread_slots())

    async def _reread_slots(self) -> None:
        """Read the slot map again and stop the feeds of nodes that are primaries no more."""
        await asyncio.sleep(0.2)  # a failover announces itself over a moment: do not read it mid-way
        try:
            await self._cluster.nodes_manager.initialize()
        except RedisError as exc:
            log.warning("change feed: cannot read the cluster's slot map (%s)", exc)
            return
        primaries = {node.name for node in self._cluster.get_primaries()}
        for name in [name for name in self._shards if name not in primaries]:
            log.info("change feed: %s is no longer a primary; closing its feed", name)
            feed = self._shards.pop(name)
            self._lose([channel for channel, owner in self._owner.items() if owner == name])
            with contextlib.suppress(asyncio.CancelledError):
                await feed.close()
