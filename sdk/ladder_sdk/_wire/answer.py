"""Reading an HTTP answer: a success becomes the endpoint's model, an error the matching exception.

Used for ordinary requests and for a refused WebSocket handshake alike, so both report the same
error for the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import APIResponseError, APIStatusError, redact, status_error_class
from .parse import decode_json
from .retry import parse_retry_after


def status_error(status: int, headers: Mapping[str, str], body: bytes, *secrets: str) -> APIStatusError:
    """The exception for an error answer, from its `{"error": {...}}` body when it has one.

    A body that is not Ladder's (a proxy's HTML page, say) still gives the right class by status.
    `headers` must look names up case-insensitively (httpx and websockets headers both do).
    """
    code, message, request_id = _error_fields(body)
    return status_error_class(status, code)(
        status=status,
        code=code,
        message=redact(message or f"HTTP {status}", *secrets),
        request_id=request_id or headers.get("x-request-id"),
        retry_after=parse_retry_after(headers.get("retry-after")),
    )


def _error_fields(body: bytes) -> tuple[str | None, str | None, str | None]:
    try:
        decoded = decode_json(body) if body else None
    except APIResponseError:
        return None, None, None
    error = decoded.get("error") if isinstance(decoded, dict) else None
    if not isinstance(error, dict):
        return None, None, None
    return _text(error.get("code")), _text(error.get("message")), _text(error.get("request_id"))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
