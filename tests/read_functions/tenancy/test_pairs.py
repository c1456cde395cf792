"""A pair's markets come from the catalogues (base, quote, kind), indexed once per listing."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as redis

from book_store.catalog import FUTURE, PERPETUAL, UNKNOWN_KIND, MarketCatalog, MarketInfo
from control_plane.errors import UnknownExchangeError
from read_functions.tenancy.catalog_cache import CatalogCache
from read_functions.tenancy.pairs import PairMarkets

OKX = [
    MarketInfo("okx", "BTC-USDT", "TRADING", "BTC", "USDT"),
    MarketInfo("okx", "BTC-USDT-SWAP", "TRADING", "BTC", "USDT", PERPETUAL),
    MarketInfo("okx", "BTC-USDT-261225", "TRADING", "BTC", "USDT", FUTURE),
    MarketInfo("okx", "BTC-USDT-OLD", "TRADING", "BTC", "USDT", UNKNOWN_KIND),
    MarketInfo("okx", "btc-usdc", "BREAK", "btc", "usdc"),
]


async def test_a_pair_is_the_spot_markets_its_catalogue_says_trade_it(redis_client: redis.Redis) -> None:
    await MarketCatalog(redis_client).replace("okx", OKX)
    pairs = PairMarkets(CatalogCache(redis_client))
    assert [m.market for m in await pairs.markets("okx", "BTC", "USDT")] == ["BTC-USDT"]
    assert [m.market for m in await pairs.markets("okx", "BTC", "USDC")] == ["btc-usdc"]  # any case
    assert await pairs.markets("okx", "ETH", "USDT") == ()
    assert await pairs.exchanges() == ["okx"]
    with pytest.raises(UnknownExchangeError):
        await pairs.markets("nosuch", "BTC", "USDT")


async def test_a_replaced_listing_is_indexed_again(redis_client: redis.Redis) -> None:
    catalog = MarketCatalog(redis_client)
    await catalog.replace("okx", OKX[:1])
    cache = CatalogCache(redis_client, refresh_s=0.05, recheck_s=10.0)
    pairs = PairMarkets(cache)
    assert [m.market for m in await pairs.markets("okx", "ETH", "USDT")] == []
    await catalog.replace("okx", [*OKX[:1], MarketInfo("okx", "ETH-USDT", "TRADING", "ETH", "USDT")])
    for _ in range(100):  # the cache notices the new digest in the background
        await asyncio.sleep(0.06)
        if await pairs.markets("okx", "ETH", "USDT"):
            break
    assert [m.market for m in await pairs.markets("okx", "ETH", "USDT")] == ["ETH-USDT"]
