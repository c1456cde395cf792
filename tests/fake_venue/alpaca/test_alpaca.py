"""Alpaca's crypto stream over a real socket: auth, subscriptions, full books, numbers, every error."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import aiohttp

from fake_venue import FakeVenue
from tests.fake_venue.conftest import small_config
from tests.fake_venue.helpers import control, next_json

RFC3339_NS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z")


async def authed(
    http: aiohttp.ClientSession, fake: FakeVenue, key: str = "key"
) -> aiohttp.ClientWebSocketResponse:
    ws = await http.ws_connect(fake.alpaca_ws_url)
    assert await next_json(ws) == [{"T": "success", "msg": "connected"}]
    await ws.send_json({"action": "auth", "key": key, "secret": "secret"})
    assert await next_json(ws) == [{"T": "success", "msg": "authenticated"}]
    return ws


async def test_subscribe_full_book_then_diffs(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    ws = await authed(http, venue)
    await ws.send_json({"action": "subscribe", "orderbooks": ["BTC/USD", "ETH/USD"], "trades": ["BTC/USD"]})
    assert await next_json(ws) == [
        {
            "T": "subscription", "trades": ["BTC/USD"], "quotes": [], "orderbooks": ["BTC/USD", "ETH/USD"],
            "bars": [], "updatedBars": [], "dailyBars": [],
        }
    ]  # fmt: skip
    first: dict[str, dict[str, Any]] = {}
    raw_texts: list[str] = []
    while len(first) < 2 or len(raw_texts) < 6:
        message = await ws.receive(timeout=3)
        raw_texts.append(message.data)
        for item in json.loads(message.data):
            assert item["T"] == "o" and RFC3339_NS.fullmatch(item["t"])
            first.setdefault(item["S"], item)
    assert all(item.get("r") is True for item in first.values())  # the first message per symbol is the book
    assert len(first["BTC/USD"]["b"]) == 200
    level = first["BTC/USD"]["b"][0]
    assert isinstance(level["p"], float) and isinstance(level["s"], float)  # numbers, not strings
    assert not any('"p":"' in text for text in raw_texts)
    await ws.send_json({"action": "unsubscribe", "orderbooks": ["ETH/USD"]})
    message = await next_json(ws)
    while message[0]["T"] != "subscription":
        message = await next_json(ws)
    assert message[0]["orderbooks"] == ["BTC/USD"]
    await ws.close()


async def test_protocol_errors(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    ws = await http.ws_connect(venue.alpaca_ws_url)
    await next_json(ws)
    await ws.send_json({"action": "subscribe", "orderbooks": ["BTC/USD"]})
    assert await next_json(ws) == [{"T": "error", "code": 401, "msg": "not authenticated"}]
    await ws.send_str("nonsense")
    assert await next_json(ws) == [{"T": "error", "code": 400, "msg": "invalid syntax"}]
    await ws.send_json({"action": "auth", "key": "k", "secret": "s"})
    await next_json(ws)
    await ws.send_json({"action": "auth", "key": "k", "secret": "s"})
    assert await next_json(ws) == [{"T": "error", "code": 403, "msg": "already authenticated"}]
    await ws.send_json({"action": "subscribe", "orderbooks": ["BTCUSD"]})
    assert await next_json(ws) == [{"T": "error", "code": 400, "msg": "invalid syntax"}]
    await ws.send_json({"action": "subscribe", "lulds": ["BTC/USD"]})
    assert await next_json(ws) == [
        {"T": "error", "code": 410, "msg": "invalid subscribe action for this feed"}
    ]
    await control(http, venue, action="alpaca_limits", symbol_limit=1)
    await ws.send_json({"action": "subscribe", "orderbooks": ["BTC/USD", "ETH/USD"]})
    assert await next_json(ws) == [{"T": "error", "code": 405, "msg": "symbol limit exceeded"}]
    await ws.close()


async def test_auth_failures_and_limits(http: aiohttp.ClientSession) -> None:
    fake = FakeVenue(small_config(alpaca_credentials=(("good", "secret"),), alpaca_connection_limit=1))
    await fake.start()
    try:
        ws = await http.ws_connect(fake.alpaca_ws_url)
        await next_json(ws)
        await ws.send_json({"action": "auth", "key": "bad", "secret": "secret"})
        assert await next_json(ws) == [{"T": "error", "code": 402, "msg": "auth failed"}]
        assert (await ws.receive(timeout=3)).type == aiohttp.WSMsgType.CLOSE
        first = await authed(http, fake, key="good")
        second = await http.ws_connect(fake.alpaca_ws_url)
        await next_json(second)
        await second.send_json({"action": "auth", "key": "good", "secret": "secret"})
        assert await next_json(second) == [{"T": "error", "code": 406, "msg": "connection limit exceeded"}]
        late = await http.ws_connect(fake.alpaca_ws_url)
        await next_json(late)
        assert await next_json(late, seconds=3) == [{"T": "error", "code": 404, "msg": "auth timeout"}]
        await first.close()
    finally:
        await fake.stop()


async def test_many_updates_are_batched_into_one_array(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    ws = await authed(http, venue)
    await ws.send_json({"action": "subscribe", "orderbooks": ["DOGE/USD"]})
    await next_json(ws)
    await next_json(ws)
    await control(http, venue, action="burst", venue="alpaca", symbol="DOGE/USD", count=6)
    sizes: list[int] = []
    while sum(sizes) < 6:
        sizes.append(len(await next_json(ws)))
    assert max(sizes) > 1
    await ws.close()


async def test_a_client_that_stops_reading_gets_407_then_is_closed(http: aiohttp.ClientSession) -> None:
    fake = FakeVenue(small_config(levels=5000, alpaca_symbols=20, slow_client_bytes=100_000))
    await fake.start()
    try:
        ws = await authed(http, fake)
        await ws.send_json({"action": "subscribe", "orderbooks": ["*"]})  # ~7 MB of full books, unread
        await asyncio.sleep(0.5)
        await control(http, fake, action="burst", venue="alpaca", count=2)
        errors = []
        message = await ws.receive(timeout=5)
        while message.type == aiohttp.WSMsgType.TEXT:
            errors += [item for item in json.loads(message.data) if item["T"] == "error"]
            message = await ws.receive(timeout=5)
        assert errors == [{"T": "error", "code": 407, "msg": "slow client"}]
        assert message.type == aiohttp.WSMsgType.CLOSE
    finally:
        await fake.stop()


async def test_the_asset_list_checks_keys_and_lists_every_pair(http: aiohttp.ClientSession) -> None:
    fake = FakeVenue(small_config(alpaca_credentials=(("good", "secret"),)))
    await fake.start()
    try:
        url = fake.alpaca_trading_url + "/v2/assets?asset_class=crypto"
        async with http.get(url, headers={"APCA-API-KEY-ID": "bad", "APCA-API-SECRET-KEY": "x"}) as r:
            assert r.status == 403
        good = {"APCA-API-KEY-ID": "good", "APCA-API-SECRET-KEY": "secret"}
        async with http.get(url, headers=good) as r:
            assets = await r.json()
        assert len(assets) == 12 and assets[0]["symbol"] == "BTC/USD"
        assert all(a["class"] == "crypto" and a["status"] == "active" and a["tradable"] for a in assets)
        async with http.get(fake.alpaca_trading_url + "/v2/assets", headers=good) as r:
            assert await r.json() == [], "no equities here"
    finally:
        await fake.stop()


async def test_every_location_serves_the_feed(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    for location in ("us", "us-1", "eu-1"):
        ws = await http.ws_connect(f"{venue.alpaca_stream_url}/v1beta3/crypto/{location}")
        assert await next_json(ws) == [{"T": "success", "msg": "connected"}]
        await ws.close()


async def test_a_reset_storm_sends_whole_books_between_updates(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    ws = await authed(http, venue)
    await ws.send_json({"action": "subscribe", "orderbooks": ["ETH/USD"]})
    await next_json(ws)
    await control(http, venue, action="rate", venue="alpaca", rate=0)
    await asyncio.sleep(0.2)
    while True:  # drain what was sent before the venue went quiet
        try:
            await ws.receive(timeout=0.3)
        except TimeoutError:
            break
    await control(http, venue, action="alpaca_reset", symbol="ETH/USD", count=4)
    kinds: list[bool] = []
    while len(kinds) < 7:
        kinds += [bool(item.get("r")) for item in await next_json(ws)]
    assert kinds == [True, False, True, False, True, False, True]
    await ws.close()
