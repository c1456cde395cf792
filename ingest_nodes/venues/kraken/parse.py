"""Pure parser for Kraken's WebSocket v2 frames (JSON text frames, one object each).

Prices and quantities are JSON numbers written at the pair's full precision, and the checksum is
computed over that exact text (``45285.2``, ``0.00100000``): a float would lose the trailing zeros
and the checksum with them. So frames are read with the standard library's ``json`` and
``parse_float=str``, which hands over each number's own text unchanged (an integer, such as a
quantity ``0``, comes as an ``int`` and is written back as it was). Negative numbers are refused;
what is not a number at all fails in the order book (reason ``bad_level``).
"""

from __future__ import annotations

import json
from typing import Final, cast

from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.venues.kraken.schemas import (
    BookData,
    BookMessage,
    KrakenAnswer,
    KrakenControl,
    KrakenHeartbeat,
    MethodResponse,
)
from ingest_nodes.venues.timestamps import rfc3339_to_ms
from ingest_nodes.venues.wire import object_levels, str_field


def parse_kraken_frame(raw: bytes | str, ingest_time: int) -> list[DepthUpdate | KrakenControl]:
    """Read one frame: each pair's part of a ``book`` message, or the answer to a request.

    Example (the venue's checksum guide; a snapshot of depth 10, cut here to two levels)::

        {"channel":"book","type":"snapshot","data":[{"symbol":"BTC/USD",
          "bids":[{"price":45283.5,"qty":0.10000000},{"price":45283.4,"qty":1.54582015}],
          "asks":[{"price":45285.2,"qty":0.00100000},{"price":45286.4,"qty":1.54571953}],
          "checksum":3310070434,"timestamp":"2023-10-06T17:35:55.440295Z"}]}

    Answers: ``{"method":"subscribe","result":{"channel":"book","depth":10,"snapshot":true,
    "symbol":"BTC/USD"},"success":true,"time_in":"...","time_out":"...","req_id":1}``, or
    ``{"error":"Currency pair not supported XBT/USD","method":"subscribe","success":false,
    "symbol":"XBT/USD","req_id":1,...}``. ``{"channel":"heartbeat"}`` is a ``KrakenHeartbeat``;
    status messages and other channels are skipped.
    """
    try:
        message = json.loads(raw, parse_float=str)
    except (ValueError, UnicodeDecodeError) as exc:
        raise VenuePayloadError(f"invalid JSON: {exc}") from exc
    if not isinstance(message, dict):
        raise VenuePayloadError("frame is not a JSON object")
    channel = message.get("channel")
    if channel == "book":
        return _book(cast(BookMessage, message), ingest_time)
    if channel == "heartbeat":
        return [_HEARTBEAT]
    method = message.get("method")
    if method in ("subscribe", "unsubscribe"):
        return [_answer(cast(MethodResponse, message), subscribe=method == "subscribe")]
    return []


_HEARTBEAT: Final = KrakenHeartbeat()


def _book(message: BookMessage, ingest_time: int) -> list[DepthUpdate | KrakenControl]:
    kind = message.get("type")
    if kind not in ("snapshot", "update"):
        raise VenuePayloadError(f"book message of unknown type {str(kind)[:20]!r}")
    data = message.get("data")
    if not isinstance(data, list):
        raise VenuePayloadError("book 'data' is missing or not a list")
    return [_pair(item, ingest_time, snapshot=kind == "snapshot") for item in data]


def _pair(item: object, ingest_time: int, *, snapshot: bool) -> DepthUpdate:
    if not isinstance(item, dict):
        raise VenuePayloadError("book data holds an entry that is not an object")
    data = cast(BookData, item)
    checksum = data.get("checksum")
    if type(checksum) is not int or not 0 <= checksum < 1 << 32:
        raise VenuePayloadError("book 'checksum' is missing or not an unsigned 32-bit integer")
    timestamp = data.get("timestamp")
    if timestamp is not None and not isinstance(timestamp, str):
        raise VenuePayloadError("book 'timestamp' is not a string")
    return DepthUpdate.unnumbered(
        str_field(data, "symbol"),
        None if timestamp is None else rfc3339_to_ms(timestamp),
        ingest_time,
        object_levels(data.get("bids", []), "bids", "price", "qty", _number),
        object_levels(data.get("asks", []), "asks", "price", "qty", _number),
        reset=snapshot,
        checksum=checksum,
    )


def _answer(message: MethodResponse, *, subscribe: bool) -> KrakenAnswer:
    success = message.get("success") is True
    result = message.get("result")
    found = result if isinstance(result, dict) else message
    symbol = found.get("symbol")
    depth = result.get("depth") if isinstance(result, dict) else None
    req_id = message.get("req_id")
    return KrakenAnswer(
        subscribe=subscribe,
        success=success,
        symbol=symbol if isinstance(symbol, str) else None,
        depth=depth if type(depth) is int else None,
        req_id=req_id if type(req_id) is int else None,
        error=str(message.get("error", ""))[:200],
    )


def _number(value: object, key: str) -> str:
    """A level's number as the venue wrote it (``parse_float=str`` kept a decimal's text)."""
    if type(value) is int and value >= 0:
        return str(value)
    if isinstance(value, str) and value and not value.startswith("-"):
        return value
    raise VenuePayloadError(f"level {key!r} is missing or not a non-negative number")
