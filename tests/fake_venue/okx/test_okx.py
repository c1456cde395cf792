"""The fake OKX: the books channel as a client sees it, its limits, its faults and its REST."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import aiohttp

from fake_venue import FakeVenue
from tests.fake_venue.conftest import small_config
from tests.fake_venue.helpers import DecimalBook, control, get_json, next_json


async def books(ws: aiohttp.ClientWebSocketResponse, symbol: str) -> dict[str, Any]:
    """The next push of ``symbol``'s books channel (answers skipped)."""
    while True:
        message = await next_json(ws)
        if message.get("arg", {}).get("instId") == symbol and "data" in message:
            return message  # type: ignore[no-any-return]


async def subscribed(
    http: aiohttp.ClientSession, venue: FakeVenue, *symbols: str
) -> aiohttp.ClientWebSocketResponse:
    ws = await http.ws_connect(venue.okx_ws_url + "/ws/v5/public")
    args = [{"channel": "books", "instId": symbol} for symbol in symbols]
    await ws.send_json({"id": "1", "op": "subscribe", "args": args})
    return ws


async def test_subscribe_answers_then_a_snapshot_then_chained_updates(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    ws = await subscribed(http, venue, "BTC-USDT")
    answer = await next_json(ws)
    assert answer["id"] == "1" and answer["event"] == "subscribe"
    snapshot = await books(ws, "BTC-USDT")
    assert snapshot["action"] == "snapshot"
    [data] = snapshot["data"]
    assert data["prevSeqId"] == -1 and data["checksum"] == 0
    assert all(len(level) == 4 and level[2] == "0" for level in data["bids"] + data["asks"])
    book, last = DecimalBook([lv[:2] for lv in data["bids"]], [lv[:2] for lv in data["asks"]]), data["seqId"]
    for _ in range(10):
        [update] = (await books(ws, "BTC-USDT"))["data"]
        assert update["prevSeqId"] == last and update["seqId"] >= last
        last = update["seqId"]
        book.apply([lv[:2] for lv in update["bids"]], [lv[:2] for lv in update["asks"]])
    status, _, truth = await get_json(
        http, f"{venue.url}/_fake/book?venue=okx&symbol=BTC-USDT&update_id={last}"
    )
    assert status == 200
    assert book.same_as(DecimalBook(truth["bids"], truth["asks"]))
    await ws.close()


async def test_ping_pong_errors_and_unknown_instruments(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    ws = await http.ws_connect(venue.okx_ws_url + "/ws/v5/public")
    await ws.send_str("ping")
    assert (await ws.receive(timeout=3)).data == "pong"
    await ws.send_str("{not json")
    assert (await next_json(ws))["code"] == "60012"
    await ws.send_json({"id": "2", "op": "subscribe", "args": [{"channel": "books", "instId": "NOPE-USDT"}]})
    answer = await next_json(ws)
    assert answer["event"] == "error" and answer["code"] == "60018" and answer["id"] == "2"
    await ws.close()


async def test_heartbeats_restarts_and_the_shutdown_notice(http: aiohttp.ClientSession) -> None:
    venue = FakeVenue(small_config(okx_heartbeat_s=0.3))
    await venue.start()
    try:
        ws = await subscribed(http, venue, "ETH-USDT")
        [snapshot] = (await books(ws, "ETH-USDT"))["data"]
        await control(http, venue, action="rate", venue="okx", rate=0)
        last = snapshot["seqId"]
        while True:  # drain what was on its way, then the heartbeat comes
            [data] = (await books(ws, "ETH-USDT"))["data"]
            if not data["bids"] and not data["asks"] and data["prevSeqId"] == data["seqId"]:
                break
            last = data["seqId"]
        assert data["seqId"] >= last
        await control(http, venue, action="sequence_restart", venue="okx", symbol="ETH-USDT")
        await control(http, venue, action="burst", venue="okx", symbol="ETH-USDT", count=2)
        [restart] = (await books(ws, "ETH-USDT"))["data"]
        while not restart["bids"] and not restart["asks"]:
            [restart] = (await books(ws, "ETH-USDT"))["data"]
        assert restart["seqId"] < restart["prevSeqId"]
        [after] = (await books(ws, "ETH-USDT"))["data"]
        assert after["prevSeqId"] == restart["seqId"]
        await control(http, venue, action="server_shutdown", venue="okx")
        while (notice := await next_json(ws)).get("event") != "notice":
            pass
        assert notice["code"] == "64008"
        message = await ws.receive(timeout=5)
        while message.type == aiohttp.WSMsgType.TEXT:
            message = await ws.receive(timeout=5)
        assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    finally:
        await venue.stop()


async def test_connection_attempts_are_limited_per_second(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    statuses = []
    for _ in range(4):
        try:
            ws = await http.ws_connect(venue.okx_ws_url + "/ws/v5/public")
            statuses.append(101)
            await ws.close()
        except aiohttp.WSServerHandshakeError as error:
            statuses.append(error.status)
    assert statuses == [101, 101, 101, 429]
    await asyncio.sleep(1.05)
    ws = await http.ws_connect(venue.okx_ws_url + "/ws/v5/public")
    await ws.close()


async def test_rest_instruments_and_books_at_the_streams_seq_id(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    status, _, spot = await get_json(http, venue.okx_rest_url + "/api/v5/public/instruments?instType=SPOT")
    assert status == 200 and spot["code"] == "0"
    assert {"instId": "BTC-USDT", "state": "live"}.items() <= spot["data"][0].items()
    _, _, swaps = await get_json(http, venue.okx_rest_url + "/api/v5/public/instruments?instType=SWAP")
    assert all(entry["instId"].endswith("-SWAP") and entry["uly"] for entry in swaps["data"])
    status, _, books_ = await get_json(http, venue.okx_rest_url + "/api/v5/market/books?instId=BTC-USDT&sz=5")
    [book] = books_["data"]
    assert status == 200 and len(book["bids"]) == 5 and isinstance(book["seqId"], int)
    assert Decimal(book["bids"][0][0]) < Decimal(book["asks"][0][0])
    _, _, missing = await get_json(http, venue.okx_rest_url + "/api/v5/market/books?instId=NOPE-USDT")
    assert missing["code"] == "51001"
    statuses = [
        (await get_json(http, venue.okx_rest_url + "/api/v5/market/books?instId=BTC-USDT"))[0]
        for _ in range(45)
    ]
    assert statuses.count(429) >= 5, "40 books requests per 2 s"
