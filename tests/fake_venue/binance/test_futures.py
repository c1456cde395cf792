"""Binance USD-M futures over real sockets: /fapi REST, /public streams, ids with holes chained by pu."""

from __future__ import annotations

import itertools
from decimal import Decimal

import aiohttp
import pytest

from fake_venue import FakeVenue
from tests.fake_venue.helpers import get_json, next_event, next_json


@pytest.mark.parametrize(
    ("limit", "served", "weight"),
    [("5", 5, 2), ("50", 50, 2), ("100", 100, 5), ("7", 10, 2), ("2000", 200, 20)],
)
async def test_depth_limits_weights_and_times(
    venue: FakeVenue, http: aiohttp.ClientSession, limit: str, served: int, weight: int
) -> None:
    status, headers, body = await get_json(http, f"{venue.url}/fapi/v1/depth?symbol=BTCUSDT&limit={limit}")
    assert status == 200
    assert headers["X-MBX-USED-WEIGHT-1M"] == str(weight)
    assert list(body) == ["lastUpdateId", "E", "T", "bids", "asks"]
    assert body["T"] <= body["E"]
    assert len(body["bids"]) == served
    price, qty = body["bids"][0]
    assert len(price.split(".")[1]) == 2 and len(qty.split(".")[1]) == 3  # BTCUSDT: tick 0.10, step 0.001


async def test_default_depth_is_500_and_unknown_symbol(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    _, headers, body = await get_json(http, f"{venue.url}/fapi/v1/depth?symbol=ETHUSDT")
    assert headers["X-MBX-USED-WEIGHT-1M"] == "10" and len(body["asks"]) == 200  # the whole 200-level side
    status, _, body = await get_json(http, f"{venue.url}/fapi/v1/depth?symbol=ETHUSD")
    assert (status, body) == (400, {"code": -1121, "msg": "Invalid symbol."})


async def test_exchange_info_has_perpetuals_a_dated_contract_and_a_settling_one(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    status, headers, info = await get_json(http, f"{venue.url}/fapi/v1/exchangeInfo")
    assert status == 200 and headers["X-MBX-USED-WEIGHT-1M"] == "1"
    assert info["rateLimits"][0]["limit"] == 2400
    by_name = {entry["symbol"]: entry for entry in info["symbols"]}
    assert by_name["BTCUSDT"]["contractType"] == "PERPETUAL"
    dated = [entry for name, entry in by_name.items() if name.startswith("BTCUSDT_")]
    assert len(dated) == 1 and dated[0]["contractType"] == "CURRENT_QUARTER" and dated[0]["pair"] == "BTCUSDT"
    assert by_name["FTTUSDT"]["status"] == "SETTLING"
    sol_filter = next(f for f in by_name["SOLUSDT"]["filters"] if f["filterType"] == "PRICE_FILTER")
    assert sol_filter["tickSize"] == "0.0100"


async def test_pu_chains_while_ids_jump(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with http.ws_connect(f"{venue.futures_ws_url}/stream?streams=btcusdt@depth@100ms") as ws:
        events = [await next_event(ws) for _ in range(15)]
    assert set(events[0]) == {"e", "E", "T", "s", "U", "u", "pu", "b", "a"}
    for earlier, later in itertools.pairwise(events):
        assert later["pu"] == earlier["u"]
        assert later["U"] > earlier["u"] + 1  # never contiguous: a client using the spot rule fails


async def test_merged_stream_keeps_the_pu_chain(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with http.ws_connect(f"{venue.futures_ws_url}/ws/ethusdt@depth") as ws:
        events = [await next_event(ws) for _ in range(4)]
    for earlier, later in itertools.pairwise(events):
        assert later["pu"] == earlier["u"]


async def test_zero_quantity_is_written_as_0(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    zeros: set[str] = set()
    async with http.ws_connect(f"{venue.futures_ws_url}/ws/btcusdt@depth@100ms") as ws:
        while not zeros:
            event = await next_event(ws)
            zeros |= {qty for _, qty in event["b"] + event["a"] if Decimal(qty) == 0}
    assert zeros == {"0"}


async def test_invalid_json_gets_an_error_then_a_disconnect(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(f"{venue.futures_ws_url}/ws") as ws:
        await ws.send_str("{")
        reply = await next_json(ws)
        assert reply["error"]["code"] == 3 and reply["id"] is None
        closing = await ws.receive(timeout=3)
    assert closing.type == aiohttp.WSMsgType.CLOSE


async def test_futures_request_ids_must_be_unsigned(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with http.ws_connect(f"{venue.futures_ws_url}/ws") as ws:
        await ws.send_json({"method": "LIST_SUBSCRIPTIONS", "id": "abc"})
        reply = await next_json(ws)
    assert reply["error"]["code"] == 2 and reply["id"] is None
