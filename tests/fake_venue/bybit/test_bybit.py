"""The fake Bybit: orderbook topics per category, answers, limits, restarts and the REST book."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import aiohttp

from fake_venue import FakeVenue
from tests.fake_venue.helpers import DecimalBook, control, get_json, next_json


async def pushes(ws: aiohttp.ClientWebSocketResponse, topic: str) -> dict[str, Any]:
    while True:
        message = await next_json(ws)
        if message.get("topic") == topic:
            return message  # type: ignore[no-any-return]


async def test_a_snapshot_of_the_topics_depth_then_contiguous_deltas(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    ws = await http.ws_connect(venue.bybit_linear_ws_url)
    await ws.send_json({"req_id": "1", "op": "subscribe", "args": ["orderbook.50.BTCUSDT"]})
    answer = await next_json(ws)
    assert answer["success"] is True and answer["req_id"] == "1" and answer["op"] == "subscribe"
    snapshot = await pushes(ws, "orderbook.50.BTCUSDT")
    assert snapshot["type"] == "snapshot" and len(snapshot["data"]["b"]) == 50
    book, last = DecimalBook(snapshot["data"]["b"], snapshot["data"]["a"]), snapshot["data"]["u"]
    for _ in range(10):
        delta = await pushes(ws, "orderbook.50.BTCUSDT")
        assert delta["type"] == "delta" and delta["data"]["u"] == last + 1
        last = delta["data"]["u"]
        book.apply(delta["data"]["b"], delta["data"]["a"])
    _, _, truth = await get_json(
        http, f"{venue.url}/_fake/book?venue=bybit-linear&symbol=BTCUSDT&update_id={last}"
    )
    true = DecimalBook(truth["bids"], truth["asks"])
    # Deltas carry every change; what the client knows for sure ends at the snapshot's edge.
    edge_bid, edge_ask = Decimal(snapshot["data"]["b"][-1][0]), Decimal(snapshot["data"]["a"][-1][0])
    assert {p: q for p, q in book.bids.items() if p >= edge_bid} == {
        p: q for p, q in true.bids.items() if p >= edge_bid
    }
    assert {p: q for p, q in book.asks.items() if p <= edge_ask} == {
        p: q for p, q in true.asks.items() if p <= edge_ask
    }
    await ws.close()


async def test_spot_takes_ten_topics_a_request_and_unknown_topics_fail(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    ws = await http.ws_connect(venue.bybit_spot_ws_url)
    await ws.send_json(
        {"req_id": "1", "op": "subscribe", "args": [f"orderbook.1000.X{i}" for i in range(11)]}
    )
    assert (await next_json(ws))["success"] is False
    await ws.send_json({"req_id": "2", "op": "subscribe", "args": ["orderbook.1000.NOPEUSDT"]})
    refused = await next_json(ws)
    assert refused["success"] is False and "NOPEUSDT" in refused["ret_msg"]
    await ws.send_json({"req_id": "3", "op": "ping"})
    pong = await next_json(ws)
    assert pong["ret_msg"] == "pong" and pong["op"] == "ping"
    await ws.close()


async def test_a_restart_sends_a_u_1_snapshot_and_counts_on(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    ws = await http.ws_connect(venue.bybit_spot_ws_url)
    await ws.send_json({"op": "subscribe", "args": ["orderbook.1000.ETHUSDT"]})
    await pushes(ws, "orderbook.1000.ETHUSDT")
    await control(http, venue, action="rate", venue="bybit", rate=0)
    await control(http, venue, action="sequence_restart", venue="bybit", symbol="ETHUSDT")
    restart = await pushes(ws, "orderbook.1000.ETHUSDT")
    while restart["type"] != "snapshot":
        restart = await pushes(ws, "orderbook.1000.ETHUSDT")
    assert restart["data"]["u"] == 1
    await control(http, venue, action="burst", venue="bybit", symbol="ETHUSDT", count=1)
    assert (await pushes(ws, "orderbook.1000.ETHUSDT"))["data"]["u"] == 2
    _, _, rest = await get_json(
        http, f"{venue.bybit_rest_url}/v5/market/orderbook?category=spot&symbol=ETHUSDT&limit=3"
    )
    assert rest["retCode"] == 0 and rest["result"]["u"] == 2 and len(rest["result"]["b"]) == 3
    await ws.close()


async def test_rest_instruments_per_category_and_errors(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    _, _, linear = await get_json(
        http, venue.bybit_linear_rest_url + "/v5/market/instruments-info?category=linear"
    )
    assert linear["retCode"] == 0 and linear["result"]["category"] == "linear"
    assert linear["result"]["list"][0]["status"] == "Trading"
    _, _, wrong = await get_json(http, venue.bybit_rest_url + "/v5/market/instruments-info?category=linear")
    assert wrong["retCode"] == 10001, "the spot venue answers for spot only"
    _, _, missing = await get_json(
        http, venue.bybit_rest_url + "/v5/market/orderbook?category=spot&symbol=NOPE"
    )
    assert missing["retCode"] == 10001
