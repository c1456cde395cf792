"""`stream()` against a real WebSocket server that drops, refuses and closes, sync and async."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from ladder_sdk import (
    APIConnectionError,
    AsyncLadder,
    AuthenticationError,
    Ladder,
    PermissionDeniedError,
    RetryPolicy,
)

# The first connection drops after update 3; the second replays older snapshots before new ones.
DROP_THEN_RESUME = (
    [("send", 1), ("send", 2), ("send", 3), ("drop",)],
    [("send", 2), ("send", 3), ("send", 4), ("send", 5), ("hold",)],
)


def check_resumed(server: Any, update_ids: list[int], api_key: str) -> None:
    assert update_ids == [1, 2, 3, 4, 5]
    assert len(server.stream_seen) == 2
    for connection in server.stream_seen:
        assert connection.headers["Authorization"] == f"Bearer {api_key}"
        assert connection.query == {"exchange": "binance.com", "market": "ETHBTC", "depth": "10"}


def test_sync_stream_reconnects_after_a_drop_and_never_goes_back(
    server: Any, api_key: str, fast_backoff: RetryPolicy
) -> None:
    server.script_stream(*DROP_THEN_RESUME)
    with Ladder(api_key, base_url=server.url, retry_policy=fast_backoff) as ladder:
        books = ladder.stream("binance.com", "ETHBTC", depth=10)
        update_ids = [next(books).update_id for _ in range(5)]
        books.close()
    check_resumed(server, update_ids, api_key)


async def test_async_stream_reconnects_after_a_drop_and_never_goes_back(
    server: Any, api_key: str, fast_backoff: RetryPolicy
) -> None:
    server.script_stream(*DROP_THEN_RESUME)
    async with AsyncLadder(api_key, base_url=server.url, retry_policy=fast_backoff) as ladder:
        books = ladder.stream("binance.com", "ETHBTC", depth=10)
        update_ids = [(await anext(books)).update_id for _ in range(5)]
        await books.aclose()
    check_resumed(server, update_ids, api_key)


def test_sync_stream_reconnects_after_a_clean_close_too(
    server: Any, api_key: str, fast_backoff: RetryPolicy
) -> None:
    server.script_stream([("send", 1), ("close", 1001)], [("send", 2), ("hold",)])
    with Ladder(api_key, base_url=server.url, retry_policy=fast_backoff) as ladder:
        books = ladder.stream("binance.com", "ETHBTC")
        assert [next(books).update_id, next(books).update_id] == [1, 2]
        books.close()


def test_a_refused_key_is_raised_without_reconnecting(server: Any, api_key: str) -> None:
    server.script_stream([("reject", 401, server.error("unauthorized", "invalid API key"))])
    with Ladder(api_key, base_url=server.url) as ladder, pytest.raises(AuthenticationError) as caught:
        next(iter(ladder.stream("binance.com", "ETHBTC")))
    assert caught.value.message == "invalid API key"
    assert len(server.stream_seen) == 1


async def test_a_refused_handshake_with_retry_after_is_retried_after_that_wait(
    server: Any, api_key: str, fast_backoff: RetryPolicy
) -> None:
    server.script_stream(
        [("reject", 503, server.error("book_not_synced"), {"Retry-After": "0.3"})],
        [("send", 9), ("hold",)],
    )
    async with AsyncLadder(api_key, base_url=server.url, retry_policy=fast_backoff) as ladder:
        books = ladder.stream("binance.com", "ETHBTC")
        assert (await anext(books)).update_id == 9
        await books.aclose()
    first, second = server.stream_seen
    assert second.at - first.at >= 0.3


async def test_an_application_close_code_maps_to_its_error(server: Any, api_key: str) -> None:
    server.script_stream([("send", 1), ("close", 4403)])
    async with AsyncLadder(api_key, base_url=server.url) as ladder:
        books = ladder.stream("binance.com", "ETHBTC")
        assert (await anext(books)).update_id == 1
        with pytest.raises(PermissionDeniedError) as caught:
            await anext(books)
    assert caught.value.status == 403


def test_max_reconnects_bounds_consecutive_failures(dead_url: str, api_key: str) -> None:
    policy = RetryPolicy(initial_delay=0.05, max_delay=0.05, jitter=0.0)
    started = time.monotonic()
    with (
        Ladder(api_key, base_url=dead_url, retry_policy=policy) as ladder,
        pytest.raises(APIConnectionError) as caught,
    ):
        next(iter(ladder.stream("binance.com", "ETHBTC", max_reconnects=2)))
    assert time.monotonic() - started >= 0.1  # it waited twice before giving up
    assert api_key not in str(caught.value)
    assert str(caught.value).startswith(f"stream {dead_url.replace('http', 'ws', 1)}/v1/stream: ")


def test_debug_logs_of_the_stream_never_show_the_key(server: Any, api_key: str, caplog: Any) -> None:
    server.script_stream([("send", 1), ("hold",)])
    with (
        caplog.at_level(logging.DEBUG, logger="ladder_sdk.stream"),
        Ladder(api_key, base_url=server.url) as ladder,
    ):
        books = ladder.stream("binance.com", "ETHBTC")
        assert next(books).update_id == 1
        books.close()
    assert "> Authorization: ***" in caplog.text  # the handshake was logged, masked
    assert api_key not in caplog.text
