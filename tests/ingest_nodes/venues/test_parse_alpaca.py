"""Alpaca frame parsing: exact numbers rendered as plain strings, nanosecond timestamps, batching."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.venues.alpaca.parse import parse_alpaca_frame
from ingest_nodes.venues.alpaca.schemas import AlpacaError, AlpacaSubscription, AlpacaSuccess
from ingest_nodes.venues.timestamps import rfc3339_to_ms

FIXTURES = Path(__file__).parents[1] / "fixtures"
SECOND_0838_51 = int(datetime(2024, 3, 12, 10, 38, 51, tzinfo=UTC).timestamp()) * 1000


def test_recorded_style_session_parses_in_order() -> None:
    frames = [
        parse_alpaca_frame(raw, 42) for raw in (FIXTURES / "alpaca_btcusd.jsonl").read_bytes().splitlines()
    ]
    assert frames[0] == [AlpacaSuccess(msg="connected")]
    assert frames[1] == [AlpacaSuccess(msg="authenticated")]
    assert frames[3] == [AlpacaSubscription(orderbooks=("BTC/USD",))]
    [reset] = frames[4]
    assert reset == DepthUpdate(
        symbol="BTC/USD",
        first_update_id=0,
        final_update_id=0,
        prev_final_update_id=None,
        event_time=SECOND_0838_51 - 1000 + 796,
        ingest_time=42,
        bids=(("71859.53", "0.27994"), ("71855", "1.2")),
        asks=(("71939.7", "0.83953"), ("71950.25", "0.000038")),
        reset=True,
    )
    batch = frames[5]  # a trade (skipped), then two order-book messages for two symbols
    assert [(m.symbol, m.reset) for m in batch if isinstance(m, DepthUpdate)] == [
        ("BTC/USD", False),
        ("ETH/USD", True),
    ]
    update = batch[0]
    assert isinstance(update, DepthUpdate)
    assert update.bids == (("71859.53", "0"),)
    assert update.asks == (("71939.7", "0.0015"),)  # 1.5E-3 written out
    assert update.event_time == SECOND_0838_51
    [last] = frames[6]
    assert isinstance(last, DepthUpdate)
    assert last.bids == (("71857", "0.1"),)  # canonical: trailing zeros dropped, one price one string
    assert frames[7] == [AlpacaError(code=407, msg="slow client")]


@pytest.mark.parametrize(
    ("number", "rendered"),
    [
        ("0.1", "0.1"),
        ("1E-7", "0.0000001"),
        ("2.5e3", "2500"),
        ("92233720368.54775807", "92233720368.54775807"),
        ("0", "0"),
        ("0.0", "0"),
        ("71859.530", "71859.53"),
        ("7.185953E+4", "71859.53"),
        ("1.23456789012345678901234567890123", "1.23456789012345678901234567890123"),
        ("123456789012345678901234567890", "123456789012345678901234567890"),
    ],
)
def test_numbers_become_exact_plain_strings(number: str, rendered: str) -> None:
    raw = '{"T":"o","S":"X/USD","t":"2024-01-01T00:00:00Z","b":[{"p":' + number + ',"s":1}],"a":[]}'
    [update] = parse_alpaca_frame(raw, 0)
    assert isinstance(update, DepthUpdate) and update.bids == ((rendered, "1"),)


@pytest.mark.parametrize("number", ["-1", "-0.5", "NaN", "Infinity", '"1.5"'])
def test_negative_and_non_numbers_are_refused(number: str) -> None:
    raw = '{"T":"o","S":"X/USD","t":"2024-01-01T00:00:00Z","b":[{"p":1,"s":' + number + '}],"a":[]}'
    with pytest.raises(VenuePayloadError, match="non-negative number"):
        parse_alpaca_frame(raw, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01T00:00:00.999999999Z", 999),
        ("1970-01-01T00:00:01.5Z", 1500),
        ("1970-01-01T01:00:00+01:00", 0),
        ("1970-01-01T00:00:00.001-00:30", 1_800_001),
        ("2024-03-12T10:38:51z", SECOND_0838_51),
    ],
)
def test_rfc3339_to_ms_truncates_below_the_millisecond(text: str, expected: int) -> None:
    assert rfc3339_to_ms(text) == expected


@pytest.mark.parametrize(
    "text", ["2024-03-12 10:38:51Z", "2024-03-12T10:38:51", "2024-02-30T00:00:00Z", "yesterday"]
)
def test_bad_timestamps_raise(text: str) -> None:
    with pytest.raises(VenuePayloadError, match="timestamp"):
        rfc3339_to_ms(text)


def test_a_bare_object_is_read_like_a_one_message_array() -> None:
    assert parse_alpaca_frame(b'{"T":"success","msg":"connected"}', 0) == [AlpacaSuccess(msg="connected")]


def test_subscription_without_orderbooks_lists_none() -> None:
    assert parse_alpaca_frame(b'[{"T":"subscription","trades":["BTC/USD"]}]', 0) == [AlpacaSubscription(())]


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json",
        b"\xff\xfe\x00",
        b"[1]",
        b'[{"T":"error","code":"406","msg":"x"}]',
        b'[{"T":"success"}]',
        b'[{"T":"subscription","orderbooks":"BTC/USD"}]',
        b'[{"T":"o","S":"X","t":"2024-01-01T00:00:00Z","b":[{"p":1,"s":true}],"a":[]}]',
        b'[{"T":"o","S":"X","t":"2024-01-01T00:00:00Z","b":[{"p":"1","s":1}],"a":[]}]',
        b'[{"T":"o","S":"X","t":"2024-01-01T00:00:00Z","b":[{"p":NaN,"s":1}],"a":[]}]',
        b'[{"T":"o","S":"X","t":"2024-01-01T00:00:00Z","b":[[1,1]],"a":[]}]',
        b'[{"T":"o","S":"X","t":"2024-01-01T00:00:00Z","b":[]}]',
        b'[{"T":"o","S":"X","t":"2024-01-01T00:00:00Z","b":[],"a":[],"r":1}]',
        b'[{"T":"o","t":"2024-01-01T00:00:00Z","b":[],"a":[]}]',
    ],
)
def test_malformed_frames_raise_a_payload_error(raw: bytes) -> None:
    with pytest.raises(VenuePayloadError):
        parse_alpaca_frame(raw, 0)
