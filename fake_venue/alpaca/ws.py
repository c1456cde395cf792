"""Alpaca's stream protocol: connect, authenticate within the time limit, subscribe, receive.

Every server message is a JSON array. The session, as a client sees it::

    <- [{"T":"success","msg":"connected"}]
    -> {"action":"auth","key":"...","secret":"..."}
    <- [{"T":"success","msg":"authenticated"}]
    -> {"action":"subscribe","orderbooks":["BTC/USD"]}
    <- [{"T":"subscription","trades":[],"quotes":[],"orderbooks":["BTC/USD"],"bars":[],...}]
    <- [{"T":"o","S":"BTC/USD",...,"r":true}]        the whole book first
    <- [{"T":"o","S":"BTC/USD",...},{...}]            then diffs, batched

Keys may also come as ``APCA-API-KEY-ID`` / ``APCA-API-SECRET-KEY`` headers on the upgrade. Any
non-empty key and secret pass unless credentials are configured. Errors, as ``[{"T":"error",
"code":N,"msg":...}]``: 400 invalid syntax, 401 not authenticated, 402 auth failed (then closed),
403 already authenticated, 404 auth timeout (then closed), 405 symbol limit exceeded (the old
subscription stays), 406 connection limit exceeded (then closed), 407 slow client (then closed),
410 a channel this feed does not offer. Only order books carry data here; the other channels are
accepted and listed but stay silent. Binary (msgpack) frames are not supported and get 400.

The trading API's asset list (``GET /v2/assets?asset_class=crypto``) checks the same credentials
in its ``APCA-API-*`` headers (403 ``forbidden`` otherwise) and lists every pair.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import orjson
from aiohttp import web

from fake_venue.alpaca.venue import CHANNELS, AlpacaConnection, AlpacaVenue
from fake_venue.server.connection import next_connection_id
from fake_venue.server.session import serve_session

SYMBOL = re.compile(r"[A-Z0-9]{1,16}/[A-Z0-9]{1,16}")
POLICY_VIOLATION = 1008
LOCATIONS = ("us", "us-1", "eu-1")


def assets(venue: AlpacaVenue, request: web.Request) -> web.Response:
    key, secret = request.headers.get("APCA-API-KEY-ID"), request.headers.get("APCA-API-SECRET-KEY")
    if not _accepted(venue, key, secret):
        return web.json_response({"code": 40310000, "message": "forbidden"}, status=403)
    asset_class = request.query.get("asset_class", "us_equity")
    return web.json_response(venue.assets() if asset_class == "crypto" else [])


def _accepted(venue: AlpacaVenue, key: object, secret: object) -> bool:
    accepted = venue.config.alpaca_credentials
    valid = isinstance(key, str) and isinstance(secret, str) and bool(key) and bool(secret)
    return valid and (not accepted or (key, secret) in accepted)


async def serve(venue: AlpacaVenue, request: web.Request) -> web.StreamResponse:
    def new_connection(ws: web.WebSocketResponse, transport: asyncio.Transport) -> AlpacaConnection:
        return AlpacaConnection(next_connection_id(), ws, transport, venue.config.slow_client_bytes)

    def opened(conn: AlpacaConnection) -> None:
        conn.send_control({"T": "success", "msg": "connected"})
        key, secret = request.headers.get("APCA-API-KEY-ID"), request.headers.get("APCA-API-SECRET-KEY")
        if key is not None or secret is not None:
            _authenticate(venue, conn, key, secret)

    return await serve_session(
        request,
        venue,
        new_connection,
        lambda conn, text: _handle(venue, conn, text),
        opened=opened,
        binary=lambda conn: conn.send_error(400, "invalid syntax"),
    )


def _handle(venue: AlpacaVenue, conn: AlpacaConnection, text: str) -> None:
    try:
        request = orjson.loads(text)
    except orjson.JSONDecodeError:
        conn.send_error(400, "invalid syntax")
        return
    action = request.get("action") if isinstance(request, dict) else None
    if action == "auth":
        if conn.authenticated:
            conn.send_error(403, "already authenticated")
        else:
            _authenticate(venue, conn, request.get("key"), request.get("secret"))
    elif action in ("subscribe", "unsubscribe"):
        _change_subscription(venue, conn, request, subscribe=action == "subscribe")
    else:
        conn.send_error(400, "invalid syntax")


def _authenticate(venue: AlpacaVenue, conn: AlpacaConnection, key: object, secret: object) -> None:
    if not isinstance(key, str) or not _accepted(venue, key, secret):
        conn.send_error(402, "auth failed")
        conn.close(POLICY_VIOLATION, "auth failed")
        return
    if venue.connection_limit and venue.keys_in_use[key] >= venue.connection_limit:
        conn.send_error(406, "connection limit exceeded")
        conn.close(POLICY_VIOLATION, "connection limit exceeded")
        return
    conn.key = key
    venue.keys_in_use[key] += 1
    conn.send_control({"T": "success", "msg": "authenticated"})


def _change_subscription(
    venue: AlpacaVenue, conn: AlpacaConnection, request: dict[str, Any], subscribe: bool
) -> None:
    if not conn.authenticated:
        conn.send_error(401, "not authenticated")
        return
    changes = {channel: symbols for channel, symbols in request.items() if channel != "action"}
    for channel, symbols in changes.items():
        if channel not in CHANNELS:
            conn.send_error(410, "invalid subscribe action for this feed")
            return
        if not isinstance(symbols, list) or not all(
            isinstance(symbol, str) and (symbol == "*" or SYMBOL.fullmatch(symbol)) for symbol in symbols
        ):
            conn.send_error(400, "invalid syntax")
            return
    wanted = {channel: list(conn.channels[channel]) for channel in CHANNELS}
    for channel, symbols in changes.items():
        if subscribe:
            wanted[channel] += [symbol for symbol in dict.fromkeys(symbols) if symbol not in wanted[channel]]
        else:
            wanted[channel] = [symbol for symbol in wanted[channel] if symbol not in symbols]
    if venue.symbol_limit and len(wanted["orderbooks"]) > venue.symbol_limit:
        conn.send_error(405, "symbol limit exceeded")
        return
    for channel in CHANNELS:
        if channel != "orderbooks":
            conn.channels[channel] = wanted[channel]
    added = venue.set_books(conn, wanted["orderbooks"])
    conn.send_control({"T": "subscription", **conn.channels})
    venue.send_full_books(conn, added)
