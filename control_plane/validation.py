"""Checks for every value a caller can send, each failing with a message that names the field.

The HTTP layer hands decoded JSON straight to the service, so values arrive as ``object``:
these functions check the type as well as the range (``True`` is not an integer here, and
``1.5`` is not a replica count).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Collection, Iterable

from control_plane.depth import MAX_DEPTH_LIMIT, venue_max_depth
from control_plane.errors import InvalidRequestError, NotFoundError

_EXCHANGE = re.compile(r"[a-z0-9][a-z0-9.\-]{0,63}")
# Venue symbols are mostly ASCII (``BTCUSDT``, ``BTC/USD``) but some venues list non-ASCII ones;
# what matters is that a market never contains the characters the stores use as separators.
_MARKET_FORBIDDEN = frozenset("{}|#")
MAX_NAME_LENGTH = 100


def require_int(field: str, value: object, *, lo: int, hi: int) -> int:
    if type(value) is not int:
        raise InvalidRequestError(f"{field} must be an integer")
    if not lo <= value <= hi:
        raise InvalidRequestError(f"{field} must be between {lo} and {hi}")
    return value


def require_depth(exchange: str, value: object) -> int:
    """Levels per side to keep of a book on ``exchange``: 1 to what one venue snapshot holds."""
    depth = require_int("depth", value, lo=1, hi=MAX_DEPTH_LIMIT)
    limit = venue_max_depth(exchange)
    if depth > limit:
        raise InvalidRequestError(
            f"depth may be at most {limit} on {exchange} (the most levels one snapshot of it holds)"
        )
    return depth


def require_number(field: str, value: object, *, lo: float, hi: float) -> float:
    """A positive-range number given as an int or a float (never a bool, NaN or infinity)."""
    if type(value) not in (int, float):
        raise InvalidRequestError(f"{field} must be a number")
    number = float(value)  # type: ignore[arg-type]  # checked just above
    if not math.isfinite(number) or not lo <= number <= hi:
        raise InvalidRequestError(f"{field} must be between {lo:g} and {hi:g}")
    return number


def require_bool(field: str, value: object) -> bool:
    if type(value) is not bool:
        raise InvalidRequestError(f"{field} must be true or false")
    return value


def require_name(field: str, value: object) -> str:
    """A human-readable name: 1-100 printable characters, surrounding spaces removed."""
    if not isinstance(value, str):
        raise InvalidRequestError(f"{field} must be a string")
    name = value.strip()
    if not 1 <= len(name) <= MAX_NAME_LENGTH or not name.isprintable():
        raise InvalidRequestError(f"{field} must be 1-{MAX_NAME_LENGTH} printable characters")
    return name


def require_exchange(value: object) -> str:
    if not isinstance(value, str) or not _EXCHANGE.fullmatch(value):
        raise InvalidRequestError("exchange must be an exchange id such as 'binance.com'")
    return value


def require_market(value: object) -> str:
    if (
        not isinstance(value, str)
        or not 1 <= len(value) <= 64
        or not value.isprintable()
        or any(ch.isspace() or ch in _MARKET_FORBIDDEN for ch in value)
    ):
        raise InvalidRequestError("market must be the venue's symbol, such as 'BTCUSDT' or 'BTC/USD'")
    return value


def require_id(what: str, value: object, prefix: str) -> str:
    """An id this service generated (``<prefix><base62>``); anything else names nothing.

    The value is not echoed: a caller who pastes a key where an id belongs must not see it again.
    """
    if not isinstance(value, str) or not re.fullmatch(re.escape(prefix) + r"[0-9A-Za-z]{1,64}", value):
        raise NotFoundError(f"no such {what}")
    return value


_FIELD_NAME = re.compile(r"[a-z]{1,20}(?:_[a-z]{1,20}){0,3}")
"""What a misspelt field name looks like (``dept``, ``max_market``): lowercase words, no digits.
A secret pasted into the wrong place (a key, a token, a password) does not, so it is never echoed."""


def unknown_fields(given: Iterable[str], allowed: Collection[str]) -> InvalidRequestError:
    """The error for fields a route does not take: each one shaped like a field name is named, with
    the nearest field it may have meant; any other is only counted, so a secret never comes back."""
    unknown = sorted(set(given) - set(allowed))
    said = []
    for name in unknown:
        if _FIELD_NAME.fullmatch(name):
            close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
            said.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    hidden = len(unknown) - len(said)
    if hidden:
        said.append(f"{hidden} more not shown (not shaped like a field name)" if said else
                    f"{hidden} not shown (not shaped like a field name)")  # fmt: skip
    noun = "field" if len(unknown) == 1 else "fields"
    return InvalidRequestError(
        f"unknown {noun}: {', '.join(said)}; the fields are: {', '.join(sorted(allowed))}"
    )
