"""OKX's URL map: the public WebSocket, instruments, and order books (40 requests per 2 s per IP)."""

from __future__ import annotations

import time
from collections import deque

from aiohttp import web

from fake_venue.okx import ws
from fake_venue.okx.venue import BOOKS_DEPTH, OkxVenue

BOOKS_PER_WINDOW = 40
WINDOW_S = 2.0


def okx_routes(venue: OkxVenue) -> list[web.RouteDef]:
    asked: deque[float] = deque()

    async def stream(request: web.Request) -> web.StreamResponse:
        return await ws.serve(venue, request)

    async def instruments(request: web.Request) -> web.Response:
        kind = request.query.get("instType", "")
        if kind not in ("SPOT", "SWAP", "FUTURES", "OPTION", "MARGIN"):
            return _answer("51000", "Parameter instType error", status=400)
        return web.json_response({"code": "0", "msg": "", "data": venue.instruments(kind)})

    async def books(request: web.Request) -> web.Response:
        now = time.monotonic()
        while asked and asked[0] <= now - WINDOW_S:
            asked.popleft()
        if len(asked) >= BOOKS_PER_WINDOW:
            return _answer("50011", "Too Many Requests", status=429)
        asked.append(now)
        size = request.query.get("sz", "1")
        if not size.isdigit() or not 1 <= int(size) <= BOOKS_DEPTH:
            return _answer("51000", "Parameter sz error", status=400)
        market = venue.markets.get(request.query.get("instId", ""))
        if market is None:
            return _answer("51001", "Instrument ID does not exist.")
        return web.json_response({"code": "0", "msg": "", "data": [venue.book(market, int(size))]})

    return [
        web.get("/ws/v5/public", stream),
        web.get("/api/v5/public/instruments", instruments),
        web.get("/api/v5/market/books", books),
    ]


def _answer(code: str, msg: str, status: int = 200) -> web.Response:
    return web.json_response({"code": code, "msg": msg, "data": []}, status=status)
