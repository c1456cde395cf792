"""Retries against a real HTTP server: 429 and 503 with Retry-After, then 200, sync and async."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import httpx
import pytest
from ladder_sdk import (
    APIConnectionError,
    APITimeoutError,
    AsyncLadder,
    BookNotSyncedError,
    InternalServerError,
    Ladder,
    NotFoundError,
    RateLimitError,
    RetryPolicy,
    Timeout,
)

BOOK_PATH = "/v1/books/binance.com/ETHBTC"


def script_429_503_200(server: Any) -> None:
    server.script(
        "GET",
        BOOK_PATH,
        (429, server.error("rate_limited"), {"Retry-After": "0.3"}),
        (503, server.error("book_not_synced"), {"Retry-After": "0.2"}),
        (200, server.book(42)),
    )


def assert_waited_as_told(server: Any) -> None:
    seen = server.requests_to(BOOK_PATH)
    assert len(seen) == 3
    first_gap, second_gap = seen[1].at - seen[0].at, seen[2].at - seen[1].at
    # computed backoff is ~10 ms here, so these gaps can only come from Retry-After
    assert 0.3 <= first_gap < 1.0
    assert 0.2 <= second_gap < 1.0
    ids = [request.headers["X-Request-ID"] for request in seen]
    assert len(set(ids)) == 3 and len({request_id.rsplit("-", 1)[0] for request_id in ids}) == 1


def test_sync_client_retries_429_and_503_honouring_retry_after(
    server: Any, api_key: str, fast_backoff: RetryPolicy
) -> None:
    script_429_503_200(server)
    with Ladder(api_key, base_url=server.url, retry_policy=fast_backoff) as ladder:
        book = ladder.book("binance.com", "ETHBTC")
    assert book.update_id == 42
    assert_waited_as_told(server)


async def test_async_client_retries_429_and_503_honouring_retry_after(
    server: Any, api_key: str, fast_backoff: RetryPolicy
) -> None:
    script_429_503_200(server)
    async with AsyncLadder(api_key, base_url=server.url, retry_policy=fast_backoff) as ladder:
        book = await ladder.book("binance.com", "ETHBTC")
    assert book.update_id == 42
    assert_waited_as_told(server)


def test_without_retries_the_error_carries_the_servers_hints(server: Any, api_key: str) -> None:
    server.script(
        "GET", BOOK_PATH, (429, server.error("rate_limited", "slow down", "r-9"), {"Retry-After": "7"})
    )
    with (
        Ladder(api_key, base_url=server.url, max_retries=0) as ladder,
        pytest.raises(RateLimitError) as caught,
    ):
        ladder.book("binance.com", "ETHBTC")
    error = caught.value
    assert (error.status, error.code, error.message, error.request_id, error.retry_after) == (
        429,
        "rate_limited",
        "slow down",
        "r-9",
        7.0,
    )
    assert len(server.requests_to(BOOK_PATH)) == 1


def test_spent_retries_raise_the_last_error(server: Any, api_key: str, fast_backoff: RetryPolicy) -> None:
    not_synced = (503, server.error("book_not_synced"), {"Retry-After": "0"})
    server.script("GET", BOOK_PATH, not_synced, not_synced, not_synced, not_synced)
    with (
        Ladder(api_key, base_url=server.url, retry_policy=replace(fast_backoff, max_retries=2)) as ladder,
        pytest.raises(BookNotSyncedError),
    ):
        ladder.book("binance.com", "ETHBTC")
    assert len(server.requests_to(BOOK_PATH)) == 3


def test_a_retry_after_too_long_to_wait_is_raised_at_once(server: Any, api_key: str) -> None:
    server.script(
        "GET", BOOK_PATH, (429, server.error("rate_limited"), {"Retry-After": "3600"}), (200, server.book(1))
    )
    started = time.monotonic()
    with Ladder(api_key, base_url=server.url) as ladder, pytest.raises(RateLimitError) as caught:
        ladder.book("binance.com", "ETHBTC")
    assert caught.value.retry_after == 3600.0
    assert time.monotonic() - started < 2.0
    assert len(server.requests_to(BOOK_PATH)) == 1


def test_other_4xx_are_not_retried(server: Any, api_key: str, fast_backoff: RetryPolicy) -> None:
    server.script("GET", BOOK_PATH, (404, server.error("unknown_market")), (200, server.book(1)))
    with (
        Ladder(api_key, base_url=server.url, retry_policy=fast_backoff) as ladder,
        pytest.raises(NotFoundError),
    ):
        ladder.book("binance.com", "ETHBTC")
    assert len(server.requests_to(BOOK_PATH)) == 1


async def test_creating_a_key_is_retried_after_429_but_not_after_5xx(
    server: Any, api_key: str, fast_backoff: RetryPolicy
) -> None:
    created = {"id": "k2", "key": "ldr_NEWnewNEWnewNEWnewNEWnewNEWnew654321"}
    server.script(
        "POST", "/v1/keys", (429, server.error("rate_limited"), {"Retry-After": "0"}), (201, created)
    )
    server.script("POST", "/v1/keys", (500, server.error("internal")), (201, created))
    async with AsyncLadder(api_key, base_url=server.url, retry_policy=fast_backoff) as ladder:
        assert (await ladder.create_key()).id == "k2"
        with pytest.raises(InternalServerError):
            await ladder.create_key()  # the server may have made a key already: never sent twice
    assert len(server.requests_to("/v1/keys")) == 3


def test_a_refused_connection_is_retried_then_raised(dead_url: str, api_key: str) -> None:
    policy = RetryPolicy(max_retries=2, initial_delay=0.05, max_delay=0.05, jitter=0.0)
    started = time.monotonic()
    with (
        Ladder(api_key, base_url=dead_url, retry_policy=policy) as ladder,
        pytest.raises(APIConnectionError) as caught,
    ):
        ladder.create_key()  # not retry-safe, yet a refused connection provably did nothing
    assert time.monotonic() - started >= 0.1  # two waits of 50 ms: it did retry
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert api_key not in str(caught.value) and api_key not in repr(caught.value.__cause__)
    assert f"(POST {dead_url}/v1/keys)" in str(caught.value)  # it names what it tried to reach


async def test_a_slow_answer_times_out(server: Any, api_key: str) -> None:
    server.script("GET", BOOK_PATH, (200, server.book(1), {}, 0.5))
    async with AsyncLadder(api_key, base_url=server.url, timeout=Timeout(read=0.2), max_retries=0) as ladder:
        with pytest.raises(APITimeoutError):
            await ladder.book("binance.com", "ETHBTC")
