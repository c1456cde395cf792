"""A client that syncs the documented way ends with exactly the book the truth endpoint reports."""

from __future__ import annotations

from typing import Any

import aiohttp

from fake_venue import FakeVenue

from .conftest import small_config
from .helpers import DecimalBook, get_json, next_event, next_json


async def truth(http: aiohttp.ClientSession, venue: FakeVenue, query: str) -> tuple[int, Any]:
    status, _, body = await get_json(http, f"{venue.url}/_fake/book?{query}")
    return status, body


async def test_spot_snapshot_plus_diffs_equals_truth(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with http.ws_connect(f"{venue.spot_ws_url}/ws/ethbtc@depth@100ms") as ws:
        buffered = [await next_event(ws)]
        _, _, snapshot = await get_json(http, f"{venue.url}/api/v3/depth?symbol=ETHBTC&limit=5000")
        book = DecimalBook(snapshot["bids"], snapshot["asks"])
        book_id = snapshot["lastUpdateId"]
        assert snapshot["lastUpdateId"] >= buffered[0]["U"] - 1
        applied = 0
        while applied < 20:
            event = buffered.pop(0) if buffered else await next_event(ws)
            if event["u"] <= book_id:
                continue
            assert event["U"] == book_id + 1
            book.apply(event["b"], event["a"])
            book_id = event["u"]
            applied += 1
    status, body = await truth(http, venue, f"venue=spot&symbol=ETHBTC&update_id={book_id}")
    assert status == 200 and body["update_id"] == book_id
    assert book.same_as(DecimalBook(body["bids"], body["asks"]))
    assert body["bids"][0][0].endswith("000") and len(body["bids"][0][0].split(".")[1]) == 8


async def test_futures_snapshot_plus_diffs_equals_truth(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(f"{venue.futures_ws_url}/stream?streams=solusdt@depth@100ms") as ws:
        buffered = [await next_event(ws)]
        _, _, snapshot = await get_json(http, f"{venue.url}/fapi/v1/depth?symbol=SOLUSDT&limit=1000")
        book = DecimalBook(snapshot["bids"], snapshot["asks"])
        book_id = snapshot["lastUpdateId"]
        synced = False
        applied = 0
        while applied < 20:
            event = buffered.pop(0) if buffered else await next_event(ws)
            if event["u"] < book_id:
                continue
            if not synced:
                assert event["U"] <= book_id <= event["u"]
                synced = True
            else:
                assert event["pu"] == book_id
            book.apply(event["b"], event["a"])
            book_id = event["u"]
            applied += 1
    status, body = await truth(http, venue, f"venue=futures&symbol=SOLUSDT&update_id={book_id}")
    assert status == 200
    assert book.same_as(DecimalBook(body["bids"], body["asks"]))


async def test_alpaca_reset_plus_diffs_equals_truth_by_t(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(venue.alpaca_ws_url) as ws:
        await next_json(ws)
        await ws.send_json({"action": "auth", "key": "k", "secret": "s"})
        await next_json(ws)
        await ws.send_json({"action": "subscribe", "orderbooks": ["ETH/USD"]})
        await next_json(ws)
        book: DecimalBook | None = None
        last_t = ""
        applied = 0
        while applied < 15:
            for message in await next_json(ws):
                levels = (
                    [[lv["p"], lv["s"]] for lv in message["b"]],
                    [[lv["p"], lv["s"]] for lv in message["a"]],
                )
                if message.get("r"):
                    book = DecimalBook(*levels)
                else:
                    assert book is not None
                    book.apply(*levels)
                last_t = message["t"]
                applied += 1
    assert book is not None
    status, body = await truth(http, venue, f"venue=alpaca&symbol=ETH/USD&t={last_t}")
    assert status == 200 and body["t"] == last_t
    assert book.same_as(DecimalBook(body["bids"], body["asks"]))


async def test_limit_latest_and_errors(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    status, body = await truth(http, venue, "venue=spot&symbol=BTCUSDT&limit=3")
    assert status == 200 and len(body["bids"]) == len(body["asks"]) == 3
    latest = body["update_id"]
    assert (await truth(http, venue, f"venue=spot&symbol=BTCUSDT&update_id={latest + 10**6}"))[0] == 404
    assert (await truth(http, venue, f"venue=spot&symbol=BTCUSDT&update_id={latest - 1}"))[0] == 404
    assert (await truth(http, venue, "venue=spot&symbol=NOPE"))[0] == 404
    assert (await truth(http, venue, "venue=moon&symbol=BTCUSDT"))[0] == 400


async def test_expired_history_is_410(http: aiohttp.ClientSession) -> None:
    fake = FakeVenue(small_config(history_max_events=5, history_min_events=5))
    await fake.start()
    try:
        first = (await truth(http, fake, "venue=spot&symbol=BTCUSDT"))[1]["update_id"]
        async with http.post(
            fake.url + "/_fake/control",
            json={"action": "burst", "venue": "spot", "symbol": "BTCUSDT", "count": 10},
        ) as response:
            assert response.status == 200
        assert (await truth(http, fake, f"venue=spot&symbol=BTCUSDT&update_id={first}"))[0] == 410
    finally:
        await fake.stop()
