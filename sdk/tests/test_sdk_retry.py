"""The retry policy's arithmetic and its list of retryable failures, without sleeping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from ladder_sdk import (
    APIConnectionError,
    APIResponseError,
    APITimeoutError,
    AuthenticationError,
    BookNotSyncedError,
    BookTooOldError,
    ConfigurationError,
    InternalServerError,
    LadderError,
    NotFoundError,
    RateLimitError,
    RetryPolicy,
)
from ladder_sdk._wire.retry import may_retry, parse_retry_after


def policy(draw: float, **overrides: float) -> RetryPolicy:
    return RetryPolicy(random=lambda: draw, **overrides)  # type: ignore[arg-type]


def test_backoff_doubles_from_the_initial_delay_without_jitter() -> None:
    no_jitter = policy(0.0, initial_delay=0.5, max_delay=100.0)
    assert [no_jitter.compute(attempt) for attempt in range(5)] == [0.5, 1.0, 2.0, 4.0, 8.0]


def test_backoff_is_capped_at_max_delay() -> None:
    capped = policy(0.0, initial_delay=1.0, max_delay=3.0)
    assert capped.compute(1) == 2.0
    assert capped.compute(2) == 3.0
    assert capped.compute(30) == 3.0


def test_jitter_takes_at_most_its_fraction_off() -> None:
    assert policy(1.0, initial_delay=2.0, max_delay=8.0, jitter=0.25).compute(0) == pytest.approx(1.5)
    assert policy(0.5, initial_delay=2.0, max_delay=8.0, jitter=0.25).compute(0) == pytest.approx(1.75)
    real = RetryPolicy(initial_delay=2.0, max_delay=8.0, jitter=0.25)
    assert all(1.5 <= real.compute(0) <= 2.0 for _ in range(200))


def test_retry_after_is_obeyed_exactly_without_jitter() -> None:
    jittery = policy(1.0, jitter=1.0)
    assert jittery.compute(0, retry_after=0.3) == 0.3
    assert jittery.compute(5, retry_after=0.0) == 0.0
    assert jittery.compute(1, retry_after=60.0) == 60.0


def test_a_retry_after_beyond_the_limit_falls_back_to_backoff_and_gives_up() -> None:
    limited = policy(0.0, initial_delay=0.5, max_retry_after=10.0)
    assert limited.compute(0, retry_after=11.0) == 0.5
    assert limited.gives_up_on(0, retry_after=11.0)
    assert not limited.gives_up_on(0, retry_after=10.0)


def test_gives_up_once_max_retries_are_spent() -> None:
    two = RetryPolicy(max_retries=2)
    assert [two.gives_up_on(attempt, None) for attempt in range(4)] == [False, False, True, True]
    assert RetryPolicy(max_retries=0).gives_up_on(0, None)


@pytest.mark.parametrize(
    "arguments",
    [{"max_retries": -1}, {"initial_delay": -0.1}, {"initial_delay": 2.0, "max_delay": 1.0}, {"jitter": 1.5}],
)
def test_a_nonsensical_policy_is_refused(arguments: dict[str, float]) -> None:
    with pytest.raises(ConfigurationError):
        RetryPolicy(**arguments)  # type: ignore[arg-type]


NOW = datetime(2025, 11, 30, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("3", 3.0),
        (" 0.25 ", 0.25),
        ("0", 0.0),
        ("Sun, 30 Nov 2025 12:00:07 GMT", 7.0),
        ("Sun, 30 Nov 2025 11:59:00 GMT", 0.0),  # already past: come back now
        ("-1", None),
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_header_forms(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header, now=NOW) == seconds


def test_retry_after_date_uses_the_clock_when_no_now_is_given() -> None:
    later = (datetime.now(UTC) + timedelta(seconds=30)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert 25 < (parse_retry_after(later) or 0) <= 30


def status(kind: type[LadderError], code: int) -> LadderError:
    return kind(code, None, "x")


@pytest.mark.parametrize(
    ("error", "retry_safe", "may_have_arrived", "tls_rejected", "expected"),
    [
        (status(RateLimitError, 429), False, True, False, True),  # refused before doing anything
        (status(BookNotSyncedError, 503), True, True, False, True),
        (status(BookTooOldError, 503), True, True, False, True),
        (status(InternalServerError, 500), True, True, False, True),
        (status(InternalServerError, 500), False, True, False, False),  # may have created something
        (status(NotFoundError, 404), True, True, False, False),
        (status(AuthenticationError, 401), True, True, False, False),
        (APIConnectionError("reset"), True, True, False, True),
        (APIConnectionError("reset"), False, True, False, False),
        (APIConnectionError("refused"), False, False, False, True),  # provably never arrived
        (APITimeoutError("slow"), True, True, False, True),
        (APIConnectionError("bad certificate"), True, False, True, False),
        (APIResponseError("garbled"), True, True, False, False),
    ],
)
def test_the_list_of_retryable_failures(
    error: LadderError, retry_safe: bool, may_have_arrived: bool, tls_rejected: bool, expected: bool
) -> None:
    decided = may_retry(
        error, retry_safe=retry_safe, may_have_arrived=may_have_arrived, tls_rejected=tls_rejected
    )
    assert decided is expected
