"""A served exchange whose market list could not be fetched: /readyz says so and why, and a
subscription to it is 503 catalog_unavailable with Retry-After, never 404 unknown_exchange."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis

from book_store.catalog import CatalogState, MarketCatalog
from ladder_process.clock import now_ms
from tests.read_functions.helpers import Stack, open_stack, validate

REASON = "binance.com-futures /fapi/v1/exchangeInfo: cannot resolve fapi.binance.com (no network, or no DNS)"


@pytest.fixture
async def stack(clean_redis_url: str, redis_client: redis.Redis) -> AsyncIterator[Stack]:
    """A read API that re-reads settled catalog states every half second, not every 10 s."""
    stack = await open_stack(clean_redis_url, redis_client, catalog_refresh_s=0.5)
    yield stack
    await stack.close()


async def readyz(stack: Stack) -> tuple[int, dict[str, Any], dict[str, str]]:
    async with stack.http.get(f"{stack.url}/readyz") as r:
        return r.status, await r.json(), dict(r.headers)


async def readyz_when(stack: Stack, status: int) -> tuple[dict[str, Any], dict[str, str]]:
    """The answer of /readyz once it is ``status`` (the catalog states are re-read every second)."""
    deadline = time.monotonic() + 5
    while True:
        got, body, headers = await readyz(stack)
        if got == status:
            return body, headers
        assert time.monotonic() < deadline, (got, body)
        await asyncio.sleep(0.1)


async def test_an_unreachable_venue_is_named_by_readyz_and_answered_503(stack: Stack) -> None:
    body, _ = await readyz_when(stack, 200)  # catalogs written directly: no state, ready
    validate(body, "Readiness")

    now = now_ms()
    failed = CatalogState(
        "binance.com-futures",
        "unavailable",
        now - 5000,
        now,
        reason=REASON,
        retry_at_ms=now + 7000,
        failures=2,
    )
    await MarketCatalog(stack.store).record(failed)
    await MarketCatalog(stack.store).record(CatalogState("binance.com", "loaded", now, now, markets=2))

    body, headers = await readyz_when(stack, 503)
    validate(body, "NotReady")
    assert body["status"] == "not_ready" and body["error"]["code"] == "catalog_unavailable"
    assert f"binance.com-futures: market list not loaded ({REASON})" == body["error"]["message"]
    assert body["exchanges"]["binance.com-futures"]["failures"] == 2
    assert body["exchanges"]["binance.com"]["phase"] == "loaded"
    assert 1 <= int(headers["Retry-After"]) <= 7

    _, key = await stack.tenant()
    tenant = {"Authorization": f"Bearer {key}"}
    for path, body_ in [
        ("/v1/subscriptions", {"exchange": "binance.com-futures", "market": "BTCUSDT"}),
        ("/v1/subscriptions/bulk", {"exchange": "binance.com-futures", "quote": "USDT"}),
    ]:
        async with stack.http.post(f"{stack.url}{path}", json=body_, headers=tenant) as r:
            answer = await r.json()
            assert r.status == 503, answer
            assert answer["error"]["code"] == "catalog_unavailable"
            assert REASON in answer["error"]["message"]
            assert 1 <= int(r.headers["Retry-After"]) <= 7
    async with stack.http.get(f"{stack.url}/v1/books/binance.com-futures/BTCUSDT", headers=tenant) as r:
        assert r.status == 503 and (await r.json())["error"]["code"] == "catalog_unavailable"
    # The UBDCC routes keep UBDCC's envelope: "unavailable, retry" (#5000), not "unknown market".
    created = "/create_depthcache?exchange=binance.com-futures&market=BTCUSDT"
    async with stack.http.get(f"{stack.compat_url}{created}") as r:
        answer = await r.json()
        assert (answer["result"], answer["error_id"]) == ("ERROR", "#5000") and REASON in answer["message"]

    # An exchange nobody serves is still unknown, and the answer says which are served.
    body_ = {"exchange": "binanse.com", "market": "ETHBTC"}
    async with stack.http.get(f"{stack.url}/v1/books/binanse.com/ETHBTC", headers=tenant) as r:
        answer = await r.json()
        assert r.status == 404 and answer["error"]["code"] == "unknown_exchange"
        assert "served here: alpaca-crypto, binance.com, binance.com-futures" in answer["error"]["message"]
    async with stack.http.post(f"{stack.url}/v1/subscriptions", json=body_, headers=tenant) as r:
        assert r.status == 404

    # A failed refresh of a list that is still held keeps the worker ready.
    now = now_ms()
    kept = CatalogState("binance.com", "unavailable", now, now, reason="x", retry_at_ms=now + 1000, markets=2)
    await MarketCatalog(stack.store).record(kept)
    await MarketCatalog(stack.store).record(
        CatalogState("binance.com-futures", "loaded", now, now, markets=9)
    )
    body, _ = await readyz_when(stack, 200)
    assert body["exchanges"]["binance.com"]["phase"] == "unavailable"
