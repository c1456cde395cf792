"""HTTP error answers map to one exception class each, through the one table, without secrets."""

from __future__ import annotations

import json

import ladder_sdk
import pytest
from ladder_sdk import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    BookNotSyncedError,
    BookTooOldError,
    BookUnavailableError,
    ConflictError,
    InternalServerError,
    LadderError,
    LimitExceededError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
)
from ladder_sdk._wire.answer import status_error
from ladder_sdk._wire.errors import redact, status_error_class


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, "invalid_request", BadRequestError),
        (401, "unauthorized", AuthenticationError),
        (403, "forbidden", PermissionDeniedError),
        (404, "unknown_exchange", NotFoundError),
        (404, "unknown_market", NotFoundError),
        (404, "not_found", NotFoundError),
        (409, "conflict", ConflictError),
        (422, "limit_exceeded", LimitExceededError),
        (429, "rate_limited", RateLimitError),
        (503, "book_not_synced", BookNotSyncedError),
        (503, "book_too_old", BookTooOldError),
        (503, None, InternalServerError),
        (500, "internal", InternalServerError),
        (502, None, InternalServerError),
        (418, "teapot", APIStatusError),
    ],
)
def test_each_status_and_code_has_its_class(
    status: int, code: str | None, expected: type[APIStatusError]
) -> None:
    assert status_error_class(status, code) is expected


def test_the_book_errors_share_a_parent_and_every_error_the_root() -> None:
    assert issubclass(BookNotSyncedError, BookUnavailableError)
    assert issubclass(BookTooOldError, BookUnavailableError)
    for name in ladder_sdk.__all__:
        value = getattr(ladder_sdk, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, LadderError), name


def test_the_module_docstring_draws_every_exception_class() -> None:
    tree = ladder_sdk._wire.errors.__doc__ or ""
    for name in ladder_sdk.__all__:
        value = getattr(ladder_sdk, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert name in tree, name


def test_an_error_body_fills_the_fields() -> None:
    body = json.dumps(
        {"error": {"code": "rate_limited", "message": "slow down", "request_id": "r-7"}}
    ).encode()
    error = status_error(429, {"retry-after": "2", "x-request-id": "ignored"}, body)
    assert isinstance(error, RateLimitError)
    assert (error.status, error.code, error.message, error.request_id, error.retry_after) == (
        429,
        "rate_limited",
        "slow down",
        "r-7",
        2.0,
    )
    assert str(error) == "429 rate_limited: slow down (request_id=r-7)"


def test_a_foreign_error_page_still_maps_by_status() -> None:
    error = status_error(502, {"x-request-id": "from-header"}, b"<html>bad gateway</html>")
    assert isinstance(error, InternalServerError)
    assert (error.code, error.message, error.request_id, error.retry_after) == (
        None,
        "HTTP 502",
        "from-header",
        None,
    )


def test_keys_never_reach_an_error_message() -> None:
    leaked = "ldr_SECRETsecretSECRETsecretSECRETsec123456"
    body = json.dumps(
        {"error": {"code": "unauthorized", "message": f"bad key {leaked} / admin-pass"}}
    ).encode()
    error = status_error(401, {}, body, "admin-pass")
    assert isinstance(error, AuthenticationError)
    for text in (str(error), repr(error), str(error.args)):
        assert leaked not in text and "admin-pass" not in text
    assert redact("x ldr_abcdefgh1234 y") == "x ldr_*** y"
