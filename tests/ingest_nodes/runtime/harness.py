"""The ingest runtime wired to an in-process fake venue and a real Valkey, for the runtime tests.

No mocks: replicas, feeds, schedulers and the publisher are the production classes; the venue is
``fake_venue.FakeVenue`` on a free port and the store is the session's Valkey.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson

from book_store.codec import BookStatus
from book_store.connect import StoreClient
from book_store.schema import BookKey
from book_store.writer import BookWriter
from fake_venue import FakeVenue, VenueConfig
from ingest_nodes.core.engine import BookEngine
from ingest_nodes.ops.checkpoints import CheckpointLog
from ingest_nodes.ops.telemetry import IngestTelemetry
from ingest_nodes.runtime.exchange import ExchangeRuntime, build_exchange
from ingest_nodes.runtime.node import IngestNode
from ingest_nodes.runtime.publisher import Publisher
from ingest_nodes.runtime.replica import BookReplica
from ingest_nodes.settings import IngestSettings
from ingest_nodes.venues.registry import exchange_specs
from ladder_process.telemetry.setup import Telemetry
from tests.waiting import wait_until

VENUE_OF = {
    "binance.com": "spot",
    "binance.com-futures": "futures",
    "okx": "okx",
    "bybit": "bybit",
    "bybit-linear": "bybit-linear",
    "kraken": "kraken",
    "coinbase": "coinbase",
}
NO_IDS = frozenset({"kraken", "coinbase"})
"""Venues whose messages carry no id: the truth is asked for by the millisecond the book's last
message was stamped with (the fake stamps a symbol's updates at least a millisecond apart)."""


def venue_config(**overrides: Any) -> VenueConfig:
    """Few symbols, 200-level books, 20 updates/s, short bans; a weight window no test straddles."""
    settings: dict[str, Any] = {
        "spot_symbols": 12,
        "futures_symbols": 12,
        "alpaca_symbols": 1,
        "okx_symbols": 6,
        "bybit_symbols": 6,
        "levels": 200,
        "rate": 20.0,
        "weight_window_s": 3600.0,
        "ban_base_s": 1.0,
    }
    settings.update(overrides)
    return VenueConfig(**settings)


def spot_node_settings(venue: FakeVenue, redis_url: str, node_id: str, **settings: Any) -> IngestSettings:
    """A whole node's settings, serving the fake venue's spot market only."""
    return IngestSettings(
        redis_url=redis_url,
        node_id=node_id,
        exchanges="binance.com",
        binance_spot_rest_url=venue.spot_rest_url,
        binance_spot_ws_url=venue.spot_ws_url,
        **settings,
    )


class Harness:
    """One node's worth of runtime (without the control plane) against one fake venue."""

    def __init__(
        self, venue: FakeVenue, client: StoreClient, session: aiohttp.ClientSession, **settings: Any
    ) -> None:
        self.venue = venue
        self.client = client
        self.session = session
        self.settings = IngestSettings(
            redis_url="redis://unused",
            binance_spot_rest_url=venue.spot_rest_url,
            binance_spot_ws_url=venue.spot_ws_url,
            binance_futures_rest_url=venue.futures_rest_url,
            binance_futures_ws_url=venue.futures_ws_url,
            alpaca_stream_url=venue.alpaca_stream_url,
            alpaca_trading_url=venue.alpaca_trading_url,
            okx_rest_url=venue.okx_rest_url,
            okx_ws_url=venue.okx_ws_url,
            bybit_rest_url=venue.bybit_rest_url,
            bybit_linear_rest_url=venue.bybit_linear_rest_url,
            bybit_spot_ws_url=venue.bybit_spot_ws_url,
            bybit_linear_ws_url=venue.bybit_linear_ws_url,
            kraken_rest_url=venue.kraken_rest_url,
            kraken_ws_url=venue.kraken_ws_url,
            coinbase_rest_url=venue.coinbase_rest_url,
            coinbase_ws_url=venue.coinbase_ws_url,
            egress_id=f"test-{id(self)}",
            **settings,
        )
        self.writer = BookWriter(client)
        self.telemetry = IngestTelemetry(Telemetry.disabled("ladder-test"))
        self.publisher = Publisher(
            self.writer,
            telemetry=self.telemetry,
            head_levels=self.settings.head_levels,
            deep_levels_per_s=self.settings.deep_levels_per_s,
            publish_interval_ms=0,
            keepalive_ms=self.settings.keepalive_ms,
            stale_after_ms=self.settings.stale_after_ms,
        )
        self.checkpoints = CheckpointLog(client, every=1, levels=self.settings.checkpoint_levels)
        self.exchanges: dict[str, ExchangeRuntime] = {
            e: build_exchange(spec, self.settings, client, session, self.settings.alpaca_keys)
            for e, spec in exchange_specs(self.settings).items()
        }
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(x.scheduler.run()) for x in self.exchanges.values()]
        self._tasks += [loop.create_task(x.stall_checker.run()) for x in self.exchanges.values()]
        self._tasks.append(loop.create_task(self.publisher.run_keepalive()))
        self.replicas: list[BookReplica] = []

    def replica(self, exchange: str, symbol: str, index: int = 1, *, depth: int = 100) -> BookReplica:
        spec = self.exchanges[exchange].spec
        runtime = self.exchanges[exchange]
        replica = BookReplica(
            BookKey(exchange, symbol),
            index,
            lambda: BookEngine(spec.new_machine(10_000)),
            runtime.scheduler,
            self.publisher,
            depth=depth,
            depth_tiers=spec.depth_tiers,
            checkpoints=self.checkpoints if spec.ids_comparable else None,
            stall_policy=spec.stall_policy(self.settings.stall_policy),
            resets_on_stream=spec.resets_on_stream,
            silence_checked=spec.ids_comparable,
            rest_audits=spec.resets_on_stream and spec.checks_by_rest,
            telemetry=self.telemetry,
        )
        replica.start()
        runtime.feed.attach(replica)
        if spec.ids_comparable:
            runtime.stall_checker.watch(replica)
        self.replicas.append(replica)
        return replica

    async def close(self) -> None:
        for replica in self.replicas:
            self.exchanges[replica.book.exchange].stall_checker.forget(replica)
            await self.exchanges[replica.book.exchange].feed.detach(replica)
            await replica.stop()
        for runtime in self.exchanges.values():
            await runtime.feed.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.writer.close()
        await self.checkpoints.drain()

    async def truth(
        self, replica: BookReplica, book: str | None = None
    ) -> tuple[int, list[list[str]], list[list[str]]]:
        """The venue's book (``book``: the one the replica's market is an alias of) at the replica's
        current update id, or for a venue without ids at the time of the last message it applied
        (taken at once, no await before)."""
        update_id = replica.engine.update_id
        assert update_id is not None, "the replica is not synced"
        venue, symbol = VENUE_OF[replica.book.exchange], book or replica.symbol
        params: dict[str, str | int] = {"venue": venue, "symbol": symbol}
        if replica.book.exchange in NO_IDS:
            assert replica.engine.event_time is not None
            params["at_ms"] = replica.engine.event_time
        else:
            params["update_id"] = update_id
        bids = [orjson.loads(level) for level in replica.engine.book.top_bids(1000)]
        asks = [orjson.loads(level) for level in replica.engine.book.top_asks(1000)]
        async with self.session.get(self.venue.url + "/_fake/book", params=params) as response:
            assert response.status == 200, await response.text()
            truth = await response.json()
        assert bids == truth["bids"][: len(bids)], f"{replica.symbol} bids differ at {update_id}"
        assert asks == truth["asks"][: len(asks)], f"{replica.symbol} asks differ at {update_id}"
        return update_id, bids, asks

    async def whole_truth(self, replica: BookReplica) -> None:
        """The replica's whole book equals the venue's latest (call it while the symbol is stalled:
        Alpaca messages carry no id to ask the venue for a past state by)."""
        params = {"venue": "alpaca", "symbol": replica.symbol}
        async with self.session.get(self.venue.url + "/_fake/book", params=params) as response:
            assert response.status == 200, await response.text()
            truth = await response.json()
        book = replica.engine.book
        bids = [orjson.loads(level) for level in book.top_bids(len(truth["bids"]) + 1)]
        asks = [orjson.loads(level) for level in book.top_asks(len(truth["asks"]) + 1)]
        assert bids == truth["bids"], f"{replica.symbol} bids differ"
        assert asks == truth["asks"], f"{replica.symbol} asks differ"

    async def venue_stats(self) -> dict[str, Any]:
        async with self.session.get(self.venue.url + "/_fake/stats") as response:
            body: dict[str, Any] = await response.json()
            return body

    async def control(self, **action: Any) -> dict[str, Any]:
        async with self.session.post(self.venue.url + "/_fake/control", json=action) as response:
            body: dict[str, Any] = await response.json()
            assert response.status == 200, body
            return body


