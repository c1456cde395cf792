"""OKX's public WebSocket protocol: subscribe to ``books``, receive, keep the connection alive.

The session, as a client sees it::

    -> {"id":"1","op":"subscribe","args":[{"channel":"books","instId":"BTC-USDT"}]}
    <- {"id":"1","event":"subscribe","arg":{"channel":"books","instId":"BTC-USDT"},"connId":"0000002a"}
    <- {"arg":{...},"action":"snapshot","data":[{...,"prevSeqId":-1,"seqId":123456}]}
    <- {"arg":{...},"action":"update","data":[{...,"prevSeqId":123456,"seqId":123461}]}
    -> ping                                       (text)
    <- pong

Limits, as the venue states them: 3 connection requests a second per IP (more are refused with
HTTP 429 before the upgrade); 480 subscribe/unsubscribe requests an hour per connection (over it:
error 60014, then the connection is closed); a connection with nothing pushed and nothing heard for
30 seconds is closed. Errors: ``{"event":"error","code":"60012","msg":"Invalid request: ..."}`` for a
request that cannot be read, ``60018`` for an instrument the venue does not list (the others of the
request still subscribe).
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from aiohttp import web

from fake_venue.chained.venue import ChainedConnection
from fake_venue.okx.venue import BOOKS_DEPTH, OkxVenue
from fake_venue.server.session import serve_session

CONNECTS_PER_S = 3
REQUESTS_PER_HOUR = 480
HOUR_S = 3600.0


async def serve(venue: OkxVenue, request: web.Request) -> web.StreamResponse:
    if not venue.accept_connect(CONNECTS_PER_S, 1.0):
        return web.json_response({"msg": "Too Many Requests", "code": "50011"}, status=429)
    return await serve_session(
        request, venue, venue.new_connection, lambda conn, text: _handle(venue, conn, text)
    )


def _handle(venue: OkxVenue, conn: ChainedConnection, text: str) -> None:
    if text == "ping":
        conn.send_text(b"pong")
        return
    try:
        request = orjson.loads(text)
    except orjson.JSONDecodeError:
        _error(conn, None, "60012", f"Invalid request: {text[:100]}")
        return
    op = request.get("op") if isinstance(request, dict) else None
    request_id = request.get("id") if isinstance(request, dict) else None
    args = request.get("args") if isinstance(request, dict) else None
    if op not in ("subscribe", "unsubscribe") or not isinstance(args, list):
        _error(conn, request_id, "60012", f"Invalid request: {text[:100]}")
        return
    venue.count_request(conn)
    if not _within_quota(conn):
        _error(conn, request_id, "60014", "Requests too frequent.")
        conn.close(1008, "too many requests")
        return
    for arg in args:
        if (
            not isinstance(arg, dict)
            or arg.get("channel") != "books"
            or not isinstance(arg.get("instId"), str)
        ):
            _error(conn, request_id, "60012", f"Invalid request: {orjson.dumps(arg).decode()[:100]}")
            continue
        symbol = arg["instId"]
        if symbol not in venue.markets.specs:
            _error(conn, request_id, "60018", f"Wrong URL or channel:books,instId:{symbol} doesn't exist.")
            continue
        answer: dict[str, Any] = {
            "event": op,
            "arg": {"channel": "books", "instId": symbol},
            "connId": f"{conn.id:08x}",
        }
        if isinstance(request_id, str):
            answer = {"id": request_id, **answer}
        conn.send_text(orjson.dumps(answer))
        if op == "subscribe":
            venue.subscribe(conn, symbol, BOOKS_DEPTH)
        else:
            venue.unsubscribe(conn, symbol)


def _within_quota(conn: ChainedConnection) -> bool:
    now = time.monotonic()
    requests = conn.requests
    while requests and requests[0] <= now - HOUR_S:
        requests.popleft()
    requests.append(now)
    return len(requests) <= REQUESTS_PER_HOUR


def _error(conn: ChainedConnection, request_id: object, code: str, msg: str) -> None:
    answer: dict[str, Any] = {"event": "error", "code": code, "msg": msg, "connId": f"{conn.id:08x}"}
    if isinstance(request_id, str):
        answer = {"id": request_id, **answer}
    conn.send_text(orjson.dumps(answer))
