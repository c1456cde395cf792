"""Alpaca crypto through the whole stack: subscribe ``BTC/USD`` with 2 replicas, read it every way.

The fake venue serves Alpaca next to Binance (``ladder up --venue fake`` does the same); books are
compared with the venue's true book while the venue is stalled, since Alpaca messages carry no id
to ask for a past state by.
"""

from __future__ import annotations

import asyncio
import time
from decimal import Decimal
from typing import Any

import httpx
import pytest
import websockets
from ladder_sdk import Ladder, NotFoundError

from tests.e2e.stack import Stack

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stack")]

ALPACA = "alpaca-crypto"
PAIRS = ("BTC/USD", "ETH/USD")


def book_path(market: str) -> str:
    return f"/v1/books/{ALPACA}/{market.replace('/', '%2F')}"


def read(stack: Stack, key: str, market: str, **params: Any) -> httpx.Response:
    return stack.call(key, "GET", book_path(market), params={"depth": 100, **params})


def test_alpaca_pairs_are_listed_and_validated(stack: Stack) -> None:
    key = stack.tenant_key("alpaca-markets")
    deadline = time.monotonic() + 20
    while True:
        markets = stack.call(key, "GET", "/v1/markets", params={"exchange": ALPACA})
        if markets.status_code == 200 and markets.json().get("markets"):
            break
        assert time.monotonic() < deadline, markets.text
        time.sleep(0.2)
    names = {m["market"] for m in markets.json()["markets"]}
    assert {"BTC/USD", "ETH/USD"} <= names
    unknown = stack.call(key, "POST", "/v1/subscriptions", json={"exchange": ALPACA, "market": "NOPE/USD"})
    assert unknown.status_code == 404, unknown.text
    assert "NOPE/USD" in unknown.json()["error"]["message"]


def test_a_tenant_reads_alpaca_btc_usd_through_every_route(stack: Stack) -> None:
    key = stack.tenant_key("alpaca", max_replicas=2)
    for market in PAIRS:
        created = stack.call(
            key, "POST", "/v1/subscriptions", json={"exchange": ALPACA, "market": market, "replicas": 2}
        )
        assert created.status_code == 201, created.text
    book = stack.wait_synced(key, ALPACA, "BTC%2FUSD", timeout_s=30)
    assert book["market"] == "BTC/USD" and book["exchange"] == ALPACA
    assert Decimal(book["bids"][0][0]) < Decimal(book["asks"][0][0])

    # Both replicas, on different nodes, come to serve it.
    deadline, replicas = time.monotonic() + 20, set[int]()
    while len(replicas) < 2 and time.monotonic() < deadline:
        info = stack.call(key, "GET", book_path("BTC/USD") + "/info")
        assert info.status_code == 200, info.text
        replicas = {r["replica"] for r in info.json()["replicas"] if r["status"] == "synced"}
        time.sleep(0.2)
    assert len(replicas) == 2, info.text

    # update_id is each replica's own count of applied messages: it moves forward.
    first = read(stack, key, "BTC/USD", depth=10).json()
    time.sleep(0.5)
    later = [read(stack, key, "BTC/USD", depth=10).json() for _ in range(5)]
    assert any(b["update_id"] != first["update_id"] for b in later)

    # The SDK (slash symbols quoted for it), and its stream.
    with Ladder(api_key=key, base_url=stack.api) as ladder:
        sdk_book = ladder.book(ALPACA, "BTC/USD", depth=5)
        assert sdk_book.status == "synced" and len(sdk_book.bids) == 5
        assert sdk_book.best_bid is not None and sdk_book.spread is not None and sdk_book.spread > 0
        assert "BTC/USD" in {m.market for m in ladder.markets(ALPACA)}
        streamed = []
        for streamed_book in ladder.stream(ALPACA, "BTC/USD", depth=5):
            streamed.append(streamed_book)
            if len(streamed) == 3:
                break
        assert all(b.market == "BTC/USD" for b in streamed)
        with pytest.raises(NotFoundError):
            ladder.book(ALPACA, "NOPE/USD")

    # The raw stream route.
    async def raw_stream() -> list[Any]:
        url = "ws" + stack.api.removeprefix("http") + "/v1/stream?exchange=alpaca-crypto&market=BTC%2FUSD"
        async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
            return [await asyncio.wait_for(ws.recv(), 10) for _ in range(2)]

    assert len(asyncio.run(raw_stream())) == 2

    # The UBDCC routes.
    asks = stack.call(
        key, "GET", "/get_asks", params={"exchange": ALPACA, "market": "BTC/USD", "limit_count": 3}
    )
    assert asks.status_code == 200, asks.text
    assert asks.json()["result"] == "OK" and len(asks.json()["asks"]) == 3
    listed = stack.call(key, "GET", "/get_depthcache_list")
    assert "BTC/USD" in str(listed.json()), listed.text

    # Every synced Alpaca book served equals the venue's true book (the venue holds still).
    stack.fault(action="stall", venue="alpaca", seconds=3)
    time.sleep(1.2)
    for market in PAIRS:
        served = read(stack, key, market)
        assert served.status_code == 200 and served.json()["status"] == "synced", served.text
        truth = stack.http.get(f"{stack.venue}/_fake/book", params={"venue": "alpaca", "symbol": market})
        assert truth.status_code == 200, truth.text
        for side in ("bids", "asks"):
            levels = served.json()[side]
            assert len(levels) == 100, f"{market} {side}: a whole book is trusted to any depth"
            assert levels == truth.json()[side][:100], f"{market} {side} differ from the venue"
