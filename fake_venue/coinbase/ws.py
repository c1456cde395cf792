"""Coinbase Advanced Trade's public market-data WebSocket (``level2``, ``heartbeats``) and its REST
product list.

The session, as a client sees it (no key, no JWT)::

    -> {"type":"subscribe","channel":"heartbeats"}               within 5 s, or the socket closes
    <- {"channel":"subscriptions",...,"sequence_num":0,"events":[{"subscriptions":
        {"heartbeats":["heartbeats"]}}]}
    -> {"type":"subscribe","product_ids":["BTC-USD"],"channel":"level2"}
    <- {"channel":"subscriptions",...,"sequence_num":1,...}      the whole subscription set
    <- {"channel":"l2_data",...,"sequence_num":2,"events":[{"type":"snapshot",...}]}
    <- {"channel":"l2_data",...,"sequence_num":3,"events":[{"type":"update",...}]}
    <- {"channel":"heartbeats",...,"sequence_num":4,"events":[{"current_time":...,
        "heartbeat_counter":"1"}]}                                every second

Failures, as ``{"type":"error","message":...,"reason":...}`` (unnumbered): unreadable JSON, an
unknown type or channel, a product not listed (the whole request is refused).
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

from fake_venue.coinbase.venue import CoinbaseConnection, CoinbaseVenue
from fake_venue.market.markets import Market
from fake_venue.server.connection import next_connection_id
from fake_venue.server.session import serve_session


def products(venue: CoinbaseVenue, request: web.Request) -> web.Response:
    if request.query.get("product_type", "SPOT") != "SPOT":
        return web.json_response({"products": [], "num_products": 0})
    return web.json_response(venue.products())


async def serve(venue: CoinbaseVenue, request: web.Request) -> web.StreamResponse:
    def new_connection(ws: web.WebSocketResponse, transport: asyncio.Transport) -> CoinbaseConnection:
        return CoinbaseConnection(next_connection_id(), ws, transport, venue.config.slow_client_bytes)

    return await serve_session(
        request, venue, new_connection, lambda conn, text: _handle(venue, conn, text), binary=_binary
    )


def _binary(conn: CoinbaseConnection) -> None:
    conn.send_error("Failed to parse", "binary frames are not supported")


def _handle(venue: CoinbaseVenue, conn: CoinbaseConnection, text: str) -> None:
    try:
        request = orjson.loads(text)
    except orjson.JSONDecodeError:
        request = None
    if not isinstance(request, dict) or request.get("type") not in ("subscribe", "unsubscribe"):
        conn.send_error("Failed to parse", "expected a subscribe or unsubscribe message")
        return
    subscribe = request["type"] == "subscribe"
    channel = request.get("channel")
    if channel == "heartbeats":
        conn.heartbeats = subscribe
        venue.answer(conn)
    elif channel == "level2":
        _level2(venue, conn, request, subscribe)
    else:
        conn.send_error(f"Failed to {request['type']}", f"channel {str(channel)[:20]} is not supported")


def _level2(venue: CoinbaseVenue, conn: CoinbaseConnection, request: dict[str, Any], subscribe: bool) -> None:
    names = request.get("product_ids")
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        conn.send_error("Failed to subscribe", "product_ids must be a list of products")
        return
    products: list[tuple[str, Market]] = []
    for name in dict.fromkeys(names):
        market = venue.market_of(name)
        if market is None:
            conn.send_error(f"Failed to {request['type']}", f"{name} is not a valid product")
            return
        products.append((name, market))
    if subscribe:
        added = [(name, market) for name, market in products if name not in conn.products]
        venue.answer(conn, adding=[name for name, _ in added])
        venue.add_books(conn, added)
    else:
        venue.drop_books(conn, [name for name, _ in products])
        venue.answer(conn)
