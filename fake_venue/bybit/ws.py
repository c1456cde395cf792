"""Bybit's public WebSocket protocol, one endpoint per category (``/v5/public/spot``, ``.../linear``).

The session, as a client sees it::

    -> {"req_id":"1","op":"subscribe","args":["orderbook.1000.BTCUSDT"]}
    <- {"success":true,"ret_msg":"subscribe","conn_id":"0000002a","req_id":"1","op":"subscribe"}
    <- {"topic":"orderbook.1000.BTCUSDT","type":"snapshot","ts":...,"data":{...,"u":1200,"seq":...}}
    <- {"topic":"orderbook.1000.BTCUSDT","type":"delta","ts":...,"data":{...,"u":1201,"seq":...}}
    -> {"op":"ping"}
    <- {"success":true,"ret_msg":"pong","conn_id":"0000002a","req_id":"","op":"ping"}

Limits, as the venue states them: at most 500 connections in 5 minutes per IP (more are refused
with HTTP 429 before the upgrade); a spot request carries at most 10 topics; a topic the venue
does not have fails the whole request (``success`` false, the topic named). A connection with
nothing sent either way for 10 minutes is closed.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from fake_venue.bybit.venue import DEPTHS, BybitVenue
from fake_venue.chained.venue import ChainedConnection
from fake_venue.server.session import serve_session

CONNECTS_PER_WINDOW = 500
CONNECT_WINDOW_S = 300.0
SPOT_ARGS_PER_REQUEST = 10


async def serve(venue: BybitVenue, request: web.Request) -> web.StreamResponse:
    if not venue.accept_connect(CONNECTS_PER_WINDOW, CONNECT_WINDOW_S):
        return web.Response(status=429, text="too many connections")
    return await serve_session(
        request, venue, venue.new_connection, lambda conn, text: _handle(venue, conn, text)
    )


def _handle(venue: BybitVenue, conn: ChainedConnection, text: str) -> None:
    try:
        request = orjson.loads(text)
    except orjson.JSONDecodeError:
        _answer(conn, None, "", False, "Invalid JSON")
        return
    if not isinstance(request, dict):
        _answer(conn, None, "", False, "Invalid request")
        return
    op, req_id, args = request.get("op"), request.get("req_id"), request.get("args")
    if op == "ping":
        _answer(conn, req_id, "ping", True, "pong")
        return
    if op not in ("subscribe", "unsubscribe") or not isinstance(args, list):
        _answer(conn, req_id, str(op or ""), False, f"Invalid op or args: {text[:80]}")
        return
    venue.count_request(conn)
    if venue.category == "spot" and len(args) > SPOT_ARGS_PER_REQUEST:
        _answer(conn, req_id, op, False, f"args size >{SPOT_ARGS_PER_REQUEST}")
        return
    wanted = [_topic(venue, arg) for arg in args]
    bad = [arg for arg, parsed in zip(args, wanted, strict=True) if parsed is None]
    if bad:
        _answer(conn, req_id, op, False, f"error:handler not found,topic:{str(bad[0])[:80]}")
        return
    _answer(conn, req_id, op, True, "subscribe" if venue.category == "spot" and op == "subscribe" else "")
    for parsed in wanted:
        assert parsed is not None
        symbol, depth = parsed
        if op == "subscribe":
            venue.subscribe(conn, symbol, depth)
        else:
            venue.unsubscribe(conn, symbol)


def _topic(venue: BybitVenue, arg: object) -> tuple[str, int] | None:
    """``orderbook.1000.BTCUSDT`` -> (``BTCUSDT``, 1000) if the venue has it."""
    if not isinstance(arg, str):
        return None
    parts = arg.split(".")
    if len(parts) != 3 or parts[0] != "orderbook" or not parts[1].isdigit() or int(parts[1]) not in DEPTHS:
        return None
    return (parts[2], int(parts[1])) if parts[2] in venue.markets.specs else None


def _answer(conn: ChainedConnection, req_id: object, op: str, success: bool, msg: str) -> None:
    answer: dict[str, Any] = {"success": success, "ret_msg": msg, "conn_id": f"{conn.id:08x}"}
    answer["req_id"] = req_id if isinstance(req_id, str) else ""
    answer["op"] = op
    conn.send_text(orjson.dumps(answer))
