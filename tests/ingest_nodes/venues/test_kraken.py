"""Kraken v2: frames parsed with every number's own text, the stream's depths and answers, pairs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from book_store.catalog import TRADING, MarketInfo
from ingest_nodes.core.engine import BookEngine
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.core.sync import KrakenSyncMachine
from ingest_nodes.venues.kraken.pairs import parse_asset_pairs
from ingest_nodes.venues.kraken.parse import parse_kraken_frame
from ingest_nodes.venues.kraken.schemas import KrakenAnswer, KrakenHeartbeat
from ingest_nodes.venues.kraken.stream import KrakenStream
from ingest_nodes.venues.stream import Acked, Heartbeat, Rejected

FIXTURES = Path(__file__).parents[1] / "fixtures"


def book(kind: str, symbol: str = "BTC/USD", **data: object) -> bytes:
    body = {"symbol": symbol, "bids": [], "asks": [], "checksum": 7, **data}
    return orjson.dumps({"channel": "book", "type": kind, "data": [body]})


def test_a_recorded_snapshot_keeps_the_venues_text_and_passes_its_checksum() -> None:
    [snapshot] = parse_kraken_frame((FIXTURES / "kraken_btcusdt_snapshot.json").read_bytes(), 42)
    assert isinstance(snapshot, DepthUpdate)
    assert snapshot.symbol == "BTC/USDT" and snapshot.reset and snapshot.checksum == 4162058887
    assert snapshot.bids[0] == ("105906.7", "0.09440620")  # trailing zeros kept: the checksum needs them
    assert snapshot.asks[1] == ("105910.0", "0.70000000")
    assert len(snapshot.bids) == len(snapshot.asks) == 25 and snapshot.event_time is None
    engine = BookEngine(KrakenSyncMachine())
    engine.on_update(replace(snapshot, limit=25))
    assert engine.synced and engine.checksum_matched


def test_an_update_with_integers_and_a_timestamp() -> None:
    raw = (
        b'{"channel":"book","type":"update","data":[{"symbol":"BTC/USD","bids":[{"price":45283,"qty":0}],'
        b'"asks":[{"price":45285.2,"qty":0.00100000}],"checksum":2439117997,'
        b'"timestamp":"2023-10-06T17:35:55.440295Z"}]}'
    )
    [update] = parse_kraken_frame(raw, 1)
    assert isinstance(update, DepthUpdate) and not update.reset
    assert update.bids == (("45283", "0"),) and update.asks == (("45285.2", "0.00100000"),)
    assert update.event_time == 1696613755440 and update.checksum == 2439117997


def test_answers_to_requests() -> None:
    ok = b'{"method":"subscribe","result":{"channel":"book","depth":100,"snapshot":true,"symbol":"BTC/USD"},'
    ok += b'"success":true,"time_in":"x","time_out":"y","req_id":3}'
    assert parse_kraken_frame(ok, 0) == [KrakenAnswer(True, True, "BTC/USD", 100, 3, "")]
    failed = b'{"error":"Currency pair not supported XBT/USD","method":"subscribe","success":false,'
    failed += b'"symbol":"XBT/USD","time_in":"x","time_out":"y","req_id":4}'
    assert parse_kraken_frame(failed, 0) == [
        KrakenAnswer(True, False, "XBT/USD", None, 4, "Currency pair not supported XBT/USD")
    ]
    gone = (
        b'{"method":"unsubscribe","result":{"channel":"book","depth":10,"symbol":"BTC/USD"},"success":true}'
    )
    assert parse_kraken_frame(gone, 0) == [KrakenAnswer(False, True, "BTC/USD", 10, None, "")]


@pytest.mark.parametrize(
    "raw",
    [b'{"channel":"status","type":"update","data":[{"system":"online"}]}',
     b'{"method":"pong","req_id":1}', b'{"channel":"ticker","type":"update","data":[]}'],
)  # fmt: skip
def test_other_messages_are_skipped(raw: bytes) -> None:
    assert parse_kraken_frame(raw, 0) == []


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1]",
        book("update", checksum="7"),
        book("update", checksum=1 << 32),
        book("update", bids=[{"price": -1.5, "qty": 1}]),
        book("update", bids=[{"price": 1.5}]),
        book("update", asks={"price": 1}),
        book("delta"),
        book("update", timestamp=5),
        b'{"channel":"book","type":"update","data":{}}',
    ],
)
def test_unreadable_frames_are_payload_errors(raw: bytes) -> None:
    with pytest.raises(VenuePayloadError):
        parse_kraken_frame(raw, 0)


def test_requests_name_one_depth_each_and_snapshots_carry_the_answered_depth() -> None:
    stream = KrakenStream("wss://ws.kraken.com/v2")
    assert stream.topic("BTC/USD", 50) == "BTC/USD@100" and stream.topic("ETH/USD", 5) == "ETH/USD@10"
    assert stream.opening() == []
    messages = [
        orjson.loads(m) for m in stream.requests(True, ["BTC/USD@100", "ETH/USD@10", "SOL/USD@10"], 9)
    ]
    assert messages == [
        {"method": "subscribe", "params": {"channel": "book", "symbol": ["ETH/USD", "SOL/USD"], "depth": 10},
         "req_id": 9},
        {"method": "subscribe", "params": {"channel": "book", "symbol": ["BTC/USD"], "depth": 100},
         "req_id": 9},
    ]  # fmt: skip
    # Before its answer, a snapshot is stamped with the depth asked for; after it, the one answered.
    [early] = stream.read(book("snapshot", "ETH/USD"), 0)
    assert isinstance(early, DepthUpdate) and early.limit == 10
    answer = {"method": "subscribe", "result": {"channel": "book", "depth": 25, "symbol": "ETH/USD"},
              "success": True, "time_in": "x", "time_out": "y", "req_id": 9}  # fmt: skip
    assert stream.read(orjson.dumps(answer), 0) == [Acked(9)]
    [snapshot] = stream.read(book("snapshot", "ETH/USD"), 0)
    assert isinstance(snapshot, DepthUpdate) and snapshot.limit == 25
    [update] = stream.read(book("update", "ETH/USD"), 0)
    assert isinstance(update, DepthUpdate) and update.limit == 0
    assert stream.read(book("snapshot", "XRP/USD"), 0) == []  # never asked for
    unsubscribe = [orjson.loads(m) for m in stream.requests(False, ["BTC/USD@100"], 10)]
    assert unsubscribe[0]["method"] == "unsubscribe" and unsubscribe[0]["params"]["depth"] == 100


def test_a_refused_pair_is_taken_back_alone() -> None:
    stream = KrakenStream("wss://ws.kraken.com/v2")
    stream.requests(True, ["BTC/USD@10", "NOPE/USD@10"], 4)
    refusal = {"error": "Currency pair not supported NOPE/USD", "method": "subscribe", "success": False,
               "symbol": "NOPE/USD", "time_in": "x", "time_out": "y", "req_id": 4}  # fmt: skip
    assert stream.read(orjson.dumps(refusal), 0) == [
        Rejected(4, None, "Currency pair not supported NOPE/USD", topic="NOPE/USD@10")
    ]
    failed_unsubscribe = {"error": "Subscription Not Found", "method": "unsubscribe", "success": False,
                          "symbol": "BTC/USD", "time_in": "x", "time_out": "y", "req_id": 5}  # fmt: skip
    assert stream.read(orjson.dumps(failed_unsubscribe), 0) == [Acked(5)]


def test_a_heartbeat_vouches_for_the_connection() -> None:
    assert parse_kraken_frame(b'{"channel":"heartbeat"}', 0) == [KrakenHeartbeat()]
    assert KrakenStream("wss://ws.kraken.com/v2").read(b'{"channel":"heartbeat"}', 0) == [Heartbeat()]


def test_a_new_socket_forgets_the_depths() -> None:
    stream = KrakenStream("wss://ws.kraken.com/v2")
    stream.requests(True, ["BTC/USD@10"], 1)
    stream.opening()
    assert stream.read(book("snapshot"), 0) == []


def test_the_pair_list_uses_the_v2_names() -> None:
    body = orjson.dumps({"error": [], "result": {
        "XXBTZUSD": {"altname": "XBTUSD", "wsname": "XBT/USD", "base": "XXBT", "status": "online"},
        "XDGUSD": {"altname": "XDGUSD", "wsname": "XDG/USD", "status": "online"},
        "ETHXBT": {"altname": "ETHXBT", "wsname": "ETH/XBT", "status": "cancel_only"},
        "XBTUSD.d": {"altname": "XBTUSD.d", "status": "online"},
        "ADAEUR": {"altname": "ADAEUR", "wsname": "ADA/EUR"},
    }})  # fmt: skip
    assert parse_asset_pairs(body, "kraken") == [
        MarketInfo("kraken", "BTC/USD", TRADING, "BTC", "USD"),
        MarketInfo("kraken", "DOGE/USD", TRADING, "DOGE", "USD"),
        MarketInfo("kraken", "ETH/BTC", "CANCEL_ONLY", "ETH", "BTC"),
        MarketInfo("kraken", "ADA/EUR", TRADING, "ADA", "EUR"),
    ]


@pytest.mark.parametrize("body", [b"<html>", b'{"error":["EGeneral:Internal error"],"result":{}}', b"[]"])
def test_an_unreadable_pair_list_is_a_payload_error(body: bytes) -> None:
    with pytest.raises(VenuePayloadError):
        parse_asset_pairs(body, "kraken")
