"""How long to wait before trying again, as pure functions of the attempt and the server's hint.

Nothing here sleeps or reads a clock on its own: the clients drive the waiting, and the tests
call `RetryPolicy.compute` and `parse_retry_after` directly.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from .errors import (
    APIConnectionError,
    BookUnavailableError,
    ConfigurationError,
    InternalServerError,
    LadderError,
    RateLimitError,
)


@dataclass(frozen=True)
class RetryPolicy:
    """Jittered exponential backoff that gives way to the server's `Retry-After`.

    Attempt 0 (the first retry) waits about `initial_delay`, each later one twice as long, never
    more than `max_delay`. Jitter takes up to `jitter` (a fraction) off each wait so that many
    clients dropped at once do not come back at once. A `Retry-After` of up to
    `max_retry_after` seconds is obeyed exactly; a longer one is not waited for (the error is
    raised instead, see `gives_up_on`), so a call never hangs for minutes behind the caller's back.
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.25
    max_retry_after: float = 60.0
    random: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.initial_delay < 0 or self.max_delay < self.initial_delay:
            raise ConfigurationError("RetryPolicy needs max_retries >= 0 and 0 <= initial_delay <= max_delay")
        if not 0 <= self.jitter <= 1:
            raise ConfigurationError("RetryPolicy.jitter is a fraction between 0 and 1")

    def compute(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `attempt` (0 for the first retry)."""
        if retry_after is not None and 0 <= retry_after <= self.max_retry_after:
            return retry_after
        backoff = min(self.initial_delay * 2.0**attempt, self.max_delay)
        return backoff * (1.0 - self.jitter * self.random())

    def gives_up_on(self, attempt: int, retry_after: float | None) -> bool:
        """True when retry number `attempt` should not happen (spent, or asked to wait too long)."""
        too_long = retry_after is not None and retry_after > self.max_retry_after
        return attempt >= self.max_retries or too_long


def may_retry(error: LadderError, *, retry_safe: bool, may_have_arrived: bool, tls_rejected: bool) -> bool:
    """The explicit list of failures worth another try; everything else is raised at once.

    A 429 is always retried: the server refused before doing anything. A 5xx or a broken
    connection is retried only when the call may be repeated (`retry_safe`) or provably never
    arrived. A refused certificate is never retried: waiting does not fix it.
    """
    if isinstance(error, RateLimitError):
        return True
    if isinstance(error, BookUnavailableError | InternalServerError):
        return retry_safe
    if isinstance(error, APIConnectionError):
        return not tls_rejected and (retry_safe or not may_have_arrived)
    return False


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a `Retry-After` header: delta-seconds or an HTTP date; None when absent or junk."""
    if value is None:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        return _seconds_until_http_date(text, now or datetime.now(UTC))
    return seconds if seconds >= 0 else None


def _seconds_until_http_date(text: str, now: datetime) -> float | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT, even when written without a zone
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())
