"""Pure parsers for Binance spot and futures market-data frames, depth snapshots and REST errors.

Frames are decoded with orjson (the ingest hot path) and prices and quantities stay the venue's
strings: the order book is the one place that turns them into Decimals. Anything that does not
have the documented shape raises ``VenuePayloadError``; frames Ladder does not use (other
event types, partial-depth pushes) come back as None.

A decoded frame stays a ``dict[str, object]`` here, and each member is checked where it is read:
this module is compiled (``setup.py``), and compiled code enforces a type the moment a value is
read as one, so typing a frame as its documented shape before the checks would turn hostile input
into a ``TypeError`` instead of a ``VenuePayloadError``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import orjson

from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.venues.binance.schemas import (
    ControlFrame,
    ServerShutdown,
    SubscribeAck,
    VenueErrorFrame,
    VenueRestError,
)
from ingest_nodes.venues.wire import int_field, json_object, levels, loads, retry_after

_BANNED_UNTIL: Final = re.compile(r"banned until (\d+)", re.IGNORECASE)
_ERROR_TEXT_LIMIT: Final = 200


def parse_spot_frame(raw: bytes | str, ingest_time: int) -> DepthUpdate | ControlFrame | None:
    """Read one spot stream frame, raw (``/ws``) or combined (``/stream``).

    Example (combined)::

        {"stream":"bnbbtc@depth@100ms","data":{"e":"depthUpdate","E":1672515782136,"s":"BNBBTC",
         "U":157,"u":160,"b":[["0.0024","10"]],"a":[["0.0026","100"],["0.0027","0.00000000"]]}}

    ``E`` is the event time (ms), ``s`` the symbol, ``U`` and ``u`` the first and final update id
    folded into the event, ``b`` and ``a`` the bids and asks that changed, ``[price, quantity]``
    strings (a quantity of zero removes the level).

    Control frames: ``{"result":null,"id":1}`` -> ``SubscribeAck``,
    ``{"error":{"code":2,"msg":"Invalid request: invalid stream"},"id":1}`` -> ``VenueErrorFrame``,
    ``{"e":"serverShutdown","E":1778215200000}`` -> ``ServerShutdown``.
    """
    return _parse_frame(raw, ingest_time, futures=False)


def parse_futures_frame(raw: bytes | str, ingest_time: int) -> DepthUpdate | ControlFrame | None:
    """Read one USD-M/COIN-M futures stream frame; depth events must carry ``pu``, the previous
    event's ``u`` (``T`` is the transaction time, which Ladder does not use).

    Example (raw)::

        {"e":"depthUpdate","E":1717000000123,"T":1717000000118,"s":"BTCUSDT","U":600859601193,
         "u":600859602861,"pu":600859600917,"b":[["67012.10","0.524"]],"a":[["67012.20","0"]]}
    """
    return _parse_frame(raw, ingest_time, futures=True)


def parse_spot_snapshot(body: bytes, symbol: str, limit: int, ingest_time: int) -> DepthSnapshot:
    """Read a ``GET /api/v3/depth`` answer (``limit`` is the depth that was asked for).

    Example::

        {"lastUpdateId":1027024,"bids":[["4.00000000","431.00000000"]],
         "asks":[["4.00000200","12.00000000"]]}
    """
    snapshot = _snapshot_body(body)
    return DepthSnapshot(
        symbol=symbol,
        last_update_id=int_field(snapshot, "lastUpdateId"),
        bids=levels(snapshot["bids"], "bids"),
        asks=levels(snapshot["asks"], "asks"),
        limit=limit,
        ingest_time=ingest_time,
    )


def parse_futures_snapshot(body: bytes, symbol: str, limit: int, ingest_time: int) -> DepthSnapshot:
    """Read a ``GET /fapi/v1/depth`` answer; ``E`` becomes the snapshot's event time.

    Example::

        {"lastUpdateId":1027024,"E":1589436922972,"T":1589436922959,
         "bids":[["4.00000000","431.00000000"]],"asks":[["4.00000200","12.00000000"]]}
    """
    snapshot = _snapshot_body(body)
    return DepthSnapshot(
        symbol=symbol,
        last_update_id=int_field(snapshot, "lastUpdateId"),
        bids=levels(snapshot["bids"], "bids"),
        asks=levels(snapshot["asks"], "asks"),
        limit=limit,
        event_time=int_field(snapshot, "E"),
        ingest_time=ingest_time,
    )


def parse_rest_error(status: int, body: bytes, headers: Mapping[str, str]) -> VenueRestError:
    """Read a non-200 REST answer into the facts a retry policy needs.

    Example (HTTP 418, ``Retry-After: 120``)::

        {"code":-1003,"msg":"Way too much request weight used; IP banned until 1717000120000.
         Please use WebSocket Streams for live updates to avoid bans."}

    Bodies that are not Binance's ``{"code","msg"}`` (a proxy's HTML page) keep ``code`` None and
    the start of the text as ``msg``.
    """
    code: int | None = None
    msg = body[:_ERROR_TEXT_LIMIT].decode("utf-8", errors="replace")
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        if type(parsed.get("code")) is int:
            code = parsed["code"]
        if isinstance(parsed.get("msg"), str):
            msg = parsed["msg"]
    until = _BANNED_UNTIL.search(msg)
    return VenueRestError(
        status=status,
        code=code,
        msg=msg,
        retry_after_s=retry_after(headers),
        banned=status == 418 or until is not None,
        banned_until_ms=int(until.group(1)) if until is not None else None,
    )


def _parse_frame(raw: bytes | str, ingest_time: int, *, futures: bool) -> DepthUpdate | ControlFrame | None:
    frame = json_object(loads(raw), "frame")
    if "stream" in frame and "data" in frame:
        frame = json_object(frame["data"], "combined frame data")
    kind = frame.get("e")
    if kind == "depthUpdate":
        return _depth_update(frame, ingest_time, futures=futures)
    if kind == "serverShutdown":
        return ServerShutdown(event_time=int_field(frame, "E"))
    if kind is not None:
        return None
    if "result" in frame and "id" in frame:
        return _command_result(frame)
    if "error" in frame:
        return _error_frame(json_object(frame["error"], "error"), frame.get("id"))
    if "code" in frame and "msg" in frame:
        return _error_frame(frame, frame.get("id"))
    return None


def _depth_update(event: dict[str, object], ingest_time: int, *, futures: bool) -> DepthUpdate:
    symbol = event.get("s")
    if not isinstance(symbol, str):
        raise VenuePayloadError("depthUpdate without a symbol")
    return DepthUpdate(
        symbol=symbol,
        first_update_id=int_field(event, "U"),
        final_update_id=int_field(event, "u"),
        prev_final_update_id=int_field(event, "pu") if futures else None,
        event_time=int_field(event, "E"),
        ingest_time=ingest_time,
        bids=levels(event.get("b"), "b"),
        asks=levels(event.get("a"), "a"),
    )


def _command_result(frame: dict[str, object]) -> SubscribeAck:
    result = frame["result"]
    if result is not None and not isinstance(result, list | bool):
        raise VenuePayloadError("command result of unexpected type")
    return SubscribeAck(id=_request_id(frame.get("id")), result=result)


def _error_frame(error: Mapping[str, object], request_id: object) -> VenueErrorFrame:
    code = error.get("code")
    msg = error.get("msg")
    return VenueErrorFrame(
        code=code if type(code) is int else None,
        msg=msg if isinstance(msg, str) else "",
        id=_request_id(request_id),
    )


def _request_id(value: object) -> int | str | None:
    if value is None or type(value) is int or isinstance(value, str):
        return value
    raise VenuePayloadError("command id of unexpected type")


def _snapshot_body(body: bytes) -> dict[str, object]:
    snapshot = json_object(loads(body), "snapshot")
    if "lastUpdateId" not in snapshot:
        raise VenuePayloadError(
            f"snapshot without lastUpdateId (code {snapshot.get('code')}: {snapshot.get('msg')})"
        )
    if "bids" not in snapshot or "asks" not in snapshot:
        raise VenuePayloadError("snapshot without bids or asks")
    return snapshot
