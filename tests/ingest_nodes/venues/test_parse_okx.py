"""OKX parsing: the docs' own frames, the stream's events, REST books, instruments and errors."""

from __future__ import annotations

import orjson
import pytest

from book_store.catalog import TRADING
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.venues.okx.parse import (
    parse_okx_books,
    parse_okx_error,
    parse_okx_frame,
    parse_okx_instruments,
)
from ingest_nodes.venues.okx.schemas import OkxEvent, Pong
from ingest_nodes.venues.okx.stream import OkxStream
from ingest_nodes.venues.stream import Acked, Rejected, ShutdownNotice

# The "WS / Order book channel" push examples of the docs (levels trimmed).
SNAPSHOT = (
    b'{"arg":{"channel":"books","instId":"BTC-USDT"},"action":"snapshot","data":[{'
    b'"asks":[["8476.98","415","0","13"],["8477","7","0","2"]],'
    b'"bids":[["8476.97","256","0","12"],["8475.55","101","0","1"]],'
    b'"ts":"1597026383085","checksum":-855196043,"prevSeqId":-1,"seqId":123456}]}'
)
UPDATE = (
    b'{"arg":{"channel":"books","instId":"BTC-USDT"},"action":"update","data":[{'
    b'"asks":[["8476.98","0","0","0"]],"bids":[],'
    b'"ts":"1597026383185","checksum":0,"prevSeqId":123456,"seqId":123457}]}'
)


def test_a_snapshot_is_a_reset_of_the_books_depth_with_the_venues_strings() -> None:
    [update] = parse_okx_frame(SNAPSHOT, 7)
    assert update == DepthUpdate(
        symbol="BTC-USDT",
        first_update_id=123456,
        final_update_id=123456,
        prev_final_update_id=-1,
        event_time=1597026383085,
        ingest_time=7,
        bids=(("8476.97", "256"), ("8475.55", "101")),
        asks=(("8476.98", "415"), ("8477", "7")),
        reset=True,
        limit=400,
    )


def test_an_update_chains_by_prev_seq_id() -> None:
    [update] = parse_okx_frame(UPDATE, 8)
    assert isinstance(update, DepthUpdate)
    assert (update.prev_final_update_id, update.final_update_id) == (123456, 123457)
    assert not update.reset and update.limit == 0
    assert update.asks == (("8476.98", "0"),) and update.bids == ()


def test_events_pong_and_other_channels() -> None:
    ack = (
        b'{"id":"1512","event":"subscribe","arg":{"channel":"books","instId":"BTC-USDT"},"connId":"a4d3ae55"}'
    )
    error = b'{"id":"1512","event":"error","code":"60012","msg":"Invalid request: {}","connId":"a4d3ae55"}'
    assert parse_okx_frame(ack, 0) == [OkxEvent("subscribe", "1512", None, "")]
    assert parse_okx_frame(error, 0) == [OkxEvent("error", "1512", 60012, "Invalid request: {}")]
    assert parse_okx_frame("pong", 0) == [Pong()]
    assert parse_okx_frame(b'{"arg":{"channel":"tickers","instId":"BTC-USDT"},"data":[{}]}', 0) == []


@pytest.mark.parametrize(
    "frame",
    [
        b"not json",
        b"[1]",
        b'{"arg":{"channel":"books"},"action":"update","data":[]}',
        b'{"arg":{"channel":"books","instId":"X"},"action":"partial","data":[]}',
        b'{"arg":{"channel":"books","instId":"X"},"action":"update","data":[{"asks":[],"bids":[],"ts":"1","prevSeqId":1}]}',
        b'{"arg":{"channel":"books","instId":"X"},"action":"update","data":[{"asks":[[1,2]],"bids":[],"ts":"1","prevSeqId":1,"seqId":2}]}',
        b'{"arg":{"channel":"books","instId":"X"},"action":"update","data":[{"asks":[],"bids":[],"ts":1,"prevSeqId":1,"seqId":2}]}',
    ],
)
def test_frames_that_are_not_the_documented_shape_raise(frame: bytes) -> None:
    with pytest.raises(VenuePayloadError):
        parse_okx_frame(frame, 0)


