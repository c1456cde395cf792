"""Binance market-stream connections: URL forms, the JSON request protocol, and its limits.

URL forms (under ``/public`` on futures): ``/ws`` (raw payloads, subscribe later), ``/ws/<s1>/<s2>``
(raw, subscribed at once), ``/stream?streams=<s1>/<s2>`` (combined ``{"stream","data"}`` wrapper).
``timeUnit=MICROSECOND`` in the query switches event times to µs.

Requests, answered in order on the same socket::

    {"method":"SUBSCRIBE","params":["btcusdt@depth"],"id":1}    -> {"result":null,"id":1}
    {"method":"LIST_SUBSCRIPTIONS","id":3}                       -> {"result":["btcusdt@depth"],"id":3}
    {"method":"SET_PROPERTY","params":["combined",true],"id":5}  -> {"result":null,"id":5}
    {"method":"GET_PROPERTY","params":["combined"],"id":2}       -> {"result":true,"id":2}

Errors use the wrapped form ``{"error":{"code":2,"msg":"Invalid request: ..."},"id":1}`` with
``"id": null`` when the request could not be read. A subscription takes effect at once, before its
ack is sent, so data may precede the ack (and does, by ``ack_delay_ms``, when that fault is set).
Every incoming frame counts against the per-second limit, pings and pongs included; one over it and
the connection is closed. Invalid JSON closes a futures connection after the error, as it does there.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from aiohttp import WSMsgType, web

from fake_venue.binance.venue import BinanceConnection, BinanceVenue
from fake_venue.server.connection import next_connection_id
from fake_venue.server.ws_frames import text_frame

METHODS = ("SUBSCRIBE", "UNSUBSCRIBE", "LIST_SUBSCRIPTIONS", "SET_PROPERTY", "GET_PROPERTY")
POLICY_VIOLATION = 1008


class RequestError(Exception):
    def __init__(self, code: int, msg: str, request_id: object = None) -> None:
        super().__init__(msg)
        self.code = code
        self.msg = msg
        self.request_id = request_id


async def serve(
    venue: BinanceVenue, request: web.Request, streams: list[str], combined: bool
) -> web.StreamResponse:
    """Run one stream connection until it ends."""
    ws = web.WebSocketResponse(autoping=False, compress=False, timeout=2.0, max_msg_size=1 << 20)
    await ws.prepare(request)
    transport = request.transport
    assert transport is not None
    micro = request.query.get("timeUnit", "").upper() == "MICROSECOND"
    conn = BinanceConnection(
        next_connection_id(), venue.name, ws, transport, venue.config.slow_client_bytes, combined, micro
    )
    venue.register(conn)
    try:
        if len(streams) > venue.config.max_streams_per_connection:
            conn.close(POLICY_VIOLATION, "too many streams")
        for stream in streams:
            if venue.valid_stream(stream):
                venue.subscribe(conn, stream)
        per_second = venue.dialect.limits.incoming_per_s
        async for message in ws:
            if conn.closing:
                continue
            if not conn.note_incoming(time.monotonic(), per_second):
                conn.close(POLICY_VIOLATION, "too many requests")
            elif message.type == WSMsgType.PING:
                conn.pong(message.data)
            elif message.type == WSMsgType.PONG:
                conn.pong_received()
            elif message.type == WSMsgType.TEXT:
                _handle_text(venue, conn, message.data)
            else:
                conn.send_json(_error_body(RequestError(3, "Invalid JSON: expected a text frame")))
    finally:
        venue.unregister(conn)
    return ws


def _handle_text(venue: BinanceVenue, conn: BinanceConnection, text: str) -> None:
    try:
        request = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        conn.send_json(_error_body(RequestError(3, f"Invalid JSON: {exc}")))
        if venue.name == "futures":
            conn.close(POLICY_VIOLATION, "invalid JSON")
        return
    try:
        reply, delayed = _answer(venue, conn, request)
    except RequestError as error:
        conn.send_json(_error_body(error))
        return
    frame = text_frame(orjson.dumps(reply))
    delay_ms = venue.faults.ack_delay_ms
    if delayed and delay_ms > 0:
        asyncio.get_running_loop().call_later(delay_ms / 1000, conn.send, frame)
    else:
        conn.send(frame)


def _answer(venue: BinanceVenue, conn: BinanceConnection, request: object) -> tuple[dict[str, Any], bool]:
    """The reply to one request, and whether it is an ack the ack-delay fault may hold back."""
    if not isinstance(request, dict):
        raise RequestError(2, "Invalid request: expected a JSON object")
    request_id = request.get("id")
    if not venue.dialect.valid_request_id(request_id):
        raise RequestError(2, "Invalid request: request ID must be an unsigned integer")
    method = request.get("method")
    if method is None:
        raise RequestError(2, "Invalid request: missing field `method`", request_id)
    if method not in METHODS:
        expected = ", ".join(f"`{name}`" for name in METHODS)
        raise RequestError(
            2, f"Invalid request: unknown variant `{method}`, expected one of {expected}", request_id
        )
    params = request.get("params", [])
    if not isinstance(params, list):
        raise RequestError(2, "Invalid request: params must be an array", request_id)
    if method == "SUBSCRIBE":
        _subscribe(venue, conn, _stream_params(venue, params, request_id), request_id)
        return {"result": None, "id": request_id}, True
    if method == "UNSUBSCRIBE":
        for stream in _stream_params(venue, params, request_id):
            venue.unsubscribe(conn, stream)
        return {"result": None, "id": request_id}, True
    if method == "LIST_SUBSCRIPTIONS":
        return {"result": list(conn.streams), "id": request_id}, False
    name = _property_name(params, request_id)
    if method == "GET_PROPERTY":
        return {"result": conn.combined, "id": request_id}, False
    if len(params) != 2:
        raise RequestError(2, "Invalid request: SET_PROPERTY needs a name and a value", request_id)
    if not isinstance(params[1], bool):
        raise RequestError(1, "Invalid value type: expected Boolean", request_id)
    assert name == "combined"
    conn.combined = params[1]
    return {"result": None, "id": request_id}, False


def _stream_params(venue: BinanceVenue, params: list[object], request_id: object) -> list[str]:
    if not params:
        raise RequestError(2, "Invalid request: params must not be empty", request_id)
    for stream in params:
        if not isinstance(stream, str) or not venue.valid_stream(stream):
            raise RequestError(2, "Invalid request: invalid stream", request_id)
    return [str(stream) for stream in params]


def _subscribe(venue: BinanceVenue, conn: BinanceConnection, streams: list[str], request_id: object) -> None:
    total = len(conn.streams.keys() | set(streams))
    if total > venue.config.max_streams_per_connection:
        limit = venue.config.max_streams_per_connection
        raise RequestError(
            2, f"Invalid request: too many streams (at most {limit} per connection)", request_id
        )
    for stream in streams:
        venue.subscribe(conn, stream)


def _property_name(params: list[object], request_id: object) -> str:
    if not params or not isinstance(params[0], str):
        raise RequestError(2, "Invalid request: property name must be a string", request_id)
    if params[0] != "combined":
        raise RequestError(0, "Unknown property", request_id)
    return params[0]


def _error_body(error: RequestError) -> dict[str, Any]:
    return {"error": {"code": error.code, "msg": error.msg}, "id": error.request_id}
