"""The reconnect-and-resume rules of `stream()`, driven directly without sockets or sleeping."""

from __future__ import annotations

import json
import ssl

import pytest
from ladder_sdk import (
    APIConnectionError,
    APIResponseError,
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    RetryPolicy,
)
from ladder_sdk._client.stream import StreamSession, stream_url
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosedError, InvalidStatus
from websockets.http11 import Response

KEY = "ldr_STREAMstreamSTREAMstreamSTREAMstr123456"


def session(max_reconnects: int | None = None, url: str = "ws://h/v1/stream") -> StreamSession:
    policy = RetryPolicy(initial_delay=1.0, max_delay=8.0, jitter=0.0)
    return StreamSession(url, dict, policy, max_reconnects, KEY, ssl.create_default_context())


def message(update_id: int) -> str:
    return json.dumps(
        {
            "exchange": "binance.com",
            "market": "ETHBTC",
            "update_id": update_id,
            "event_time": 1,
            "ingest_time": 2,
            "publish_time": 3,
            "age_ms": 0,
            "replica": 1,
            "status": "synced",
            "truncated": False,
            "bids": [],
            "asks": [],
        }
    )


def refused(status: int, body: object, headers: dict[str, str] | None = None) -> InvalidStatus:
    return InvalidStatus(Response(status, "refused", Headers(headers or {}), json.dumps(body).encode()))


@pytest.mark.parametrize(
    ("base", "depth", "expected"),
    [
        ("http://127.0.0.1:8080", None, "ws://127.0.0.1:8080/v1/stream?exchange=alpaca&market=BTC%2FUSD"),
        (
            "https://api.example/ladder",
            5,
            "wss://api.example/ladder/v1/stream?exchange=alpaca&market=BTC%2FUSD&depth=5",
        ),
    ],
)
def test_the_stream_url_follows_the_base_url(base: str, depth: int | None, expected: str) -> None:
    assert stream_url(base, "alpaca", "BTC/USD", depth) == expected


def test_tls_settings_apply_only_to_wss() -> None:
    assert session(url="ws://h/v1/stream").ssl_context is None
    assert isinstance(session(url="wss://h/v1/stream").ssl_context, ssl.SSLContext)


def test_snapshots_never_go_back_and_never_repeat() -> None:
    state = session()
    accepted = [state.accept(message(update_id)) for update_id in (5, 6, 6, 4, 7)]
    assert [book.update_id if book else None for book in accepted] == [5, 6, None, None, 7]


def test_consecutive_failures_back_off_and_a_snapshot_resets_the_count() -> None:
    state = session()
    drop = ConnectionClosedError(None, None)
    assert [state.failed(drop) for _ in range(3)] == [1.0, 2.0, 4.0]
    state.accept(message(1))
    assert state.failed(drop) == 1.0


def test_max_reconnects_raises_after_that_many_consecutive_failures() -> None:
    state = session(max_reconnects=2)
    state.failed(ConnectionRefusedError())
    state.failed(ConnectionRefusedError())
    with pytest.raises(APIConnectionError) as caught:
        state.failed(ConnectionRefusedError())
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)


def test_a_refused_handshake_maps_through_the_status_table() -> None:
    state = session()
    with pytest.raises(AuthenticationError):
        state.failed(refused(401, {"error": {"code": "unauthorized", "message": "invalid API key"}}))
    with pytest.raises(NotFoundError):
        state.failed(refused(404, {"error": {"code": "unknown_market", "message": "no such market"}}))
    waited = state.failed(
        refused(503, {"error": {"code": "book_not_synced", "message": "x"}}, {"Retry-After": "3"})
    )
    assert waited == 3.0


@pytest.mark.parametrize(
    ("code", "waits"), [(1000, True), (1001, True), (1011, True), (4503, True), (4429, True)]
)
def test_closes_that_may_heal_are_retried(code: int, waits: bool) -> None:
    assert session().closed(code, "") >= 0.0


@pytest.mark.parametrize(("code", "error"), [(4401, AuthenticationError), (4403, PermissionDeniedError)])
def test_application_close_codes_that_cannot_heal_are_raised(code: int, error: type[Exception]) -> None:
    with pytest.raises(error, match="unsubscribed"):
        session().closed(code, "unsubscribed")


def test_a_garbled_message_is_raised_not_skipped() -> None:
    with pytest.raises(APIResponseError):
        session().accept("{not json")
