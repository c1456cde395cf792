"""Bybit parsing: the docs' own frames, answers, REST books, instruments and errors."""

from __future__ import annotations

import orjson
import pytest

from book_store.catalog import TRADING
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.venues.bybit.parse import (
    parse_bybit_error,
    parse_bybit_frame,
    parse_bybit_instruments,
    parse_bybit_orderbook,
)
from ingest_nodes.venues.bybit.schemas import BybitAnswer
from ingest_nodes.venues.bybit.stream import BybitStream
from ingest_nodes.venues.stream import Acked, Rejected

# The "Orderbook" stream examples of the docs (levels trimmed).
SNAPSHOT = (
    b'{"topic":"orderbook.50.BTCUSDT","type":"snapshot","ts":1671179923028,"data":{"s":"BTCUSDT",'
    b'"b":[["17440.00","40.833"],["17439.50","0.513"]],"a":[["17440.50","78.815"],["17441.00","8.858"]],'
    b'"u":13079592,"seq":22520573250},"cts":1671179923018}'
)
DELTA = (
    b'{"topic":"orderbook.50.BTCUSDT","type":"delta","ts":1671179923046,"data":{"s":"BTCUSDT","b":[],'
    b'"a":[["17440.50","78.857"],["17442.00","1.510"]],"u":13079593,"seq":22520573260},"cts":1671179923040}'
)


def test_a_snapshot_is_a_reset_cut_at_the_topics_depth() -> None:
    assert parse_bybit_frame(SNAPSHOT, 3) == DepthUpdate(
        symbol="BTCUSDT",
        first_update_id=13079592,
        final_update_id=13079592,
        prev_final_update_id=None,
        event_time=1671179923028,
        ingest_time=3,
        bids=(("17440.00", "40.833"), ("17439.50", "0.513")),
        asks=(("17440.50", "78.815"), ("17441.00", "8.858")),
        reset=True,
        limit=50,
    )


def test_a_delta_carries_its_u() -> None:
    delta = parse_bybit_frame(DELTA, 4)
    assert isinstance(delta, DepthUpdate)
    assert delta.final_update_id == 13079593 and not delta.reset
    assert delta.asks == (("17440.50", "78.857"), ("17442.00", "1.510"))


def test_answers_pongs_and_other_topics() -> None:
    ack = b'{"success":true,"ret_msg":"subscribe","conn_id":"2324d924","req_id":"10001","op":"subscribe"}'
    assert parse_bybit_frame(ack, 0) == BybitAnswer("subscribe", True, "10001", "subscribe")
    pong = b'{"success":true,"ret_msg":"pong","conn_id":"0970e817","op":"ping"}'
    assert parse_bybit_frame(pong, 0) == BybitAnswer("ping", True, None, "pong")
    assert parse_bybit_frame(b'{"topic":"publicTrade.BTCUSDT","type":"snapshot","ts":1,"data":[]}', 0) is None


@pytest.mark.parametrize(
    "frame",
    [
        b"{",
        b'{"topic":"orderbook.50.BTCUSDT","type":"partial","ts":1,"data":{}}',
        b'{"topic":"orderbook.50.BTCUSDT","type":"delta","ts":1,"data":{"b":[],"a":[],"u":1,"seq":1}}',
        b'{"topic":"orderbook.50.BTCUSDT","type":"delta","ts":1,"data":{"s":"X","b":[],"a":[],"seq":1}}',
        b'{"topic":"orderbook.x.BTCUSDT","type":"snapshot","ts":1,"data":{"s":"X","b":[],"a":[],"u":1,"seq":1}}',
    ],
)
def test_frames_that_are_not_the_documented_shape_raise(frame: bytes) -> None:
    with pytest.raises(VenuePayloadError):
        parse_bybit_frame(frame, 0)


def test_the_stream_subscribes_the_1000_level_topic_and_reads_answers() -> None:
    spot = BybitStream("wss://stream.bybit.com/v5/public/spot", spot=True)
    assert spot.topic("BTCUSDT", 20) == "orderbook.1000.BTCUSDT"
    assert spot.topics_per_request == 10
    assert BybitStream("wss://x/v5/public/linear", spot=False).topics_per_request is None
    assert orjson.loads(spot.requests(False, ["orderbook.1000.BTCUSDT"], 3)[0]) == {
        "req_id": "3",
        "op": "unsubscribe",
        "args": ["orderbook.1000.BTCUSDT"],
    }
    assert spot.read(b'{"success":true,"ret_msg":"","op":"subscribe","req_id":"3"}', 0) == (Acked(3),)
    refused = b'{"success":false,"ret_msg":"error:handler not found,topic:x","op":"subscribe","req_id":"4"}'
    assert spot.read(refused, 0) == (Rejected(4, None, "error:handler not found,topic:x"),)
    assert spot.read(b'{"success":true,"ret_msg":"pong","op":"ping"}', 0) == ()


def test_a_rest_book_carries_the_streams_u() -> None:
    body = (
        b'{"retCode":0,"retMsg":"OK","result":{"s":"BTCUSDT","a":[["65557.7","16.606555"]],'
        b'"b":[["65485.47","47.081829"]],"ts":1716863719031,"u":230704,"seq":1432604333,'
        b'"cts":1716863718905},"retExtInfo":{},"time":1716863719382}'
    )
    snapshot = parse_bybit_orderbook(body, "BTCUSDT", 5, 1)
    assert snapshot.last_update_id == 230704 and snapshot.event_time == 1716863719031
    assert snapshot.asks == (("65557.7", "16.606555"),)
    with pytest.raises(VenuePayloadError):
        parse_bybit_orderbook(b'{"retCode":10001,"retMsg":"params error","result":{}}', "X", 5, 0)


def test_instruments_pages_and_statuses() -> None:
    body = orjson.dumps(
        {
            "retCode": 0,
            "retMsg": "OK",
            "result": {
                "category": "linear",
                "list": [
                    {
                        "symbol": "BTCUSDT",
                        "status": "Trading",
                        "baseCoin": "BTC",
                        "quoteCoin": "USDT",
                        "contractType": "LinearPerpetual",
                    },
                    {
                        "symbol": "BTCUSDT-27MAR26",
                        "status": "Trading",
                        "baseCoin": "BTC",
                        "quoteCoin": "USDT",
                        "contractType": "LinearFutures",
                    },
                    {"symbol": "NEWUSDT", "status": "PreLaunch", "baseCoin": "NEW", "quoteCoin": "USDT"},
                ],
                "nextPageCursor": "next-page",
            },
        }
    )
    markets, cursor = parse_bybit_instruments(body, "bybit-linear")
    assert cursor == "next-page"
    assert [(m.market, m.status, m.kind) for m in markets] == [
        ("BTCUSDT", TRADING, "perpetual"),
        ("BTCUSDT-27MAR26", TRADING, "future"),
        ("NEWUSDT", "PRELAUNCH", "spot"),  # a spot pair has no contract type
    ]


def test_rest_errors() -> None:
    assert parse_bybit_error(b'{"retCode":10006,"retMsg":"Too many visits!"}') == (10006, "Too many visits!")
    assert parse_bybit_error(b"403 Forbidden") == (None, "403 Forbidden")
