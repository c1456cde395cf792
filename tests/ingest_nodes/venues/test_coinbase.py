"""Coinbase Advanced Trade: frames, the connection's numbering in the stream, requests, products."""

from __future__ import annotations

import orjson
import pytest

from book_store.catalog import TRADING, MarketInfo
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.venues.coinbase.parse import parse_coinbase_frame
from ingest_nodes.venues.coinbase.products import parse_products
from ingest_nodes.venues.coinbase.schemas import CoinbaseMessage
from ingest_nodes.venues.coinbase.stream import CoinbaseStream
from ingest_nodes.venues.stream import Acked, Heartbeat, MessagesLost, Rejected

SNAPSHOT = (
    b'{"channel":"l2_data","client_id":"","timestamp":"2023-02-09T20:32:50.714964855Z","sequence_num":1,'
    b'"events":[{"type":"snapshot","product_id":"BTC-USD","updates":['
    b'{"side":"bid","event_time":"1970-01-01T00:00:00Z","price_level":"21921.73","new_quantity":"0.06317902"},'
    b'{"side":"offer","event_time":"1970-01-01T00:00:00Z","price_level":"21921.74","new_quantity":"1.5"}]}]}'
)
T0 = 1675974770714


def channel(name: str, sequence: int, *events: dict[str, object]) -> bytes:
    return orjson.dumps(
        {
            "channel": name,
            "timestamp": "2023-02-09T20:32:51.1Z",
            "sequence_num": sequence,
            "events": list(events),
        }
    )


def l2(sequence: int, product: str = "BTC-USD", kind: str = "update", side: str = "bid") -> bytes:
    level = {"side": side, "event_time": "2023-02-09T20:32:51Z", "price_level": "1.5", "new_quantity": "0"}
    return channel("l2_data", sequence, {"type": kind, "product_id": product, "updates": [level]})


def heartbeat(sequence: int) -> bytes:
    return channel("heartbeats", sequence, {"current_time": "x", "heartbeat_counter": "3049"})


def subscriptions(sequence: int) -> bytes:
    return channel("subscriptions", sequence, {"subscriptions": {"level2": ["BTC-USD"]}})


def test_a_snapshot_keeps_the_venues_strings_and_the_message_time() -> None:
    message = parse_coinbase_frame(SNAPSHOT, 42)
    assert message.sequence_num == 1
    assert message.updates == (
        DepthUpdate(
            "BTC-USD", 0, 0, None, T0, 42, (("21921.73", "0.06317902"),), (("21921.74", "1.5"),), reset=True
        ),
    )


def test_updates_of_several_products_and_both_names_of_the_ask_side() -> None:
    raw = channel(
        "l2_data", 5,
        {"type": "update", "product_id": "BTC-USD", "updates": [
            {"side": "ask", "event_time": "x", "price_level": "2", "new_quantity": "0"}]},
        {"type": "update", "product_id": "ETH-USD", "updates": [
            {"side": "bid", "event_time": "x", "price_level": "1", "new_quantity": "3"}]},
    )  # fmt: skip
    message = parse_coinbase_frame(raw, 0)
    assert [(u.symbol, u.bids, u.asks, u.reset) for u in message.updates] == [
        ("BTC-USD", (), (("2", "0"),), False),
        ("ETH-USD", (("1", "3"),), (), False),
    ]


def test_other_channels_count_their_numbers() -> None:
    assert parse_coinbase_frame(heartbeat(7), 0) == CoinbaseMessage(7, heartbeat=True)
    assert parse_coinbase_frame(subscriptions(0), 0) == CoinbaseMessage(0, subscriptions=True)
    assert parse_coinbase_frame(b'{"type":"error","message":"failure"}', 0) == CoinbaseMessage(
        None, error="failure"
    )


@pytest.mark.parametrize(
    "raw",
    [
        b"nope",
        b"[]",
        b'{"channel":"heartbeats","events":[]}',
        l2(1, side="middle"),
        l2(1, kind="delta"),
        b'{"channel":"l2_data","timestamp":"x","sequence_num":1,"events":[]}',
        b'{"channel":"l2_data","timestamp":"2023-02-09T20:32:51Z","sequence_num":1,"events":[{"type":"update"}]}',
        b'{"channel":"l2_data","timestamp":"2023-02-09T20:32:51Z","sequence_num":1,"events":[{"type":"update",'
        b'"product_id":"A","updates":[{"side":"bid","price_level":1,"new_quantity":"1"}]}]}',
    ],
)
def test_unreadable_frames_are_payload_errors(raw: bytes) -> None:
    with pytest.raises(VenuePayloadError):
        parse_coinbase_frame(raw, 0)