def test_the_stream_turns_answers_and_the_upgrade_notice_into_events() -> None:
    stream = OkxStream("wss://ws.okx.com:8443")
    assert stream.url == "wss://ws.okx.com:8443/ws/v5/public"
    assert orjson.loads(stream.requests(True, ["BTC-USDT", "ETH-USDT-SWAP"], 7)[0]) == {
        "id": "7",
        "op": "subscribe",
        "args": [{"channel": "books", "instId": "BTC-USDT"}, {"channel": "books", "instId": "ETH-USDT-SWAP"}],
    }
    assert stream.read(b'{"id":"7","event":"subscribe","arg":{},"connId":"x"}', 0) == [Acked(7)]
    assert stream.read(b'{"id":"7","event":"error","code":"60018","msg":"no","connId":"x"}', 0) == [
        Rejected(7, 60018, "no")
    ]
    notice = b'{"event":"notice","code":"64008","msg":"The connection will soon be closed.","connId":"x"}'
    assert stream.read(notice, 0) == [ShutdownNotice()]
    assert stream.read("pong", 0) == []
    assert stream.keepalive == (20.0, "ping")
    assert stream.requests_per_hour == 480


def test_a_rest_book_carries_the_seq_id_it_is_at() -> None:
    body = (
        b'{"code":"0","msg":"","data":[{"asks":[["41006.8","0.60038921","0","1"]],'
        b'"bids":[["41006.3","0.30178218","0","2"]],"ts":"1629966436396","seqId":3235851742}]}'
    )
    snapshot = parse_okx_books(body, "BTC-USDT", 5, 9)
    assert snapshot.last_update_id == 3235851742 and snapshot.event_time == 1629966436396
    assert snapshot.bids == (("41006.3", "0.30178218"),) and snapshot.limit == 5
    with pytest.raises(VenuePayloadError):
        parse_okx_books(b'{"code":"51001","msg":"Instrument ID does not exist.","data":[]}', "X", 5, 0)


def test_instruments_spot_and_swap_and_their_states() -> None:
    body = orjson.dumps(
        {
            "code": "0",
            "msg": "",
            "data": [
                {
                    "instType": "SPOT",
                    "instId": "BTC-USDT",
                    "baseCcy": "BTC",
                    "quoteCcy": "USDT",
                    "uly": "",
                    "state": "live",
                },
                {
                    "instType": "SWAP",
                    "instId": "BTC-USDT-SWAP",
                    "baseCcy": "",
                    "quoteCcy": "",
                    "uly": "BTC-USDT",
                    "state": "live",
                },
                {
                    "instType": "SPOT",
                    "instId": "NEW-USDT",
                    "baseCcy": "NEW",
                    "quoteCcy": "USDT",
                    "uly": "",
                    "state": "preopen",
                },
            ],
        }
    )
    markets = parse_okx_instruments(body, "okx")
    assert [(m.market, m.status, m.base, m.quote, m.kind) for m in markets] == [
        ("BTC-USDT", TRADING, "BTC", "USDT", "spot"),
        ("BTC-USDT-SWAP", TRADING, "BTC", "USDT", "perpetual"),
        ("NEW-USDT", "PREOPEN", "NEW", "USDT", "spot"),
    ]


def test_rest_errors_read_code_and_message() -> None:
    assert parse_okx_error(b'{"code":"50011","msg":"Too Many Requests","data":[]}') == (
        50011,
        "Too Many Requests",
    )
    assert parse_okx_error(b'{"code":"0","msg":"","data":[]}') == (0, "")
    assert parse_okx_error(b"<html>bad gateway</html>") == (None, "<html>bad gateway</html>")
