"""Binance spot over real sockets: REST snapshots and exchangeInfo, stream shapes and the request protocol."""

from __future__ import annotations

import asyncio
import itertools
from decimal import Decimal

import aiohttp
import pytest

from fake_venue import FakeVenue
from tests.fake_venue.helpers import get_json, next_event, next_json

REAL_NAMES = ["BTCUSDT", "ETHUSDT", "ETHBTC", "BNBBTC", "BNBUSDT"]
REAL_NAMES += ["SOLUSDT", "XRPUSDT", "ADAUSDT", "DOGEUSDT", "LTCUSDT"]


@pytest.mark.parametrize(
    ("limit", "levels", "weight"), [("3", 3, 5), ("100", 100, 5), ("101", 101, 25), ("6000", 200, 250)]
)
async def test_depth_limits_and_weights(
    venue: FakeVenue, http: aiohttp.ClientSession, limit: str, levels: int, weight: int
) -> None:
    status, headers, body = await get_json(http, f"{venue.url}/api/v3/depth?symbol=ETHUSDT&limit={limit}")
    assert status == 200
    assert headers["X-MBX-USED-WEIGHT-1M"] == str(weight)
    assert set(body) == {"lastUpdateId", "bids", "asks"}
    assert len(body["bids"]) == len(body["asks"]) == levels
    bids = [Decimal(price) for price, _ in body["bids"]]
    asks = [Decimal(price) for price, _ in body["asks"]]
    assert bids == sorted(bids, reverse=True) and asks == sorted(asks)
    assert bids[0] < asks[0]
    price, qty = body["bids"][0]
    assert len(price.split(".")[1]) == 8 and len(qty.split(".")[1]) == 8


