"""A book's ref skips only the checks whose answer cannot have changed, and never carries one
caller's answer to another."""

from __future__ import annotations

import asyncio
import gc
import time

import pytest
import redis.asyncio as redis

from book_store.catalog import MarketCatalog
from book_store.schema import InvalidBookIdError
from read_functions.books.read_memo import ReadMemos
from read_functions.tenancy.access import subscriptions_changed
from tests.read_functions.helpers import BTC, ETH, MARKETS, Stack, open_stack, snapshot


def test_a_name_has_one_ref_and_an_invalid_name_none() -> None:
    refs = ReadMemos()
    ref = refs.get("binance.com", "ETHBTC")
    assert refs.get("binance.com", "ETHBTC") is ref
    assert ref.key == ETH
    with pytest.raises(InvalidBookIdError):
        refs.get("binance.com", "ETH|BTC")
    assert len(refs) == 1


def test_refs_past_their_limit_are_dropped_not_grown() -> None:
    refs = ReadMemos(kept=3)
    first = refs.get("binance.com", "M0")
    for n in range(1, 4):
        refs.get("binance.com", f"M{n}")
    assert len(refs) == 1
    assert refs.get("binance.com", "M0") is not first  # a new ref: it remembers nothing yet


async def status_of(stack: Stack, headers: dict[str, str], market: str = "ETHBTC") -> int:
    async with stack.http.get(f"{stack.url}/v1/books/binance.com/{market}", headers=headers) as r:
        await r.read()
        return r.status


async def test_one_tenants_entitlement_never_lets_another_read(stack: Stack) -> None:
    subscribed = await stack.subscriber(ETH)
    other = await stack.subscriber(BTC)
    await stack.publish(ETH, 0, snapshot(1))
    for _ in range(2):
        assert await status_of(stack, subscribed) == 200
        assert await status_of(stack, other) == 403


async def test_a_market_delisted_after_reads_is_refused_once_the_catalog_reloads(
    clean_redis_url: str, redis_client: redis.Redis
) -> None:
    stack = await open_stack(clean_redis_url, redis_client, catalog_refresh_s=0.05)
    try:
        headers = await stack.subscriber(ETH)
        await stack.publish(ETH, 0, snapshot(1))
        assert await status_of(stack, headers) == 200
        remaining = [m for m in MARKETS if m.exchange == "binance.com" and m.market != "ETHBTC"]
        await MarketCatalog(redis_client).replace("binance.com", remaining)
        deadline = time.monotonic() + 3
        while await status_of(stack, headers) == 200:  # the reload runs in the background
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        assert await status_of(stack, headers) == 404
    finally:
        await stack.close()


async def test_a_dropped_entry_is_never_served_through_a_ref(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    assert await status_of(stack, headers) == 200
    ref = stack.deps.refs.get("binance.com", "ETHBTC")
    assert ref.entry is not None
    dropped = ref.entry()
    assert dropped is not None and dropped.live
    await stack.drop_feed()
    assert not dropped.live
    await stack.publish(ETH, 0, snapshot(2))
    deadline = time.monotonic() + 5
    while True:
        async with stack.http.get(f"{stack.url}/v1/books/binance.com/ETHBTC", headers=headers) as r:
            if (await r.json())["update_id"] == 2:
                break
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    while not stack.deps.books.following:  # until then reads are not cached, and refs keep none
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    assert await status_of(stack, headers) == 200
    assert ref.entry is not None
    current = ref.entry()
    assert current is not None and current is not dropped and current.live


async def test_a_ref_keeps_nothing_it_was_checked_against_alive(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    assert await status_of(stack, headers) == 200
    ref = stack.deps.refs.get("binance.com", "ETHBTC")
    tenant_id = (await stack.deps.access.principal(headers["X-API-Key"], source="127.0.0.1")).tenant_id
    assert tenant_id is not None and ref.listed_in is not None and ref.entitled_in is not None
    assert ref.listed_in() is stack.deps.catalog.listing("binance.com")
    assert ref.entitled_in() is await stack.deps.access.entitlements(tenant_id)
    stack.deps.access.apply(subscriptions_changed(tenant_id))  # the tenant's set is dropped
    gc.collect()
    assert ref.entitled_in() is None
    assert await status_of(stack, headers) == 200  # checked in full against the reloaded set
    assert ref.entitled_in() is await stack.deps.access.entitlements(tenant_id)