def test_the_stream_subscribes_heartbeats_first_and_answers_requests_in_order() -> None:
    stream = CoinbaseStream("wss://advanced-trade-ws.coinbase.com")
    assert [orjson.loads(m) for m in stream.opening()] == [{"type": "subscribe", "channel": "heartbeats"}]
    assert stream.topic("BTC-USD", 5000) == "BTC-USD"
    assert [orjson.loads(m) for m in stream.requests(True, ["BTC-USD", "ETH-USD"], 3)] == [
        {"type": "subscribe", "product_ids": ["BTC-USD", "ETH-USD"], "channel": "level2"}
    ]
    stream.requests(False, ["ETH-USD"], 4)
    assert stream.read(subscriptions(0), 0) == (Acked(None),)  # the heartbeats subscription
    assert stream.read(subscriptions(1), 0) == (Acked(3),)
    assert stream.read(b'{"type":"error","message":"failure to unsubscribe"}', 0) == (
        Rejected(4, None, "failure to unsubscribe"),
    )
    [snapshot] = stream.read(SNAPSHOT.replace(b'"sequence_num":1', b'"sequence_num":2'), 0)
    assert isinstance(snapshot, DepthUpdate) and snapshot.reset
    assert stream.read(heartbeat(3), 0) == (Heartbeat(),)  # nothing lost so far: every book is current


def test_a_break_in_the_numbering_drops_the_message_and_says_so() -> None:
    stream = CoinbaseStream("wss://advanced-trade-ws.coinbase.com")
    stream.opening()
    assert stream.read(heartbeat(0), 0) == (Heartbeat(),)
    assert len(stream.read(l2(1), 0)) == 1
    assert stream.read(l2(3), 0) == (MessagesLost(2, 3),)  # number 2 never came
    assert len(stream.read(l2(4), 0)) == 1  # numbering goes on from the break
    assert stream.read(l2(4), 0) == (MessagesLost(5, 4),)  # a replay breaks it too
    stream.opening()  # a new socket numbers afresh
    assert stream.read(heartbeat(0), 0) == (Heartbeat(),)
    assert stream.numbering.breaks == 2


def test_the_product_list() -> None:
    body = orjson.dumps({"products": [
        {"product_id": "BTC-USD", "base_currency_id": "BTC", "quote_currency_id": "USD", "status": "online",
         "trading_disabled": False, "is_disabled": False, "cancel_only": False},
        {"product_id": "ETH-EUR", "status": "online", "cancel_only": True},
        {"product_id": "OLD-USD", "status": "delisted", "trading_disabled": True},
        {"product_id": "NEW-USD", "status": "offline"},
        {"nope": 1},
    ], "num_products": 5})  # fmt: skip
    assert parse_products(body, "coinbase") == [
        MarketInfo("coinbase", "BTC-USD", TRADING, "BTC", "USD"),
        MarketInfo("coinbase", "ETH-EUR", "CANCEL_ONLY", "ETH", "EUR"),
        MarketInfo("coinbase", "OLD-USD", "TRADING_DISABLED", "OLD", "USD"),
        MarketInfo("coinbase", "NEW-USD", "OFFLINE", "NEW", "USD"),
    ]


def test_a_usdc_product_that_is_an_alias_of_a_usd_book_says_so() -> None:
    """``alias`` is kept when it names another product of the list that is no alias itself; an
    empty one, the product's own id, one not listed, an alias or not a string is no alias."""
    body = orjson.dumps({"products": [
        {"product_id": "BTC-USD", "base_currency_id": "BTC", "quote_currency_id": "USD", "status": "online",
         "alias": "", "alias_to": ["BTC-USDC"]},
        {"product_id": "BTC-USDC", "base_currency_id": "BTC", "quote_currency_id": "USDC", "status": "online",
         "alias": "BTC-USD", "alias_to": []},
        {"product_id": "ETH-USDC", "status": "online", "alias": "ETH-USD"},  # ETH-USD not listed
        {"product_id": "SOL-USDC", "status": "online", "alias": "SOL-USDC"},
        {"product_id": "XRP-USDC", "status": "online", "alias": ["BTC-USD"]},
        {"product_id": "BTC-USDX", "status": "online", "alias": "BTC-USDC"},  # an alias's alias
    ], "num_products": 6})  # fmt: skip
    markets = parse_products(body, "coinbase")
    assert {m.market: m.alias for m in markets} == {
        "BTC-USD": "",
        "BTC-USDC": "BTC-USD",
        "ETH-USDC": "",
        "SOL-USDC": "",
        "XRP-USDC": "",
        "BTC-USDX": "",
    }
    assert markets[1] == MarketInfo("coinbase", "BTC-USDC", TRADING, "BTC", "USDC", alias="BTC-USD")


@pytest.mark.parametrize("body", [b"<html>", b'{"products":{}}'])
def test_an_unreadable_product_list_is_a_payload_error(body: bytes) -> None:
    with pytest.raises(VenuePayloadError):
        parse_products(body, "coinbase")
