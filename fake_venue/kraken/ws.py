"""Kraken's WebSocket v2 public protocol for the ``book`` channel, and its REST pair list.

The session, as a client sees it::

    <- {"channel":"status","type":"update","data":[{"api_version":"v2","system":"online",...}]}
    -> {"method":"subscribe","params":{"channel":"book","symbol":["BTC/USD"],"depth":10},"req_id":1}
    <- {"method":"subscribe","result":{"channel":"book","depth":10,"snapshot":true,
        "symbol":"BTC/USD"},"success":true,"time_in":"...","time_out":"...","req_id":1}
    <- {"channel":"book","type":"snapshot","data":[{"symbol":"BTC/USD",...,"checksum":...}]}
    <- {"channel":"book","type":"update","data":[...]}        then updates
    <- {"channel":"heartbeat"}                                  every second while subscribed

A request answers each of its pairs on its own. Failures, as ``{"error":...,"method":...,
"success":false,"symbol":...}``: a pair not listed (``Currency pair not supported``), a pair
subscribed already, a depth other than 10, 25, 100, 500 or 1000, an unsubscribe of a pair that is
not subscribed (``Subscription Not Found``), a channel other than ``book``. ``{"method":"ping"}`` is
answered with ``pong``. No key is needed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from aiohttp import web

from fake_venue.kraken.venue import DEPTHS, KrakenConnection, KrakenVenue, rfc3339_us
from fake_venue.server.connection import next_connection_id
from fake_venue.server.session import serve_session


def asset_pairs(venue: KrakenVenue) -> web.Response:
    return web.json_response(venue.asset_pairs())


async def serve(venue: KrakenVenue, request: web.Request) -> web.StreamResponse:
    def new_connection(ws: web.WebSocketResponse, transport: asyncio.Transport) -> KrakenConnection:
        return KrakenConnection(next_connection_id(), ws, transport, venue.config.slow_client_bytes)

    return await serve_session(
        request,
        venue,
        new_connection,
        lambda conn, text: _handle(venue, conn, text),
        opened=_status,
        binary=_binary,
    )


def _status(conn: KrakenConnection) -> None:
    status = {"api_version": "v2", "connection_id": conn.id, "system": "online", "version": "2.0.10"}
    conn.send_json({"channel": "status", "type": "update", "data": [status]})


def _binary(conn: KrakenConnection) -> None:
    conn.send_json({"error": "Binary frames are not supported", "method": "error", "success": False})


def _handle(venue: KrakenVenue, conn: KrakenConnection, text: str) -> None:
    time_in = rfc3339_us(time.time_ns())
    try:
        request = orjson.loads(text)
    except orjson.JSONDecodeError:
        request = None
    if not isinstance(request, dict):
        conn.send_json({"error": "Malformed request", "method": "error", "success": False})
        return
    method, req_id = request.get("method"), request.get("req_id")
    stamp = {
        "time_in": time_in,
        "time_out": rfc3339_us(time.time_ns()),
        **({"req_id": req_id} if req_id else {}),
    }
    if method == "ping":
        conn.send_json({"method": "pong", **stamp})
    elif method in ("subscribe", "unsubscribe"):
        _subscription(venue, conn, request.get("params"), method == "subscribe", stamp)
    else:
        error = f"Method not supported: {str(method)[:20]}"
        conn.send_json({"error": error, "method": method, "success": False, **stamp})


def _subscription(
    venue: KrakenVenue, conn: KrakenConnection, params: object, subscribe: bool, stamp: dict[str, Any]
) -> None:
    method = "subscribe" if subscribe else "unsubscribe"

    def fail(error: str, symbol: str | None = None) -> None:
        conn.send_json({"error": error, "method": method, "success": False,
                        **({"symbol": symbol} if symbol else {}), **stamp})  # fmt: skip

    if not isinstance(params, dict) or params.get("channel") != "book":
        fail("Channel not supported")
        return
    symbols, depth = params.get("symbol"), params.get("depth", 10)
    if not isinstance(symbols, list) or not all(isinstance(symbol, str) for symbol in symbols):
        fail("Invalid symbol list")
        return
    if depth not in DEPTHS:
        fail("Invalid depth")
        return
    for symbol in symbols:
        market = venue.markets.get(symbol)
        if market is None:
            fail(f"Currency pair not supported {symbol}", symbol)
        elif subscribe and symbol in conn.books:
            fail("Already subscribed", symbol)
        elif subscribe:
            result = {"channel": "book", "depth": depth, "snapshot": True, "symbol": symbol}
            conn.send_json({"method": method, "result": result, "success": True, **stamp})
            venue.subscribe(conn, market, depth)
        else:
            had = venue.unsubscribe(conn, symbol)
            if had is None:
                fail("Subscription Not Found", symbol)
            else:
                result = {"channel": "book", "depth": had, "symbol": symbol}
                conn.send_json({"method": method, "result": result, "success": True, **stamp})
