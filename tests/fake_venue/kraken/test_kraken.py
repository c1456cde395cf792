"""Kraken's WebSocket v2 book channel over a real socket: views trimmed to the subscribed depth, the
checksum of every message (checked with Ladder's own, independent computation), every error, the
faults, and the REST pair list under its v1 names."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import aiohttp

from fake_venue import FakeVenue
from ingest_nodes.core.sync.kraken import kraken_checksum
from ingest_nodes.venues.timestamps import rfc3339_to_ms
from tests.fake_venue.helpers import control, get_json, next_json


def levels(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    # Numbers are read back as their own text (next_json parses with Decimal).
    return [(str(row["price"]), str(row["qty"])) for row in rows]


class KrakenClient:
    """A client's book kept the way the venue's guide says: apply, trim to the depth, checksum."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.bids: dict[Decimal, tuple[str, str]] = {}
        self.asks: dict[Decimal, tuple[str, str]] = {}

    def apply(self, data: dict[str, Any], *, snapshot: bool) -> bool:
        if snapshot:
            self.bids, self.asks = {}, {}
        for side, rows in ((self.bids, data["bids"]), (self.asks, data["asks"])):
            for price, qty in levels(rows):
                if Decimal(qty) == 0:
                    side.pop(Decimal(price), None)
                else:
                    side[Decimal(price)] = (price, qty)
        for levels_of, bids in ((self.bids, True), (self.asks, False)):
            for key in sorted(levels_of, reverse=bids)[self.depth :]:
                del levels_of[key]
        checksum: int = data["checksum"]
        return kraken_checksum(*self.sides()) == checksum

    def sides(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        return [self.bids[p] for p in sorted(self.bids, reverse=True)], [
            self.asks[p] for p in sorted(self.asks)
        ]


async def connect(http: aiohttp.ClientSession, fake: FakeVenue) -> aiohttp.ClientWebSocketResponse:
    ws = await http.ws_connect(fake.ws_url + "/v2")
    status = await next_json(ws)
    assert status["channel"] == "status" and status["data"][0]["system"] == "online"
    return ws


async def next_book(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    while True:
        message = await next_json(ws)
        if message.get("channel") == "book":
            return message  # type: ignore[no-any-return]


async def test_views_stay_the_venues_top_levels_and_every_checksum_matches(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    ws = await connect(http, venue)
    params = {"channel": "book", "symbol": ["BTC/USD"], "depth": 25}
    await ws.send_json({"method": "subscribe", "params": params, "req_id": 7})
    answer = await next_json(ws)
    assert answer["success"] is True and answer["req_id"] == 7
    assert answer["result"] == {"channel": "book", "depth": 25, "snapshot": True, "symbol": "BTC/USD"}
    client = KrakenClient(25)
    snapshot = await next_book(ws)
    assert snapshot["type"] == "snapshot"
    assert len(snapshot["data"][0]["bids"]) == len(snapshot["data"][0]["asks"]) == 25
    assert client.apply(snapshot["data"][0], snapshot=True)
    for _ in range(40):
        message = await next_book(ws)
        assert message["type"] == "update"
        data = message["data"][0]
        assert client.apply(data, snapshot=False), "the checksum of an update does not match the trimmed book"
        at_ms = rfc3339_to_ms(data["timestamp"])
        query = f"venue=kraken&symbol=BTC/USD&limit=25&at_ms={at_ms}"
        _, _, truth = await get_json(http, f"{venue.url}/_fake/book?{query}")
        bids, asks = client.sides()
        assert [list(level) for level in bids] == truth["bids"] and [list(level) for level in asks] == truth[
            "asks"
        ]
    assert '"price":"' not in str(snapshot)  # numbers, not strings: next_json saw Decimals
    await ws.close()


async def next_answer(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    """The next answer to a request, skipping channel messages."""
    while True:
        message = await next_json(ws)
        if "method" in message:
            return message  # type: ignore[no-any-return]


async def test_errors_and_answers(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    ws = await connect(http, venue)
    book = {"channel": "book", "symbol": ["BTC/USD", "NOPE/USD"]}
    await ws.send_json({"method": "subscribe", "params": book, "req_id": 1})
    assert (await next_answer(ws))["success"] is True
    refusal = await next_answer(ws)
    assert refusal["success"] is False and refusal["symbol"] == "NOPE/USD" and refusal["req_id"] == 1
    assert refusal["error"] == "Currency pair not supported NOPE/USD"
    await ws.send_json({"method": "subscribe", "params": {"channel": "book", "symbol": ["BTC/USD"]}})
    assert (await next_answer(ws))["error"] == "Already subscribed"
    await ws.send_json(
        {"method": "subscribe", "params": {"channel": "book", "symbol": ["ETH/USD"], "depth": 7}}
    )
    assert (await next_answer(ws))["error"] == "Invalid depth"
    both = {"channel": "book", "symbol": ["BTC/USD", "ETH/USD"]}
    await ws.send_json({"method": "unsubscribe", "params": both, "req_id": 2})
    gone, missing = await next_answer(ws), await next_answer(ws)
    assert gone["success"] is True and gone["result"] == {"channel": "book", "depth": 10, "symbol": "BTC/USD"}
    assert missing["success"] is False and missing["error"] == "Subscription Not Found"
    await ws.send_json({"method": "ping", "req_id": 3})
    pong = await next_answer(ws)
    assert pong["method"] == "pong" and pong["req_id"] == 3
    await ws.close()


async def test_a_corrupted_checksum_and_a_lost_message(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    ws = await connect(http, venue)
    await ws.send_json(
        {"method": "subscribe", "params": {"channel": "book", "symbol": ["ETH/USD"], "depth": 10}}
    )
    await next_json(ws)
    client = KrakenClient(10)
    assert client.apply((await next_book(ws))["data"][0], snapshot=True)
    await control(http, venue, action="kraken_checksum", venue="kraken", symbol="ETH/USD", count=1)
    mismatched = 0
    for _ in range(3):
        mismatched += not client.apply((await next_book(ws))["data"][0], snapshot=False)
    assert mismatched == 1  # exactly the corrupted one; the book itself stayed right
    heartbeat = await next_json(ws, seconds=3)
    while heartbeat.get("channel") != "heartbeat":
        heartbeat = await next_json(ws, seconds=3)
    await ws.close()


async def test_the_pair_list_keeps_rests_names(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    status, _, body = await get_json(http, f"{venue.url}/0/public/AssetPairs")
    assert status == 200 and body["error"] == []
    pairs = body["result"]
    assert pairs["XBTUSD"]["wsname"] == "XBT/USD" and pairs["XBTUSD"]["status"] == "online"
    assert pairs["XDGUSD"]["wsname"] == "XDG/USD" and pairs["ETHXBT"]["wsname"] == "ETH/XBT"
    assert pairs["XBTUSD"]["pair_decimals"] == 1 and pairs["XBTUSD"]["lot_decimals"] == 8
