"""Binance frame, snapshot and REST-error parsing, on recorded-style payloads."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.venues.binance.exchange_info import parse_exchange_info
from ingest_nodes.venues.binance.parse import (
    parse_futures_frame,
    parse_futures_snapshot,
    parse_rest_error,
    parse_spot_frame,
    parse_spot_snapshot,
)
from ingest_nodes.venues.binance.schemas import ServerShutdown, SubscribeAck, VenueErrorFrame

FIXTURES = Path(__file__).parents[1] / "fixtures"


def lines(name: str) -> list[bytes]:
    return (FIXTURES / name).read_bytes().splitlines()


def test_spot_stream_fixture_parses_frame_by_frame() -> None:
    frames = [
        parse_spot_frame(raw, ingest_time=1000 + i)
        for i, raw in enumerate(lines("binance_spot_nknusdt.jsonl"))
    ]
    assert frames[0] == DepthUpdate(
        symbol="NKNUSDT",
        first_update_id=499869750,
        final_update_id=499869752,
        prev_final_update_id=None,
        event_time=1620000000100,
        ingest_time=1000,
        bids=(("0.53110000", "1204.00000000"), ("0.53050000", "0.00000000")),
        asks=(("0.53240000", "310.00000000"),),
    )
    assert frames[1] == SubscribeAck(id=1, result=None)
    assert isinstance(frames[2], DepthUpdate) and frames[2].first_update_id == 499869753
    assert frames[3] is None  # aggTrade: not ours
    assert isinstance(frames[4], DepthUpdate) and frames[4].asks == ()
    assert isinstance(frames[5], DepthUpdate) and frames[5].final_update_id == 499869759  # raw, unwrapped
    assert frames[6] == ServerShutdown(event_time=1620000000500)


def test_futures_stream_fixture_keeps_pu_and_reads_error_frames() -> None:
    frames = [parse_futures_frame(raw, ingest_time=5) for raw in lines("binance_futures_sushiusdt.jsonl")]
    first = frames[0]
    assert isinstance(first, DepthUpdate)
    assert (first.first_update_id, first.final_update_id, first.prev_final_update_id) == (
        600859599090,
        600859600917,
        600859598061,
    )
    assert first.bids == (("14.4250", "120"),)
    assert frames[2] == SubscribeAck(id=7)
    assert frames[-1] == VenueErrorFrame(code=2, msg="Invalid request: invalid stream", id=8)


def test_str_and_bytes_frames_parse_alike() -> None:
    raw = lines("binance_spot_nknusdt.jsonl")[0]
    assert parse_spot_frame(raw, 1) == parse_spot_frame(raw.decode(), 1)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"result":["btcusdt@depth"],"id":"list-1"}', SubscribeAck(id="list-1", result=["btcusdt@depth"])),
        (b'{"result":true,"id":2}', SubscribeAck(id=2, result=True)),
        (
            b'{"error":{"code":3,"msg":"Invalid JSON"},"id":null}',
            VenueErrorFrame(code=3, msg="Invalid JSON", id=None),
        ),
        (
            b'{"code":0,"msg":"Unknown property","id":5}',
            VenueErrorFrame(code=0, msg="Unknown property", id=5),
        ),
        (b'{"error":{"msg":7}}', VenueErrorFrame(code=None, msg="", id=None)),
        (b'{"lastUpdateId":160,"bids":[],"asks":[]}', None),  # a partial-depth push
        (b'{"stream":"!serverShutdown","data":{"e":"serverShutdown","E":1}}', ServerShutdown(event_time=1)),
    ],
)
def test_control_frames(raw: bytes, expected: object) -> None:
    assert parse_spot_frame(raw, 0) == expected


def test_spot_ignores_a_pu_field_and_futures_requires_it() -> None:
    raw = b'{"e":"depthUpdate","E":1,"s":"BTCUSDT","U":2,"u":3,"pu":1,"b":[],"a":[]}'
    spot = parse_spot_frame(raw, 0)
    assert isinstance(spot, DepthUpdate) and spot.prev_final_update_id is None
    with pytest.raises(VenuePayloadError, match="'pu'"):
        parse_futures_frame(b'{"e":"depthUpdate","E":1,"s":"BTCUSDT","U":2,"u":3,"b":[],"a":[]}', 0)


def test_levels_with_extra_members_keep_price_and_quantity() -> None:
    update = parse_spot_frame(
        b'{"e":"depthUpdate","E":1,"s":"X","U":1,"u":1,"b":[["1.0","2.0",[]]],"a":[]}', 0
    )
    assert isinstance(update, DepthUpdate) and update.bids == (("1.0", "2.0"),)


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[1,2]",
        b'{"stream":"x","data":[]}',
        b'{"e":"depthUpdate","E":1,"U":1,"u":1,"b":[],"a":[]}',  # no symbol
        b'{"e":"depthUpdate","E":1,"s":"X","U":"1","u":1,"b":[],"a":[]}',  # id as a string
        b'{"e":"depthUpdate","E":1,"s":"X","U":1,"u":1,"b":{},"a":[]}',
        b'{"e":"depthUpdate","E":1,"s":"X","U":1,"u":1,"b":[["1.0"]],"a":[]}',
        b'{"e":"depthUpdate","E":1,"s":"X","U":1,"u":1,"b":[[1.0,"2"]],"a":[]}',  # number, not string
        b'{"e":"depthUpdate","E":1,"s":"X","U":1,"u":1,"b":[],"a":["1.0"]}',
        b'{"e":"serverShutdown"}',
        b'{"error":"bad","id":1}',
        b'{"result":{"a":1},"id":1}',
        b'{"result":null,"id":1.5}',
    ],
)
def test_malformed_frames_raise_a_payload_error(raw: bytes) -> None:
    with pytest.raises(VenuePayloadError):
        parse_spot_frame(raw, 0)


def test_spot_snapshot_fixture() -> None:
    snapshot = parse_spot_snapshot(
        (FIXTURES / "binance_spot_nknusdt_snapshot.json").read_bytes(), "NKNUSDT", limit=4, ingest_time=77
    )
    assert snapshot == DepthSnapshot(
        symbol="NKNUSDT",
        last_update_id=499869752,
        bids=(
            ("0.53110000", "1204.00000000"),
            ("0.53100000", "77.00000000"),
            ("0.53080000", "2000.00000000"),
        ),
        asks=(
            ("0.53240000", "310.00000000"),
            ("0.53250000", "16.00000000"),
            ("0.53270000", "900.00000000"),
            ("0.53280000", "3.00000000"),
        ),
        limit=4,
        event_time=None,
        ingest_time=77,
    )
    assert snapshot.bids_complete and not snapshot.asks_complete


def test_futures_snapshot_fixture_carries_its_event_time() -> None:
    snapshot = parse_futures_snapshot(
        (FIXTURES / "binance_futures_sushiusdt_snapshot.json").read_bytes(),
        "SUSHIUSDT",
        limit=1000,
        ingest_time=9,
    )
    assert (snapshot.last_update_id, snapshot.event_time, snapshot.ingest_time) == (
        600859605926,
        1620000100350,
        9,
    )
    assert snapshot.asks[-1] == ("14.4400", "52")


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b'{"code":-1121,"msg":"Invalid symbol."}', "Invalid symbol"),
        (b'{"lastUpdateId":1,"bids":[]}', "bids or asks"),
        (b'{"lastUpdateId":"1","bids":[],"asks":[]}', "lastUpdateId"),
        (b"[]", "not a JSON object"),
        # members of the wrong type: a payload error, never a TypeError (the parser is compiled)
        (b'{"lastUpdateId":1,"bids":{},"asks":[]}', "'bids'"),
        (b'{"lastUpdateId":1,"bids":[],"asks":"x"}', "'asks'"),
        (b'{"lastUpdateId":1,"bids":[["1",2]],"asks":[]}', "not a string"),
        (b'{"code":[],"msg":{}}', "lastUpdateId"),
    ],
)
def test_bad_snapshots_raise_a_payload_error(body: bytes, match: str) -> None:
    with pytest.raises(VenuePayloadError, match=match):
        parse_spot_snapshot(body, "BTCUSDT", 100, 0)


def test_futures_snapshot_needs_its_event_time() -> None:
    with pytest.raises(VenuePayloadError, match="'E'"):
        parse_futures_snapshot(b'{"lastUpdateId":1,"bids":[],"asks":[]}', "BTCUSDT", 100, 0)


def rest_case(name: str) -> tuple[int, bytes, dict[str, str]]:
    case = json.loads((FIXTURES / "binance_rest_errors.json").read_text())[name]
    return case["status"], case["body"].encode(), case["headers"]


def test_rest_429_is_rate_limited_with_its_retry_after() -> None:
    error = parse_rest_error(*rest_case("rate_limited"))
    assert (error.status, error.code, error.retry_after_s, error.banned) == (429, -1003, 17.0, False)
    assert error.rate_limited and not error.invalid_symbol
    assert error.msg.startswith("Too much request weight used")


def test_rest_418_is_a_ban_with_its_end_and_a_lower_case_retry_after_header() -> None:
    error = parse_rest_error(*rest_case("banned"))
    assert (error.status, error.code, error.retry_after_s) == (418, -1003, 120.0)
    assert error.banned and error.rate_limited
    assert error.banned_until_ms == 1717000120000


def test_rest_ban_announced_in_the_body_only_still_counts() -> None:
    _, body, _ = rest_case("banned")
    error = parse_rest_error(403, body, {})
    assert error.banned and error.retry_after_s is None


def test_rest_invalid_symbol() -> None:
    error = parse_rest_error(*rest_case("invalid_symbol"))
    assert error.invalid_symbol and not error.rate_limited and not error.banned
    assert error.retry_after_s is None


def test_rest_non_binance_body_keeps_the_text_and_ignores_a_date_retry_after() -> None:
    error = parse_rest_error(*rest_case("gateway"))
    assert error.code is None
    assert error.msg.startswith("<html>")
    assert error.retry_after_s is None
    assert not error.rate_limited


@pytest.mark.parametrize("value", ["-5", "nan", "inf"])
def test_rest_unusable_retry_after_values_are_dropped(value: str) -> None:
    assert parse_rest_error(429, b"", {"Retry-After": value}).retry_after_s is None


def test_rest_body_with_ill_typed_fields_keeps_the_raw_text() -> None:
    error = parse_rest_error(500, b'{"code":"-1000","msg":5}', {})
    assert error.code is None
    assert error.msg == '{"code":"-1000","msg":5}'


def test_exchange_info_says_what_each_symbol_is() -> None:
    body = orjson.dumps({
        "symbols": [
            {"symbol": "ETHBTC", "status": "TRADING", "baseAsset": "ETH", "quoteAsset": "BTC"},
            {"symbol": "BTCUSDT", "status": "TRADING", "baseAsset": "BTC", "quoteAsset": "USDT",
             "contractType": "PERPETUAL"},
            {"symbol": "BTCUSDT_261225", "status": "TRADING", "baseAsset": "BTC", "quoteAsset": "USDT",
             "contractType": "CURRENT_QUARTER"},
        ]
    })  # fmt: skip
    assert [(m.market, m.base, m.quote, m.kind) for m in parse_exchange_info(body, "x")] == [
        ("ETHBTC", "ETH", "BTC", "spot"),
        ("BTCUSDT", "BTC", "USDT", "perpetual"),
        ("BTCUSDT_261225", "BTC", "USDT", "future"),
    ]
