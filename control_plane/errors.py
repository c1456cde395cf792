"""Errors the control plane reports to API callers, and its one configuration error.

    LadderError (ladder_process.errors)
    ├── ApiError                       a request cannot be served as asked; ``code`` goes on the wire
    │   ├── InvalidRequestError        invalid_request   malformed or out-of-range input
    │   ├── UnauthorizedError          unauthorized      no key, unknown, revoked or expired key
    │   ├── ForbiddenError             forbidden         valid key, but not allowed to do this
    │   ├── NotFoundError              not_found         no such object, or not the caller's
    │   │   ├── UnknownExchangeError   unknown_exchange
    │   │   └── UnknownMarketError     unknown_market
    │   ├── ConflictError              conflict          the object already exists
    │   ├── LimitExceededError         limit_exceeded    max_markets / max_replicas / max_depth
    │   ├── RateLimitedError           rate_limited      carries ``retry_after_s``
    │   ├── BookNotSyncedError         book_not_synced   carries ``retry_after_s``
    │   │   ├── BookUnplacedError      book_unplaced     no replica of the book could be placed
    │   │   └── VenueRefusedError      venue_refused     the venue refuses Ladder's credential
    │   ├── CatalogUnavailableError    catalog_unavailable  a known exchange whose market list is
    │   │                                                  not loaded yet; carries ``retry_after_s``
    │   └── BookTooOldError            book_too_old      carries ``retry_after_s``
    └── ConfigurationError             configuration     a process was started with missing settings

The HTTP layer maps classes to statuses with one table walked over the MRO; these classes carry
only the stable ``code`` and, where the client needs it, a retry hint. Messages are written for
the caller and never contain an API key, a key hash or the pepper.
"""

from __future__ import annotations

from ladder_process.errors import LadderError
from ladder_process.redaction import redact


class ApiError(LadderError):
    """A request that cannot be served as asked; ``str(error)`` is safe to show the caller."""

    code = "api_error"


class InvalidRequestError(ApiError):
    code = "invalid_request"


class UnauthorizedError(ApiError):
    code = "unauthorized"


class ForbiddenError(ApiError):
    code = "forbidden"


class NotFoundError(ApiError):
    code = "not_found"


class UnknownExchangeError(NotFoundError):
    code = "unknown_exchange"


class UnknownMarketError(NotFoundError):
    code = "unknown_market"


class ConflictError(ApiError):
    code = "conflict"


class LimitExceededError(ApiError):
    code = "limit_exceeded"


class _RetryLaterError(ApiError):
    """An error after which the same request may succeed; ``retry_after_s`` says when."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class RateLimitedError(_RetryLaterError):
    code = "rate_limited"


class BookNotSyncedError(_RetryLaterError):
    code = "book_not_synced"


class BookUnplacedError(BookNotSyncedError):
    """Not synced because the scheduler could not place any replica of the book (the reason says why)."""

    code = "book_unplaced"


class VenueRefusedError(BookNotSyncedError):
    """Not synced because the venue refuses Ladder's key for the book (an operator must act)."""

    code = "venue_refused"


class CatalogUnavailableError(_RetryLaterError):
    """The exchange is served, but its market list could not be fetched from the venue yet, so no
    market of it can be checked (the message says why); not a 404: the exchange exists."""

    code = "catalog_unavailable"


class BookTooOldError(_RetryLaterError):
    """The freshest synced replica is older than the ``max_age_ms`` the caller asked for."""

    code = "book_too_old"


class ConfigurationError(LadderError):
    """A process was started without a setting it needs; the message names the variable."""

    code = "configuration"


def shown(value: object) -> str:
    """A caller's input as an error message may quote it: in quotes, and never a pasted key (a key
    sent where a market or an exchange belongs is masked)."""
    return redact(repr(value))
