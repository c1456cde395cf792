"""Reading query parameters and JSON bodies, each failure a 400 that names the field."""

from __future__ import annotations

import re
from collections.abc import Mapping

import orjson

from control_plane.errors import InvalidRequestError
from control_plane.validation import unknown_fields
from read_functions.app.messages import Request

_INTEGER = re.compile(r"-?[0-9]{1,12}")


def int_param(query: Mapping[str, str], name: str, *, lo: int, hi: int) -> int | None:
    """An optional integer query parameter within ``lo..hi`` (absent -> None)."""
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 12) and not _INTEGER.fullmatch(raw):
        raise InvalidRequestError(f"{name} must be an integer")
    value = int(raw)
    if not lo <= value <= hi:
        raise InvalidRequestError(f"{name} must be between {lo} and {hi}")
    return value


def json_object(request: Request, *, allow_empty: bool = False) -> dict[str, object]:
    """The request body as a JSON object (an empty body is ``{}`` when ``allow_empty``)."""
    if not request.body.strip():
        if allow_empty:
            return {}
        raise InvalidRequestError("a JSON object body is required")
    try:
        value = orjson.loads(request.body)
    except orjson.JSONDecodeError as exc:
        raise InvalidRequestError("the body is not valid JSON") from exc
    if not isinstance(value, dict):
        raise InvalidRequestError("the body must be a JSON object")
    return value


def require_fields(body: Mapping[str, object], allowed: frozenset[str]) -> None:
    """Refuse fields the route does not know (a typo must not be ignored silently).

    The answer names an unknown field only when it is shaped like a field name (``dept``, with
    ``depth`` as the likely meaning): a key pasted into the wrong place must not come back in an
    error (or in whatever logs errors). See ``control_plane.validation.unknown_fields``.
    """
    if not set(body) <= allowed:
        raise unknown_fields(body, allowed)
