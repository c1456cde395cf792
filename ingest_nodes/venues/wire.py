"""Reading venue JSON at the edge: the checks every venue parser shares.

Frames are decoded with orjson (the ingest hot path) and prices and quantities stay the venue's
strings: the order book is the one place that turns them into Decimals. Anything that does not
have the expected shape raises ``VenuePayloadError`` naming what was wrong, never the payload.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import orjson

from ingest_nodes.core import native
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import Level


def loads(raw: bytes | str) -> object:
    """Decode a frame or body with orjson; ``VenuePayloadError`` when it is not JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise VenuePayloadError(f"invalid JSON: {exc}") from exc


def json_object(value: object, what: str) -> dict[str, object]:
    """``value`` if it is a JSON object; ``VenuePayloadError`` naming ``what`` otherwise."""
    if not isinstance(value, dict):
        raise VenuePayloadError(f"{what} is not a JSON object")
    return value


def int_field(container: Mapping[str, object], key: str) -> int:
    """An integer member (never a bool or a float); ``VenuePayloadError`` otherwise."""
    value = container.get(key)
    if type(value) is not int:
        raise VenuePayloadError(f"field {key!r} is missing or not an integer")
    return value


def str_field(container: Mapping[str, object], key: str) -> str:
    """A string member; ``VenuePayloadError`` otherwise."""
    value = container.get(key)
    if not isinstance(value, str):
        raise VenuePayloadError(f"field {key!r} is missing or not a string")
    return value


def object_levels(
    rows: object, side: str, price: str, quantity: str, number: Callable[[object, str], str]
) -> tuple[Level, ...]:
    """``[{price: ..., quantity: ...}, ...]`` (Alpaca, Kraken) as a tuple of string pairs, each
    number read by the venue's ``number(value, key)``."""
    if not isinstance(rows, list):
        raise VenuePayloadError(f"{side!r} is missing or not a list")
    found: list[Level] = []
    for row in rows:
        if not isinstance(row, dict):
            raise VenuePayloadError(f"{side!r} holds a level that is not an object")
        found.append((number(row.get(price), price), number(row.get(quantity), quantity)))
    return tuple(found)


def levels(rows: object, side: str) -> tuple[Level, ...]:
    """``[["price","qty"], ...]`` as a tuple of string pairs; extra trailing members are ignored.

    The compiled loop (``native.read_levels``) reads rows of the right shape; this loop is the
    reference, and says what is wrong with any other."""
    compiled = native.read_levels
    if compiled is not None and (found_compiled := compiled(rows)) is not None:
        return found_compiled
    if not isinstance(rows, list):
        raise VenuePayloadError(f"{side!r} is missing or not a list")
    found: list[Level] = []
    for row in rows:
        if type(row) is not list or len(row) < 2:
            raise VenuePayloadError(f"{side!r} holds a level that is not a [price, qty] pair")
        price, quantity = row[0], row[1]
        if type(price) is not str or type(quantity) is not str:
            raise VenuePayloadError(f"{side!r} holds a level whose price or quantity is not a string")
        found.append((price, quantity))
    return tuple(found)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """``Retry-After`` in seconds; an HTTP-date form (never sent by Binance) is not read."""
    value = headers.get("Retry-After")
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
