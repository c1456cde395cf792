"""Catalog fetches: one node at a time, backing off together when the venue is out of reach, each
outcome recorded for readers, each change logged once."""

from __future__ import annotations

import asyncio
import logging
import socket

import aiohttp
import pytest

from book_store.catalog import CatalogState, MarketCatalog, MarketInfo
from book_store.connect import StoreClient
from ingest_nodes.core.backoff import Backoff
from ingest_nodes.settings import IngestSettings
from ingest_nodes.venues.binance.rest import VenueRestClient
from ingest_nodes.venues.budget import WeightBudget
from ingest_nodes.venues.catalog import CatalogRefresher
from ingest_nodes.venues.registry import exchange_specs
from ingest_nodes.venues.rest import VenueRequestError

ETH = MarketInfo("binance.com", "ETHBTC", "TRADING", "ETH", "BTC")
QUICK = Backoff(base_s=0.2, cap_s=0.4)


class Venue:
    """A market list fetch that fails until told otherwise, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.reachable = False

    async def markets(self) -> list[MarketInfo]:
        self.calls += 1
        if not self.reachable:
            raise VenueRequestError("binance.com /api/v3/exchangeInfo: cannot resolve api.binance.com")
        return [ETH]


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_an_unreachable_venue_is_recorded_backed_off_and_logged_once(
    redis_client: StoreClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "ingest_nodes.venues.catalog")
    venue = Venue()
    nodes = [CatalogRefresher(redis_client, f"node-{i}", refresh_s=60, backoff=QUICK) for i in (1, 2)]
    catalog = MarketCatalog(redis_client)

    await nodes[0].refresh("binance.com", venue.markets)
    first = await catalog.state("binance.com")
    assert first is not None and first.phase == "unavailable" and first.failures == 1
    assert "cannot resolve api.binance.com" in first.reason and first.markets == 0
    assert first.retry_at_ms is not None and first.retry_at_ms > first.checked_ms

    # Within the backoff, no node asks the venue again.
    for node in nodes:
        await node.refresh("binance.com", venue.markets)
    assert venue.calls == 1

    # After it, the next attempt (by any node) counts on; the state keeps its start.
    for _ in range(2):
        await asyncio.sleep(0.45)
        await nodes[1].refresh("binance.com", venue.markets)
    again = await catalog.state("binance.com")
    assert again is not None and again.failures == 3 and again.since_ms == first.since_ms
    assert venue.calls == 3
    assert len(warnings(caplog)) == 1, warnings(caplog)  # the same failure is said once

    venue.reachable = True
    await asyncio.sleep(0.45)
    await nodes[0].refresh("binance.com", venue.markets)
    loaded = await catalog.state("binance.com")
    assert loaded is not None and (loaded.phase, loaded.markets, loaded.failures) == ("loaded", 1, 0)
    assert await catalog.markets("binance.com") == [ETH]
    assert "binance.com: market catalog loaded (1 markets)" in caplog.messages

    # Loaded: no node fetches again within the refresh interval.
    await nodes[1].refresh("binance.com", venue.markets)
    assert venue.calls == 4


async def test_a_failed_refresh_keeps_the_last_list_and_says_so(redis_client: StoreClient) -> None:
    venue = Venue()
    venue.reachable = True
    node = CatalogRefresher(redis_client, "node-1", refresh_s=0.001, backoff=QUICK)
    await node.refresh("binance.com", venue.markets)
    venue.reachable = False
    await asyncio.sleep(1.1)  # the lock holds at least a second
    await node.refresh("binance.com", venue.markets)
    state = await MarketCatalog(redis_client).state("binance.com")
    assert state is not None and (state.phase, state.markets) == ("unavailable", 1)
    assert await MarketCatalog(redis_client).markets("binance.com") == [ETH]


async def test_a_node_without_the_venue_key_records_why_unless_another_loaded_it(
    redis_client: StoreClient,
) -> None:
    node = CatalogRefresher(redis_client, "node-1", refresh_s=60)
    await node.unavailable("alpaca-crypto", "no Alpaca key is configured")
    state = await MarketCatalog(redis_client).state("alpaca-crypto")
    assert (
        state is not None and state.phase == "unavailable" and state.reason == "no Alpaca key is configured"
    )

    loaded = CatalogState("alpaca-crypto", "loaded", 1, 1, markets=5)
    await MarketCatalog(redis_client).record(loaded)
    await node.unavailable("alpaca-crypto", "no Alpaca key is configured")
    assert await MarketCatalog(redis_client).state("alpaca-crypto") == loaded


def test_a_failure_no_node_retries_any_more_is_not_current() -> None:
    state = CatalogState("binance.us", "unavailable", 0, 0, reason="x", retry_at_ms=1000, failures=1)
    assert state.current(1000 + 60_000)
    assert not state.current(1000 + 3_600_000)
    assert CatalogState("binance.com", "loaded", 0, 0, markets=3).current(10**13)


async def test_a_venue_that_refuses_connections_is_named_with_its_host_and_port(
    redis_client: StoreClient,
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings = IngestSettings(redis_url="redis://unused", binance_spot_rest_url=f"http://127.0.0.1:{port}")
    spec = exchange_specs(settings)["binance.com"]
    budget = WeightBudget(redis_client, egress_id="test-refused", venue_host=spec.weight_pool, limit=1000)
    async with aiohttp.ClientSession() as session:
        rest = VenueRestClient(session, spec, budget)
        with pytest.raises(VenueRequestError, match=rf"cannot connect to 127\.0\.0\.1:{port} \(.+\)"):
            await rest.markets()
