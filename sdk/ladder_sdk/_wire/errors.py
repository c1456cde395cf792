"""Every exception the SDK raises, and the one table that turns an HTTP status into one of them.

The tree (catch the narrowest class that fits what you can act on)::

    LadderError                      root: `except LadderError` catches everything below
    ├── ConfigurationError           local misuse: no API key, a bad base URL, a bad argument
    ├── APIResponseError             the server answered something this SDK cannot read
    ├── APIConnectionError           no HTTP answer at all (refused, reset, DNS, TLS)
    │   └── APITimeoutError          ... because a timeout ran out
    ├── OutOfSync                    a diff-stream message does not continue a LocalBook, or its
    │                                checksum fails after it (.checksum); watch() resubscribes the book
    └── APIStatusError               an HTTP error answer: .status .code .message .request_id .retry_after
        ├── BadRequestError          400 invalid_request
        ├── AuthenticationError      401 unauthorized (no key, unknown, revoked or expired key)
        ├── PermissionDeniedError    403 forbidden (not subscribed, not an operator, tenant disabled)
        ├── NotFoundError            404 unknown_exchange, unknown_market, not_found
        ├── ConflictError            409 conflict
        ├── LimitExceededError       422 limit_exceeded (max_markets, max_replicas or max_depth)
        ├── RateLimitError           429 rate_limited, too_many_streams (the tenant's max_streams are open)
        ├── BookUnavailableError     503 for one book; retry after .retry_after
        │   ├── BookNotSyncedError   503 book_not_synced
        │   └── BookTooOldError      503 book_too_old
        └── InternalServerError      any other 5xx

Errors carry what the server said and the request id to quote in a support ticket; they never
carry the API key (the server never echoes one, and `redact` scrubs anything shaped like one).
"""

from __future__ import annotations

import re

_KEY_SHAPE = re.compile(r"ldr_[A-Za-z0-9]{8,}")


def redact(text: str, *secrets: str) -> str:
    """Hide Ladder-shaped keys and the given secrets in text that is about to enter an exception."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _KEY_SHAPE.sub("ldr_***", text)


class LadderError(Exception):
    """Root of every exception the SDK raises on purpose."""


class ConfigurationError(LadderError):
    """The client was set up or called wrongly; nothing was sent."""


class APIResponseError(LadderError):
    """The server answered, but not in the shape this SDK version understands."""


class APIConnectionError(LadderError):
    """The request got no HTTP answer: the connection failed, was reset, or TLS was refused."""


class APITimeoutError(APIConnectionError):
    """A connect, read, write or pool timeout ran out before the answer arrived."""


class OutOfSync(LadderError):
    """A message does not continue a `LocalBook`, or the book after it fails its checksum."""

    def __init__(self, reason: str, *, checksum: bool) -> None:
        super().__init__(reason)
        self.checksum = checksum
        """True for a checksum mismatch, False for a diff that does not continue the book."""


class APIStatusError(LadderError):
    """The server answered with an HTTP error; the fields say what it was and when to come back.

    `retry_after` is in seconds (from the `Retry-After` header) or None when the server gave none.
    """

    def __init__(
        self,
        status: int,
        code: str | None,
        message: str,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, code, message, request_id, retry_after)
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.retry_after = retry_after

    def __str__(self) -> str:
        text = f"{self.status} {self.code or 'error'}: {self.message}"
        if self.request_id:
            text += f" (request_id={self.request_id})"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, message={self.message!r})"


class BadRequestError(APIStatusError):
    """400: the request was malformed (a missing field, a bad query parameter)."""


class AuthenticationError(APIStatusError):
    """401: no key, an unknown key, or a revoked or expired key."""


class PermissionDeniedError(APIStatusError):
    """403: the key is valid but may not do this (not subscribed, not an operator, tenant disabled)."""


class NotFoundError(APIStatusError):
    """404: the exchange, market or object does not exist (or is not the caller's)."""


class ConflictError(APIStatusError):
    """409: the object already exists."""


class LimitExceededError(APIStatusError):
    """422: the tenant's `max_markets`, `max_replicas` or `max_depth` would be exceeded."""


class RateLimitError(APIStatusError):
    """429: the tenant's request rate is exceeded (rate_limited), or it holds its `max_streams` open
    streams (too_many_streams); come back after `retry_after` seconds."""


class BookUnavailableError(APIStatusError):
    """503 for one book: it exists but cannot be served right now; the other books are unaffected."""


class BookNotSyncedError(BookUnavailableError):
    """503 book_not_synced: no replica of the book is synced and fresh yet."""


class BookTooOldError(BookUnavailableError):
    """503 book_too_old: the freshest replica is older than the `max_age_ms` that was asked for."""


class InternalServerError(APIStatusError):
    """5xx that is not about one book: a server fault, usually worth a retry."""


# The one table: (status, error code) first, then (status, None) for any code of that status.
STATUS_ERRORS: dict[tuple[int, str | None], type[APIStatusError]] = {
    (400, None): BadRequestError,
    (401, None): AuthenticationError,
    (403, None): PermissionDeniedError,
    (404, None): NotFoundError,
    (409, None): ConflictError,
    (422, None): LimitExceededError,
    (429, None): RateLimitError,
    (503, "book_not_synced"): BookNotSyncedError,
    (503, "book_too_old"): BookTooOldError,
}


def status_error_class(status: int, code: str | None) -> type[APIStatusError]:
    """The exception class for an error answer; unlisted 5xx are server faults, the rest generic."""
    found = STATUS_ERRORS.get((status, code)) or STATUS_ERRORS.get((status, None))
    if found is not None:
        return found
    return InternalServerError if status >= 500 else APIStatusError
