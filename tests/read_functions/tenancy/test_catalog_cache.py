"""The catalog cache re-reads an exchange's markets only when the catalog's digest changed."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as redis

from book_store.catalog import MarketCatalog, MarketInfo
from book_store.connect import StoreClient
from control_plane.errors import UnknownMarketError
from ladder_process.errors import StoreUnavailableError
from read_functions.tenancy.catalog_cache import CatalogCache
from tests.stores import command_calls

ETH = MarketInfo("binance.com", "ETHBTC", "TRADING", "ETH", "BTC")
BNB = MarketInfo("binance.com", "BNBBTC", "TRADING", "BNB", "BTC")


async def hgetall_calls(client: StoreClient) -> int:
    return (await command_calls(client)).get("hgetall", 0)


async def refreshed(cache: CatalogCache) -> None:
    """Let the refresh period pass, trigger the background check, and let it finish."""
    await asyncio.sleep(0.06)
    await cache.market("binance.com", "ETHBTC")
    await asyncio.sleep(0.05)


async def test_an_unchanged_catalog_is_not_read_again(redis_client: redis.Redis) -> None:
    catalog = MarketCatalog(redis_client)
    await catalog.replace("binance.com", [ETH])
    cache = CatalogCache(redis_client, refresh_s=0.05, recheck_s=10.0)
    assert await cache.market("binance.com", "ETHBTC") == ETH
    reads = await hgetall_calls(redis_client)
    listing = cache.listing("binance.com")

    await catalog.replace("binance.com", [ETH])  # rewritten by an ingest node, but the same
    await refreshed(cache)
    assert await hgetall_calls(redis_client) == reads
    assert cache.listing("binance.com") is listing  # what was checked against it still holds
    with pytest.raises(UnknownMarketError):
        await cache.market("binance.com", "BNBBTC")

    await catalog.replace("binance.com", [ETH, BNB])  # a new listing
    await refreshed(cache)
    assert await hgetall_calls(redis_client) == reads + 1
    assert await cache.market("binance.com", "BNBBTC") == BNB
    assert cache.listing("binance.com") is not listing


async def test_a_catalog_gone_from_the_store_is_not_an_empty_venue(redis_client: redis.Redis) -> None:
    """A book store restarted empty loses the catalogs until the nodes publish them again:
    known markets keep validating, and an unknown name is 'try again', not 'no such market'."""
    await MarketCatalog(redis_client).replace("binance.com", [ETH])
    cache = CatalogCache(redis_client, refresh_s=0.05, recheck_s=0.01)
    assert await cache.market("binance.com", "ETHBTC") == ETH

    await redis_client.flushdb()  # the store came back empty
    await refreshed(cache)
    assert await cache.market("binance.com", "ETHBTC") == ETH
    assert await cache.exchanges() == ["binance.com"]
    await asyncio.sleep(0.02)
    with pytest.raises(StoreUnavailableError):
        await cache.market("binance.com", "BNBBTC")

    await MarketCatalog(redis_client).replace("binance.com", [ETH, BNB])  # republished
    await asyncio.sleep(0.02)
    assert await cache.market("binance.com", "BNBBTC") == BNB