def published_as(harness: Harness, replica: BookReplica) -> BookStatus | None:
    """The status the publisher last wrote of ``replica`` (None: nothing yet)."""
    published = harness.publisher.published(replica)
    return None if published is None else published.status


async def wait_synced(replicas: Iterable[BookReplica], timeout_s: float = 10.0) -> None:
    replicas = list(replicas)
    await wait_until(lambda: all(r.engine.synced for r in replicas), timeout_s, "every replica synced")


@asynccontextmanager
async def running(config: VenueConfig, client: StoreClient, **settings: Any) -> AsyncIterator[Harness]:
    """A fake venue started with ``config`` and a harness on it; both stopped afterwards."""
    venue = FakeVenue(config)
    await venue.start()
    try:
        async with aiohttp.ClientSession() as session:
            harness = Harness(venue, client, session, **settings)
            try:
                yield harness
            finally:
                await harness.close()
    finally:
        await venue.stop()


@asynccontextmanager
async def running_node(
    settings: IngestSettings, client: StoreClient, session: aiohttp.ClientSession
) -> AsyncIterator[IngestNode]:
    """A whole ingest node running on ``client`` (leaving without a drain when the block ends)."""
    stop = asyncio.Event()
    node = IngestNode(settings, client, session)
    task = asyncio.create_task(node.run(stop, drain=lambda: False))
    try:
        yield node
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)
