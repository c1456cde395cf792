"""Errors to HTTP: the one table that turns an exception into a status and an error body.

The table is walked over the exception's MRO, so a subclass (``UnknownMarketError``) inherits its
parent's status (``NotFoundError`` -> 404) unless it has a row of its own. The body's ``code`` is
the exception's stable ``code``; its message is ``str(exc)``, which control-plane and read errors
write for the caller. Store faults and anything unexpected never show their text: the first says
"retry", the second is logged with its traceback and answered as a bare 500 ``internal``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

import orjson

from book_store.schema import InvalidBookIdError
from control_plane.errors import (
    ApiError,
    BookNotSyncedError,
    BookTooOldError,
    CatalogUnavailableError,
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    LimitExceededError,
    NotFoundError,
    RateLimitedError,
    UnauthorizedError,
)
from ladder_process.errors import LadderError, StoreError
from read_functions.app.messages import JSON, Response

log = logging.getLogger(__name__)


class MethodNotAllowedError(ApiError):
    """The path exists but not with this method; its answer says which (``Allow``)."""

    code = "method_not_allowed"

    def __init__(self, allowed: Iterable[str]) -> None:
        self.allowed = tuple(sorted(allowed))
        super().__init__(f"method not allowed; allowed: {', '.join(self.allowed)}")


class PayloadTooLargeError(ApiError):
    """A request body over the limit; refused before it is parsed."""

    code = "payload_too_large"

    @classmethod
    def over(cls, limit: int) -> PayloadTooLargeError:
        """The refusal of a body longer than ``limit`` bytes (every adapter words it alike)."""
        return cls(f"the body may be at most {limit} bytes")


class RequestTimeoutError(ApiError):
    """A request that did not arrive completely in time; the connection is closed after it."""

    code = "request_timeout"


class HttpVersionNotSupportedError(ApiError):
    """A request line with an HTTP version other than 1.0 and 1.1."""

    code = "http_version_not_supported"


class HeadersTooLargeError(ApiError):
    """A request line and headers over the limit; refused before they are parsed further."""

    code = "headers_too_large"


class OverloadedError(ApiError):
    """The worker holds as many requests as it may (see :mod:`read_functions.app.dispatch`); retry."""

    code = "overloaded"
    retry_after_s = 1.0


STATUS_BY_ERROR: dict[type[BaseException], int] = {
    InvalidRequestError: 400,
    InvalidBookIdError: 400,
    UnauthorizedError: 401,
    ForbiddenError: 403,
    NotFoundError: 404,
    MethodNotAllowedError: 405,
    RequestTimeoutError: 408,
    ConflictError: 409,
    PayloadTooLargeError: 413,
    LimitExceededError: 422,
    HeadersTooLargeError: 431,
    HttpVersionNotSupportedError: 505,
    RateLimitedError: 429,
    BookNotSyncedError: 503,
    BookTooOldError: 503,
    CatalogUnavailableError: 503,
    OverloadedError: 503,
    StoreError: 503,
}

_STORE_RETRY_AFTER_S = 1.0


def status_for(exc: BaseException) -> int:
    """The HTTP status of an exception: the first class of its MRO that has a row, else 500."""
    for cls in type(exc).__mro__:
        status = STATUS_BY_ERROR.get(cls)
        if status is not None:
            return status
    return 500


def error_body(code: str, message: str, request_id: str) -> bytes:
    return orjson.dumps({"error": {"code": code, "message": message, "request_id": request_id}})


def error_response(exc: BaseException, request_id: str) -> Response:
    """The response for ``exc``; unexpected exceptions are logged here, once."""
    status = status_for(exc)
    headers: dict[str, str] = {}
    if status == 500 or not isinstance(exc, LadderError):
        log.error("unhandled error in request %s", request_id, exc_info=exc)
        return Response(500, error_body("internal", "internal error", request_id), JSON, headers)
    if isinstance(exc, StoreError):
        log.warning("store error in request %s: %s", request_id, exc)
        message = "the store is unavailable; retry shortly"
        retry_after: float | None = _STORE_RETRY_AFTER_S
    else:
        message = str(exc)
        retry_after = getattr(exc, "retry_after_s", None)
    if retry_after is not None:
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
    if isinstance(exc, MethodNotAllowedError):
        headers["Allow"] = ", ".join(exc.allowed)
    return Response(status, error_body(exc.code, message, request_id), JSON, headers)


WEBSOCKET_CLOSE_BASE = 4000


def close_code(exc: BaseException) -> int:
    """The WebSocket close code of an error: 4000 + its HTTP status."""
    return WEBSOCKET_CLOSE_BASE + status_for(exc)