async def test_depth_default_limit_and_errors(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    status, _, body = await get_json(http, f"{venue.url}/api/v3/depth?symbol=BTCUSDT")
    assert status == 200 and len(body["bids"]) == 100
    status, headers, body = await get_json(http, f"{venue.url}/api/v3/depth?symbol=NOPEUSDT")
    assert (status, body) == (400, {"code": -1121, "msg": "Invalid symbol."})
    assert headers["X-MBX-USED-WEIGHT-1M"] == "10"
    status, _, body = await get_json(http, f"{venue.url}/api/v3/depth?symbol=BTCUSDT&limit=abc")
    assert status == 400 and body["code"] == -1100
    status, _, body = await get_json(http, f"{venue.url}/api/v3/depth?symbol=BTCUSDT&symbolStatus=HALT")
    assert status == 400 and body["code"] == -1220


async def test_break_symbol_has_an_empty_book(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    _, _, info = await get_json(http, f"{venue.url}/api/v3/exchangeInfo?symbolStatus=BREAK")
    names = [entry["symbol"] for entry in info["symbols"]]
    assert names == ["BCCBTC"]
    status, _, body = await get_json(http, f"{venue.url}/api/v3/depth?symbol=BCCBTC")
    assert status == 200 and body["bids"] == [] and body["asks"] == []


async def test_exchange_info_lists_and_filters(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    status, headers, info = await get_json(http, f"{venue.url}/api/v3/exchangeInfo")
    assert status == 200 and headers["X-MBX-USED-WEIGHT-1M"] == "20"
    names = [entry["symbol"] for entry in info["symbols"]]
    assert names[:10] == REAL_NAMES
    assert len(names) == 13 and len(set(names)) == 13
    assert info["rateLimits"][0] == {
        "rateLimitType": "REQUEST_WEIGHT", "interval": "MINUTE", "intervalNum": 1, "limit": 6000,
    }  # fmt: skip
    _, _, one = await get_json(http, f'{venue.url}/api/v3/exchangeInfo?symbols=["ETHBTC","BTCUSDT"]')
    ethbtc = one["symbols"][0]
    assert [entry["symbol"] for entry in one["symbols"]] == ["ETHBTC", "BTCUSDT"]
    assert (ethbtc["status"], ethbtc["baseAsset"], ethbtc["quoteAsset"]) == ("TRADING", "ETH", "BTC")
    price_filter = next(f for f in ethbtc["filters"] if f["filterType"] == "PRICE_FILTER")
    assert price_filter["tickSize"] == "0.00001000"
    lot_size = next(f for f in ethbtc["filters"] if f["filterType"] == "LOT_SIZE")
    assert lot_size["stepSize"] == "0.00010000"
    status, _, body = await get_json(http, f"{venue.url}/api/v3/exchangeInfo?symbol=NOPE")
    assert (status, body["code"]) == (400, -1121)


async def test_pepe_is_a_low_priced_coin_with_8_decimal_prices_and_whole_million_sizes(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    _, _, info = await get_json(http, f"{venue.url}/api/v3/exchangeInfo?symbol=PEPEUSDT")
    filters = {f["filterType"]: f for f in info["symbols"][0]["filters"]}
    assert (filters["PRICE_FILTER"]["tickSize"], filters["LOT_SIZE"]["stepSize"]) == (
        "0.00000001",
        "1.00000000",
    )
    _, _, body = await get_json(http, f"{venue.url}/api/v3/depth?symbol=PEPEUSDT&limit=100")
    levels = body["bids"] + body["asks"]
    assert all(len(price.split(".")[1]) == 8 for price, _ in levels)
    assert all(Decimal("0.000005") < Decimal(price) < Decimal("0.00002") for price, _ in levels)
    sizes = sorted(Decimal(qty) for _, qty in levels)
    assert all(size == size.to_integral_value() for size in sizes)
    assert sizes[len(sizes) // 2] >= 1_000_000
    async with http.ws_connect(f"{venue.spot_ws_url}/ws/pepeusdt@depth@100ms") as ws:
        event = await next_event(ws)
    assert all(len(price.split(".")[1]) == 8 for price, _ in event["b"] + event["a"])


async def test_raw_and_combined_payloads(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with http.ws_connect(f"{venue.spot_ws_url}/ws/btcusdt@depth@100ms") as raw:
        event = await next_json(raw)
        assert set(event) == {"e", "E", "s", "U", "u", "b", "a"}
        assert (event["e"], event["s"]) == ("depthUpdate", "BTCUSDT")
    async with http.ws_connect(f"{venue.spot_ws_url}/stream?streams=ethusdt@depth@100ms") as wrapped:
        message = await next_json(wrapped)
        assert set(message) == {"stream", "data"}
        assert message["stream"] == "ethusdt@depth@100ms"
        assert message["data"]["s"] == "ETHUSDT"


async def test_ids_are_contiguous_on_both_cadences(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    url = f"{venue.spot_ws_url}/stream?streams=solusdt@depth@100ms/solusdt@depth"
    fast: list[dict[str, int]] = []
    slow: list[dict[str, int]] = []
    async with http.ws_connect(url) as ws:
        while len(slow) < 2:
            message = await next_json(ws)
            (slow if message["stream"] == "solusdt@depth" else fast).append(message["data"])
    for events in (fast, slow):
        for earlier, later in itertools.pairwise(events):
            assert later["U"] == earlier["u"] + 1
    assert slow[1]["u"] - slow[1]["U"] > fast[1]["u"] - fast[1]["U"]  # a second of updates, merged


async def test_microsecond_time_unit(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with http.ws_connect(f"{venue.spot_ws_url}/ws/btcusdt@depth@100ms?timeUnit=MICROSECOND") as ws:
        event = await next_event(ws)
    assert event["E"] > 10**15


async def test_subscribe_list_and_properties(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with http.ws_connect(f"{venue.spot_ws_url}/ws") as ws:
        await ws.send_json({"method": "SUBSCRIBE", "params": ["bnbbtc@depth@100ms"], "id": 1})
        assert await next_json(ws) == {"result": None, "id": 1}
        event = await next_json(ws)
        assert event["s"] == "BNBBTC"  # raw on /ws
        await ws.send_json({"method": "SET_PROPERTY", "params": ["combined", True], "id": "abc-1"})
        await ws.send_json({"method": "GET_PROPERTY", "params": ["combined"], "id": 2})
        replies = [message async for message in _replies(ws, 2)]
        assert replies == [{"result": None, "id": "abc-1"}, {"result": True, "id": 2}]
        message = await next_json(ws)
        assert message["stream"] == "bnbbtc@depth@100ms"  # combined from now on
        await ws.send_json({"method": "LIST_SUBSCRIPTIONS", "id": 3})
        assert [message async for message in _replies(ws, 1)] == [{"result": ["bnbbtc@depth@100ms"], "id": 3}]


async def test_request_errors(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with http.ws_connect(f"{venue.spot_ws_url}/ws") as ws:
        await ws.send_str("{not json")
        await ws.send_json({"method": "SUBSCRIBE", "params": ["btcusdt@nonsense"], "id": 4})
        await ws.send_json({"method": "FLY", "id": 5})
        await ws.send_json({"method": "SET_PROPERTY", "params": ["colour", True], "id": 6})
        replies = [await next_json(ws) for _ in range(4)]
    assert replies[0]["error"]["code"] == 3 and replies[0]["id"] is None
    assert replies[1] == {"error": {"code": 2, "msg": "Invalid request: invalid stream"}, "id": 4}
    assert replies[2]["error"]["code"] == 2 and "unknown variant `FLY`" in replies[2]["error"]["msg"]
    assert replies[3] == {"error": {"code": 0, "msg": "Unknown property"}, "id": 6}


async def test_more_than_five_messages_a_second_disconnects(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(f"{venue.spot_ws_url}/ws") as ws:
        for request_id in range(6):
            await ws.send_json({"method": "LIST_SUBSCRIPTIONS", "id": request_id})
        closing = None
        for _ in range(10):
            message = await ws.receive(timeout=3)
            if message.type != aiohttp.WSMsgType.TEXT:
                closing = message
                break
    assert closing is not None and closing.type == aiohttp.WSMsgType.CLOSE
    assert closing.data == 1008


async def test_stream_limit_per_connection(http: aiohttp.ClientSession) -> None:
    from tests.fake_venue.conftest import small_config

    fake = FakeVenue(small_config(max_streams_per_connection=3))
    await fake.start()
    try:
        async with http.ws_connect(f"{fake.spot_ws_url}/ws") as ws:
            streams = ["btcusdt@depth", "ethusdt@depth", "ethbtc@depth", "bnbbtc@depth"]
            await ws.send_json({"method": "SUBSCRIBE", "params": streams[:3], "id": 1})
            await ws.send_json({"method": "SUBSCRIBE", "params": streams[3:], "id": 2})
            replies = [message async for message in _replies(ws, 2)]
        assert replies[0] == {"result": None, "id": 1}
        assert replies[1]["error"]["code"] == 2 and replies[1]["id"] == 2
    finally:
        await fake.stop()


async def test_server_pings_and_drops_a_client_that_never_pongs(http: aiohttp.ClientSession) -> None:
    from fake_venue import BinanceLimits
    from tests.fake_venue.conftest import small_config

    fake = FakeVenue(small_config(spot=BinanceLimits(6000, 5, ping_interval_s=0.3, pong_timeout_s=0.6)))
    await fake.start()
    try:
        async with http.ws_connect(f"{fake.spot_ws_url}/ws", autoping=False) as silent:
            assert (await silent.receive(timeout=2)).type == aiohttp.WSMsgType.PING
            message = await silent.receive(timeout=3)
            while message.type == aiohttp.WSMsgType.PING:
                message = await silent.receive(timeout=3)
            assert message.type in (
                aiohttp.WSMsgType.CLOSED,
                aiohttp.WSMsgType.ERROR,
            )  # dropped, no close frame
        async with http.ws_connect(f"{fake.spot_ws_url}/ws/btcusdt@depth@100ms") as polite:
            loop = asyncio.get_running_loop()
            until = loop.time() + 1.5
            while loop.time() < until:  # aiohttp answers pings while it reads
                await next_event(polite)
            await polite.send_json({"method": "LIST_SUBSCRIPTIONS", "id": 1})
            assert [reply async for reply in _replies(polite, 1)] == [
                {"result": ["btcusdt@depth@100ms"], "id": 1}
            ]
    finally:
        await fake.stop()


async def _replies(ws: aiohttp.ClientWebSocketResponse, count: int):  # type: ignore[no-untyped-def]
    """The next ``count`` request replies, skipping data events."""
    seen = 0
    while seen < count:
        message = await next_json(ws)
        if "result" in message or "error" in message:
            seen += 1
            yield message
