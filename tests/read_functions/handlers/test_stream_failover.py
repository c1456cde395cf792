"""An open stream across a store fault: a shard's primary killed, or the one book store restarted.

The stream stays open through the fault and must deliver fresh snapshots again within seconds of
its book being served again, on the same socket: a client must never take a dead stream for a
quiet market. Each test runs a read API in this process over stores of its own (the fault would
harm the session's), publishes a new snapshot every 100 ms throughout, and prints what it measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import aiohttp
import orjson
from redis.crc import key_slot

from book_store.catalog import MarketInfo
from book_store.schema import BookKey
from ladder_process.embedded_valkey import EmbeddedValkey, free_port
from tests.read_functions.helpers import ETH, MARKETS, Stack, open_stack, snapshot
from tests.stores import TestStore
from tests.valkey_cluster import ValkeyCluster, slot_ranges

RESUME_S = 5.0
"""The most a stream may stay silent once its book is served again."""
PUBLISH_EVERY_S = 0.1


@dataclass
class Watched:
    """What one stream and the book's reads saw, by time (monotonic seconds)."""

    received: list[tuple[float, int]] = field(default_factory=list)  # (when, update_id)
    published: list[tuple[float, int]] = field(default_factory=list)
    closed: str | None = None

    def first_received_after(self, update_id: int) -> float | None:
        return next((at for at, received in self.received if received > update_id), None)


async def _receive(socket: aiohttp.ClientWebSocketResponse, into: Watched) -> None:
    async for message in socket:
        if message.type is aiohttp.WSMsgType.TEXT:
            into.received.append((time.monotonic(), orjson.loads(message.data)["update_id"]))
    into.closed = f"closed {socket.close_code}"


async def _publish(stack: Stack, book: BookKey, into: Watched) -> None:
    """A new snapshot every 100 ms, as an ingest node keeps a busy book (the writer retries a failed
    batch by itself)."""
    update_id = 1
    while True:
        stack.writer.put(book, 0, snapshot(update_id))
        into.published.append((time.monotonic(), update_id))
        update_id += 1
        await asyncio.sleep(PUBLISH_EVERY_S)


async def _served(
    stack: Stack, book: BookKey, headers: dict[str, str], after: int, timeout_s: float
) -> float:
    """Poll the book's read until it serves a snapshot newer than ``after``; when it first did."""
    deadline = time.monotonic() + timeout_s
    path = f"{stack.url}/v1/books/{book.exchange}/{book.market}"
    while time.monotonic() < deadline:
        with contextlib.suppress(aiohttp.ClientError):
            async with stack.http.get(path, headers=headers) as response:
                if response.status == 200 and orjson.loads(await response.read())["update_id"] > after:
                    return time.monotonic()
        await asyncio.sleep(0.05)
    raise AssertionError(f"{book} was not served again within {timeout_s} s")


async def stream_across(
    stack: Stack, book: BookKey, fault: Callable[[], Awaitable[None]], name: str
) -> Watched:
    """Stream ``book`` while ``fault()`` runs; assert the same socket delivers again within RESUME_S of
    the book being served again, and print the figures."""
    headers = await stack.subscriber(book)
    watched = Watched()
    publisher = asyncio.get_running_loop().create_task(_publish(stack, book, watched))
    query = f"exchange={book.exchange}&market={book.market}&depth=5"
    try:
        async with stack.http.ws_connect(f"{stack.url}/v1/stream?{query}", headers=headers) as socket:
            receiver = asyncio.get_running_loop().create_task(_receive(socket, watched))
            await _wait(lambda: len(watched.received) >= 5, 10, "the stream delivering before the fault")
            before = len(watched.received)
            fault_at = time.monotonic()
            await fault()
            last_before = max(update_id for at, update_id in watched.published if at <= fault_at)
            served_at = await _served(stack, book, headers, last_before, timeout_s=30)
            await _wait(
                lambda: watched.first_received_after(last_before) is not None or receiver.done(),
                RESUME_S + 1,
                "the stream delivering again",
            )
            resumed_at = watched.first_received_after(last_before)
            assert watched.closed is None, f"the stream ended instead of resuming: {watched.closed}"
            assert resumed_at is not None
            print(
                f"{name}: {before} messages before the fault; the book served again "
                f"{served_at - fault_at:.1f} s after it, the stream delivered again "
                f"{resumed_at - fault_at:.1f} s after it ({resumed_at - served_at:+.2f} s from the read)"
            )
            assert resumed_at - served_at <= RESUME_S
            receiver.cancel()
    finally:
        publisher.cancel()
    return watched


async def _wait(predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}"
        await asyncio.sleep(0.02)


# -- one node: the book store restarted ------------------------------------------------------------


@contextlib.asynccontextmanager
async def single_node_stack() -> AsyncIterator[tuple[Stack, EmbeddedValkey]]:
    """A read API whose book store (a server of its own) may be restarted; control data apart, as
    ``ladder up`` keeps it."""
    with EmbeddedValkey() as control, EmbeddedValkey(port=free_port()) as books:
        store = await TestStore(books.url).client(books.url)
        stack = await open_stack(books.url, store, control_redis_url=control.url)
        try:
            yield stack, books
        finally:
            await stack.close()
            await store.aclose()


async def test_a_stream_resumes_after_the_book_store_restarts_empty() -> None:
    async with single_node_stack() as (stack, books):

        async def restart() -> None:
            """``kill -9``, then a new empty server on the same port, as ``ladder up``'s supervisor does."""
            assert books.pid is not None
            os.kill(books.pid, signal.SIGKILL)
            await asyncio.to_thread(books.wait)
            books.stop()
            await asyncio.sleep(0.5)
            await asyncio.to_thread(books.start)

        await stream_across(stack, ETH, restart, "book store restarted")


# -- a cluster: the streamed book's primary killed -------------------------------------------------


def _on_shard_of(tag: str, candidates: list[str]) -> str:
    """The first market of ``candidates`` whose book lives on the shard that holds ``tag``."""
    ranges = slot_ranges()

    def shard(slot: int) -> int:
        return next(i for i, (low, high) in enumerate(ranges) if low <= slot <= high)

    wanted = shard(key_slot(tag.encode()))
    return next(m for m in candidates if shard(key_slot(f"binance.com|{m}".encode())) == wanted)


async def test_a_stream_resumes_after_its_book_s_primary_is_killed_on_a_cluster() -> None:
    """The killed primary holds the streamed book and the control data too, so the stream's access
    rechecks fail while it fails over: they must not end the stream either."""
    market = _on_shard_of("control", [f"COIN{i}USDT" for i in range(24)])
    book = BookKey("binance.com", market)
    markets = [*MARKETS, MarketInfo("binance.com", market, "TRADING", "COIN", "USDT")]
    with ValkeyCluster() as cluster:
        store = await TestStore(cluster.url, cluster).client(cluster.url)
        stack = await open_stack(cluster.url, store, markets)
        try:
            victim = next(
                p
                for p in cluster.primaries
                if store.get_node_from_key(book.snapshots).port == p.port  # type: ignore[union-attr]
            )

            async def kill_primary() -> None:
                cluster.kill(victim)
                await asyncio.to_thread(cluster.wait_healthy, 30)

            await stream_across(stack, book, kill_primary, "cluster primary killed")
        finally:
            await stack.close()
            await store.aclose()
